"""Reads of the kernel: which projects a user sees, project lists with counts (one query),
candidates per state, a project's overview."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.db.models import F, IntegerField, Min, OuterRef, Q, QuerySet, Subquery, Sum
from django.db.models.functions import Coalesce

from projects import permissions, states

# every number of a job is computed in one module (issue 32.6); read here as before
from projects.job_progress import JobProgress as JobProgress
from projects.job_progress import job_progress as job_progress
from projects.job_progress import job_stalled_seconds as job_stalled_seconds
from projects.job_progress import job_waiting_behind as job_waiting_behind
from projects.models import Candidate, CandidateCount, Example, Job, Label, Project

MAX_SPLITS = 100


def example_splits(*, project: Project) -> list[str]:
    """The project's non-empty splits, sorted, each once (at most ``MAX_SPLITS``). One index
    probe per split on ``example_project_split`` (the next split after the last one found), not
    a ``DISTINCT`` over every original: that read all 90,943 originals of a large project on
    each request of the export page (99 ms, docs/workspace.md)."""
    found: list[str] = []
    while len(found) < MAX_SPLITS:
        after = Example.objects.filter(project=project, split__gt=found[-1] if found else "")
        split = after.aggregate(m=Min("split"))["m"]
        if split is None:
            break
        found.append(split)
    return found


def projects_visible_to(*, user: Any) -> QuerySet[Project]:
    """Admins and researchers see every project; annotators only those they are members of
    (none once they no longer hold the role)."""
    if permissions.is_researcher(user):
        return Project.objects.all()
    if not permissions.holds_a_role(user):
        return Project.objects.none()
    return Project.objects.filter(memberships__user=user)


def _with_fresh_stats(projects: QuerySet[Project]) -> QuerySet[Project]:
    """``projects``, after recounting the aggregates of those whose row is missing or stale
    (the safety net of ``projects/aggregates.py``; once per project)."""
    from projects.aggregates import project_stats_fresh

    for pk in projects.filter(Q(stats__isnull=True) | Q(stats__stale=True)).values_list("pk", flat=True):
        project_stats_fresh(project_id=pk)
    return projects


def _candidates_counted(**cell: Any) -> Coalesce:
    """The project's candidates (of the cells matching ``cell``), from its aggregates."""
    total = (
        CandidateCount.objects.filter(project=OuterRef("pk"), **cell)
        .order_by()
        .values("project")
        .annotate(n=Sum("n"))
        .values("n")
    )
    return Coalesce(Subquery(total, output_field=IntegerField()), 0)


def project_list_with_counts(*, user: Any) -> QuerySet[Project]:
    """Projects with their example/candidate counts in one query, from the per-project
    aggregates (no count of the candidate table)."""
    return _with_fresh_stats(projects_visible_to(user=user)).annotate(
        n_examples=Coalesce(F("stats__n_examples"), 0),
        n_candidates=_candidates_counted(),
    )


def projects_with_state_counts(*, user: Any) -> QuerySet[Project]:
    """The projects ``user`` sees, each annotated with ``n_originals``, ``n_candidates`` and
    ``n_<state>`` for every candidate state — one SQL query for the whole list, reading the
    per-project aggregates (``projects/aggregates.py``), not the candidate table."""
    by_state = {f"n_{s}": _candidates_counted(state=s) for s in states.STATES}
    return (
        _with_fresh_stats(projects_visible_to(user=user))
        .annotate(
            n_originals=Coalesce(F("stats__n_examples"), 0),
            n_candidates=_candidates_counted(),
            **by_state,
        )
        .order_by("name")
    )


@dataclass(frozen=True)
class CountCell:
    """How many of a project's candidates share these values (labels by name, None for none)."""

    state: str
    label_source: str
    perturbation: str
    generator: str
    original_label: str | None  # the original's label
    target_label: str | None
    label: str | None  # the final label
    gold: bool  # they carry a known (gold) label
    n: int


@dataclass(frozen=True)
class ProjectCounts:
    """A project's stored candidate aggregates (``projects/aggregates.py``): ``version``
    changes with every write to its candidates."""

    version: int
    n_examples: int
    cells: list[CountCell]

    @property
    def total(self) -> int:
        return sum(c.n for c in self.cells)

    def by_state(self) -> dict[str, int]:
        """Candidates per state, every state present (zeros included)."""
        counts = dict.fromkeys(states.STATES, 0)
        for c in self.cells:
            counts[c.state] = counts.get(c.state, 0) + c.n
        return counts


