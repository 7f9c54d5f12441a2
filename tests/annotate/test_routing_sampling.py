"""Sampling strategies for routing (annotate.ml.routing): allocation arithmetic, determinism,
order independence, diversity and edge cases."""

from __future__ import annotations

import itertools
import random
from collections import Counter

import pytest

from annotate.ml.routing import (
    proportional_allocation,
    random_sample,
    stratified_sample,
    uncertainty_sample,
)

# --- proportional allocation ------------------------------------------------------------------


def test_allocation_largest_remainder_hand_computed() -> None:
    # quotas 10·(5, 3, 2)/10 exact; 7·(50, 30, 20)/100 = 3.5, 2.1, 1.4 -> floors 3, 2, 1, the
    # one unit left goes to the largest remainder (0.5)
    assert proportional_allocation({"a": 5, "b": 3, "c": 2}, 10) == {"a": 5, "b": 3, "c": 2}
    assert proportional_allocation({"a": 50, "b": 30, "c": 20}, 7) == {"a": 4, "b": 2, "c": 1}
    # 4·(45, 35, 20)/100 = 1.8, 1.4, 0.8 -> floors 1, 1, 0; the two left go to x and z (.8 each)
    assert proportional_allocation({"x": 45, "y": 35, "z": 20}, 4) == {"x": 2, "y": 1, "z": 1}


def test_allocation_keeps_proportionality_when_giving_small_strata_one() -> None:
    # 90/10 with n=10 is already 9/1; with 990/5/5 and n=10: quotas 9.9, .05, .05
    assert proportional_allocation({"big": 90, "small": 10}, 10) == {"big": 9, "small": 1}
    alloc = proportional_allocation({"big": 990, "s1": 5, "s2": 5}, 10)
    assert alloc == {"big": 8, "s1": 1, "s2": 1}
    assert proportional_allocation({"big": 990, "s1": 5, "s2": 5}, 10, min_one=False) == {
        "big": 10,
        "s1": 0,
        "s2": 0,
    }
    # n smaller than the number of strata: no minimum possible, the largest quotas win
    assert proportional_allocation({"a": 6, "b": 3, "c": 1}, 2) == {"a": 1, "b": 1, "c": 0}


def test_allocation_caps_and_edges() -> None:
    assert proportional_allocation({"a": 3, "b": 1}, 100) == {"a": 3, "b": 1}
    assert proportional_allocation({"a": 3, "b": 0}, 2) == {"a": 2, "b": 0}
    assert proportional_allocation({"a": 3, "b": 2}, 0) == {"a": 0, "b": 0}
    assert proportional_allocation({}, 5) == {}
    with pytest.raises(ValueError):
        proportional_allocation({"a": 3}, -1)
    with pytest.raises(ValueError):
        proportional_allocation({"a": -3}, 1)


@pytest.mark.parametrize("seed", range(20))
def test_allocation_invariants_random(seed: int) -> None:
    rng = random.Random(seed)
    sizes = {f"s{h}": rng.choice([0, 1, 2, 5, 40, 300]) for h in range(rng.randint(1, 8))}
    total = sum(sizes.values())
    n = rng.randint(0, total + 3)
    alloc = proportional_allocation(sizes, n)
    assert sum(alloc.values()) == min(n, total)
    assert all(0 <= alloc[h] <= sizes[h] for h in sizes)
    non_empty = [h for h in sizes if sizes[h]]
    if n >= len(non_empty):
        assert all(alloc[h] >= 1 for h in non_empty)
    # no stratum deviates from its exact quota by more than the number of strata
    for h in sizes:
        assert abs(alloc[h] - min(n, total) * sizes[h] / max(total, 1)) <= len(sizes)


# --- random sample ----------------------------------------------------------------------------


def test_random_sample_deterministic_and_order_independent() -> None:
    ids = list(range(1000))
    a = random_sample(ids, 50, seed=3)
    assert a == random_sample(list(reversed(ids)), 50, seed=3)
    assert a != random_sample(ids, 50, seed=4)
    assert len(set(a)) == 50 and set(a) <= set(ids)
    assert sorted(random_sample(ids[:10], 50, seed=1)) == ids[:10]
    assert random_sample([], 5, seed=1) == []
    with pytest.raises(ValueError):
        random_sample([1, 1, 2], 1, seed=1)
    with pytest.raises(ValueError):
        random_sample([1, 2], -1, seed=1)


def test_random_sample_is_roughly_uniform() -> None:
    hits = Counter(x for seed in range(400) for x in random_sample(range(10), 3, seed=seed))
    # each id expected 120 times; a biased sampler (e.g. always the first ids) fails this
    assert all(80 <= hits[x] <= 160 for x in range(10))


