"""The teacher filter (issue 31.3): the project's task model f reads every candidate.

DISCO keeps a generated counterfactual only when a task model ("teacher") predicts the label it
was written for; AutoCAD checks its rewrites for consistency the same way. Here, for a candidate
that names its ``target_label``:

* one that aims to **flip** the label (target differs from the original's) is kept only when f
  gives the target label a probability of at least ``threshold`` (P);
* one that aims to **keep** it (target equals the original's label: a deleted modifier, an
  inserted intensifier) is kept only when f's most probable label is still the original's.

A candidate without a target (an untargeted generator's, or an original without a label) passes;
its score is f's probability of the original label, for the record. The score stored is f's
probability of the label the candidate aims at. No Django; ``teacher`` is any object with
``predict_proba(records) -> array (n, n_labels)`` whose columns are ``labels``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol

import numpy as np

from generation.ml.filters import FilterResult

DEFAULT_THRESHOLD = 0.5


class Teacher(Protocol):
    def predict_proba(self, records: Sequence[Mapping[str, str]]) -> Any: ...


def teacher_filter(
    teacher: Teacher,
    labels: Sequence[str],
    candidates: Sequence[Mapping[str, str]],
    original_labels: Sequence[str | None],
    target_labels: Sequence[str | None],
    *,
    threshold: float = DEFAULT_THRESHOLD,
    batch_size: int = 64,
) -> list[FilterResult]:
    """One result per candidate (see the module doc)."""
    if not (len(candidates) == len(original_labels) == len(target_labels)):
        raise ValueError("teacher_filter: candidates, original and target labels differ in length")
    if not candidates:
        return []
    index = {lab: i for i, lab in enumerate(labels)}
    rows: list[np.ndarray] = []
    for s in range(0, len(candidates), batch_size):
        rows.append(np.asarray(teacher.predict_proba(list(candidates[s : s + batch_size])), dtype=float))
    proba = np.concatenate(rows, axis=0)
    out: list[FilterResult] = []
    for p, orig, target in zip(proba, original_labels, target_labels, strict=True):
        top = labels[int(np.argmax(p))]
        if target is None or target not in index or orig is None:
            score = float(p[index[orig]]) if orig in index else float(p.max())
            out.append(FilterResult(score, True, ()))
        elif target != orig:
            score = float(p[index[target]])
            keep = score >= threshold
            out.append(
                FilterResult(score, keep, () if keep else (f"teacher: P({target}) {score:.2f} < {threshold:.2f}",))
            )
        else:
            score = float(p[index[target]])
            keep = top == target
            out.append(FilterResult(score, keep, () if keep else (f"teacher: reads {top}, not the kept {target}",)))
    return out


__all__ = ["DEFAULT_THRESHOLD", "Teacher", "teacher_filter"]
