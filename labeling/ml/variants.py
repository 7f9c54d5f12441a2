"""Named training sets, one evaluation: the robustness comparison behind ``bench_loop``. No
Django.

Every variant trains the same f' (``augmentation.classifier_factory``: same model, same
hyperparameters) on the same ``base`` examples (the originals) plus its own extra labelled
counterfactuals, once per seed, and is scored on each evaluation set. Evaluation examples whose
text (``textkeys.text_hash``) is training data of *any* variant are left out first and counted,
so all variants are scored on the same examples.

Per evaluation set and variant: the mean accuracy and macro-F1 over seeds, and against the
``reference`` variant (the originals alone) the gain with a 95 % paired-bootstrap interval over
evaluation examples (each example's correctness averaged over seeds, resampled ``n_boot``
times; the 2.5th and 97.5th percentiles of the mean difference), the two-sided bootstrap
p-value, and the share of the ``gold`` variant's gain that the variant recovers.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from labeling.ml.augmentation import (
    DETERMINISTIC,
    N_BOOTSTRAP,
    ClassifierFactory,
    EvalSet,
    drop_training_overlap,
    gain_share,
    mean_ci95,
    paired_bootstrap_p,
)
from labeling.ml.metrics import macro_f1

Labelled = tuple[dict[str, str], str]  # a record ({field: text}) and its label


@dataclass(frozen=True)
class VariantSpec:
    """A training set: the base examples plus ``extra``."""

    name: str
    extra: list[Labelled]


def bootstrap_gain_ci(
    a: NDArray[np.floating], b: NDArray[np.floating], *, n_boot: int = N_BOOTSTRAP, seed: int = 0
) -> list[float]:
    """95 % paired-bootstrap interval of mean(a) - mean(b) over examples."""
    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    if len(d) == 0:
        raise ValueError("no example to resample")
    rng = np.random.default_rng(seed)
    means = d[rng.integers(0, len(d), size=(n_boot, len(d)))].mean(axis=1)
    return [float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))]


def _r(v: float | None) -> float | None:
    return None if v is None or not np.isfinite(v) else round(float(v), 4)


def evaluate_variants(
    base: Sequence[Labelled],
    variants: Sequence[VariantSpec],
    evals: Sequence[EvalSet],
    *,
    labels: Sequence[str],
    fields: Sequence[str],
    make_classifier: ClassifierFactory,
    classifier: str,
    seeds: int = 3,
    reference: str = "originals",
    gold: str = "",
    n_boot: int = N_BOOTSTRAP,
    progress: Callable[[str, int], None] | None = None,
) -> dict[str, Any]:
    """The comparison (module docstring). ``variants`` must include ``reference`` (usually
    with no extra). Returns ``{"eval": {set name: {"n", "excluded", "variants": {name: {…}}}},
    "n_train": {name: size}}``. ValueError when every evaluation example is training data."""
    labels = list(labels)
    training = [r for r, _ in base] + [r for v in variants for r, _ in v.extra]
    checked, excluded = drop_training_overlap(list(evals), training, fields)
    kept = [e for e in checked if e.records]
    if not kept:
        raise ValueError("every evaluation example is also training data: choose a held-out evaluation set")
    eval_y = [np.asarray([labels.index(y) for y in e.y], dtype=int) for e in kept]
    correct: dict[str, list[list[NDArray[np.bool_]]]] = {}
    f1: dict[str, list[list[float]]] = {}
    sizes: dict[str, int] = {}
    for v in variants:
        recs = [r for r, _ in base] + [r for r, _ in v.extra]
        ys = [y for _, y in base] + [y for _, y in v.extra]
        sizes[v.name] = len(recs)
        per_seed: list[list[NDArray[np.intp]]] = []
        for seed in range(seeds):
            if per_seed and classifier in DETERMINISTIC:
                per_seed.append(per_seed[0])  # the same fit: a deterministic f'
                continue
            f_prime = make_classifier(seed).fit(recs, ys)
            per_seed.append([f_prime.predict_proba(e.records).argmax(1) for e in kept])
            if progress:
                progress(v.name, seed)
        correct[v.name] = [[p[j] == eval_y[j] for p in per_seed] for j in range(len(kept))]
        f1[v.name] = [[macro_f1(eval_y[j], p[j], len(labels)) for p in per_seed] for j in range(len(kept))]
    out: dict[str, Any] = {}
    for j, e in enumerate(kept):
        per_ex = {name: np.mean(np.stack(rows[j]), axis=0) for name, rows in correct.items()}
        acc = {name: float(per_ex[name].mean()) for name in per_ex}
        base_acc = acc.get(reference)
        gold_gain = acc[gold] - base_acc if gold in acc and base_acc is not None else None
        rows_out: dict[str, Any] = {}
        for name in correct:
            seed_acc = [float(c.mean()) for c in correct[name][j]]
            _m, ci = mean_ci95(seed_acc)
            row: dict[str, Any] = {
                "accuracy": _r(acc[name]),
                "macro_f1": _r(float(np.mean(f1[name][j]))),
                "ci95": [_r(x) for x in ci] if ci is not None and len(set(seed_acc)) > 1 else None,
                "n_train": sizes[name],
            }
            if name != reference and base_acc is not None:
                gain = acc[name] - base_acc
                row["gain"] = _r(gain)
                row["gain_ci95"] = [_r(x) for x in bootstrap_gain_ci(per_ex[name], per_ex[reference], n_boot=n_boot)]
                row["p_vs_originals"] = _r(paired_bootstrap_p(per_ex[name], per_ex[reference], n_boot=n_boot))
                if name != gold:
                    row["share_of_gold_gain"] = _r(gain_share(gain, gold_gain))
            rows_out[name] = row
        out[e.name] = {"n": len(e.records), "excluded": excluded.get(e.name, 0), "variants": rows_out}
    for e in checked:
        if not e.records:
            out[e.name] = {"n": 0, "excluded": excluded.get(e.name, 0), "variants": {}}
    return {"eval": out, "n_train": sizes}


def labelled_pairs(rows: Sequence[tuple[Mapping[str, str], str]]) -> list[Labelled]:
    """``(record, label)`` rows as plain dicts (a defensive copy)."""
    return [(dict(r), y) for r, y in rows]
