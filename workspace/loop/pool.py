"""The loop's first steps, through the product's own services: a project, its originals
imported, the generator run with its defaults (its own seed), the check pairs imported, 10 %
routed (the default strategy, check items included) and the annotator accounts that will
answer. Everything is deterministic for a given seed: the same originals, the same pool, the
same routing.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group

from annotate.services.routing import RoutingResult, project_add_annotators, project_route
from generation.services.runs import run_create, run_execute
from projects import permissions, states
from projects.formats import PairRecord, pair_to_json
from projects.models import Candidate, Project
from projects.services.imports import data_import
from projects.services.projects import project_create
from workspace.loop.data import LoopData


@dataclass(frozen=True)
class PoolCandidate:
    """A pooled candidate as the loop sees it: its id, fields, original and original label."""

    id: int
    fields: dict[str, str]
    original: dict[str, str]
    original_label: str
    generator: str
    perturbation: str
    target_label: str | None
    gold_label: str | None


def _write_jsonl(path: Path, rows: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as f:
        for row in rows:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")


def project_for_loop(*, name: str, task: str, annotators: int) -> Project:
    """A fresh project named ``name`` (``annotators`` answers per item: one per reader)."""
    return project_create(name=name, task=task, annotators_per_item=max(1, annotators))


def import_originals(*, project: Project, data: LoopData, work: Path) -> int:
    """The picked originals, as flat labelled examples (``labelled-jsonl``)."""
    rows = [{"id": o.id, **o.fields, "label": o.label} for o in data.originals]
    path = work / "originals.jsonl"
    _write_jsonl(path, rows)
    return data_import(project=project, format="labelled-jsonl", paths=[str(path)]).imported_originals


def import_check_pairs(*, project: Project, pairs: list[PairRecord], work: Path) -> int:
    """The check pairs (a known answer each) — after generation, so that the generator never
    sees their originals."""
    if not pairs:
        return 0
    path = work / "check_pairs.jsonl"
    _write_jsonl(path, [pair_to_json(p) for p in pairs])
    return data_import(project=project, format="pairs-jsonl", paths=[str(path)]).imported_pairs


def generate(
    *,
    project: Project,
    generator: str,
    seed: int,
    filters: str = "",
    on_phase: Callable[[str, str], None] | None = None,
) -> dict[str, Any]:
    """One generation run with the generator's defaults (only the seed given, and the filters
    when ``filters`` names them); its metrics."""
    options: dict[str, Any] = {"seed": seed}
    if filters:
        options["filters"] = filters
    run = run_create(project=project, generator=generator, options=options)
    run = run_execute(run_id=run.pk, on_phase=on_phase)
    if run.job.status != "succeeded":
        raise RuntimeError(f"generation {run.job.status}: {run.job.error}")
    return dict(run.metrics or {})


def annotator_accounts(*, project: Project, names: list[str]) -> list[Any]:
    """One annotator account per reader (in the ``annotator`` group: only members who hold a
    role are served items and counted), members of ``project``."""
    User = get_user_model()
    group, _ = Group.objects.get_or_create(name=permissions.ANNOTATOR)
    users = []
    for name in names:
        user, _ = User.objects.get_or_create(username=f"{project.name}-{name}"[:150])
        user.groups.add(group)
        users.append(user)
    project_add_annotators(project=project, users=users)
    return users


def route(*, project: Project, seed: int, budget: float | None = None) -> RoutingResult:
    """The project's budget (10 % by default) with the default strategy, check items included."""
    return project_route(project=project, seed=seed, budget=budget)


def pool_candidates(*, project: Project, generated_only: bool = True) -> list[PoolCandidate]:
    """The pool (every candidate that passed the filters), in id order; without the imported
    check pairs unless ``generated_only`` is False."""
    qs = Candidate.objects.filter(project=project).exclude(state__in=[states.GENERATED, states.FILTERED_OUT])
    if generated_only:
        qs = qs.filter(gold_label__isnull=True)
    rows = qs.order_by("id").values_list(
        "id",
        "fields",
        "example__fields",
        "example__label__name",
        "generator",
        "perturbation",
        "target_label__name",
        "gold_label__name",
    )
    return [PoolCandidate(*row) for row in rows]
