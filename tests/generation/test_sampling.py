"""The stratified, seeded sample of originals a run with a limit takes (issue 19.5). The runs
that use it are tested in test_runs.py, test_generate_command.py and test_run_views.py."""

from __future__ import annotations

from collections import Counter

from generation.ml.sampling import stratified_sample


# -- the sampler (no database) -----------------------------------------------------------
def test_round_robin_across_labels_whatever_the_id_order():
    # sorted by label, as CAD's files are: ids 0-59 entailment, 60-119 neutral, 120-179 contradiction
    items = [(i, ("entailment", "neutral", "contradiction")[i // 60]) for i in range(180)]
    picked = stratified_sample(items, 30, seed=0)
    assert len(picked) == len(set(picked)) == 30
    assert Counter(items[i][1] for i in picked) == {"entailment": 10, "neutral": 10, "contradiction": 10}
    # every prefix is balanced too (the order the run walks): a run cancelled after 6 saw 2 of each
    assert Counter(items[i][1] for i in picked[:6]) == {"entailment": 2, "neutral": 2, "contradiction": 2}
    # not the first ids of each label: shuffled within a label
    assert sorted(picked) != sorted([*range(10), *range(60, 70), *range(120, 130)])


def test_seeded_deterministic_and_input_order_free():
    items = [(i, i % 3) for i in range(50)]
    a = stratified_sample(items, 12, seed=5)
    assert a == stratified_sample(list(reversed(items)), 12, seed=5)
    assert a != stratified_sample(items, 12, seed=6)


def test_small_labels_run_out_and_the_others_fill_up():
    items = [(i, "big") for i in range(20)] + [(100, "rare"), (101, None)]
    picked = stratified_sample(items, 10, seed=1)
    assert {100, 101} <= set(picked) and len(picked) == 10
    assert stratified_sample(items, 100, seed=1) and len(stratified_sample(items, 100, seed=1)) == 22
    assert stratified_sample(items, 0, seed=1) == [] and stratified_sample([], 3, seed=1) == []
