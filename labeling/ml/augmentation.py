"""Does the labelled set make models robust? The augmentation evaluation behind
``manage.py bench_augmentation`` and the ``evaluate`` job (FORMATS.md §3). No Django.

Setting. The pool is a list of counterfactual pairs with known counterfactual labels. Per seed
the same human/rest split as ``bench_pairwise`` (``bench.human_split``) gives a ``budget``
fraction of the pool to humans; each *variant* then trains a classifier f' on the pool's
(unique) originals plus:

- ``originals``: nothing;
- ``human``: the humans' counterfactuals with their labels;
- ``invariant`` / ``trust`` / ``pc`` / ``capc``: the humans' counterfactuals plus *all* the
  rest labelled by that method (the paper's setting); ``pc`` and ``capc`` come from
  ``bench.fit_h`` on the humans' pairs — the code path of ``bench_pairwise``;
- ``capc-confident``: the humans' plus the rest that CAPC labels at or above the abstain
  threshold (what the product exports);
- ``gold``: every counterfactual with its known label (when labels are known);
- ``random``: the humans' plus the rest with uniformly random labels;
- ``capc+warm`` (with a warm start): the rest labelled by CAPC warm-started on other pairs
  (``bench.warm_setup``, as ``bench_pairwise --warm-start``);
- ``export`` (when an ``export`` is given: the project's actual labelled set, "your export"):
  the pool's originals plus the exported counterfactuals with their current labels, the same
  every seed.

No test example may also be training data: before anything is trained, every evaluation
example whose text (``textkeys.text_hash`` of its fields) also occurs among the pool's
originals or counterfactuals, or the export's, is left out, and the result counts them
(``excluded`` per evaluation set and in all). An evaluation set left empty is reported with
``n`` 0 and no variants; when every set is empty the evaluation refuses (``ValueError``).

Every variant uses the same f' and hyperparameters. f' is scored on each evaluation set;
per evaluation set and variant the result holds the mean accuracy and macro-F1 over seeds
with a 95 % t-interval over seeds, the gain over ``originals`` (with the interval of the
per-seed paired gains), the share of the ``gold`` gain recovered, and paired-bootstrap
p-values against ``originals`` and ``gold`` (over evaluation examples, correctness averaged
over seeds).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NotRequired, TypedDict

import numpy as np
from numpy.typing import NDArray

from labeling.ml.base_classifier import (
    BaseClassifier,
    EmbeddingClassifier,
    Proba,
    TfidfClassifier,
    TooFewLabels,
    record_key,
)
from labeling.ml.bench import fit_h, human_split, pool_proba, pool_setup, warm_setup
from labeling.ml.features import Embed, Floats
from labeling.ml.metrics import macro_f1
from labeling.ml.pairs import LabelledPairs
from labeling.ml.pairwise import PairInputs, PairwiseClassifier
from labeling.ml.siblings import sibling_keys
from projects.ml.textkeys import text_hash

VARIANTS = ("originals", "human", "invariant", "trust", "pc", "capc", "capc-confident", "gold", "random")
EXPORT = "export"  # the project's actual labelled set ("your export"), when given
CLASSIFIERS = ("minilm-lr", "tfidf-lr", "finetune")
N_BOOTSTRAP = 2000
# classifiers whose fit does not depend on the seed: ``originals`` and ``gold`` (the same
# training set every seed) are trained once and reused
DETERMINISTIC = ("minilm-lr", "tfidf-lr")
# classifiers f' that read MiniLM embeddings of their texts (tfidf-lr reads words, finetune its
# own model): only for these are the test sets' and the export's texts worth encoding
EMBEDDING_CLASSIFIERS = ("minilm-lr",)


@dataclass(frozen=True)
class EvalSet:
    """One evaluation set: records (``{field: text}``) and their gold labels."""

    name: str
    records: list[dict[str, str]]
    y: list[str]


@dataclass(frozen=True)
class FineTuneOptions:
    """Caps that keep fine-tuning MiniLM affordable on a CPU (see ``finetune.py``)."""

    model_path: str = ""
    device: str = "cpu"
    epochs: int = 1
    max_length: int = 128
    batch_size: int = 16
    learning_rate: float = 5e-5


class VariantScores(TypedDict):
    accuracy: float | None
    macro_f1: float | None
    ci95: list[float] | None  # accuracy, t-interval over seeds (None: one seed)
    macro_f1_ci95: list[float] | None
    n_train: float  # mean training-set size (originals + counterfactuals) over seeds
    gain: NotRequired[float | None]  # mean accuracy minus originals' (points of accuracy, 0-1)
    gain_ci95: NotRequired[list[float] | None]  # t-interval of the per-seed paired gains
    share_of_gold_gain: NotRequired[float | None]
    p_vs_originals: NotRequired[float | None]
    p_vs_gold: NotRequired[float | None]
    # paired-bootstrap p against the "random" floor (the same texts, labels at random): whether
    # the labels matter or the gain is the extra text alone
    p_vs_random: NotRequired[float | None]


class EvalScores(TypedDict):
    n: int
    variants: dict[str, VariantScores | dict[str, str | None]]
    excluded: NotRequired[int]  # test examples left out: their text is also training data


class AugmentationResult(TypedDict):
    task: str
    n_pairs: int
    budget: float
    seeds: int
    classifier: str
    eval: dict[str, EvalScores]
    seconds: float
    threshold: NotRequired[float]
    warm_start_pairs: NotRequired[int]
    warm_start_excluded: NotRequired[int]  # warm-start pairs left out: they share a text with the pool
    excluded: NotRequired[int]  # over every evaluation set
    export_pairs: NotRequired[int]


# ---------------------------------------------------------------------------------------
# arithmetic
# ---------------------------------------------------------------------------------------
def mean_ci95(values: Sequence[float], bounds: tuple[float, float] = (0.0, 1.0)) -> tuple[float, list[float] | None]:
    """Mean and the 95 % Student-t interval of the mean (None with fewer than two values),
    clipped to ``bounds``, the range the values can take (a share by default; (-1, 1) for a
    difference of shares): with two or three seeds the t-interval is wide enough to leave it."""
    v = np.asarray(values, dtype=float)
    m = float(v.mean())
    if len(v) < 2:
        return m, None
    from scipy.stats import t

    half = float(t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / np.sqrt(len(v)))
    lo, hi = bounds
    return m, [max(lo, m - half), min(hi, m + half)]


def gain_share(gain: float, gold_gain: float | None) -> float | None:
    """The share of the gold gain recovered; None when there is no gold gain to share (no
    gold variant, or gold no better than originals)."""
    if gold_gain is None or gold_gain <= 1e-12:
        return None
    return gain / gold_gain


def paired_bootstrap_p(
    a: NDArray[np.floating], b: NDArray[np.floating], *, n_boot: int = N_BOOTSTRAP, seed: int = 0
) -> float:
    """Two-sided paired-bootstrap p-value that the mean of ``a`` (per-example scores, e.g.
    correctness averaged over seeds) differs from that of ``b``: resample examples with
    replacement, p = 2 * min(share of resampled differences <= 0, share >= 0), each share
    counted (k + 1) / (B + 1), capped at 1. Identical inputs give 1."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if len(a) != len(b) or len(a) == 0:
        raise ValueError("paired bootstrap needs two equally long, non-empty score vectors")
    d = a - b
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, len(d), size=(n_boot, len(d)))
    means = d[idx].mean(axis=1)
    lo = (np.sum(means <= 0) + 1) / (n_boot + 1)
    hi = (np.sum(means >= 0) + 1) / (n_boot + 1)
    return float(min(1.0, 2 * min(lo, hi)))


