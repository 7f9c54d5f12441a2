"""An NLI project of synthetic pairs (tests/labeling/conftest.py): the first ``n_human`` of its
candidates labelled by people (with their gold label), the rest pooled. Needs the database."""

from __future__ import annotations

from typing import Any

from projects import states
from projects.models import Candidate, Example, Label, Project
from projects.services.projects import project_create

from .conftest import synthetic_pairs


def make_project(
    n_pairs: int = 160, n_human: int = 60, name: str = "p", created_by: Any = None
) -> tuple[Project, list[str]]:
    project = project_create(name=name, task="nli", created_by=created_by)
    labels = {lab.name: lab for lab in Label.objects.filter(project=project)}
    pairs, ys = synthetic_pairs(n_pairs, seed=7)
    examples = Example.objects.bulk_create(
        [
            Example(project=project, external_id=f"e{i}", fields=p.original, label=labels[p.y])
            for i, p in enumerate(pairs)
        ]
    )
    cands = []
    for i, (p, y2) in enumerate(zip(pairs, ys, strict=True)):
        human = i < n_human
        cands.append(
            Candidate(
                project=project,
                external_id=f"c{i}",
                example=examples[i],
                fields=p.counterfactual,
                perturbation=p.perturbation,
                gold_label=labels[y2],
                state=states.HUMAN_LABELED if human else states.POOLED,
                label=labels[y2] if human else None,
                label_source="human" if human else "",
            )
        )
    Candidate.objects.bulk_create(cands)
    return project, ys
