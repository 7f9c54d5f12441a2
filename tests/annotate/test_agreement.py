"""Aggregation and agreement figures (annotate.ml.agreement): published values, hand-computed
cases, edge cases and a synthetic crowd where Dawid–Skene must beat majority vote."""

from __future__ import annotations

import math
import random
import warnings

import numpy as np
import pytest

from annotate.ml.agreement import (
    FLEISS_FORMULA,
    KRIPPENDORFF_FORMULA,
    Aggregate,
    Annotation,
    agreement_by,
    agreement_with_aggregate,
    dawid_skene,
    fleiss_kappa,
    gold_accuracy,
    krippendorff_alpha,
    majority_vote,
    wilson_interval,
)

# --- published data ---------------------------------------------------------------------------

# Krippendorff (2011) "Computing Krippendorff's Alpha-Reliability", the 4 coders x 12 units
# example with missing values: nominal alpha = 0.743, ordinal alpha = 0.815.
_K = None
KRIPP_DATA = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, _K, _K, _K],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, _K, 3],
    [_K, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, _K],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, _K],
]
FIVE = ["1", "2", "3", "4", "5"]


def kripp_annotations() -> list[tuple[int, str, str]]:
    return [
        (unit, f"coder{c}", str(v)) for c, row in enumerate(KRIPP_DATA) for unit, v in enumerate(row) if v is not None
    ]


# Fleiss (1971), psychiatric diagnoses of 30 patients by 6 raters into 5 categories
# (as distributed in R's irr::diagnoses); irr::kappam.fleiss gives 0.4302445 (Fleiss: 0.430).
DIAGNOSES = [
    [4, 4, 4, 4, 4, 4], [2, 2, 2, 5, 5, 5], [2, 3, 3, 3, 3, 5], [5, 5, 5, 5, 5, 5],
    [2, 2, 2, 4, 4, 4], [1, 1, 3, 3, 3, 3], [3, 3, 3, 3, 5, 5], [1, 1, 3, 3, 3, 4],
    [1, 1, 4, 4, 4, 4], [5, 5, 5, 5, 5, 5], [1, 4, 4, 4, 4, 4], [1, 2, 4, 4, 4, 4],
    [2, 2, 2, 3, 3, 3], [1, 4, 4, 4, 4, 4], [2, 2, 4, 4, 4, 5], [3, 3, 3, 3, 3, 5],
    [1, 1, 1, 4, 5, 5], [1, 1, 1, 1, 1, 2], [2, 2, 4, 4, 4, 4], [1, 3, 3, 5, 5, 5],
    [5, 5, 5, 5, 5, 5], [2, 4, 4, 4, 4, 4], [2, 2, 4, 5, 5, 5], [1, 1, 4, 4, 4, 4],
    [1, 4, 4, 4, 4, 5], [2, 2, 2, 2, 2, 4], [1, 1, 1, 1, 5, 5], [2, 2, 4, 4, 4, 4],
    [1, 3, 3, 3, 3, 3], [5, 5, 5, 5, 5, 5],
]  # fmt: skip
DIAGNOSIS_LABELS = ["depression", "personality disorder", "schizophrenia", "neurosis", "other"]


def diagnoses_annotations() -> list[tuple[int, str, str]]:
    return [
        (patient, f"rater{r}", DIAGNOSIS_LABELS[code - 1])
        for patient, row in enumerate(DIAGNOSES)
        for r, code in enumerate(row)
    ]


# Wikipedia "Fleiss' kappa" worked example: 10 subjects, 14 raters, 5 categories (counts per
# category); P̄ = 0.378, P̄e = 0.213, κ = 0.210.
WIKI_COUNTS = [
    [0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0], [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2], [6, 5, 2, 1, 0], [0, 2, 2, 3, 7],
]  # fmt: skip


