"""Validity of candidates as h sees it, and the export that auto-labelling would hand out.
No Django.

Annotators answer "Unclear / invalid" for a counterfactual that is not fluent, sensible text;
a pair file may carry the same judgement as ``counterfactual.valid`` (docs/formats.md §1).
:class:`ValidityPrior` learns from those judgements how likely a candidate is to be valid,
per control code (the code explains most of it: on the generated-gold dev set ``shuffle`` is
7 % valid and ``delete`` 84 %), smoothed towards the overall rate so that a code with two
judgements does not get 0 or 1. Auto-labelling never labels a candidate whose estimated
validity is below ``min_valid``.

:func:`export_shares` is the export simulation of ``bench_pairwise`` (docs/formats.md §3).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

# below this estimated probability of being valid, a candidate gets no automatic label
MIN_VALID = 0.5
SMOOTHING = 2.0  # pseudo-judgements of the overall rate added to each code's own


@dataclass
class ValidityPrior:
    """P(valid | control code) from the judgements seen (Beta-smoothed per code)."""

    smoothing: float = SMOOTHING
    overall: float = 1.0
    by_code: dict[str, float] = field(default_factory=dict)
    n: int = 0

    def fit(self, codes: Sequence[str], valid: Sequence[bool]) -> ValidityPrior:
        if len(codes) != len(valid):
            raise ValueError("codes and valid must have the same length")
        v = np.asarray(valid, dtype=float)
        self.n = len(v)
        # a Laplace-smoothed overall rate: no judgement at all means "valid" (0.5 would make
        # auto-labelling abstain on a project whose annotators never answer "invalid")
        self.overall = float((v.sum() + 1.0) / (len(v) + 1.0)) if len(v) else 1.0
        self.by_code = {}
        for code in sorted(set(codes)):
            m = np.asarray([c == code for c in codes])
            self.by_code[code] = float((v[m].sum() + self.smoothing * self.overall) / (m.sum() + self.smoothing))
        return self

    def predict(self, codes: Sequence[str]) -> NDArray[np.float64]:
        return np.asarray([self.by_code.get(c, self.overall) for c in codes], dtype=float)


@dataclass(frozen=True)
class ExportShares:
    correct: float  # share of exported pairs whose label is right
    invalid: float  # share of exported pairs that are not valid text
    coverage: float  # exported pairs / pool


def export_shares(
    *,
    y_true: NDArray[np.integer],
    valid: NDArray[np.bool_],
    human: NDArray[np.integer],
    rest: NDArray[np.integer],
    proba: NDArray[np.floating],
    threshold: float,
    p_valid: NDArray[np.floating] | None = None,
    min_valid: float = MIN_VALID,
) -> ExportShares:
    """What an export would hold: the humans' pairs they judged valid (their labels are right
    by definition here) plus the auto labels of ``rest`` (``proba``: h's probabilities on those
    rows, in order) at or above ``threshold`` and, with ``p_valid`` (per row of ``rest``), not
    judged invalid. ``y_true`` and ``valid`` cover the whole pool."""
    kept_h = human[valid[human]]
    conf, pred = proba.max(1), proba.argmax(1)
    keep = conf >= threshold
    if p_valid is not None:
        keep &= p_valid >= min_valid
    auto = rest[keep]
    n_out = len(kept_h) + len(auto)
    if n_out == 0:
        return ExportShares(float("nan"), float("nan"), 0.0)
    correct = len(kept_h) + int((pred[keep] == y_true[auto]).sum())
    invalid = int((~valid[auto]).sum())
    return ExportShares(correct / n_out, invalid / n_out, n_out / len(y_true))
