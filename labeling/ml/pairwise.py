"""h, the pairwise counterfactual classifier (PC and CAPC), with cross-validated calibration,
an abstain threshold and warm start. No Django.

PC:   h(x, x', y)              -> y'
CAPC: h(x, x', y, f(x), f(x')) -> y'      (f: the base classifier trained on originals)

The default learner is a logistic regression on the features of ``features.py``; its
regularisation C is chosen by stratified k-fold cross-validation (log-loss), and its
probabilities are calibrated by a temperature fitted on the out-of-fold predictions (so the
reported CV accuracy, macro-F1 and ECE are honest out-of-sample figures); h predicts with the
average of the k calibrated fold models. Every labelled pair is also trained on read
backwards ((x', x, y') -> y), never in a fold where its forward row is held out.

Warm start: a first h is trained on public counterfactual pairs (e.g. CAD train); the
project's h then gets the warm h's log-probabilities as extra features (stacking), so with a
few project labels it can learn how far to trust the warm model and correct it.

Sibling stage (``siblings.py``): after ``fit``, ``fit_siblings`` trains a second stage in which
the counterfactuals of one original that edit the same fields inform each other's labels;
``predict_proba_pool`` applies it. Kept only when it beats the first stage in CV.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from labeling.ml.base_classifier import BaseClassifier, CrossFitted, Proba, SklearnClassifier, TooFewLabels
from labeling.ml.features import (
    Embed,
    FeatureConfig,
    Floats,
    LabelIndex,
    Pair,
    PairEncoding,
    encode_pairs,
    pair_matrix,
)
from labeling.ml.metrics import accuracy, ece, macro_f1
from labeling.ml.runtime import blas_threads
from labeling.ml.siblings import (
    STAGE_C_GRID,
    has_siblings,
    sibling_features,
    sibling_keys,
    sibling_lists,
    stage_matrix,
)

MODES = ("pc", "capc")
# With few labels the low-dimensional features (edits, y, f) generalise better; with many,
# the embeddings add signal. The cross-validation picks (see PairwiseClassifier.fit).
# LEAN (no embedding blocks, no hashed bag of edited words) wins with a few hundred labels: on a
# 1,600-pair CAD-NLI train slice, 10 % budget, CAPC 0.716 vs 0.685 with the bag (COMPACT)
LEAN = FeatureConfig(embeddings=False, bag=False)
COMPACT = FeatureConfig(embeddings=False)
FULL = FeatureConfig()
DEFAULT_CONFIGS: tuple[FeatureConfig, ...] = (LEAN, COMPACT, FULL)
STACK = FeatureConfig(stack_only=True, C_grid=(0.01, 0.1, 1.0))  # tried when warm-started
WARM_ONLY = FeatureConfig(warm_only=True)  # tried when warm-started
# "nothing flips", calibrated: always a candidate, so h is never chosen over it in CV unless it
# does better there (on generated pools most edits keep the label: issue 19)
INVARIANT = FeatureConfig(invariant_only=True)
# with a task model (issue 26): "f alone" (its label for x', recalibrated; DISCO's teacher) and
# the few-label recipe (y one-hot and the task model's block), tried before the richer sets;
# a CAPC h also tries plain PC (no f features) so the CV can say whether f helps at all
TASK_ONLY = FeatureConfig(task_only=True)
TASK_STACK = FeatureConfig(embeddings=False, bag=False, task_stack=True, C_grid=(0.01, 0.1, 1.0))
PC_LEAN = FeatureConfig(embeddings=False, bag=False, base_f=False, task=False)
WARM_C = 0.0005  # chosen by 3-fold CV grouped by original on CAD train (0.803 vs 0.799 at 0.001)
DEFAULT_C_GRID = (0.003, 0.01, 0.03)
MIN_LABELS = 10  # fewer human labels than this: refuse to train
# A labelled pair read backwards is a labelled pair too: x' with label y', edited into x with
# label y. Training on both directions (the backward rows at half weight, never in a CV fold
# with their forward row) gave CAPC 0.735 vs 0.726 and PC 0.723 vs 0.713 on four 1,600-pair
# CAD-NLI train slices, 10 % budget, 5 seeds, with the same ECE (0.5 and 1.0 tied).
REVERSE_WEIGHT = 0.5
# h's cross-validated choice of model considers more than the calibrated invariant only when
# every label present has at least this many human labels (so the CV has at least 3 folds):
# with 2 folds, on a 267-candidate generated pool at 10 % (a split with 2 entailment labels),
# the lean feature set won the CV by far (log-loss 0.44 vs 0.81) and scored 0.63 against
# invariant's 0.74 on the rest
MIN_FOLDS_RICH = 3


@dataclass(frozen=True)
class CVReport:
    n: int
    folds: int
    C: float
    temperature: float
    accuracy: float
    macro_f1: float
    ece: float
    threshold: float = 0.0
    coverage: float = 1.0  # share of out-of-fold predictions at or above the threshold
    accuracy_confident: float = float("nan")  # accuracy on those
    # The out-of-fold predictions themselves (one per labelled pair, in training order): the
    # confidence of the predicted label (rounded to 4 places) and whether it was right. The
    # dashboard draws h's reliability diagram, confidence histogram and coverage curve from
    # them. Empty for learners that do not keep them (older models, the cross-encoder).
    oof_confidence: list[float] = field(default_factory=list)
    oof_correct: list[int] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """The fields, NaN as None (JSON has no NaN)."""
        return {k: (None if isinstance(v, float) and np.isnan(v) else v) for k, v in asdict(self).items()}


def check_labels(y_prime: Sequence[str], labels: Sequence[str], minimum: int = MIN_LABELS) -> LabelIndex:
    """Label indices, or ``TooFewLabels`` with a clear message (never a silent fallback)."""
    index = {lab: i for i, lab in enumerate(labels)}
    bad = sorted({v for v in y_prime if v not in index})
    if bad:
        raise ValueError(f"counterfactual labels not in the label set: {', '.join(map(str, bad))}")
    yi = np.asarray([index[v] for v in y_prime], dtype=int)
    counts = np.bincount(yi, minlength=len(labels))
    problems = []
    if len(yi) < minimum:
        problems.append(f"{len(yi)} human-labelled pairs, need at least {minimum}")
    none = [labels[i] for i in range(len(labels)) if counts[i] == 0]
    if none:
        problems.append(f"no human-labelled pair with label {', '.join(none)}")
    few = [labels[i] for i in range(len(labels)) if 0 < counts[i] < 2]
    if few:
        problems.append(f"only one human-labelled pair with label {', '.join(few)} (need 2 for cross-validation)")
    if problems:
        raise TooFewLabels("cannot train the pairwise classifier: " + "; ".join(problems))
    return yi


def fit_temperature(log_proba: NDArray[np.floating], y: LabelIndex) -> float:
    """The temperature T minimising the NLL of softmax(log_proba / T)."""
    from scipy.optimize import minimize_scalar

    lp = np.clip(log_proba, -50, 0)

    def nll(log_t: float) -> float:
        z = lp / np.exp(log_t)
        z = z - z.max(axis=1, keepdims=True)
        logp = z - np.log(np.exp(z).sum(axis=1, keepdims=True))
        return float(-logp[np.arange(len(y)), y].mean())

    res = minimize_scalar(nll, bounds=(np.log(0.05), np.log(20.0)), method="bounded")
    return float(np.exp(res.x))


def apply_temperature(log_proba: NDArray[np.floating], t: float) -> Proba:
    z = np.clip(log_proba, -50, 0) / t
    z = z - z.max(axis=1, keepdims=True)
    p = np.exp(z)
    p = p / p.sum(axis=1, keepdims=True)
    # a model fitted on a few dozen labels never gets to claim certainty: every probability
    # stays strictly between 0 and 1 (so a threshold of 1.0 means "abstain on everything")
    eps = 1e-6
    smoothed: Proba = (p + eps) / (1.0 + eps * p.shape[1])
    return smoothed


class LinearH:
    """Scaler + multinomial logistic regression with CV-chosen C and CV temperature."""

    def __init__(
        self,
        n_labels: int,
        C_grid: Sequence[float] = (0.003, 0.01, 0.03),
        folds: int = 5,
        seed: int = 0,
        calibrate: bool = True,
    ) -> None:
        self.n_labels = n_labels
        self.C_grid = tuple(C_grid)
        self.folds = folds
        self.seed = seed
        self.calibrate = calibrate
        self.C = self.C_grid[0]
        self.temperature = 1.0
        self.model: SklearnClassifier | None = None
        self.oof_proba: Proba | None = None

    def _new(self, C: float) -> SklearnClassifier:
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        model: SklearnClassifier = make_pipeline(StandardScaler(), LogisticRegression(C=C, max_iter=3000, tol=1e-3))
        return model

    def _log_proba(self, model: SklearnClassifier, X: Floats) -> NDArray[np.float64]:
        out = np.full((len(X), self.n_labels), -50.0)
        out[:, model.classes_] = np.maximum(model.predict_log_proba(X), -50.0)
        return out

    def fit(
        self,
        X: Floats,
        y: LabelIndex,
        sample_weight: NDArray[np.float64] | None = None,
        cv_mask: NDArray[np.bool_] | None = None,
        tied: NDArray[np.intp] | None = None,
    ) -> LinearH:
        with blas_threads():
            return self._fit(X, y, sample_weight, cv_mask, tied)

    def _fit(
        self,
        X: Floats,
        y: LabelIndex,
        sample_weight: NDArray[np.float64] | None,
        cv_mask: NDArray[np.bool_] | None,
        tied: NDArray[np.intp] | None,
    ) -> LinearH:
        """``cv_mask``: rows that count in the CV scores and the temperature (the project's own
        pairs, read forwards); the other rows are trained on in every fold, except that a row
        ``tied`` to a held-out row (``tied[i]``: the row it was derived from, -1 for none; e.g.
        a pair read backwards) is left out with it, so no fold sees its own test pairs."""
        from sklearn.model_selection import StratifiedKFold

        mask = np.ones(len(y), bool) if cv_mask is None else cv_mask
        counts = np.bincount(y[mask], minlength=self.n_labels)
        present = counts[counts > 0]
        k = int(min(self.folds, present.min())) if len(present) else 0
        if k < 2:
            raise TooFewLabels("cannot cross-validate: every label needs at least 2 labelled pairs")
        skf = StratifiedKFold(n_splits=k, shuffle=True, random_state=self.seed)
        idx_cv = np.flatnonzero(mask)
        idx_rest = np.flatnonzero(~mask)
        best: tuple[float, float, NDArray[np.float64], list[SklearnClassifier]] | None = None
        self.fold_index = np.zeros(len(idx_cv), dtype=int)  # each CV row's fold (its held-out model)
        for C in self.C_grid:
            oof = np.zeros((len(idx_cv), self.n_labels))
            models = []
            for f, (tr, te) in enumerate(skf.split(idx_cv, y[idx_cv])):
                self.fold_index[te] = f
                rest = idx_rest if tied is None else idx_rest[~np.isin(tied[idx_rest], idx_cv[te])]
                tr_rows = np.concatenate([idx_cv[tr], rest])
                m = self._new(C)
                sw = None if sample_weight is None else sample_weight[tr_rows]
                m.fit(X[tr_rows], y[tr_rows], logisticregression__sample_weight=sw)
                oof[te] = self._log_proba(m, X[idx_cv[te]])
                models.append(m)
            loss = float(-oof[np.arange(len(idx_cv)), y[idx_cv]].mean())
            if best is None or loss < best[0]:
                best = (loss, C, oof, models)
        assert best is not None
        self.cv_loss_se = float(np.std(-best[2][np.arange(len(idx_cv)), y[idx_cv]]) / np.sqrt(len(idx_cv)))
        self.cv_loss, self.C, oof, self.fold_models = best
        yc = y[idx_cv]
        self.temperature = fit_temperature(oof, yc) if self.calibrate else 1.0
        self.oof_proba = apply_temperature(oof, self.temperature)
        self.oof_y = yc
        # h is the average of the k fold models, each scaled by the temperature that was fitted
        # on exactly their out-of-fold predictions (a model refitted on all rows is sharper
        # than the ones the temperature saw): ECE 0.049 vs 0.052 for CAPC on eight 800-pair
        # CAD-NLI train slices (80 labels), same accuracy
        self.model = None
        return self

    def fit_plain(self, X: Floats, y: LabelIndex, C: float) -> LinearH:
        """One fit with a fixed C, no cross-validation and no temperature (warm-start models,
        whose outputs only feed the project's h)."""
        with blas_threads():
            self.C = C
            self.model = self._new(C)
            self.model.fit(X, y)
        return self

    cv_loss: float = float("inf")
    cv_loss_se: float = 0.0
    fold_index: NDArray[np.intp] | None = None

    def fold_proba(self, X: Floats) -> list[Proba]:
        """Each fold model's calibrated probabilities on ``X`` (row i of the CV rows was held out
        of model ``fold_index[i]``)."""
        if not self.fold_models:
            raise RuntimeError("h has no fold models")
        with blas_threads():
            return [apply_temperature(self._log_proba(m, X), self.temperature) for m in self.fold_models]

    fold_models: list[SklearnClassifier] | None = None  # None: one model (fit_plain, or saved before the ensemble)

    def predict_proba(self, X: Floats) -> Proba:
        with blas_threads():
            if self.fold_models:
                mean: Proba = np.mean(
                    [apply_temperature(self._log_proba(m, X), self.temperature) for m in self.fold_models], axis=0
                )
                return mean
            if self.model is None:
                raise RuntimeError("h is not trained")
            return apply_temperature(self._log_proba(self.model, X), self.temperature)

    def report(self, threshold: float) -> CVReport:
        return _cv_report(self, threshold)


class TemperatureH:
    """The warm-start model as is, recalibrated by one temperature fitted on the project's
    labels (its cross-validated log-loss is that of the temperature fitted on the other folds)."""

    def __init__(self, n_labels: int, seed: int = 0, folds: int = 5) -> None:
        self.n_labels = n_labels
        self.seed = seed
        self.folds = folds
        self.temperature = 1.0
        self.C = 0.0
        self.cv_loss = float("inf")

    def fit(self, X: Floats, y: LabelIndex) -> TemperatureH:
        from sklearn.model_selection import StratifiedKFold

        counts = np.bincount(y, minlength=self.n_labels)
        k = int(min(self.folds, counts[counts > 0].min()))
        if k < 2:
            raise TooFewLabels("cannot cross-validate: every label needs at least 2 labelled pairs")
        oof = np.zeros_like(X, dtype=float)
        for tr, te in StratifiedKFold(n_splits=k, shuffle=True, random_state=self.seed).split(X, y):
            oof[te] = np.log(np.clip(apply_temperature(X[te], fit_temperature(X[tr], y[tr])), 1e-12, 1))
        per_row = -oof[np.arange(len(y)), y]
        self.cv_loss = float(per_row.mean())
        self.cv_loss_se = float(per_row.std() / np.sqrt(len(y)))
        self.oof_proba = np.exp(oof)
        self.oof_y = y
        self.folds = k
        self.temperature = fit_temperature(X, y)
        return self

    def predict_proba(self, X: Floats) -> Proba:
        return apply_temperature(X, self.temperature)

    def report(self, threshold: float) -> CVReport:
        return _cv_report(self, threshold)


class _OutOfFold(Protocol):
    """What a cross-validation report is computed from: a fitted LinearH or TemperatureH."""

    @property
    def n_labels(self) -> int: ...

    @property
    def folds(self) -> int: ...

    @property
    def C(self) -> float: ...

    @property
    def temperature(self) -> float: ...

    @property
    def oof_proba(self) -> Proba | None: ...

    @property
    def oof_y(self) -> LabelIndex: ...


def _cv_report(h: _OutOfFold, threshold: float) -> CVReport:
    assert h.oof_proba is not None
    p, y = h.oof_proba, h.oof_y
    pred, conf = p.argmax(1), p.max(1)
    ok = conf >= threshold
    return CVReport(
        n=len(y),
        folds=int(min(h.folds, np.bincount(y)[np.bincount(y) > 0].min())),
        C=h.C,
        temperature=h.temperature,
        accuracy=accuracy(y, pred),
        macro_f1=macro_f1(y, pred, h.n_labels),
        ece=ece(conf, pred == y),
        threshold=threshold,
        coverage=float(ok.mean()),
        accuracy_confident=accuracy(y[ok], pred[ok]) if ok.any() else float("nan"),
        oof_confidence=[round(float(c), 4) for c in conf],
        oof_correct=[int(v) for v in (pred == y)],
    )


@dataclass
class PairInputs:
    """A pair encoding plus f's probabilities on x and x' (CAPC) and the task model's (issue
    26) — h's full input."""

    enc: PairEncoding
    f_o: Proba | None = None
    f_c: Proba | None = None
    t_o: Proba | None = None
    t_c: Proba | None = None

    def subset(self, idx: NDArray[np.integer] | Sequence[int]) -> PairInputs:
        idx = np.asarray(idx, dtype=int)

        def sub(a: Proba | None) -> Proba | None:
            return None if a is None else a[idx]

        return PairInputs(self.enc.subset(idx), sub(self.f_o), sub(self.f_c), sub(self.t_o), sub(self.t_c))

    def with_task(self, task: TaskModel | None, pairs: Sequence[Pair]) -> PairInputs:
        """These inputs plus the task model's probabilities on each pair's x and x'."""
        if task is None:
            return self
        t_o, t_c = task_proba(task, pairs)
        return PairInputs(self.enc, self.f_o, self.f_c, t_o, t_c)

    def with_reversed(self, y_prime: LabelIndex) -> PairInputs:
        """These pairs followed by the same pairs read backwards ((x', x, y') -> y), f's
        probabilities swapped with them."""
        enc = PairEncoding.concat(self.enc, self.enc.reversed(y_prime))

        def both(a: Proba | None, b: Proba | None) -> Proba | None:
            return None if a is None or b is None else np.concatenate([a, b])

        return PairInputs(
            enc, both(self.f_o, self.f_c), both(self.f_c, self.f_o), both(self.t_o, self.t_c), both(self.t_c, self.t_o)
        )


class TaskModel(Protocol):
    """The task model (issue 26; ``labeling.ml.task_model``): any classifier of the task's
    records, its columns in the project's label order."""

    def predict_proba(self, records: list[dict[str, str]]) -> Proba: ...


def task_proba(task: TaskModel, pairs: Sequence[Pair]) -> tuple[Proba, Proba]:
    """The task model's probabilities on every pair's x and x' (each distinct text once)."""
    keyed: dict[tuple[tuple[str, str], ...], int] = {}
    records: list[dict[str, str]] = []
    for r in [p.original for p in pairs] + [p.counterfactual for p in pairs]:
        k = tuple(sorted(r.items()))
        if k not in keyed:
            keyed[k] = len(records)
            records.append(dict(r))
    proba = np.asarray(task.predict_proba(records), dtype=np.float64)
    rows = [keyed[tuple(sorted(p.original.items()))] for p in pairs]
    rows_c = [keyed[tuple(sorted(p.counterfactual.items()))] for p in pairs]
    return proba[rows], proba[rows_c]


def prepare_inputs(
    pairs: Sequence[Pair],
    *,
    labels: Sequence[str],
    fields: Sequence[str],
    embed: Embed | None,
    base: BaseClassifier | CrossFitted | None = None,
    hash_features: int = 512,
    spans: bool = True,
    task: TaskModel | None = None,
) -> PairInputs:
    enc = encode_pairs(pairs, labels=labels, fields=fields, embed=embed, hash_features=hash_features, spans=spans)
    if base is None:
        return PairInputs(enc).with_task(task, pairs)
    records = [p.original for p in pairs] + [p.counterfactual for p in pairs]
    if isinstance(base, CrossFitted):
        both = base.predict_proba(records, keys=[p.original for p in pairs] * 2)
    else:
        both = base.predict_proba(records)
    n = len(pairs)
    return PairInputs(enc, both[:n], both[n:]).with_task(task, pairs)


@dataclass
class PairwiseClassifier:
    """h for one label set and text fields. ``mode`` is ``pc`` or ``capc``."""

    labels: list[str]
    fields: list[str]
    mode: str = "capc"
    config: FeatureConfig = field(default_factory=FeatureConfig)
    # feature sets to choose from by cross-validated log-loss (``config`` is the chosen one)
    configs: tuple[FeatureConfig, ...] = DEFAULT_CONFIGS
    threshold: float = 0.7
    C_grid: tuple[float, ...] = DEFAULT_C_GRID  # other values override each config's own grid
    seed: int = 0
    # the embedding-heavy FULL feature set is only tried from this many labels on (below it
    # the compact set won every cross-validation we ran on CAD, and FULL costs 5x the time)
    full_min_n: int = 500
    # also train on every labelled pair read backwards, (x', x, y') -> y, at this weight (0: off)
    reverse_weight: float = REVERSE_WEIGHT
    # also consider "nothing flips" (INVARIANT) in the cross-validated choice of feature set
    invariant_candidate: bool = True
    warm: PairwiseClassifier | None = None
    warm_scale: float = 1.0
    perturbations: list[str] = field(default_factory=list)
    learner: LinearH | TemperatureH | None = None
    cv: CVReport | None = None
    # the second stage (``siblings.py``): fitted by ``fit_siblings`` when the pool has sibling
    # counterfactuals and it beats the first stage in cross-validation; None: not used
    sibling_stage: LinearH | None = None
    # every candidate of the cross-validated choice, in the order tried: its name, CV log-loss
    # and accuracy, and whether it was chosen (issue 26: shown where h's report is shown)
    candidates: list[dict[str, Any]] = field(default_factory=list)
    # whether h was fitted with the task model's probabilities in its inputs (issue 26)
    task_inputs: bool = False

    def __post_init__(self) -> None:
        if self.mode not in MODES:
            raise ValueError(f"unknown mode {self.mode!r}; choose pc or capc")

    @property
    def feature_set_name(self) -> str:
        sib = " + siblings" if getattr(self, "sibling_stage", None) is not None else ""
        return self.config_name(self.config, task=self.uses_task) + sib

    @property
    def uses_task(self) -> bool:
        """Whether the chosen candidate reads the task model's probabilities."""
        return bool(getattr(self, "task_inputs", False)) and config_reads_task(self.config)

    def config_name(self, c: FeatureConfig, *, task: bool = False) -> str:
        """A candidate's name: what it is (``invariant``, ``f alone``, ``pc``, ``capc``) and its
        feature set."""
        v = vars(c)
        if v.get("invariant_only", False):
            return "invariant (nothing flips), calibrated"
        if v.get("task_only", False):
            return "f alone (the task model's label for x'), calibrated"
        if v.get("task_stack", False):
            return "y + task model (the few-label recipe)"
        if c.warm_only:
            return "warm-start model, recalibrated"
        if c.stack_only:
            return "stacked on the warm-start model"
        name = "full" if c.embeddings else ("compact" if c.bag else "lean")
        name += " + warm-start model" if self.warm is not None else ""
        kind = "capc" if self.mode == "capc" and v.get("base_f", True) else "pc"
        return f"{kind}: {name}" + (" + task model" if task else "")

    # -- features ------------------------------------------------------------
    def matrix(self, inputs: PairInputs) -> Floats:
        capc = self.mode == "capc"
        if capc and (inputs.f_o is None or inputs.f_c is None):
            raise ValueError("CAPC needs the base classifier's probabilities on x and x'")
        task = bool(getattr(self, "task_inputs", False)) and config_reads_task(self.config)
        if task and (inputs.t_o is None or inputs.t_c is None):
            raise ValueError("this h reads the task model: its inputs need the task model's probabilities")
        extra = None
        if self.warm is not None and not vars(self.config).get("task_only", False):
            extra = self.warm_scale * np.log(np.clip(self.warm.predict_proba(inputs), 1e-6, 1.0))
        return pair_matrix(
            inputs.enc,
            n_labels=len(self.labels),
            perturbations=self.perturbations,
            config=self.config,
            f_proba_o=inputs.f_o if capc else None,
            f_proba_c=inputs.f_c if capc else None,
            extra=extra,
            task_o=inputs.t_o if task else None,
            task_c=inputs.t_c if task else None,
        )

    # -- training ------------------------------------------------------------
    def fit(self, inputs: PairInputs, y_prime: Sequence[str], *, min_labels: int = MIN_LABELS) -> PairwiseClassifier:
        yi = check_labels(y_prime, self.labels, minimum=min_labels)
        self.perturbations = sorted({p for p in inputs.enc.perturbation if p})
        configs = [
            c
            for c in (self.configs or (self.config,))
            if not (c.embeddings and len(yi) < self.full_min_n and len(self.configs) > 1)
        ]
        # a CAPC h also tries plain PC, after the warm-start candidates (before them, the one-SE
        # rule took the lean set over the stacked warm model: capc+warm 0.904 against 0.921 on
        # CAD-NLI dev, 5 seeds)
        if self.mode == "capc" and len(self.configs) > 1:
            configs = [PC_LEAN, *configs]
        if self.warm is not None:
            configs = [WARM_ONLY, STACK, *configs]
        # the task model (issue 26): its inputs decide whether h reads it; its candidates
        self.task_inputs = inputs.t_o is not None and inputs.t_c is not None
        if self.task_inputs and len(self.configs) > 1:
            configs = [TASK_ONLY, TASK_STACK, *configs]
        if getattr(self, "invariant_candidate", False):
            configs = [INVARIANT, *configs]
            counts = np.bincount(yi)
            if counts[counts > 0].min() < MIN_FOLDS_RICH:
                # a label with fewer than MIN_FOLDS_RICH human labels: a 2-fold CV cannot tell a
                # richer model from "nothing flips" (see MIN_FOLDS_RICH)
                configs = [INVARIANT]
        # candidates go from the simplest to the richest; the "one standard error" rule keeps
        # the simplest whose CV log-loss is within one standard error of the best (with a few
        # dozen labels the richer feature sets win the CV by noise and lose on new pairs)
        n = len(yi)
        train_inputs, y_train = inputs, yi
        weight = mask = tied = None
        if self.reverse_weight > 0 and inputs.enc.edits_rev is not None:
            train_inputs = inputs.with_reversed(yi)
            y_train = np.concatenate([yi, inputs.enc.y])
            weight = np.concatenate([np.ones(n), np.full(n, self.reverse_weight)])
            mask = np.arange(2 * n) < n
            tied = np.concatenate([np.full(n, -1), np.arange(n)])
        fitted: list[tuple[float, float, FeatureConfig, LinearH | TemperatureH]] = []
        for config in configs:
            self.config = config
            grid = config.C_grid if self.C_grid == DEFAULT_C_GRID else self.C_grid
            learner: LinearH | TemperatureH
            if config.warm_only or vars(config).get("invariant_only", False) or config.task_only:
                learner = TemperatureH(len(self.labels), seed=self.seed).fit(self.matrix(inputs), yi)
            else:
                learner = LinearH(len(self.labels), C_grid=grid, seed=self.seed).fit(
                    self.matrix(train_inputs), y_train, sample_weight=weight, cv_mask=mask, tied=tied
                )
            fitted.append((learner.cv_loss, learner.cv_loss_se, config, learner))
        best_loss, best_se = min((f[0], f[1]) for f in fitted)
        # with a task model the candidate of least CV log-loss wins outright: on the
        # generated-gold dev set (34 labels, 10 seeds) the one-standard-error rule kept
        # "nothing flips" in 4 of 10 seeds, 0.694 on valid candidates against 0.726 (export
        # 0.856 / 0.251 / 0.557 against 0.912 / 0.184 / 0.401 correct / invalid / coverage)
        margin = 0.0 if self.task_inputs else best_se
        _, _, self.config, self.learner = next(f for f in fitted if f[0] <= best_loss + margin)
        self.candidates = [
            {
                "name": self.config_name(config, task=self.task_inputs and config_reads_task(config)),
                "cv_log_loss": round(float(loss), 4),
                "cv_accuracy": _oof_accuracy(learner),
                "chosen": learner is self.learner,
            }
            for loss, _, config, learner in fitted
        ]
        self.cv = self.learner.report(self.threshold)
        return self

    def fit_warm(self, inputs: PairInputs, y_prime: Sequence[str], *, C: float = WARM_C) -> PairwiseClassifier:
        """Pre-train on public counterfactual pairs: one fit on the full feature set."""
        yi = check_labels(y_prime, self.labels, minimum=MIN_LABELS)
        self.perturbations = sorted({p for p in inputs.enc.perturbation if p})
        self.config = FULL
        self.configs = ()
        self.learner = LinearH(len(self.labels)).fit_plain(self.matrix(inputs), yi, C)
        return self

    def with_warm(self, warm: PairwiseClassifier) -> PairwiseClassifier:
        if warm.mode != self.mode or list(warm.labels) != list(self.labels):
            raise ValueError("the warm-start model must have the same mode and label set")
        self.warm = warm
        return self

    def predict_proba(self, inputs: PairInputs) -> Proba:
        if self.learner is None:
            raise RuntimeError("the pairwise classifier is not trained")
        return self.learner.predict_proba(self.matrix(inputs))

    def fit_siblings(
        self,
        pool: PairInputs,
        keys: Sequence[str],
        train: Sequence[int] | NDArray[np.integer],
        y_prime: Sequence[str],
    ) -> bool:
        """The second stage (``siblings.py``), after ``fit``: ``pool`` holds the inputs of every
        pair (labelled or not) whose siblings matter, ``keys`` their ``sibling_keys``, ``train``
        the pool rows ``fit`` was given, in that order, with their labels ``y_prime``. Keeps
        the stage (and reports its cross-validation) only when its out-of-fold log-loss beats
        the first stage's; returns whether it did."""
        self.sibling_stage = None
        learner = self.learner
        if learner is None or learner.oof_proba is None:
            raise RuntimeError("fit h before its sibling stage")
        if vars(self.config).get("invariant_only", False):
            # "nothing flips" has no pair features for siblings to correct, and its one
            # parameter was fitted on every label, so the stage's CV would see its own labels
            # (on the generated-gold dev set it took invariant's 0.751 down to 0.710)
            return False
        sibs = sibling_lists(keys)
        rows = [int(r) for r in train]
        if not has_siblings(rows, sibs):
            return False
        yi = np.asarray([self.labels.index(v) for v in y_prime], dtype=int)
        X = self.matrix(pool)
        n_labels = len(self.labels)
        known = {r: int(yi[t]) for t, r in enumerate(rows)}
        # a labelled pair's siblings as seen by the fold model that did not train on it
        if isinstance(learner, LinearH) and learner.fold_models and learner.fold_index is not None:
            per_fold = learner.fold_proba(X)
            blocks = [
                sibling_features([r], sibs, per_fold[learner.fold_index[t]], known, n_labels)[0]
                for t, r in enumerate(rows)
            ]
        else:  # the recalibrated warm model never trained on the project's pairs
            blocks = sibling_features(rows, sibs, learner.predict_proba(X), known, n_labels)
        oof = learner.oof_proba
        stage = LinearH(n_labels, C_grid=STAGE_C_GRID, seed=self.seed).fit(
            stage_matrix(rows, oof, blocks, pool.enc.y, n_labels), yi
        )
        assert stage.oof_proba is not None

        def nll(p: Proba) -> float:
            return float(-np.log(np.clip(p[np.arange(len(yi)), yi], 1e-12, 1.0)).mean())

        first, second = nll(oof), nll(stage.oof_proba)
        if second >= first:
            return False
        self.sibling_stage = stage
        self.cv = stage.report(self.threshold)
        # the report's headline is the chosen candidate's figure (issue 30: it said 0.623 while
        # the chosen row said 0.586, the first stage's): the stage is a row of its own, chosen
        for c in self.candidates:
            if c["chosen"]:
                c["chosen"] = False
                self.candidates.append(
                    {
                        "name": f"{c['name']} + siblings",
                        "cv_log_loss": round(second, 4),
                        "cv_accuracy": _oof_accuracy(stage),
                        "chosen": True,
                    }
                )
                break
        return True

    def predict_proba_pool(
        self, pool: PairInputs, keys: Sequence[str], known: Mapping[int, str] | None = None
    ) -> Proba:
        """h's probabilities for every pair of ``pool``, siblings labelling each other when the
        sibling stage is on (``known``: pool row -> its human label, for the labelled ones)."""
        first = self.predict_proba(pool)
        stage: LinearH | None = getattr(self, "sibling_stage", None)
        if stage is None:
            return first
        n_labels = len(self.labels)
        known_i = {int(r): self.labels.index(v) for r, v in (known or {}).items()}
        rows = list(range(len(pool.enc)))
        blocks = sibling_features(rows, sibling_lists(keys), first, known_i, n_labels)
        return stage.predict_proba(stage_matrix(rows, first, blocks, pool.enc.y, n_labels))

    def predict(self, inputs: PairInputs) -> tuple[list[str | None], Proba]:
        """Predicted labels (``None`` where h abstains: confidence below the threshold) and
        the confidences."""
        p = self.predict_proba(inputs)
        conf = p.max(axis=1)
        pred = p.argmax(axis=1)
        return [self.labels[k] if c >= self.threshold else None for k, c in zip(pred, conf, strict=True)], conf


def config_reads_task(c: FeatureConfig) -> bool:
    """Whether a candidate with this feature set reads the task model (when it is given)."""
    v = vars(c)
    if v.get("invariant_only", False) or c.warm_only or c.stack_only:
        return False
    return bool(v.get("task_only", False) or v.get("task_stack", False) or v.get("task", True))


def _oof_accuracy(learner: LinearH | TemperatureH) -> float | None:
    p = learner.oof_proba
    if p is None:
        return None
    return round(float(np.mean(p.argmax(axis=1) == learner.oof_y)), 4)


class TextPairH(Protocol):
    """An h that reads the pairs' texts itself instead of ``PairInputs`` features: the
    cross-encoder (``labeling.ml.cross_encoder.CrossEncoderH``). A protocol, so that this module
    does not import the cross-encoder (which builds on this one)."""

    def predict_proba_pairs(self, pairs: Sequence[Pair]) -> Proba: ...

    @property
    def feature_set_name(self) -> str: ...


@dataclass
class LabelingModel:
    """What is saved to disk: f (for CAPC), h (with its warm model inside) and metadata."""

    labels: list[str]
    fields: list[str]
    mode: str
    h: PairwiseClassifier | TextPairH
    base: BaseClassifier | CrossFitted | None = None
    meta: dict[str, Any] = field(default_factory=dict)

    # the task model h reads (issue 26), never pickled: reloaded from ``meta["task_model"]``
    task: TaskModel | None = None

    def attach(self, embed: Embed | None) -> None:
        """Re-attach the embedding function after loading (it is never pickled), and the task
        model when h reads one."""
        self.embed = embed
        path = self.meta.get("task_model") or ""
        if path and self.task is None:
            from labeling.ml.task_inputs import load_task

            self.task = load_task(path, self.labels, self.fields)
        if isinstance(self.base, CrossFitted):
            self.base.attach_embed(embed)
        elif self.base is not None and hasattr(self.base, "embed"):
            self.base.embed = embed

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state.pop("embed", None)
        state["task"] = None
        return state

    def inputs(self, pairs: Sequence[Pair]) -> PairInputs:
        embed = getattr(self, "embed", None)
        reads_task = isinstance(self.h, PairwiseClassifier) and self.h.uses_task
        if reads_task and getattr(self, "task", None) is None:
            raise RuntimeError("this h reads the task model, which is not loaded")
        return prepare_inputs(
            pairs,
            labels=self.labels,
            fields=self.fields,
            embed=embed,
            base=self.base if self.mode == "capc" else None,
            task=self.task if reads_task else None,
        )

    def predict_proba(self, pairs: Sequence[Pair], inputs: PairInputs | None = None) -> Proba:
        """``inputs``: ``self.inputs(pairs)`` when the caller already has them (not computed twice)."""
        if not isinstance(self.h, PairwiseClassifier):  # the cross-encoder reads the texts itself
            return self.h.predict_proba_pairs(pairs)
        return self.h.predict_proba(inputs if inputs is not None else self.inputs(pairs))

    @property
    def uses_siblings(self) -> bool:
        """Whether h labels sibling counterfactuals together (``predict_proba_pool``)."""
        return isinstance(self.h, PairwiseClassifier) and getattr(self.h, "sibling_stage", None) is not None

    def predict_proba_pool(self, pairs: Sequence[Pair], known: Mapping[int, str] | None = None) -> Proba:
        """``predict_proba`` for pairs scored together, siblings informing each other
        (``known``: row -> human label, for the pairs that have one)."""
        if not self.uses_siblings:
            return self.predict_proba(pairs)
        assert isinstance(self.h, PairwiseClassifier)
        return self.h.predict_proba_pool(self.inputs(pairs), sibling_keys(pairs, self.fields), known)

    def save(self, path: str) -> None:
        import joblib

        joblib.dump(self, path, compress=3)

    @staticmethod
    def load(path: str, embed: Embed | None = None) -> LabelingModel:
        import joblib

        model: LabelingModel = joblib.load(path)
        model.attach(embed)
        return model
