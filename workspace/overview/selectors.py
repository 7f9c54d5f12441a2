"""Reads behind the project overview (issue 32.1): the project's state, gathered from the
stored aggregates and a few small queries, and the next step computed from it
(:mod:`workspace.overview.next_step`)."""

from __future__ import annotations

from typing import Any

from django.db.models import F, Sum

from annotate import kinds
from annotate.models import Item
from labeling.selectors import pairwise_model_latest
from labeling.services import MIN_LABELS
from labeling.task_training import task_data_counts, task_model_latest
from projects import states
from projects.models import JOB_ACTIVE, Job, Project, ProjectMembership
from projects.selectors import ProjectCounts, project_counts
from workspace.overview.next_step import NextStep, ProjectState, next_step

CANDIDATE_JOBS = ("generation", "import", "route", "train", "autolabel")


def project_state(*, project: Project, counts: ProjectCounts | None = None) -> ProjectState:
    counts = counts or project_counts(project=project)
    by_state = counts.by_state()
    human = sum(c.n for c in counts.cells if c.state == states.HUMAN_LABELED and c.label_source == "human")
    real = Item.objects.filter(project=project, is_gold=False)
    wanted = real.filter(status="open").aggregate(n=Sum(F("k") - F("done")))["n"] or 0
    kind = kinds.kind_for_task(project.task)
    model = pairwise_model_latest(project=project) if kind.answers_are_labels else None
    job = Job.objects.filter(project=project, status__in=JOB_ACTIVE, kind__in=CANDIDATE_JOBS).order_by("pk").first()
    return ProjectState(
        originals=counts.n_examples,
        candidates=counts.total,
        pooled=by_state[states.POOLED],
        routed=by_state[states.ROUTED],
        human_labels=human,
        auto_labels=by_state[states.AUTO_LABELED],
        abstained=by_state[states.ABSTAINED],
        routed_items=real.count(),
        answers_wanted=int(wanted),
        annotators=ProjectMembership.objects.filter(project=project, role="annotator").count(),
        k=project.annotators_per_item,
        sides=len(kind.sides(gold=False)),
        labels_task=kind.answers_are_labels,
        min_labels=MIN_LABELS,
        task_model=task_model_latest(project=project) is not None,
        task_data=sum(task_data_counts(project=project).values()),
        h_trained_on=model.n_train if model is not None else None,
        active_job=job.kind if job else "",
    )


def project_next_step(*, project: Project, counts: ProjectCounts | None = None) -> NextStep:
    return next_step(project_state(project=project, counts=counts))


def overview_counts(*, counts: ProjectCounts) -> dict[str, Any]:
    """The overview's compact counts: originals, candidates and each state."""
    sources = {s: sum(c.n for c in counts.cells if c.label_source == s) for s in ("human", "auto", "imported")}
    return {
        "n_examples": counts.n_examples,
        "total": counts.total,
        "by_state": counts.by_state(),
        "states": [(state, n, state.replace("_", " ")) for state, n in counts.by_state().items()],
        "label_sources": sources,
        "with_gold": sum(c.n for c in counts.cells if c.gold),
    }
