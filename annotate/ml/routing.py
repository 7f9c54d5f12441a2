"""Choosing which candidates go to human annotators (pure, no Django).

* ``random_sample`` — simple random sample (the source papers' setting).
* ``stratified_sample`` — proportional allocation over strata (e.g. generator × perturbation
  type) by largest remainder, with at least one per non-empty stratum when ``n`` allows.
* ``uncertainty_sample`` — least-confident first (the pairwise classifier's confidence),
  optionally round-robin over diversity groups so one group cannot take the whole budget.

Reproducibility: the same ids, strata/confidences and ``seed`` (an int, or a ``random.Random``
whose stream the caller continues) give the same selection,
whatever order the ids arrive in (ids are put in sorted order first when they are mutually
comparable — ints, strings, uuids — so an unordered database query is fine). Ids must be
unique; ``n`` larger than the population returns everything.
"""

from __future__ import annotations

import math
import random
from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import TypeVar

__all__ = [
    "proportional_allocation",
    "random_sample",
    "stratified_sample",
    "uncertainty_sample",
]

T = TypeVar("T", bound=Hashable)
S = TypeVar("S", bound=Hashable)


def _canonical(values: Iterable[T]) -> list[T]:
    """Sorted when the values are comparable, else in the given order."""
    out = list(values)
    try:
        return sorted(out)  # type: ignore[type-var]  # T is only Hashable: the TypeError below is the check
    except TypeError:
        return out


def _rng(seed: int | random.Random | None) -> random.Random:
    """A seed, or a caller's generator (so a caller drawing several samples keeps one stream)."""
    return seed if isinstance(seed, random.Random) else random.Random(seed)


def _check(ids: Sequence[Hashable], n: int) -> None:
    if n < 0:
        raise ValueError("n must be >= 0")
    if len(set(ids)) != len(ids):
        raise ValueError("ids must be unique")


def random_sample(ids: Iterable[T], n: int, seed: int | random.Random | None) -> list[T]:
    """``min(n, len(ids))`` ids drawn uniformly without replacement, in random order."""
    pool = list(ids)
    _check(pool, n)
    return _rng(seed).sample(_canonical(pool), min(n, len(pool)))


def proportional_allocation(sizes: Mapping[S, int], n: int, *, min_one: bool = True) -> dict[S, int]:
    """Split ``n`` over strata in proportion to their ``sizes`` (Hamilton / largest remainder).

    Each stratum first gets ⌊n·Nₕ/N⌋; the units left over go to the largest fractional parts
    (ties: larger stratum, then stratum order). With ``min_one`` and ``n`` ≥ the number of
    non-empty strata, a non-empty stratum left at 0 takes one unit from the stratum most
    over-allocated relative to its exact quota (among those with ≥ 2), so small strata are
    represented while the rest stays as proportional as possible. Never exceeds a stratum's
    size; ``n`` ≥ N gives every stratum its full size.
    """
    if n < 0:
        raise ValueError("n must be >= 0")
    if any(s < 0 for s in sizes.values()):
        raise ValueError("stratum sizes must be >= 0")
    strata = list(sizes)
    total = sum(sizes.values())
    if n >= total:
        return {h: sizes[h] for h in strata}
    exact = {h: n * sizes[h] / total for h in strata}
    alloc = {h: math.floor(exact[h]) for h in strata}
    order = {h: i for i, h in enumerate(strata)}
    left = n - sum(alloc.values())
    by_remainder = sorted(strata, key=lambda h: (-(exact[h] - alloc[h]), -sizes[h], order[h]))
    for h in by_remainder[:left]:
        alloc[h] += 1
    non_empty = [h for h in strata if sizes[h] > 0]
    if min_one and n >= len(non_empty):
        starved = sorted((h for h in non_empty if alloc[h] == 0), key=lambda h: (-exact[h], order[h]))
        for h in starved:
            donor = max(
                (d for d in strata if alloc[d] >= 2),
                key=lambda d: (alloc[d] - exact[d], -order[d]),
            )
            alloc[donor] -= 1
            alloc[h] = 1
    return alloc


def stratified_sample(
    ids_with_strata: Iterable[tuple[T, Hashable]], n: int, seed: int | random.Random | None
) -> list[T]:
    """A stratified random sample of ``n`` ids from ``(id, stratum)`` pairs.

    Quotas come from ``proportional_allocation`` (proportional, largest remainder, at least one
    per non-empty stratum when ``n`` ≥ number of strata); within a stratum the ids are drawn
    uniformly. The result is shuffled, so any prefix of it is not biased towards one stratum.
    """
    pairs = list(ids_with_strata)
    ids = [i for i, _ in pairs]
    _check(ids, n)
    members: dict[Hashable, list[T]] = {}
    for item, stratum in pairs:
        members.setdefault(stratum, []).append(item)
    strata = _canonical(members)
    alloc = proportional_allocation({h: len(members[h]) for h in strata}, n)
    rng = _rng(seed)
    picked: list[T] = []
    for h in strata:
        picked.extend(rng.sample(_canonical(members[h]), alloc[h]))
    rng.shuffle(picked)
    return picked


def uncertainty_sample(
    ids: Sequence[T],
    confidences: Sequence[float],
    n: int,
    seed: int | random.Random | None,
    diversity_groups: Sequence[Hashable] | None = None,
) -> list[T]:
    """The ``n`` least-confident ids, least confident first.

    ``confidences[i]`` is the classifier's confidence for ``ids[i]`` (e.g. its top-class
    probability; any finite number, lower = less sure). Equal confidences are ordered at random
    (seeded). With ``diversity_groups`` (one group key per id, e.g. perturbation type or an
    embedding cluster), selection goes round-robin: each round takes the least-confident
    remaining id of every group that still has one, rounds ordered by confidence, so every
    group is represented before any group gets a second pick.
    """
    pool = list(ids)
    conf = [float(c) for c in confidences]
    if len(conf) != len(pool):
        raise ValueError("ids and confidences must have the same length")
    if any(not math.isfinite(c) for c in conf):
        raise ValueError("confidences must be finite numbers")
    if diversity_groups is not None and len(diversity_groups) != len(pool):
        raise ValueError("ids and diversity_groups must have the same length")
    _check(pool, n)
    rng = _rng(seed)
    # random tie-break values are handed out in id order, so the input order does not matter
    position = {item: i for i, item in enumerate(pool)}
    tie = {position[item]: rng.random() for item in _canonical(pool)}
    ranked = sorted(range(len(pool)), key=lambda i: (conf[i], tie[i]))
    if diversity_groups is None:
        return [pool[i] for i in ranked[:n]]
    queues: dict[Hashable, list[int]] = {}
    for i in ranked:
        queues.setdefault(diversity_groups[i], []).append(i)
    picked: list[int] = []
    depth = 0
    while len(picked) < min(n, len(pool)):
        layer = [q[depth] for q in queues.values() if depth < len(q)]
        layer.sort(key=lambda i: (conf[i], tie[i]))
        picked.extend(layer[: n - len(picked)])
        depth += 1
    return [pool[i] for i in picked]
