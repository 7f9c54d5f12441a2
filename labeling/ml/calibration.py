"""Shrinking h's probabilities toward the label-transition prior (issue 30's calibration lever).
No Django.

With about 36 human labels, h's temperature is fitted on 36 out-of-fold predictions and its
ECE on new pairs stays near 0.07–0.09. The lever measured here: blend h's probabilities with the
human labels' transition prior P(y' | y) (Laplace-smoothed), ``p = (1 − λ) p_h + λ p_prior``,
λ chosen on h's out-of-fold predictions by log-loss (the prior's own out-of-fold estimate
leaves each pair out). ``bench_pairwise`` reports it as ``chosen+shrink``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

GRID = (0.0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6)


def transition_prior(
    y: Sequence[int], y_prime: Sequence[int], n_labels: int, alpha: float = 1.0
) -> NDArray[np.float64]:
    """P(y' | y) as an (n_labels, n_labels) matrix, rows Laplace-smoothed with ``alpha``."""
    counts = np.full((n_labels, n_labels), alpha, dtype=float)
    for a, b in zip(y, y_prime, strict=True):
        counts[a, b] += 1
    return np.asarray(counts / counts.sum(axis=1, keepdims=True), dtype=np.float64)


def prior_out_of_fold(
    y: Sequence[int], y_prime: Sequence[int], n_labels: int, alpha: float = 1.0
) -> NDArray[np.float64]:
    """Each labelled pair's prior row, estimated without that pair."""
    counts = np.full((n_labels, n_labels), alpha, dtype=float)
    for a, b in zip(y, y_prime, strict=True):
        counts[a, b] += 1
    out = np.zeros((len(y), n_labels))
    for i, (a, b) in enumerate(zip(y, y_prime, strict=True)):
        row = counts[a].copy()
        row[b] -= 1
        out[i] = row / row.sum()
    return out


def fit_shrinkage(
    oof_h: NDArray[np.floating], oof_prior: NDArray[np.floating], y_prime: Sequence[int], grid: Sequence[float] = GRID
) -> float:
    """The λ of ``grid`` with the least out-of-fold log-loss (ties: the smaller)."""
    yi = np.asarray(y_prime, dtype=int)
    best, best_loss = 0.0, float("inf")
    for lam in grid:
        p = (1 - lam) * oof_h + lam * oof_prior
        loss = float(-np.log(np.clip(p[np.arange(len(yi)), yi], 1e-12, 1.0)).mean())
        if loss < best_loss - 1e-12:
            best, best_loss = float(lam), loss
    return best


def shrink(p_h: NDArray[np.floating], p_prior: NDArray[np.floating], lam: float) -> NDArray[np.float64]:
    return np.asarray((1 - lam) * p_h + lam * p_prior, dtype=np.float64)
