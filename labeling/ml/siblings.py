"""h's second stage: sibling counterfactuals label each other (collective classification). No Django.

Siblings are the counterfactuals of one original that edit the same fields. Their labels are
not independent: when a writer (or a generator) makes several edits of one premise, each aimed
at a different label, knowing one sibling's label says much about the other's. In CAD-NLI every
original has two premise edits and two hypothesis edits, and the two edits of one side always
carry the two labels other than the original's; a rules or LLM generator that writes one
candidate per target label has the same structure, and one that writes several paraphrases of
one edit has the opposite (siblings agree).

The stage does not assume either: it is a small multinomial logistic regression, fitted on the
human-labelled pairs, on

- the first stage's log-probabilities for the pair itself,
- the mean log-probability of its siblings (a sibling with a human label counts as that label,
  smoothed; the others count as h's first-stage probabilities), a has-siblings indicator,
- and that mean's interaction with the original label y (the structure is "which of the labels
  other than y", so it depends on y),

so it learns from the project's own labels whether siblings agree, disagree or say nothing.
Its C is chosen and its temperature fitted by the same cross-validation as the first stage, and
the stage is kept only when its cross-validated log-loss beats the first stage's.

No leakage: a labelled pair's sibling features in training come from the first-stage fold
model that did not see that pair (see ``LinearH.fold_index``): a model trained on pair i
predicts i's near-identical sibling with i's own label in it, which would teach the stage to
trust siblings more than it can at prediction time. On CAD-NLI dev (80 labels, 5 seeds) that
took CAPC from 0.734 to 0.862 accuracy at ECE 0.037 (0.843 and ECE 0.070 with the leak).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

import numpy as np
from numpy.typing import NDArray

from labeling.ml.base_classifier import Proba
from labeling.ml.features import Floats, LabelIndex, Pair

KNOWN_SMOOTHING = 0.02  # a human-labelled sibling counts as (1 - 0.02·(L-1)) on its label
LOG_FLOOR = 1e-4
STAGE_C_GRID = (0.03, 0.1, 0.3, 1.0)


def sibling_keys(pairs: Sequence[Pair], fields: Sequence[str]) -> list[str]:
    """One key per pair: its original's text fields and the fields its edit changed. Pairs with
    the same key are siblings."""
    keys = []
    for p in pairs:
        edited = [f for f in fields if p.original.get(f, "") != p.counterfactual.get(f, "")]
        keys.append(json.dumps([[p.original.get(f, "") for f in fields], edited]))
    return keys


def sibling_lists(keys: Sequence[str]) -> list[list[int]]:
    """For every row, the other rows with its key."""
    by_key: dict[str, list[int]] = {}
    for i, k in enumerate(keys):
        by_key.setdefault(k, []).append(i)
    return [[j for j in by_key[k] if j != i] for i, k in enumerate(keys)]


def _row_features(
    i: int, siblings: Sequence[int], proba: Proba, known: Mapping[int, int], n_labels: int
) -> NDArray[np.float64]:
    out = np.zeros(n_labels + 1)
    if not siblings:
        return out
    acc = np.zeros(n_labels)
    for j in siblings:
        if j in known:
            v = np.full(n_labels, KNOWN_SMOOTHING)
            v[known[j]] = 1.0 - KNOWN_SMOOTHING * (n_labels - 1)
        else:
            v = proba[j]
        acc += np.log(np.clip(v, LOG_FLOOR, 1.0))
    out[:n_labels] = acc / len(siblings)
    out[n_labels] = 1.0
    return out


def stage_matrix(
    rows: Sequence[int],
    self_proba: Proba,
    sibling_rows: Sequence[NDArray[np.float64]],
    y: LabelIndex,
    n_labels: int,
) -> Floats:
    """The stage's features for ``rows``: own log-probabilities (``self_proba``, aligned with
    ``rows``), the sibling block (``sibling_rows``, aligned too) and its interaction with y."""
    own = np.log(np.clip(self_proba, LOG_FLOOR, 1.0))
    sib = np.asarray(sibling_rows, dtype=np.float64).reshape(len(rows), n_labels + 1)
    yo = np.eye(n_labels)[np.asarray(y)[list(rows)]] if len(rows) else np.zeros((0, n_labels))
    inter = (sib[:, :n_labels, None] * yo[:, None, :]).reshape(len(rows), -1)
    return np.hstack([own, sib, inter]).astype(np.float32)


def sibling_features(
    rows: Sequence[int],
    siblings: Sequence[Sequence[int]],
    proba: Proba,
    known: Mapping[int, int],
    n_labels: int,
) -> list[NDArray[np.float64]]:
    """The sibling block of each of ``rows`` (``proba``: first-stage probabilities of every row)."""
    return [_row_features(i, siblings[i], proba, known, n_labels) for i in rows]


def has_siblings(rows: Sequence[int], siblings: Sequence[Sequence[int]]) -> bool:
    return any(siblings[i] for i in rows)