def _r(v: float | None, k: int = 4) -> float | None:
    return None if v is None or not np.isfinite(v) else round(float(v), k)


def _rl(v: list[float] | None) -> list[float] | None:
    return None if v is None else [round(float(x), 4) for x in v]


def summarise(
    correct: dict[str, list[NDArray[np.bool_]]],
    f1: dict[str, list[float]],
    n_train: dict[str, list[int]],
    *,
    n_boot: int = N_BOOTSTRAP,
) -> dict[str, VariantScores]:
    """Per variant: per-seed correctness vectors on one evaluation set, per-seed macro-F1
    and training sizes -> the reported figures (see the module docstring). Variants missing
    from ``correct`` are left out; ``originals`` must be there for gains."""
    out: dict[str, VariantScores] = {}
    acc = {v: [float(c.mean()) for c in rows] for v, rows in correct.items()}
    per_ex = {v: np.mean(np.stack(rows), axis=0) for v, rows in correct.items()}
    base = acc.get("originals")
    gold_gain = None
    if base is not None and "gold" in acc:
        gold_gain = float(np.mean(acc["gold"]) - np.mean(base))
    for v in correct:
        m, ci = mean_ci95(acc[v])
        fm, fci = mean_ci95(f1[v])
        row: VariantScores = {
            "accuracy": _r(m),
            "macro_f1": _r(fm),
            "ci95": _rl(ci),
            "macro_f1_ci95": _rl(fci),
            "n_train": round(float(np.mean(n_train[v])), 1),
        }
        if v != "originals" and base is not None:
            k = min(len(acc[v]), len(base))
            g, gci = mean_ci95([acc[v][s] - base[s] for s in range(k)], bounds=(-1.0, 1.0))
            row["gain"] = _r(g)
            row["gain_ci95"] = _rl(gci)
            row["p_vs_originals"] = _r(paired_bootstrap_p(per_ex[v], per_ex["originals"], n_boot=n_boot))
            if v != "gold":
                row["share_of_gold_gain"] = _r(gain_share(g, gold_gain))
        if v != "gold" and "gold" in per_ex:
            row["p_vs_gold"] = _r(paired_bootstrap_p(per_ex[v], per_ex["gold"], n_boot=n_boot))
        if v not in ("random", "originals") and "random" in per_ex:
            row["p_vs_random"] = _r(paired_bootstrap_p(per_ex[v], per_ex["random"], n_boot=n_boot))
        out[v] = row
    return out


