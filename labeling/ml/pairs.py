"""Labelled pair data for h: pairs from imported records, the originals behind them, group
sampling, and the ``FORMAT:PATH[:SPLIT]`` spec of a warm-start file. Used by the labelling
service (warm start) and by the benchmarks."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, TypeGuard

import numpy as np

from labeling.ml.features import Pair
from projects.formats import parse_spec
from projects.ml.textkeys import text_hash


@dataclass(frozen=True)
class LabelledPairs:
    pairs: list[Pair]
    y_prime: list[str]
    # per pair, ``counterfactual.valid`` (docs/formats.md §1; None: not judged); empty when the
    # data carries no judgement at all
    valid: list[bool | None] = field(default_factory=list)

    @property
    def has_valid(self) -> bool:
        return any(v is not None for v in self.valid)


def unique_originals(pairs: Sequence[Pair]) -> tuple[list[dict[str, str]], list[str]]:
    seen: dict[tuple[tuple[str, str], ...], str] = {}
    for p in pairs:
        key = tuple(sorted(p.original.items()))
        seen.setdefault(key, p.y)
    return [dict(k) for k in seen], list(seen.values())


class _OriginalLike(Protocol):
    @property
    def id(self) -> str: ...

    @property
    def fields(self) -> Mapping[str, str]: ...

    @property
    def label(self) -> str | None: ...


class _PairRecordLike(Protocol):
    """The part of ``projects.formats.PairRecord`` read here (not imported: labeling.ml
    imports no Django app)."""

    @property
    def id(self) -> str: ...

    @property
    def original(self) -> _OriginalLike: ...

    @property
    def cf_fields(self) -> Mapping[str, str]: ...

    @property
    def cf_label(self) -> str | None: ...

    @property
    def perturbation(self) -> str: ...

    @property
    def group(self) -> str: ...

    @property
    def valid(self) -> bool | None: ...


def _is_pair(rec: object) -> TypeGuard[_PairRecordLike]:
    return hasattr(rec, "cf_fields")


def pairs_from_records(records: Sequence[object], labels: Sequence[str]) -> tuple[LabelledPairs, list[str]]:
    """Labelled pairs from ``projects.formats`` records (PairRecords whose original and
    counterfactual labels are both known); other records are skipped. Labels are matched to
    ``labels`` case-insensitively (``FALSE`` is ``false``); an unknown one is a problem that
    names the accepted labels. Returns the pairs and
    the problems (as text)."""
    pairs: list[Pair] = []
    ys: list[str] = []
    valid: list[bool | None] = []
    problems: list[str] = []
    by_fold = {name.casefold(): name for name in labels}  # labels match case-insensitively
    for rec in records:
        if type(rec).__name__ == "Problem":
            problems.append(str(rec))
            continue
        if not _is_pair(rec):
            continue  # an original without a counterfactual
        y, y2 = rec.original.label, rec.cf_label
        if y is None or y2 is None:
            continue
        unknown = [v for v in (y, y2) if v.strip().casefold() not in by_fold]
        if unknown:
            problems.append(
                f"{rec.id}: label {unknown[0]!r} not in the label set "
                f"(expected one of {', '.join(labels)}; case is ignored)"
            )
            continue
        y, y2 = by_fold[y.strip().casefold()], by_fold[y2.strip().casefold()]
        pairs.append(
            Pair(
                dict(rec.original.fields),
                dict(rec.cf_fields),
                y,
                rec.perturbation or "",
                rec.group or rec.original.id,
                getattr(rec, "generator", "") or "",
            )
        )
        ys.append(y2)
        valid.append(getattr(rec, "valid", None))
    return LabelledPairs(pairs, ys, valid if any(v is not None for v in valid) else []), problems


def sample_by_group(data: LabelledPairs, limit: int, seed: int = 0) -> LabelledPairs:
    """About ``limit`` pairs: whole groups (all counterfactuals of an original) in a random
    order, so a slice keeps the label mix and the sibling structure of the full data."""
    groups: dict[str, list[int]] = {}
    for i, p in enumerate(data.pairs):
        groups.setdefault(p.group or str(i), []).append(i)
    keys = list(groups)
    order = np.random.default_rng(seed).permutation(len(keys))
    rows: list[int] = []
    for k in order:
        if len(rows) >= limit:
            break
        rows.extend(groups[keys[k]])
    rows = sorted(rows[:limit])
    return LabelledPairs(
        [data.pairs[i] for i in rows],
        [data.y_prime[i] for i in rows],
        [data.valid[i] for i in rows] if data.valid else [],
    )


def unseen(pairs: Sequence[Pair], seen: set[str], fields: Sequence[str]) -> list[int]:
    """Rows of ``pairs`` whose original and counterfactual are both outside ``seen`` (text hashes)."""
    return [
        i
        for i, p in enumerate(pairs)
        if text_hash(p.original, fields) not in seen and text_hash(p.counterfactual, fields) not in seen
    ]


def without_pool(warm: LabelledPairs, pool: LabelledPairs, fields: Sequence[str]) -> tuple[LabelledPairs, int]:
    """The warm-start pairs less those whose original or counterfactual is (by normalized text,
    :func:`projects.ml.textkeys.text_hash`) an original or a counterfactual of ``pool``, and
    how many were left out: h pre-trained on the very pairs it is scored on (a warm-start file
    that is the pool, or another slice of the same split) would report memorised labels."""
    keep = unseen(
        warm.pairs, {text_hash(t, fields) for p in pool.pairs for t in (p.original, p.counterfactual)}, fields
    )
    kept = LabelledPairs(
        [warm.pairs[i] for i in keep],
        [warm.y_prime[i] for i in keep],
        [warm.valid[i] for i in keep] if warm.valid else [],
    )
    return kept, len(warm.pairs) - len(keep)


def parse_warm_spec(spec: str) -> tuple[str, str, str]:
    """``FORMAT:PATH[:SPLIT]`` -> (format, path, split), as :func:`projects.formats.parse_spec`
    reads every data spec."""
    return parse_spec(spec, "warm start")


_SWAP = {"a": "the", "an": "the", "the": "a", "this": "that", "that": "this"}


def trivial_edit(record: dict[str, str], rng: np.random.Generator) -> dict[str, str] | None:
    """A label-preserving edit of ``record``: one determiner swapped (a/an <-> the, this <->
    that) in one field, kept capitalised; None when no field has one."""
    spots = [(f, i) for f, text in record.items() for i, w in enumerate(text.split(" ")) if w.lower() in _SWAP]
    if not spots:
        return None
    f, i = spots[int(rng.integers(len(spots)))]
    words = record[f].split(" ")
    new = _SWAP[words[i].lower()]
    words[i] = new.capitalize() if words[i][:1].isupper() else new
    return {**record, f: " ".join(words)}


def mixed_pool(data: LabelledPairs, seed: int = 0) -> LabelledPairs:
    """The pool plus label-preserving pairs whose counterfactual label is known by
    construction, so h sees flips and non-flips (``bench_pairwise --mixed``):

    - siblings: two counterfactuals of the same original with the same label (CAD-NLI: the
      premise-revised and the hypothesis-revised one aiming at the same label) make a pair
      (one as the original, the other as its edit) whose label stays; one per label and group;
    - a trivial edit: each original with one determiner swapped (``trivial_edit``), same label.
    The added pairs keep the group of their original, so group sampling keeps them together."""
    rng = np.random.default_rng(seed)
    pairs, ys = list(data.pairs), list(data.y_prime)
    valid: list[bool | None] = list(data.valid) if data.valid else [None] * len(pairs)
    by_group: dict[str, list[int]] = {}
    for i, p in enumerate(data.pairs):
        by_group.setdefault(p.group or str(i), []).append(i)
    for group, rows in by_group.items():
        by_label: dict[str, list[int]] = {}
        for i in rows:
            by_label.setdefault(data.y_prime[i], []).append(i)
        for lab, same in by_label.items():
            distinct = {tuple(sorted(data.pairs[i].counterfactual.items())): i for i in same}
            if len(distinct) < 2:
                continue
            a, b = (data.pairs[i].counterfactual for i in list(distinct.values())[:2])
            if rng.random() < 0.5:
                a, b = b, a
            pairs.append(Pair(dict(a), dict(b), lab, "sibling", group))
            ys.append(lab)
            valid.append(None)
        first = data.pairs[rows[0]]
        edited = trivial_edit(first.original, rng)
        if edited is not None:
            pairs.append(Pair(dict(first.original), edited, first.y, "trivial", group))
            ys.append(first.y)
            valid.append(None)
    return LabelledPairs(pairs, ys, valid if data.valid else [])
