"""Accuracy, macro-F1 and expected calibration error. No Django."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

Labels = Sequence[int] | NDArray[np.integer]  # label indices


def accuracy(y_true: Labels, y_pred: Labels) -> float:
    t, p = np.asarray(y_true), np.asarray(y_pred)
    if len(t) == 0:
        return float("nan")
    return float(np.mean(t == p))


def macro_f1(y_true: Labels, y_pred: Labels, n_classes: int) -> float:
    """Macro-F1 over the classes present in ``y_true`` or ``y_pred`` (sklearn's default)."""
    t, p = np.asarray(y_true), np.asarray(y_pred)
    if len(t) == 0:
        return float("nan")
    f1s = []
    for c in range(n_classes):
        tp = int(np.sum((t == c) & (p == c)))
        fp = int(np.sum((t != c) & (p == c)))
        fn = int(np.sum((t == c) & (p != c)))
        if tp + fp + fn == 0:
            continue
        f1s.append(2 * tp / (2 * tp + fp + fn))
    return float(np.mean(f1s)) if f1s else 0.0


def ece(
    confidence: Sequence[float] | NDArray[np.floating], correct: Sequence[bool] | NDArray[np.bool_], n_bins: int = 10
) -> float:
    """Expected calibration error with ``n_bins`` equal-width bins over [0, 1]:
    sum over bins of (bin size / n) * |accuracy(bin) - mean confidence(bin)|.
    A confidence of exactly 0 falls in the first bin, 1 in the last."""
    conf = np.asarray(confidence, dtype=float)
    corr = np.asarray(correct, dtype=float)
    n = len(conf)
    if n == 0:
        return float("nan")
    bins = np.minimum((conf * n_bins).astype(int), n_bins - 1)
    bins = np.maximum(bins, 0)
    total = 0.0
    for b in range(n_bins):
        m = bins == b
        if m.any():
            total += m.sum() / n * abs(corr[m].mean() - conf[m].mean())
    return float(total)


def scores(y_true: NDArray[np.integer], proba: NDArray[np.floating]) -> dict[str, float]:
    """accuracy, macro-F1 and ECE of the arg-max prediction of ``proba`` (n, k)."""
    pred = proba.argmax(axis=1)
    conf = proba.max(axis=1)
    return {
        "accuracy": accuracy(y_true, pred),
        "macro_f1": macro_f1(y_true, pred, proba.shape[1]),
        "ece": ece(conf, pred == np.asarray(y_true)),
    }