# ---------------------------------------------------------------------------------------
# f'
# ---------------------------------------------------------------------------------------
class _MemoEmbeddingClassifier(EmbeddingClassifier):
    """``EmbeddingClassifier`` whose features per record are computed once and shared by
    every variant's fit (same model, same hyperparameters; only the time is saved)."""

    def __init__(self, labels: Sequence[str], fields: Sequence[str], embed: Embed | None, memo: dict[str, Floats]):
        super().__init__(labels, fields, embed)
        self.memo = memo

    def _X(self, records: Sequence[dict[str, str]]) -> Floats:
        keys = [record_key(r) for r in records]
        missing = {k: r for k, r in zip(keys, records, strict=True) if k not in self.memo}
        if missing:
            X = super()._X(list(missing.values()))
            for k, row in zip(missing, X, strict=True):
                self.memo[k] = row
        return np.stack([self.memo[k] for k in keys])


ClassifierFactory = Callable[[int], BaseClassifier]  # seed -> an untrained f'


def classifier_factory(
    kind: str,
    *,
    labels: Sequence[str],
    fields: Sequence[str],
    embed: Embed | None,
    finetune: FineTuneOptions | None = None,
) -> ClassifierFactory:
    """seed -> a fresh f' of ``kind`` (``CLASSIFIERS``), the same hyperparameters each time."""
    labels, fields = list(labels), list(fields)
    if kind == "minilm-lr":
        memo: dict[str, Floats] = {}
        return lambda seed: _MemoEmbeddingClassifier(labels, fields, embed, memo)
    if kind == "tfidf-lr":
        return lambda seed: TfidfClassifier(labels, fields)
    if kind == "finetune":
        from labeling.ml.finetune import FineTunedClassifier

        opts = finetune or FineTuneOptions()
        if not opts.model_path:
            raise ValueError("the finetune classifier needs a local model path")
        return lambda seed: FineTunedClassifier(
            labels,
            fields,
            opts.model_path,
            device=opts.device,
            seed=seed,
            epochs=opts.epochs,
            max_length=opts.max_length,
            batch_size=opts.batch_size,
            learning_rate=opts.learning_rate,
        )
    raise ValueError(f"unknown classifier {kind!r}; choose {', '.join(CLASSIFIERS)}")


