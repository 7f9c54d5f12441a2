"""The baselines of the paper, as probability matrices over the label set (n, k). No Django.

- invariant:    y' = y                                   (confidence 1)
- trust:        y' = f(x')                               (confidence max_l p_l(x'))
- w-trust:      y' = argmax_l p_l(x) * p_l(x')           (confidence: the normalised product)
- random-pairs: h (PC) trained and applied on pairs whose original was replaced by a random
                other original of the pool (and that original's label) — what h learns
                without the real pairing
- training-only: the labels of the pairs not given to humans come from f' = a classifier
                trained on the originals plus only the human-labelled counterfactuals (the
                paper's "training" baseline drops the unlabelled counterfactuals; in a
                labelling benchmark this is what that data alone predicts for them)
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
from numpy.typing import NDArray

from labeling.ml.features import Pair


def invariant(y: NDArray[np.intp], n_labels: int) -> NDArray[np.float64]:
    out = np.zeros((len(y), n_labels))
    out[np.arange(len(y)), y] = 1.0
    return out


def trust(f_c: NDArray[np.floating]) -> NDArray[np.float64]:
    return np.asarray(f_c, dtype=np.float64)


def weighted_trust(f_o: NDArray[np.floating], f_c: NDArray[np.floating]) -> NDArray[np.float64]:
    prod = np.asarray(f_o, dtype=np.float64) * np.asarray(f_c, dtype=np.float64)
    s: NDArray[np.float64] = prod.sum(axis=1, keepdims=True)
    return np.where(s > 0, prod / np.maximum(s, 1e-300), 1.0 / prod.shape[1])


def random_pairing(pairs: Sequence[Pair], rng: np.random.Generator) -> list[Pair]:
    """Each counterfactual paired with the original (and label) of another, random pair of
    the pool (a permutation without fixed points where the pool allows it)."""
    n = len(pairs)
    if n < 2:
        return list(pairs)
    perm = rng.permutation(n)
    # rotate fixed points away
    fixed = np.flatnonzero(perm == np.arange(n))
    for i in fixed:
        j = (i + 1) % n
        perm[i], perm[j] = perm[j], perm[i]
    return [
        Pair(pairs[perm[i]].original, p.counterfactual, pairs[perm[i]].y, p.perturbation, p.group)
        for i, p in enumerate(pairs)
    ]
