"""Run metrics with hand-computed values."""

from __future__ import annotations

import math

import pytest

from generation.ml import metrics as M


def test_distinct_n() -> None:
    texts = ["a b a", "a c"]
    assert M.distinct_n(texts, 1) == pytest.approx(3 / 5)  # {a, b, c} of 5 tokens
    assert M.distinct_n(texts, 2) == pytest.approx(3 / 3)  # (a b) (b a) (a c)
    assert M.distinct_n(["a a a a"], 2) == pytest.approx(1 / 3)
    assert M.distinct_n([], 1) == 0.0


def test_bleu_known_values() -> None:
    h = "the cat sat on the mat".split()
    assert M.bleu(h, [h]) == pytest.approx(1.0)
    # unigram precision only: 2 of 3 words match, same length -> 2/3
    assert M.bleu("a b c".split(), ["a b d".split()], max_n=1) == pytest.approx(2 / 3)
    # brevity penalty: hypothesis 2 words vs reference 4, all matching -> exp(1 - 4/2)
    assert M.bleu("a b".split(), ["a b c d".split()], max_n=1) == pytest.approx(math.exp(-1))
    assert M.bleu("a b".split(), ["x y".split()], max_n=1) == pytest.approx(0.1 / 2)  # epsilon smoothing


def test_self_bleu() -> None:
    assert M.self_bleu(["a man rides a bike", "a man rides a bike"]) == pytest.approx(1.0)
    diverse = M.self_bleu(["a man rides a bike", "two dogs sleep quietly indoors", "the sun sets over hills"])
    assert diverse < 0.05
    assert M.self_bleu(["only one"]) == 0.0


def test_token_edit_distance() -> None:
    assert M.token_edit_distance("a b c".split(), "a b c".split()) == 0
    assert M.token_edit_distance("a b c".split(), "a x c".split()) == 1
    assert M.token_edit_distance("a b c".split(), "a c".split()) == 1
    assert M.token_edit_distance("a b c".split(), "b c d".split()) == 2
    assert M.token_edit_distance("kitten sitting".split(), []) == 2
    assert M.token_edit_distance(list("kitten"), list("sitting")) == 3


def test_introduced_stats() -> None:
    s = M.introduced_stats([["not"], ["not", "very"], ["red", ","]])
    assert s["introduced_tokens"] == 4
    assert s["introduced_distinct_1"] == pytest.approx(3 / 4)
    assert s["introduced_max_share"] == pytest.approx(2 / 4) and s["introduced_top"] == "not"
    assert M.introduced_stats([])["introduced_tokens"] == 0


def test_run_metrics() -> None:
    stats = [
        M.CandidateStat(
            "a man rides", "a man never rides", "negation", similarity=0.8, kept={"similarity": True, "dedup": True}
        ),
        M.CandidateStat(
            "a man rides", "a woman rides", "lexical", similarity=0.9, kept={"similarity": False, "dedup": True}
        ),
        M.CandidateStat(
            "a dog runs",
            "a dog runs fast",
            "insert",
            introduced=("fast",),
            similarity=0.7,
            kept={"similarity": True, "dedup": False},
        ),
    ]
    m = M.run_metrics(2, stats)
    assert m["candidates"] == 3 and m["candidates_per_original"] == pytest.approx(1.5)
    assert m["acceptance_by_filter"] == {"dedup": pytest.approx(2 / 3), "similarity": pytest.approx(2 / 3)}
    assert m["accepted_all_filters"] == pytest.approx(1 / 3)
    assert m["mean_similarity"] == pytest.approx(0.8)
    assert m["mean_token_edit_distance"] == pytest.approx(1.0)
    assert m["share_per_code"] == {
        "insert": pytest.approx(1 / 3),
        "lexical": pytest.approx(1 / 3),
        "negation": pytest.approx(1 / 3),
    }
    # introduced: never (diff), woman (diff), fast (given)
    assert m["introduced_tokens"] == 3 and m["introduced_distinct_1"] == pytest.approx(1.0)
    # distinct-1 over the candidate texts: 11 tokens, {a, man, never, rides, woman, dog, runs, fast}
    assert m["distinct_1"] == pytest.approx(8 / 11)
    assert 0.0 <= m["self_bleu"] <= 1.0