def project_counts(*, project: Project) -> ProjectCounts:
    """The project's candidate counts from its aggregates: two small queries, whatever the
    number of candidates. Missing or stale aggregates are recounted once first (the safety
    net of ``projects/aggregates.py``); the candidate table is never counted otherwise."""
    from projects.aggregates import KEY, project_stats_fresh

    stats = project_stats_fresh(project_id=project.pk)
    names = dict(Label.objects.filter(project=project).values_list("id", "name"))
    cells = [
        CountCell(
            state=row[0],
            label_source=row[1],
            perturbation=row[2],
            generator=row[3],
            original_label=names.get(row[4]),
            target_label=names.get(row[5]),
            label=names.get(row[6]),
            gold=bool(row[7]),
            n=int(row[8]),
        )
        for row in CandidateCount.objects.filter(project=project, n__gt=0).values_list(*KEY, "n")
    ]
    return ProjectCounts(version=stats.version, n_examples=stats.n_examples, cells=cells)


def project_state_counts(*, project: Project) -> dict[str, int]:
    """Candidates per state, every state present (zeros included), from the aggregates."""
    return project_counts(project=project).by_state()


def project_overview(*, project: Project) -> dict[str, Any]:
    """The project page's figures, from the stored aggregates (issue 20.8)."""
    counts = project_counts(project=project)
    by_state = counts.by_state()
    sources = {
        "human": sum(c.n for c in counts.cells if c.label_source == "human"),
        "auto": sum(c.n for c in counts.cells if c.label_source == "auto"),
        "imported": sum(c.n for c in counts.cells if c.label_source == "imported"),
        "with_gold": sum(c.n for c in counts.cells if c.gold),
    }
    return {
        "by_state": by_state,
        "total": sum(by_state.values()),
        "n_examples": counts.n_examples,
        "label_sources": sources,
        "labels": list(project.labels.values_list("name", flat=True)),
        "counts": counts,
    }


# -- jobs -------------------------------------------------------------------


def job_as_dict(*, job: Job, now: Any = None) -> dict[str, Any]:
    """The public shape of a job (docs/formats.md §3 ``jobs --json``), plus progress and result:
    the figures of ``projects.job_progress`` (``rate`` in ``rate_unit``, ``eta_seconds``,
    ``steps``, ``summary``), the same the page and the ``jobs`` command show."""
    p = job_progress(job=job, now=now)
    return {
        "id": job.pk,
        "kind": job.kind,
        "project": job.project.name if job.project is not None else None,
        "project_id": job.project_id,
        "status": job.status,
        "done": job.done,
        "total": job.total,
        "error": job.error or None,
        "started_at": job.started_at.isoformat() if job.started_at else None,
        "finished_at": job.finished_at.isoformat() if job.finished_at else None,
        "created_at": job.created_at.isoformat() if job.created_at else None,
        "created_by": job.created_by.get_username() if job.created_by is not None else None,
        "done_shown": p.done,
        "total_shown": p.total,
        "unit": p.unit,
        "rate": p.rate,
        "rate_unit": p.rate_unit,
        "eta_seconds": p.eta_seconds,
        "percent": p.percent,
        "step": p.step,
        "steps": p.steps,
        "summary": p.summary,
        "heartbeat_at": job.heartbeat_at.isoformat() if job.heartbeat_at else None,
        "attempts": job.attempts,
        "cancel_requested": job.cancel_requested,
        "waiting_behind": p.waiting_behind,
        "stalled": p.stalled or None,
        "params": job.params,
        "result": job.result,
    }


def jobs_list(
    *, project: Project | None = None, kind: str | None = None, user: Any = None, limit: int | None = None
) -> QuerySet[Job]:
    """Jobs newest first, optionally of one project/kind; with ``user``, only the projects
    that user may see."""
    qs = Job.objects.select_related("project", "created_by").order_by("-created_at", "-id")
    if project is not None:
        qs = qs.filter(project=project)
    if kind:
        qs = qs.filter(kind=kind)
    if user is not None and not permissions.is_researcher(user):
        qs = qs.none()
    return qs[:limit] if limit else qs


def job_get(*, job_id: int) -> Job | None:
    return Job.objects.select_related("project", "created_by").filter(pk=job_id).first()


def job_latest(*, project: Project, kind: str) -> Job | None:
    return jobs_list(project=project, kind=kind).first()


def image_visible_to(*, user: Any, stored_as: set[str]) -> bool:
    """Whether ``user`` may see an image stored (on an original or a candidate) as one of
    ``stored_as``: researchers any image; others only images of a project they are a member
    of (imports store absolute paths, generated images paths relative to the media root)."""
    if permissions.is_researcher(user):
        return True
    stored = set(stored_as)
    mine = Project.objects.filter(memberships__user=user)
    return (
        Example.objects.filter(project__in=mine, image__in=stored).exists()
        or Candidate.objects.filter(project__in=mine, image__in=stored).exists()
    )
