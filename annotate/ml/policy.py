"""Quality-control policies for annotators and items (pure, no Django).

* ``qualification_status`` — the qualification step: an annotator must answer ``required`` gold
  items with at least ``min_accuracy`` correct before getting real items (decided only once all
  ``required`` answers are in).
* ``flag_annotators`` — annotators whose gold accuracy is below a threshold.
* ``extra_annotations_needed`` / ``needs_more`` — MTurk-style plurality policy: collect ``k``
  annotations; while no label holds the required share, ask for one more, up to ``k_max``.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from enum import StrEnum
from typing import Literal

from annotate.ml.agreement import Accuracy, Aggregate

__all__ = [
    "QualificationStatus",
    "extra_annotations_needed",
    "flag_annotators",
    "needs_more",
    "qualification_status",
]

_FLOAT_SLACK = 1e-9  # so that a 2-of-3 vote meets min_agreement=0.667 entered as 2/3


class QualificationStatus(StrEnum):
    PASSED = "passed"
    PENDING = "pending"
    FAILED = "failed"


def qualification_status(gold_answers: Sequence[bool], *, required: int, min_accuracy: float) -> QualificationStatus:
    """Qualification outcome from an annotator's gold answers, oldest first (True = correct).

    Only the first ``required`` answers count (later gold answers are quality checks, not the
    qualification). Nothing is decided before ``required`` answers are in (a couple of early
    mistakes do not lock anybody out): then PASSED when at least
    ``ceil(min_accuracy · required)`` of them are correct, else FAILED; PENDING before that.
    ``required=0`` means no qualification: always PASSED.
    """
    if required < 0:
        raise ValueError("required must be >= 0")
    if not 0.0 <= min_accuracy <= 1.0:
        raise ValueError("min_accuracy must be in [0, 1]")
    if required == 0:
        return QualificationStatus.PASSED
    first = [bool(a) for a in gold_answers[:required]]
    if len(first) < required:
        return QualificationStatus.PENDING
    need = math.ceil(min_accuracy * required - _FLOAT_SLACK)
    return QualificationStatus.PASSED if sum(first) >= need else QualificationStatus.FAILED


def flag_annotators(
    accuracies: Mapping[Hashable, Accuracy],
    *,
    threshold: float,
    min_answers: int = 1,
    rule: Literal["ci", "point"] = "ci",
) -> set[Hashable]:
    """Annotators whose gold accuracy is below ``threshold``.

    Nobody is flagged with fewer than ``min_answers`` gold answers. With ``rule="ci"``
    (default) an annotator is flagged only when the *upper* bound of the Wilson interval is
    below ``threshold`` — i.e. we are confident (at ``Accuracy.confidence``) that the true
    accuracy is below it, so a few unlucky answers do not flag a good annotator. With
    ``rule="point"`` the observed accuracy alone is compared with ``threshold``.
    """
    if not 0.0 <= threshold <= 1.0:
        raise ValueError("threshold must be in [0, 1]")
    if min_answers < 1:
        raise ValueError("min_answers must be >= 1")
    if rule not in ("ci", "point"):
        raise ValueError(f"rule must be 'ci' or 'point', got {rule!r}")
    flagged: set[Hashable] = set()
    for annotator, acc in accuracies.items():
        if acc.n < min_answers:
            continue
        score = acc.ci_high if rule == "ci" else acc.accuracy
        if score < threshold:
            flagged.add(annotator)
    return flagged


def _vote_counts(votes: Mapping[str, int] | Aggregate | Iterable[str]) -> Counter[str]:
    if isinstance(votes, Aggregate):
        return Counter({k: v for k, v in votes.votes.items() if v})
    if isinstance(votes, Mapping):
        if any(int(v) < 0 for v in votes.values()):
            raise ValueError("vote counts must be >= 0")
        return Counter({k: int(v) for k, v in votes.items() if v})
    if isinstance(votes, str):
        raise TypeError("votes must be a mapping of label -> count or an iterable of labels")
    return Counter(votes)


def extra_annotations_needed(
    votes: Mapping[str, int] | Aggregate | Iterable[str],
    *,
    k: int,
    k_max: int,
    min_agreement: float,
) -> int:
    """How many more annotations an item should get now (MTurk plurality policy).

    ``votes`` is a label → count mapping, an ``Aggregate`` or the list of labels given so far.
    With n annotations: n < k → ``k − n`` (the base overlap is not complete yet); n ≥ ``k_max``
    → 0 (budget spent, the item stays contested); otherwise 0 if a single label holds a share
    ≥ ``min_agreement`` of the votes and strictly more votes than any other, else 1 (ask one
    more, then re-evaluate — a new vote can change the leader). "Unclear / invalid" is counted
    as an ordinary label; skips are not votes.
    """
    if k < 1:
        raise ValueError("k must be >= 1")
    if k_max < k:
        raise ValueError("k_max must be >= k")
    if not 0.0 < min_agreement <= 1.0:
        raise ValueError("min_agreement must be in (0, 1]")
    counts = _vote_counts(votes)
    n = sum(counts.values())
    if n < k:
        return k - n
    if n >= k_max:
        return 0
    ranked = counts.most_common(2)
    top = ranked[0][1]
    unique_leader = len(ranked) == 1 or ranked[1][1] < top
    if unique_leader and top / n + _FLOAT_SLACK >= min_agreement:
        return 0
    return 1


def needs_more(
    votes: Mapping[str, int] | Aggregate | Iterable[str],
    *,
    k: int,
    k_max: int,
    min_agreement: float,
) -> bool:
    """True when ``extra_annotations_needed(...) > 0``."""
    return extra_annotations_needed(votes, k=k, k_max=k_max, min_agreement=min_agreement) > 0
