"""Whether h may default to a task model f (issue 30). No Django.

A capped f scored 0.378 held-out on NLI, which is chance, and was then offered as the default
for "Train h" without a word. So f is judged before h defaults to it: its held-out accuracy must
beat chance — the larger of 1 / number of labels and the held-out set's majority share (what
always answering the commonest label scores) — by ``MIN_EDGE`` with a one-sided ``CONFIDENCE``
Wilson lower bound. An f that fails is not read by default, and the reason is shown.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

CONFIDENCE = 0.95
MIN_EDGE = 0.05  # f's lower bound must be at least this far above chance
Z = 1.6449  # one-sided 95 %


def wilson_lower(accuracy: float, n: int, z: float = Z) -> float:
    """The Wilson score lower bound of a proportion ``accuracy`` observed on ``n`` trials."""
    if n <= 0:
        return 0.0
    p = min(max(accuracy, 0.0), 1.0)
    centre = p + z * z / (2 * n)
    margin = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return max(0.0, (centre - margin) / (1 + z * z / n))


@dataclass(frozen=True)
class TaskGate:
    usable: bool
    reason: str
    lower: float | None = None
    chance: float | None = None


def judge_task_model(
    held_out_accuracy: float | None, n_held_out: int, n_labels: int, majority_share: float | None = None
) -> TaskGate:
    """The verdict on one f from its held-out figures (``majority_share``: the commonest
    label's share of its held-out set, when known)."""
    chance = max(1.0 / max(n_labels, 1), majority_share or 0.0)
    if held_out_accuracy is None or n_held_out <= 0:
        return TaskGate(
            False, "it has no held-out accuracy (trained with no held-out share), so whether it beats chance is unknown"
        )
    lower = wilson_lower(held_out_accuracy, n_held_out)
    figures = (
        f"held-out accuracy {held_out_accuracy:.3f} on {n_held_out} examples (95 % lower bound {lower:.3f}) "
        f"against chance {chance:.3f}"
    )
    if lower < chance + MIN_EDGE:
        return TaskGate(
            False,
            f"it is near chance: {figures}; it needs a lower bound at least {MIN_EDGE} above chance "
            "(train it on more examples or epochs)",
            round(lower, 4),
            round(chance, 4),
        )
    return TaskGate(True, f"it beats chance: {figures}", round(lower, 4), round(chance, 4))