# ---------------------------------------------------------------------------------------
# the evaluation
# ---------------------------------------------------------------------------------------
def drop_training_overlap(
    evals: Sequence[EvalSet], training: Sequence[dict[str, str]], fields: Sequence[str]
) -> tuple[list[EvalSet], dict[str, int]]:
    """Each evaluation set without the examples whose text (``text_hash`` over ``fields``) is
    also one of the ``training`` records, and how many each lost (by set name)."""
    seen = {text_hash(r, fields) for r in training}
    kept: list[EvalSet] = []
    excluded: dict[str, int] = {}
    for e in evals:
        keep = [i for i, r in enumerate(e.records) if text_hash(r, fields) not in seen]
        excluded[e.name] = len(e.records) - len(keep)
        kept.append(EvalSet(e.name, [e.records[i] for i in keep], [e.y[i] for i in keep]))
    return kept, excluded


def run_augmentation(
    data: LabelledPairs,
    evals: Sequence[EvalSet],
    *,
    task: str,
    labels: Sequence[str],
    fields: Sequence[str],
    embed: Embed | None,
    budget: float = 0.1,
    seeds: int = 3,
    classifier: str = "minilm-lr",
    make_classifier: ClassifierFactory | None = None,
    threshold: float = 0.7,
    gold_known: bool = True,
    warm: LabelledPairs | None = None,
    export: LabelledPairs | None = None,
    base_kind: str = "minilm",
    n_boot: int = N_BOOTSTRAP,
    log: Callable[[str], None] | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> AugmentationResult:
    """The evaluation (module docstring). ``make_classifier`` replaces the factory of
    ``classifier`` (tests pass tiny models). ``progress(done, total)`` counts f' fits.
    ``export``: the project's labelled set as it would be exported (variant ``export``)."""
    t0 = time.perf_counter()
    say = log or (lambda _m: None)
    labels, fields = list(labels), list(fields)
    pool, y_prime = data.pairs, data.y_prime
    n = len(pool)
    if not evals:
        raise ValueError("no evaluation set given")
    training = [
        r for src in (pool, export.pairs if export else []) for p in src for r in (p.original, p.counterfactual)
    ]
    all_evals = list(evals)
    checked, excluded = drop_training_overlap(all_evals, training, fields)
    if sum(excluded.values()):
        say(f"left out {sum(excluded.values())} test examples whose text is also training data")
    evals = [e for e in checked if e.records]
    if not evals:
        raise ValueError(
            f"every example of the evaluation sets ({sum(excluded.values())}) also occurs in the training data "
            "(the pool's originals or counterfactuals): the evaluation would measure memory, not robustness; "
            "choose a held-out set"
        )
    factory = make_classifier or classifier_factory(classifier, labels=labels, fields=fields, embed=embed)
    setup = pool_setup(pool, labels=labels, fields=fields, embed=embed, base_kind=base_kind)
    originals, orig_y = setup.originals, setup.orig_y
    cfs = [p.counterfactual for p in pool]
    say(f"pool: {n} pairs, {len(originals)} originals; f and h's features ready at {time.perf_counter() - t0:.1f}s")
    eval_y = [np.asarray([labels.index(v) for v in e.y], dtype=int) for e in evals]
    warm_h, inputs_w = None, None
    if warm is not None:
        warm_h, inputs_w = warm_setup(pool, warm, setup, labels=labels, fields=fields, embed=embed, base_kind=base_kind)
        say(f"warm start: {len(warm.pairs)} pairs; ready at {time.perf_counter() - t0:.1f}s")

    keys = sibling_keys(pool, fields)  # h labels as the product does: with its sibling stage
    variants = [v for v in VARIANTS if gold_known or v != "gold"] + (["capc+warm"] if warm is not None else [])
    if export is not None:
        variants.insert(1, EXPORT)
    export_cfs = [p.counterfactual for p in export.pairs] if export is not None else []
    total = seeds * len(variants)
    done = 0
    correct: list[dict[str, list[NDArray[np.bool_]]]] = [{} for _ in evals]
    f1s: list[dict[str, list[float]]] = [{} for _ in evals]
    sizes: dict[str, list[int]] = {}
    errors: dict[str, str] = {}
    reuse: dict[str, list[NDArray[np.intp]]] = {}  # deterministic f': predictions per eval set

    def train_and_score(name: str, seed: int, rows: Sequence[int], ys: Sequence[str]) -> None:
        # rows index the pool's counterfactuals; the export's are its own records
        recs = originals + (export_cfs if name == EXPORT else [cfs[i] for i in rows])
        all_y = orig_y + list(ys)
        sizes.setdefault(name, []).append(len(recs))
        if name in reuse:
            preds = reuse[name]
        else:
            f_prime = factory(seed).fit(recs, all_y)
            preds = [f_prime.predict_proba(e.records).argmax(1) for e in evals]
            if classifier in DETERMINISTIC and name in ("originals", "gold", EXPORT):
                reuse[name] = preds
        for j, (p, y) in enumerate(zip(preds, eval_y, strict=True)):
            correct[j].setdefault(name, []).append(p == y)
            f1s[j].setdefault(name, []).append(macro_f1(y, p, len(labels)))

    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        train, rest, _ = human_split(n, budget, rng)
        human_y = [y_prime[i] for i in train]
        rest_l = rest.tolist()
        labelled: dict[str, tuple[list[int], list[str]]] = {
            "originals": ([], []),
            "human": (train.tolist(), human_y),
            "invariant": (train.tolist() + rest_l, human_y + [pool[i].y for i in rest]),
            "trust": (train.tolist() + rest_l, human_y + [labels[k] for k in setup.f_c[rest].argmax(1)]),
            "gold": (list(range(n)), list(y_prime)),
        }

        def label_rest(
            mode: str,
            inp: PairInputs,
            warm_model: PairwiseClassifier | None = None,
            train: NDArray[np.intp] = train,
            rest: NDArray[np.intp] = rest,
            seed: int = seed,
        ) -> Proba:
            """h (trained on this seed's human pairs, with its sibling stage) on the rest."""
            h = fit_h(
                mode,
                inp,
                train,
                y_prime,
                labels=labels,
                fields=fields,
                seed=seed,
                threshold=threshold,
                warm_model=warm_model,
                keys=keys,
            )
            return pool_proba(h, inp, keys, train, y_prime)[rest]

        for mode in ("pc", "capc"):
            try:
                proba = label_rest(mode, setup.inputs)
            except TooFewLabels as exc:
                errors[mode] = str(exc)
                if mode == "capc":
                    errors["capc-confident"] = str(exc)
                continue
            labelled[mode] = (train.tolist() + rest_l, human_y + [labels[k] for k in proba.argmax(1)])
            if mode == "capc":
                ok = proba.max(1) >= threshold
                labelled["capc-confident"] = (
                    train.tolist() + rest[ok].tolist(),
                    human_y + [labels[k] for k in proba[ok].argmax(1)],
                )
        if warm_h is not None and inputs_w is not None:
            try:
                proba = label_rest("capc", inputs_w, warm_h)
                labelled["capc+warm"] = (train.tolist() + rest_l, human_y + [labels[k] for k in proba.argmax(1)])
            except TooFewLabels as exc:
                errors["capc+warm"] = str(exc)
        if export is not None:
            if export.pairs:
                labelled[EXPORT] = ([], list(export.y_prime))
            else:
                errors[EXPORT] = "nothing to export yet: no human- or auto-labelled candidate"
        rnd = np.random.default_rng(10_000 + seed).integers(0, len(labels), size=len(rest))
        labelled["random"] = (train.tolist() + rest_l, human_y + [labels[k] for k in rnd])
        for name in variants:
            if name in labelled:
                try:
                    train_and_score(name, seed, *labelled[name])
                except TooFewLabels as exc:
                    errors[name] = str(exc)
            done += 1
            if progress is not None:
                progress(done, total)
        say(f"seed {seed + 1}/{seeds} done at {time.perf_counter() - t0:.1f}s")

    out_eval: dict[str, EvalScores] = {}
    scored = {e.name: j for j, e in enumerate(evals)}
    for e in checked:
        if e.name not in scored:
            out_eval[e.name] = {"n": 0, "variants": {}, "excluded": excluded[e.name]}
            continue
        j = scored[e.name]
        summary = summarise(correct[j], f1s[j], sizes, n_boot=n_boot)
        vs: dict[str, VariantScores | dict[str, str | None]] = {}
        for name in variants:
            if name in summary and len(correct[j][name]) == seeds:
                vs[name] = summary[name]
            elif name in errors:
                # the figures' keys stay (null), so that a script reading them meets no KeyError
                vs[name] = {"accuracy": None, "macro_f1": None, "ci95": None, "error": errors[name]}
        out_eval[e.name] = {"n": len(e.records), "variants": vs, "excluded": excluded[e.name]}
    return {
        "task": task,
        "n_pairs": n,
        "budget": budget,
        "seeds": seeds,
        "classifier": classifier,
        "eval": out_eval,
        "seconds": round(time.perf_counter() - t0, 1),
        "threshold": threshold,
        "excluded": sum(excluded.values()),
        **({"warm_start_pairs": len(warm.pairs)} if warm is not None else {}),  # type: ignore[typeddict-item]
        **({"export_pairs": len(export.pairs)} if export is not None else {}),  # type: ignore[typeddict-item]
    }


def eval_sets_from_records(name: str, records: Sequence[Any], labels: Sequence[str]) -> tuple[list[EvalSet], list[str]]:
    """Evaluation sets from ``projects.formats`` records: with pairs in them, ``NAME/original``
    (each original once) and ``NAME/counterfactual``; otherwise ``NAME`` (the originals).
    Records without a known label in ``labels`` are skipped. Returns the sets and problems."""
    label_set = set(labels)
    problems: list[str] = []
    originals: dict[str, tuple[dict[str, str], str]] = {}
    cf_recs: list[dict[str, str]] = []
    cf_y: list[str] = []
    has_pairs = False
    for rec in records:
        if type(rec).__name__ == "Problem":
            problems.append(str(rec))
            continue
        orig = rec.original if hasattr(rec, "cf_fields") else rec
        if orig.label in label_set:
            originals.setdefault(orig.id or record_key(dict(orig.fields)), (dict(orig.fields), orig.label))
        if hasattr(rec, "cf_fields"):
            has_pairs = True
            if rec.cf_label in label_set:
                cf_recs.append(dict(rec.cf_fields))
                cf_y.append(rec.cf_label)
    o_recs = [r for r, _ in originals.values()]
    o_y = [y for _, y in originals.values()]
    if not has_pairs:
        return [EvalSet(name, o_recs, o_y)], problems
    return [EvalSet(f"{name}/original", o_recs, o_y), EvalSet(f"{name}/counterfactual", cf_recs, cf_y)], problems