def counts_to_annotations(rows: list[list[int]], labels: list[str]) -> list[tuple[int, str, str]]:
    out = []
    for item, row in enumerate(rows):
        rater = 0
        for label, count in zip(labels, row, strict=True):
            for _ in range(count):
                out.append((item, f"r{rater}", label))
                rater += 1
    return out


# --- Krippendorff's alpha ---------------------------------------------------------------------


def test_krippendorff_textbook_nominal() -> None:
    score = krippendorff_alpha(kripp_annotations(), labels=FIVE)
    assert score.value == pytest.approx(0.743, abs=5e-4)
    assert score.value == pytest.approx(0.7434210526, abs=1e-9)
    assert score.n_items == 11  # unit 12 has one value only: not pairable
    assert score.n_annotations == 40
    assert score.formula == KRIPPENDORFF_FORMULA
    # coincidence-matrix agreements are consistent with the package's alpha
    assert score.observed is not None and score.expected is not None
    assert score.observed == pytest.approx(0.8)  # 32 of 40 pairable values coincide
    assert (score.observed - score.expected) / (1 - score.expected) == pytest.approx(score.value)


def test_krippendorff_textbook_ordinal() -> None:
    score = krippendorff_alpha(kripp_annotations(), labels=FIVE, level="ordinal")
    assert score.value == pytest.approx(0.815, abs=5e-4)
    assert score.observed is None


def test_krippendorff_ordinal_depends_on_label_order() -> None:
    shuffled = ["3", "1", "5", "2", "4"]
    a = krippendorff_alpha(kripp_annotations(), labels=shuffled, level="ordinal").value
    assert a != pytest.approx(0.815, abs=5e-3)
    nominal = krippendorff_alpha(kripp_annotations(), labels=shuffled).value
    assert nominal == pytest.approx(0.7434210526)  # nominal does not care


def test_krippendorff_observed_expected_match_package_on_random_data() -> None:
    rng = random.Random(7)
    labels = ["a", "b", "c"]
    anns = [(i, w, rng.choice(labels)) for i in range(40) for w in range(5) if rng.random() < 0.6]
    s = krippendorff_alpha(anns, labels=labels)
    assert s.observed is not None and s.expected is not None
    assert (s.observed - s.expected) / (1 - s.expected) == pytest.approx(s.value, abs=1e-12)


def test_krippendorff_rejects_interval_level() -> None:
    with pytest.raises(ValueError, match="level"):
        krippendorff_alpha(kripp_annotations(), labels=FIVE, level="interval")  # type: ignore[arg-type]


# --- Fleiss' kappa ----------------------------------------------------------------------------


def test_fleiss_1971_diagnoses() -> None:
    score = fleiss_kappa(diagnoses_annotations(), labels=DIAGNOSIS_LABELS)
    assert score.value == pytest.approx(0.4302445, abs=1e-7)
    assert score.n_items == 30
    assert score.n_annotations == 180
    assert score.formula == FLEISS_FORMULA


def test_fleiss_wikipedia_example() -> None:
    labels = ["c1", "c2", "c3", "c4", "c5"]
    score = fleiss_kappa(counts_to_annotations(WIKI_COUNTS, labels), labels=labels)
    assert score.value == pytest.approx(0.210, abs=5e-4)
    assert score.observed == pytest.approx(0.378, abs=5e-4)
    assert score.expected == pytest.approx(0.213, abs=5e-4)
    assert score.n_items == 10


def test_fleiss_unequal_raters_hand_computed() -> None:
    # A: x x y (P=1/3), B: x x (P=1), C: y alone (dropped). P̄ = 2/3; p = (4/5, 1/5);
    # P̄e = 0.68; κ = (2/3 − 0.68) / 0.32 = −1/24.
    anns = [
        ("A", 1, "x"), ("A", 2, "x"), ("A", 3, "y"),
        ("B", 1, "x"), ("B", 4, "x"),
        ("C", 2, "y"),
    ]  # fmt: skip
    score = fleiss_kappa(anns, labels=["x", "y"])
    assert score.value == pytest.approx(-1 / 24)
    assert score.observed == pytest.approx(2 / 3)
    assert score.expected == pytest.approx(0.68)
    assert score.n_items == 2
    assert score.n_annotations == 5


