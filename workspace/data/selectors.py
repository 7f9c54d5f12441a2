"""Reads for the researcher's data browser: filtered, keyset-paginated candidates and one
pair with its edit, annotations and labels.

Paging is by candidate id (``?after=`` / ``?before=``): each page is one ``LIMIT 51`` range
scan on the ``(project, id)`` or ``(project, state, id)`` index plus one ``LIMIT 1`` probe for
the other direction — no ``OFFSET``, no ``COUNT(*)`` over the filtered set — so a page costs
the same at 10k and 1M candidates when the filters are not very selective (see
docs/workspace.md for the figures). It lives in ``annotate`` because it shows annotations."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.db.models import Count, F, QuerySet

from annotate.models import Annotation
from projects import states
from projects.ml.textdiff import Segment, word_diff
from projects.models import Candidate, Label, LabelOverride, Project
from workspace.data.images import image_pair
from workspace.data.titles import CandidateTitle, candidate_title
from workspace.data.totals import Total, matching_total

PAGE_SIZE = 50
FLIP_CHOICES = ["", "flip", "keep"]
GOLD_CHOICES = ["", "yes", "no"]
NONE = "(none)"  # the empty generator or control code, as h's strata and the warnings name it
HUMAN_WRITTEN, GENERATED = "human-written", "generated"
SOURCE_CHOICES = ["", HUMAN_WRITTEN, GENERATED]


@dataclass(frozen=True)
class CandidateFilters:
    state: tuple[str, ...] = ()
    generator: str = ""
    perturbation: str = ""
    label_source: str = ""
    label: str = ""
    flip: str = ""
    min_confidence: float | None = None
    max_confidence: float | None = None
    disagreement: bool = False
    gold: str = ""
    source: str = ""  # human-written | generated (h's strata, labeling/ml/strata.py)

    def as_query(self) -> list[tuple[str, str]]:
        """The filters as query parameters (for the pager's links)."""
        out: list[tuple[str, str]] = [("state", s) for s in self.state]
        for name in ("generator", "perturbation", "label_source", "label", "flip", "gold", "source"):
            if getattr(self, name):
                out.append((name, getattr(self, name)))
        for name in ("min_confidence", "max_confidence"):
            if getattr(self, name) is not None:
                out.append((name, str(getattr(self, name))))
        if self.disagreement:
            out.append(("disagreement", "1"))
        return out


def _disagreeing_candidates(project: Project) -> QuerySet[Any, Any]:
    """Ids of the candidates one of whose real items holds two or more different answers.
    Computed from the annotation side (a hashed semi-join: its cost follows the number of
    answers, not of candidates — a correlated EXISTS per candidate took seconds at 1M)."""
    return (
        Annotation.objects.filter(project=project, item__is_gold=False)
        .values("item_id", "item__candidate_id")
        .annotate(n=Count("choice", distinct=True))
        .filter(n__gt=1)
        .values("item__candidate_id")
    )


def candidates_filtered(*, project: Project, filters: CandidateFilters) -> QuerySet[Candidate]:
    qs = Candidate.objects.filter(project=project)
    f = filters
    if f.state:
        qs = qs.filter(state__in=f.state)
    if f.generator:  # "(none)": the candidates with no generator (as h's strata name them)
        qs = qs.filter(generator="" if f.generator == NONE else f.generator)
    if f.perturbation:
        qs = qs.filter(perturbation="" if f.perturbation == NONE else f.perturbation)
    if f.source == HUMAN_WRITTEN:
        qs = qs.filter(generator__iexact="human")
    elif f.source == GENERATED:
        qs = qs.exclude(generator__iexact="human")
    if f.label_source == "none":
        qs = qs.filter(label__isnull=True)
    elif f.label_source:
        qs = qs.filter(label_source=f.label_source)
    if f.label:
        qs = qs.filter(label__name=f.label)
    if f.flip == "flip":
        qs = qs.filter(label__isnull=False, example__label__isnull=False).exclude(label_id=F("example__label_id"))
    elif f.flip == "keep":
        qs = qs.filter(label__isnull=False, label_id=F("example__label_id"))
    if f.min_confidence is not None:
        qs = qs.filter(confidence__gte=f.min_confidence)
    if f.max_confidence is not None:
        qs = qs.filter(confidence__lte=f.max_confidence)
    if f.gold == "yes":
        qs = qs.filter(gold_label__isnull=False)
    elif f.gold == "no":
        qs = qs.filter(gold_label__isnull=True)
    if f.disagreement:
        qs = qs.filter(id__in=_disagreeing_candidates(project))
    return qs


@dataclass
class BrowsePage:
    rows: list[dict[str, Any]]
    has_next: bool
    has_prev: bool
    first_id: int | None
    last_id: int | None
    size: int = PAGE_SIZE
    labels: dict[int, str] = field(default_factory=dict)
    total: Total | None = None  # how many match the filters (exact, estimated or "N+")


ROW_FIELD_CHARS = 240  # per field in a data-browser row (the pair page shows all of it)


def _field_edits(original: dict[str, Any], edited: dict[str, Any], names: list[str]) -> list[dict[str, Any]]:
    """Every text field of a row as the edit reads (``equal`` / ``del`` / ``ins`` segments, as
    on the pair page), clipped to ``ROW_FIELD_CHARS`` characters of text around the first
    change; ``changed`` marks the fields the counterfactual edits (an NLI pair may edit the
    hypothesis only). Plain dicts: the browse API returns the rows as JSON."""
    out = []
    for name in names or sorted(set(original) | set(edited)):
        segs = word_diff(str(original.get(name, "")), str(edited.get(name, "")))
        changed = any(seg.op != "equal" for seg in segs)
        out.append({"name": name, "changed": changed, "segments": _clip(segs, ROW_FIELD_CHARS)})
    return out


def _clip(segs: list[Segment], limit: int) -> list[dict[str, str]]:
    """The segments from a little before the first change, up to ``limit`` characters."""
    first = next((i for i, seg in enumerate(segs) if seg.op != "equal"), 0)
    start_text = segs[first - 1].text if first > 0 else ""
    lead = start_text[-40:] if len(start_text) > 40 else start_text
    out: list[dict[str, str]] = []
    if first > 0:
        out.append({"op": "equal", "text": ("…" if len(start_text) > 40 or first > 1 else "") + lead})
    used = len(lead)
    for seg in segs[first:]:
        if used >= limit:
            out.append({"op": "equal", "text": "…"})
            break
        text = seg.text[: limit - used]
        out.append({"op": seg.op, "text": text + ("…" if len(text) < len(seg.text) else "")})
        used += len(text)
    return out


def _first_text(fields: dict[str, Any], names: list[str]) -> str:
    for n in names:
        if fields.get(n):
            return str(fields[n])
    return ""


def candidates_browse(
    *,
    project: Project,
    filters: CandidateFilters,
    after: int | None = None,
    before: int | None = None,
    size: int = PAGE_SIZE,
    with_total: bool = True,
) -> BrowsePage:
    """One page of the filtered candidates in id order: after ``after``, before ``before``,
    or from the start; with the total that match (:mod:`workspace.data.totals`)."""
    qs = candidates_filtered(project=project, filters=filters)
    cols = (
        "id",
        "external_id",
        "state",
        "generator",
        "perturbation",
        "label_id",
        "label_source",
        "confidence",
        "gold_label_id",
        "fields",
        "example__label_id",
        "example__external_id",
        "example__fields",
        "image",
        "example__image",
    )
    if before is not None:
        got = list(qs.filter(id__lt=before).order_by("-id").values(*cols)[: size + 1])
        more_before = len(got) > size
        got = list(reversed(got[:size]))
        has_prev, has_next = more_before, True
    else:
        base = qs.filter(id__gt=after) if after is not None else qs
        got = list(base.order_by("id").values(*cols)[: size + 1])
        has_next = len(got) > size
        got = got[:size]
        has_prev = after is not None and qs.filter(id__lte=after).exists()
    if before is not None and got:
        has_next = qs.filter(id__gt=got[-1]["id"]).exists()
    names = dict(Label.objects.filter(project=project).values_list("id", "name"))
    text_fields = list(project.text_fields)
    with_images = project.task == "image-caption"
    rows = []
    for r in got:
        label, orig = names.get(r["label_id"]), names.get(r["example__label_id"])
        title = candidate_title(
            external_id=r["external_id"],
            original_id=r["example__external_id"],
            generator=r["generator"],
            perturbation=r["perturbation"],
        )
        rows.append(
            {
                "id": r["id"],
                "external_id": r["external_id"],
                "title": title.text,
                "candidate_label": title.label,
                "run": title.run,
                "original_id": r["example__external_id"],
                "state": r["state"],
                "generator": r["generator"],
                "perturbation": r["perturbation"],
                "label": label,
                "label_source": r["label_source"],
                "confidence": r["confidence"],
                "gold_label": names.get(r["gold_label_id"]),
                "original_label": orig,
                "flip": None if label is None or orig is None else label != orig,
                "text": _first_text(r["fields"] or {}, text_fields)[:160],
                "edits": _field_edits(r["example__fields"] or {}, r["fields"] or {}, text_fields),
                "images": image_pair(
                    original_image=r["example__image"],
                    original_fields=r["example__fields"] or {},
                    image=r["image"],
                    fields=r["fields"] or {},
                )
                if with_images
                else None,
            }
        )
    return BrowsePage(
        rows=rows,
        has_next=has_next,
        has_prev=has_prev,
        first_id=rows[0]["id"] if rows else None,
        last_id=rows[-1]["id"] if rows else None,
        size=size,
        labels=names,
        total=_total(qs, rows, complete=after is None and before is None and not has_next) if with_total else None,
    )


def _total(qs: QuerySet[Candidate], rows: list[dict[str, Any]], *, complete: bool) -> Total:
    """The first page holds every match: its length is the total, at no cost (a filter that
    matches a few rows out of a million would otherwise be scanned twice)."""
    return Total(len(rows), "exact") if complete else matching_total(qs)


@dataclass
class PairView:
    candidate: Candidate
    title: CandidateTitle
    images: dict[str, dict[str, str]] | None  # an image–caption pair's two images, as annotators see them
    diffs: list[tuple[str, list[Segment]]]
    original_label: str | None
    annotations: list[dict[str, Any]]
    overrides: list[LabelOverride]
    labels: list[str]
    h_confidence: float | None
    h_version: int | None


def pair_view(*, candidate: Candidate) -> PairView:
    from labeling.selectors import pairwise_models_for

    ex = candidate.example
    names = list(candidate.project.text_fields)
    diffs = [(n, word_diff(str(ex.fields.get(n, "")), str(candidate.fields.get(n, "")))) for n in names]
    anns = [
        {
            "annotator": a.annotator.username,
            "choice": a.choice,
            "side": a.item.side,
            "is_gold": a.is_gold,
            "correct": a.correct,
            "duration_ms": a.duration_ms,
            "created_at": a.created_at,
        }
        for a in Annotation.objects.filter(item__candidate=candidate)
        .select_related("annotator", "item")
        .order_by("created_at", "id")
    ]
    overrides = list(candidate.overrides.select_related("label", "previous_label", "created_by"))
    h_conf = None
    if candidate.label_source == "auto" or candidate.state == states.ABSTAINED:
        h_conf = candidate.confidence
    elif overrides and overrides[-1].previous_source == "auto":
        h_conf = overrides[-1].previous_confidence
    latest = pairwise_models_for(project=candidate.project).first()
    return PairView(
        candidate=candidate,
        title=candidate_title(
            external_id=candidate.external_id,
            original_id=ex.external_id,
            generator=candidate.generator,
            perturbation=candidate.perturbation,
        ),
        images=image_pair(
            original_image=ex.image, original_fields=ex.fields, image=candidate.image, fields=candidate.fields
        )
        if candidate.project.task == "image-caption"
        else None,
        diffs=diffs,
        original_label=ex.label.name if ex.label is not None else None,
        annotations=anns,
        overrides=overrides,
        labels=list(
            Label.objects.filter(project=candidate.project).order_by("position").values_list("name", flat=True)
        ),
        h_confidence=h_conf,
        h_version=latest.version if latest else None,
    )
