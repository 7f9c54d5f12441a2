"""Quality-control policies (annotate.ml.policy): qualification, flagging, plurality policy."""

from __future__ import annotations

import pytest

from annotate.ml.agreement import Accuracy, gold_accuracy, majority_vote
from annotate.ml.policy import (
    QualificationStatus,
    extra_annotations_needed,
    flag_annotators,
    needs_more,
    qualification_status,
)

P, W, F = QualificationStatus.PASSED, QualificationStatus.PENDING, QualificationStatus.FAILED


# --- qualification ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answers", "expected"),
    [
        ([], W),
        ([True, True], W),
        ([True, True, True, True], W),  # 4 of 5 answered: must finish the test
        ([True, True, True, True, False], P),  # 4/5 = 0.8 meets 0.8
        ([True, True, True, False, False], F),
        ([False, False], W),  # no decision before 5 answers, even when 4/5 is out of reach (issue 18.11)
        ([False, False, False, False], W),
        ([False, False, True, True, True], F),
        ([True, False], W),  # 4/5 still reachable
        ([True, True, True, True, True, False, False, False], P),  # only the first 5 count
    ],
)
def test_qualification_status(answers: list[bool], expected: QualificationStatus) -> None:
    assert qualification_status(answers, required=5, min_accuracy=0.8) is expected


def test_qualification_status_edges() -> None:
    assert qualification_status([], required=0, min_accuracy=0.9) is P
    assert qualification_status([False], required=1, min_accuracy=0.0) is P
    # 2/3 entered as a rounded float still lets 2 of 3 pass
    assert qualification_status([True, True, False], required=3, min_accuracy=0.6666666667) is P
    assert qualification_status([True, False, False], required=3, min_accuracy=2 / 3) is F
    assert P == "passed" and F.value == "failed"  # usable as stored strings
    with pytest.raises(ValueError):
        qualification_status([], required=-1, min_accuracy=0.5)
    with pytest.raises(ValueError):
        qualification_status([], required=3, min_accuracy=1.5)


# --- flagging ---------------------------------------------------------------------------------


def test_flag_annotators_ci_rule_needs_confidence() -> None:
    answers = (
        [("good", True)] * 18 + [("good", False)] * 2  # 0.90
        + [("bad", True)] * 8 + [("bad", False)] * 12  # 0.40, CI high ≈ 0.61
        + [("unlucky", False)] * 2 + [("unlucky", True)] * 1  # 0.33 of 3, CI high ≈ 0.79
        + [("borderline", True)] * 12 + [("borderline", False)] * 8  # 0.60, CI high ≈ 0.78
    )  # fmt: skip
    acc = gold_accuracy(answers)
    assert flag_annotators(acc, threshold=0.7, min_answers=5) == {"bad"}
    # point rule: every observed accuracy under the threshold, once enough answers are in
    assert flag_annotators(acc, threshold=0.7, min_answers=5, rule="point") == {"bad", "borderline"}
    assert flag_annotators(acc, threshold=0.7, min_answers=1, rule="point") == {
        "bad",
        "borderline",
        "unlucky",
    }
    assert flag_annotators(acc, threshold=0.7, min_answers=21) == set()


def test_flag_annotators_boundary_is_strict() -> None:
    acc = {"a": Accuracy(n=10, correct=7, accuracy=0.7, ci_low=0.4, ci_high=0.7)}
    assert flag_annotators(acc, threshold=0.7, rule="ci") == set()
    assert flag_annotators(acc, threshold=0.7, rule="point") == set()
    assert flag_annotators(acc, threshold=0.71, rule="ci") == {"a"}
    with pytest.raises(ValueError):
        flag_annotators(acc, threshold=1.2)
    with pytest.raises(ValueError):
        flag_annotators(acc, threshold=0.5, min_answers=0)
    with pytest.raises(ValueError):
        flag_annotators(acc, threshold=0.5, rule="mean")  # type: ignore[arg-type]


# --- plurality policy -------------------------------------------------------------------------

POLICY = {"k": 3, "k_max": 5, "min_agreement": 2 / 3}


@pytest.mark.parametrize(
    ("votes", "expected"),
    [
        ([], 3),
        (["a"], 2),
        (["a", "b"], 1),  # base overlap first
        (["a", "a", "b"], 0),  # 2/3 meets 2/3
        (["a", "b", "c"], 1),  # three-way split: one more
        (["a", "b", "c", "a"], 1),  # 2/4 < 2/3
        (["a", "b", "a", "a"], 0),  # 3/4
        (["a", "b", "c", "a", "b"], 0),  # k_max reached: stop even though contested
        (["a", "a", "a", "a", "a", "a"], 0),
    ],
)
def test_extra_annotations_needed_plurality(votes: list[str], expected: int) -> None:
    assert extra_annotations_needed(votes, **POLICY) == expected
    assert needs_more(votes, **POLICY) is (expected > 0)


def test_extra_annotations_tie_with_low_threshold_still_needs_more() -> None:
    # 2-2 split reaches share 0.5 but has no unique leader
    assert extra_annotations_needed({"a": 2, "b": 2}, k=3, k_max=7, min_agreement=0.5) == 1
    assert extra_annotations_needed({"a": 3, "b": 2}, k=3, k_max=7, min_agreement=0.5) == 0


def test_extra_annotations_accepts_counts_and_aggregates() -> None:
    assert extra_annotations_needed({"a": 2, "b": 1, "c": 0}, **POLICY) == 0
    assert extra_annotations_needed({"a": 1, "b": 1, "c": 1}, **POLICY) == 1
    agg = majority_vote([(1, "w1", "a"), (1, "w2", "b"), (1, "w3", "c")], labels=["a", "b", "c"])
    assert extra_annotations_needed(agg[1], **POLICY) == 1
    assert needs_more(agg[1], k=3, k_max=3, min_agreement=0.6) is False


def test_extra_annotations_validation() -> None:
    with pytest.raises(ValueError):
        extra_annotations_needed([], k=0, k_max=3, min_agreement=0.5)
    with pytest.raises(ValueError):
        extra_annotations_needed([], k=3, k_max=2, min_agreement=0.5)
    with pytest.raises(ValueError):
        extra_annotations_needed([], k=3, k_max=5, min_agreement=0.0)
    with pytest.raises(ValueError):
        extra_annotations_needed({"a": -1}, k=3, k_max=5, min_agreement=0.5)
    with pytest.raises(TypeError):
        extra_annotations_needed("aab", k=3, k_max=5, min_agreement=0.5)