def test_fleiss_ignores_annotator_identity_and_order() -> None:
    anns = diagnoses_annotations()
    relabelled = [(i, f"{a}-on-{i}", lab) for i, a, lab in reversed(anns)]
    a = fleiss_kappa(anns, labels=DIAGNOSIS_LABELS).value
    b = fleiss_kappa(relabelled, labels=DIAGNOSIS_LABELS).value
    assert a == pytest.approx(b, abs=1e-12)


def test_perfect_agreement_with_two_labels_is_one() -> None:
    anns = [(i, w, "yes" if i % 2 else "no") for i in range(6) for w in range(3)]
    assert fleiss_kappa(anns, labels=["yes", "no"]).value == pytest.approx(1.0)
    assert krippendorff_alpha(anns, labels=["yes", "no"]).value == pytest.approx(1.0)


def test_all_same_label_is_undefined_nan() -> None:
    anns = [(i, w, "yes") for i in range(5) for w in range(3)]
    kappa = fleiss_kappa(anns, labels=["yes", "no"])
    alpha = krippendorff_alpha(anns, labels=["yes", "no"])
    for score in (kappa, alpha):
        assert math.isnan(score.value)
        assert not score.defined
        assert score.n_items == 5


def test_single_annotator_is_undefined_with_zero_items() -> None:
    anns = [(i, "only", "yes" if i % 2 else "no") for i in range(5)]
    for score in (
        fleiss_kappa(anns, labels=["yes", "no"]),
        krippendorff_alpha(anns, labels=["yes", "no"]),
    ):
        assert math.isnan(score.value)
        assert score.n_items == 0
        assert score.n_annotations == 0


def test_systematic_disagreement_is_negative() -> None:
    anns = [(i, w, lab) for i in range(10) for w, lab in enumerate(["a", "b"])]
    assert fleiss_kappa(anns, labels=["a", "b"]).value == pytest.approx(-1.0)
    assert krippendorff_alpha(anns, labels=["a", "b"]).value < 0


@pytest.mark.parametrize("fn", [fleiss_kappa, krippendorff_alpha, majority_vote, dawid_skene], ids=lambda f: f.__name__)
def test_bad_input_raises_value_error(fn) -> None:  # type: ignore[no-untyped-def]
    with pytest.raises(ValueError, match="no annotations"):
        fn([], labels=["a", "b"])
    with pytest.raises(ValueError, match="not one of"):
        fn([(1, 1, "a"), (1, 2, "c")], labels=["a", "b"])
    with pytest.raises(ValueError, match="more than once"):
        fn([(1, 1, "a"), (1, 1, "b")], labels=["a", "b"])
    with pytest.raises(ValueError, match="labels"):
        fn([(1, 1, "a")], labels=[])
    with pytest.raises(ValueError, match="unique"):
        fn([(1, 1, "a")], labels=["a", "a"])
    with pytest.raises(ValueError, match="annotation must be"):
        fn([(1, "a")], labels=["a", "b"])


# --- agreement_by -----------------------------------------------------------------------------


def test_agreement_by_groups_match_direct_computation() -> None:
    anns = diagnoses_annotations()
    key = {p: ("negation" if p < 15 else "antonym") for p in range(29)}  # patient 29: ungrouped
    out = agreement_by(anns, key, labels=DIAGNOSIS_LABELS)
    assert list(out) == ["negation", "antonym"]
    first = [a for a in anns if a[0] < 15]
    second = [a for a in anns if 15 <= a[0] < 29]
    assert out["negation"].fleiss_kappa == fleiss_kappa(first, labels=DIAGNOSIS_LABELS)
    assert out["antonym"].krippendorff_alpha == krippendorff_alpha(second, labels=DIAGNOSIS_LABELS)
    assert out["negation"].n_items == 15 and out["antonym"].n_items == 14
    assert out["antonym"].n_annotations == 14 * 6
    assert out["negation"].fleiss_kappa.value != pytest.approx(out["antonym"].fleiss_kappa.value)
    with pytest.raises(ValueError):
        agreement_by([], key, labels=DIAGNOSIS_LABELS)