# --- stratified sample ------------------------------------------------------------------------


def pooled() -> list[tuple[int, tuple[str, str]]]:
    out = []
    cid = 0
    for stratum, size in [
        (("rules", "negation"), 600),
        (("llm", "antonym"), 300),
        (("llm", "rare"), 3),
    ]:
        for _ in range(size):
            out.append((cid, stratum))
            cid += 1
    return out


def test_stratified_sample_follows_allocation() -> None:
    pairs = pooled()
    stratum_of = dict(pairs)
    picked = stratified_sample(pairs, 30, seed=0)
    assert len(picked) == len(set(picked)) == 30
    counts = Counter(stratum_of[c] for c in picked)
    # 30·(600, 300, 3)/903 = 19.93, 9.97, 0.10 -> 20, 10, 0 -> rare gets one from the most
    # over-allocated (negation: +0.07 vs antonym +0.03)
    assert counts == {("rules", "negation"): 19, ("llm", "antonym"): 10, ("llm", "rare"): 1}


def test_stratified_sample_deterministic_order_independent_and_shuffled() -> None:
    pairs = pooled()
    a = stratified_sample(pairs, 60, seed=7)
    shuffled = list(pairs)
    random.Random(1).shuffle(shuffled)
    assert a == stratified_sample(shuffled, 60, seed=7)
    assert a != stratified_sample(pairs, 60, seed=8)
    stratum_of = dict(pairs)
    # returned shuffled, not grouped by stratum (grouped output would switch stratum twice)
    sequence = [stratum_of[c] for c in a]
    switches = sum(1 for x, y in itertools.pairwise(sequence) if x != y)
    assert switches > 10


def test_stratified_sample_edges() -> None:
    pairs = pooled()
    assert sorted(stratified_sample(pairs, 10_000, seed=0)) == [c for c, _ in pairs]
    assert stratified_sample(pairs, 0, seed=0) == []
    assert stratified_sample([], 3, seed=0) == []
    with pytest.raises(ValueError):
        stratified_sample([(1, "a"), (1, "b")], 1, seed=0)


# --- uncertainty sample -----------------------------------------------------------------------


def test_uncertainty_sample_least_confident_first() -> None:
    ids = ["a", "b", "c", "d", "e"]
    conf = [0.9, 0.51, 0.7, 0.55, 0.99]
    assert uncertainty_sample(ids, conf, 3, seed=0) == ["b", "d", "c"]
    assert uncertainty_sample(ids, conf, 10, seed=0) == ["b", "d", "c", "a", "e"]
    assert uncertainty_sample(ids, conf, 0, seed=0) == []


def test_uncertainty_sample_ties_are_seeded_and_order_independent() -> None:
    ids = list(range(100))
    conf = [0.5] * 100
    a = uncertainty_sample(ids, conf, 10, seed=1)
    assert a == uncertainty_sample(ids, conf, 10, seed=1)
    assert a != uncertainty_sample(ids, conf, 10, seed=2)
    assert a != list(range(10))  # ties are not broken by position
    rev = list(reversed(ids))
    assert uncertainty_sample(rev, conf, 10, seed=1) == a


def test_uncertainty_sample_with_diversity_groups_round_robin() -> None:
    # group "neg" holds the 6 least confident; without groups it takes the whole budget
    ids = [f"n{i}" for i in range(6)] + ["a0", "a1", "r0"]
    conf = [0.50, 0.51, 0.52, 0.53, 0.54, 0.55, 0.80, 0.60, 0.95]
    groups = ["neg"] * 6 + ["ant", "ant", "rare"]
    assert uncertainty_sample(ids, conf, 4, seed=0) == ["n0", "n1", "n2", "n3"]
    diverse = uncertainty_sample(ids, conf, 4, seed=0, diversity_groups=groups)
    # round 1: least confident of each group, by confidence: n0, a1, r0; round 2 starts with n1
    assert diverse == ["n0", "a1", "r0", "n1"]
    assert len(uncertainty_sample(ids, conf, 100, seed=0, diversity_groups=groups)) == 9


def test_uncertainty_sample_validation() -> None:
    with pytest.raises(ValueError):
        uncertainty_sample([1, 2], [0.5], 1, seed=0)
    with pytest.raises(ValueError):
        uncertainty_sample([1, 2], [0.5, float("nan")], 1, seed=0)
    with pytest.raises(ValueError):
        uncertainty_sample([1, 2], [0.5, 0.4], 1, seed=0, diversity_groups=["a"])
    with pytest.raises(ValueError):
        uncertainty_sample([1, 1], [0.5, 0.4], 1, seed=0)
