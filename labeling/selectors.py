"""Reads for the labelling pages."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count

from generation import states
from generation.models import Candidate, Project
from labeling.models import PairwiseModel

SOURCES = {"human": ("human", "gold"), "auto": ("auto",)}


@dataclass
class FlipCell:
    n: int = 0
    flipped: int = 0

    @property
    def rate(self) -> float | None:
        return self.flipped / self.n if self.n else None


@dataclass
class FlipRates:
    overall: dict[str, FlipCell] = field(default_factory=dict)  # source -> cell
    by_perturbation: list[tuple[str, dict[str, FlipCell]]] = field(default_factory=list)
    by_direction: list[tuple[str, str, dict[str, int]]] = field(default_factory=list)  # (from, to, {source: n})
    model: PairwiseModel | None = None


def flip_rates_for(*, project: Project) -> FlipRates:
    """Flip rate (counterfactual label != original label) of human and of auto labels, by
    perturbation type and by direction (original label -> counterfactual label), plus the
    latest pairwise model (its cross-validated accuracy). One grouped query."""
    rows = (
        Candidate.objects.filter(project=project, label__isnull=False, example__label__isnull=False,
                                 state__in=[states.HUMAN_LABELED, states.AUTO_LABELED])
        .values("label_source", "perturbation", "example__label__name", "label__name")
        .annotate(n=Count("id"))
        .order_by()
    )
    out = FlipRates(overall={s: FlipCell() for s in SOURCES})
    by_pert: dict[str, dict[str, FlipCell]] = {}
    by_dir: dict[tuple[str, str], dict[str, int]] = {}
    for r in rows:
        source = next((s for s, members in SOURCES.items() if r["label_source"] in members), None)
        if source is None:
            continue
        y, y2, n = r["example__label__name"], r["label__name"], r["n"]
        flipped = n if y != y2 else 0
        for cell in (out.overall[source],
                     by_pert.setdefault(r["perturbation"] or "(none)", {s: FlipCell() for s in SOURCES})[source]):
            cell.n += n
            cell.flipped += flipped
        d = by_dir.setdefault((y, y2), {s: 0 for s in SOURCES})
        d[source] += n
    out.by_perturbation = sorted(by_pert.items())
    out.by_direction = [(a, b, counts) for (a, b), counts in sorted(by_dir.items())]
    out.model = PairwiseModel.objects.filter(project=project).order_by("-version").first()
    return out


def pairwise_models_for(*, project: Project) -> Any:
    return PairwiseModel.objects.filter(project=project).order_by("-version")