# --- majority vote ----------------------------------------------------------------------------


def test_majority_vote_hand_cases() -> None:
    anns = [
        Annotation("i1", "w1", "a"), Annotation("i1", "w2", "a"), Annotation("i1", "w3", "b"),
        ("i2", "w1", "b"), ("i2", "w2", "a"),
        ("i3", "w3", "c"),
    ]  # fmt: skip
    out = majority_vote(anns, labels=["a", "b", "c"])
    assert list(out) == ["i1", "i2", "i3"]
    assert out["i1"] == Aggregate(label="a", votes={"a": 2, "b": 1, "c": 0}, share=2 / 3, n=3)
    assert out["i2"].label is None  # tie abstains
    assert out["i2"].share == 0.5
    assert out["i3"].label == "c" and out["i3"].share == 1.0
    first = majority_vote(anns, labels=["a", "b", "c"], tie_break="first")
    assert first["i2"].label == "a"  # first in label order, not in annotation order
    reordered = majority_vote(anns, labels=["b", "a", "c"], tie_break="first")
    assert reordered["i2"].label == "b"
    with pytest.raises(ValueError, match="tie_break"):
        majority_vote(anns, labels=["a", "b", "c"], tie_break="random")  # type: ignore[arg-type]


# --- Dawid–Skene ------------------------------------------------------------------------------

DS_LABELS = ("entailment", "neutral", "contradiction")


def synthetic_crowd(seed: int, n_items: int = 300) -> tuple[list[tuple[str, str, str]], dict[str, str]]:
    """Two reliable annotators (90 %), a lazy spammer (always the first label), an adversary
    (shifts the true label 80 % of the time) and a uniform random spammer; the three
    unreliable ones each skip ~20 % of the items."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(0, 3, n_items)
    anns: list[tuple[str, str, str]] = []
    for worker in range(5):
        for i in range(n_items):
            if worker >= 2 and rng.random() > 0.8:
                continue
            t = int(truth[i])
            if worker < 2:
                lab = t if rng.random() < 0.9 else int(rng.choice([x for x in range(3) if x != t]))
            elif worker == 2:
                lab = 0
            elif worker == 3:
                lab = (t + 1) % 3 if rng.random() < 0.8 else int(rng.integers(0, 3))
            else:
                lab = int(rng.integers(0, 3))
            anns.append((f"item{i}", f"w{worker}", DS_LABELS[lab]))
    return anns, {f"item{i}": DS_LABELS[int(truth[i])] for i in range(n_items)}


def accuracy(pred: dict, truth: dict[str, str]) -> float:  # type: ignore[type-arg]
    return float(np.mean([pred[i] == truth[i] for i in truth]))


@pytest.mark.parametrize("engine", ["crowdkit", "numpy"])
def test_dawid_skene_beats_majority_vote_with_spammers(engine: str) -> None:
    anns, truth = synthetic_crowd(seed=0, n_items=200)
    mv = majority_vote(anns, labels=DS_LABELS, tie_break="first")
    mv_acc = accuracy({i: a.label for i, a in mv.items()}, truth)
    ds = dawid_skene(anns, labels=DS_LABELS, engine=engine)  # type: ignore[arg-type]
    ds_acc = accuracy(dict(ds.label_of), truth)
    assert mv_acc < 0.75
    assert ds_acc > 0.9
    assert ds_acc - mv_acc > 0.2
    assert ds.converged
    # the model recognises who is reliable
    assert ds.accuracy_of("w0") > 0.8 and ds.accuracy_of("w1") > 0.8
    for bad in ("w2", "w3", "w4"):
        assert ds.accuracy_of(bad) < 0.45
    # the adversary's confusion matrix shows the shift entailment -> neutral
    assert ds.confusion["w3"]["entailment"]["neutral"] > 0.6
    # the lazy spammer always says "entailment", whatever the truth
    for true in DS_LABELS:
        assert ds.confusion["w2"][true]["entailment"] > 0.95


@pytest.mark.parametrize("engine", ["crowdkit", "numpy"])
def test_dawid_skene_output_shapes(engine: str) -> None:
    anns = [("a", 1, "x"), ("a", 2, "x"), ("b", 1, "y"), ("b", 3, "y"), ("c", 2, "x")]
    ds = dawid_skene(anns, labels=["x", "y", "unused"], engine=engine)  # type: ignore[arg-type]
    assert list(ds.posteriors) == ["a", "b", "c"]
    assert list(ds.confusion) == [1, 2, 3]
    for post in ds.posteriors.values():
        assert list(post) == ["x", "y", "unused"]
        assert sum(post.values()) == pytest.approx(1.0)
    for matrix in ds.confusion.values():
        assert list(matrix) == ["x", "y", "unused"]
        for row in matrix.values():
            assert sum(row.values()) == pytest.approx(1.0)
    assert ds.label_of == {"a": "x", "b": "y", "c": "x"}
    assert ds.posteriors["a"]["unused"] < 1e-6
    assert sum(ds.priors.values()) == pytest.approx(1.0)


def test_dawid_skene_engines_agree() -> None:
    anns, _ = synthetic_crowd(seed=3, n_items=120)
    a = dawid_skene(anns, labels=DS_LABELS, engine="crowdkit", tol=1e-8)
    b = dawid_skene(anns, labels=DS_LABELS, engine="numpy", tol=1e-8)
    assert a.label_of == b.label_of
    for item in a.posteriors:
        for lab in DS_LABELS:
            assert a.posteriors[item][lab] == pytest.approx(b.posteriors[item][lab], abs=1e-3)
    for w in a.confusion:
        for t in DS_LABELS:
            for g in DS_LABELS:
                assert a.confusion[w][t][g] == pytest.approx(b.confusion[w][t][g], abs=1e-3)


@pytest.mark.parametrize("engine", ["crowdkit", "numpy"])
def test_dawid_skene_is_deterministic_and_order_independent(engine: str) -> None:
    anns, _ = synthetic_crowd(seed=1, n_items=60)
    first = dawid_skene(anns, labels=DS_LABELS, engine=engine)  # type: ignore[arg-type]
    again = dawid_skene(anns, labels=DS_LABELS, engine=engine)  # type: ignore[arg-type]
    assert first == again
    shuffled = list(anns)
    random.Random(5).shuffle(shuffled)
    other = dawid_skene(shuffled, labels=DS_LABELS, engine=engine)  # type: ignore[arg-type]
    assert other.label_of == dict(first.label_of)
    for item in first.posteriors:
        for lab in DS_LABELS:
            assert other.posteriors[item][lab] == pytest.approx(first.posteriors[item][lab], abs=1e-6)


@pytest.mark.parametrize("engine", ["crowdkit", "numpy"])
def test_dawid_skene_gold_clamps_known_items(engine: str) -> None:
    # two annotators who always disagree: without gold the split item is a coin flip
    anns = [("g1", "w1", "x"), ("g1", "w2", "y"), ("g2", "w1", "y"), ("g2", "w2", "x"),
            ("q", "w1", "x"), ("q", "w2", "y")]  # fmt: skip
    ds = dawid_skene(anns, labels=["x", "y"], gold={"g1": "x", "g2": "y", "absent": "x"}, engine=engine)  # type: ignore[arg-type]
    assert ds.posteriors["g1"]["x"] == pytest.approx(1.0)
    assert ds.posteriors["g2"]["y"] == pytest.approx(1.0)
    # w1 matched both gold answers, w2 neither: the contested item follows w1
    assert ds.label_of["q"] == "x"
    assert ds.accuracy_of("w1") > ds.accuracy_of("w2")
    with pytest.raises(ValueError, match="gold label"):
        dawid_skene(anns, labels=["x", "y"], gold={"g1": "z"}, engine=engine)  # type: ignore[arg-type]


def test_dawid_skene_crowdkit_emits_no_warnings() -> None:
    anns, _ = synthetic_crowd(seed=2, n_items=30)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        dawid_skene(anns, labels=DS_LABELS, engine="crowdkit")


def test_dawid_skene_rejects_unknown_engine() -> None:
    with pytest.raises(ValueError, match="engine"):
        dawid_skene([(1, 1, "a")], labels=["a"], engine="torch")  # type: ignore[arg-type]


# --- gold accuracy and agreement with the aggregate -------------------------------------------


@pytest.mark.parametrize(
    ("k", "n", "low", "high"),
    # Newcombe (1998) Statistics in Medicine 17:857, Table I, method 3 (Wilson score)
    [
        (81, 263, 0.2553, 0.3662),
        (15, 148, 0.0624, 0.1605),
        (0, 20, 0.0, 0.1611),
        (1, 29, 0.0061, 0.1718),
    ],
)
def test_wilson_interval_newcombe_1998(k: int, n: int, low: float, high: float) -> None:
    lo, hi = wilson_interval(k, n)
    assert lo == pytest.approx(low, abs=5e-5)
    assert hi == pytest.approx(high, abs=5e-5)


def test_wilson_interval_edges() -> None:
    assert wilson_interval(0, 5)[0] == 0.0
    assert wilson_interval(5, 5)[1] == 1.0
    lo95, hi95 = wilson_interval(7, 10)
    lo99, hi99 = wilson_interval(7, 10, confidence=0.99)
    assert lo99 < lo95 < 0.7 < hi95 < hi99
    for bad in [(1, 0), (3, 2), (-1, 2)]:
        with pytest.raises(ValueError):
            wilson_interval(*bad)
    with pytest.raises(ValueError):
        wilson_interval(1, 2, confidence=1.0)


def test_gold_accuracy() -> None:
    answers = [("ann", True)] * 8 + [("ann", False)] * 2 + [("bob", False), ("bob", True)]
    out = gold_accuracy(answers)
    assert list(out) == ["ann", "bob"]
    ann = out["ann"]
    assert (ann.n, ann.correct, ann.accuracy) == (10, 8, 0.8)
    assert (ann.ci_low, ann.ci_high) == pytest.approx(wilson_interval(8, 10))
    assert ann.ci_low == pytest.approx(0.4902, abs=1e-4)  # hand-checked Wilson 8/10
    assert ann.ci_high == pytest.approx(0.9433, abs=1e-4)
    assert out["bob"].accuracy == 0.5
    with pytest.raises(ValueError):
        gold_accuracy([])


def test_agreement_with_aggregate() -> None:
    anns = [("i1", "w1", "a"), ("i1", "w2", "a"), ("i1", "w3", "b"),
            ("i2", "w1", "b"), ("i2", "w2", "b"), ("i2", "w3", "b"),
            ("i3", "w1", "a"), ("i3", "w3", "b")]  # fmt: skip
    mv = majority_vote(anns, labels=["a", "b"])  # i3 is a tie -> abstain, skipped
    out = agreement_with_aggregate(anns, mv)
    assert out["w1"].n == 2 and out["w1"].agreed == 2 and out["w1"].rate == 1.0
    assert out["w3"].n == 2 and out["w3"].agreed == 1 and out["w3"].rate == 0.5
    plain = agreement_with_aggregate(anns, {"i1": "b", "i3": "a"})
    assert plain["w3"].rate == 0.5 and plain["w3"].n == 2
    assert plain["w2"].rate == 0.0 and plain["w2"].n == 1
