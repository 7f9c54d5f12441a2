"""Aggregation of crowd labels and agreement / quality figures (pure, no Django).

Every function takes plain annotations — an iterable of ``(item, annotator, label)`` triples
(``Annotation`` is a NamedTuple, so plain tuples work) — plus the project's label names, and
returns frozen dataclasses. Item and annotator ids are any hashable values (database ids, uuids).
Annotators may label different subsets of the items (missing annotations are simply absent).

Conventions shared by all functions
-----------------------------------
* ``labels`` is the ordered tuple of allowed label names; a label outside it, an empty
  ``labels`` or duplicate label names raise ``ValueError``. The order is used for deterministic
  tie-breaking and for the row/column order of confusion matrices.
* Empty ``annotations`` raise ``ValueError`` (there is nothing to aggregate or measure).
* Two annotations of the same item by the same annotator raise ``ValueError`` (the database
  forbids it; silently keeping one would hide a bug).
* Output dicts are keyed in order of first appearance in the input, so results do not depend
  on hash order and are reproducible.
* An agreement coefficient that is mathematically undefined (0/0: every rating uses one and the
  same label, or no item has two ratings) is ``float("nan")``; check with ``math.isnan`` and
  show it as "n/a" / serialise it as ``null``. ``AgreementScore.defined`` says the same.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Literal, NamedTuple, SupportsInt, cast

import numpy as np
from numpy.typing import NDArray

__all__ = [
    "DAWID_SKENE_DESCRIPTION",
    "FLEISS_FORMULA",
    "KRIPPENDORFF_FORMULA",
    "MAJORITY_VOTE_DESCRIPTION",
    "WILSON_FORMULA",
    "Accuracy",
    "Aggregate",
    "AgreementScore",
    "Annotation",
    "AnnotatorAgreement",
    "DawidSkeneResult",
    "GroupAgreement",
    "agreement_by",
    "agreement_with_aggregate",
    "dawid_skene",
    "fleiss_kappa",
    "gold_accuracy",
    "krippendorff_alpha",
    "majority_vote",
    "wilson_interval",
]

# --- formula strings for the UI -------------------------------------------------------------

FLEISS_FORMULA = "κ = (P̄ − P̄ₑ) / (1 − P̄ₑ)"
"""Fleiss' kappa; P̄ = mean per-item agreement, P̄ₑ = Σⱼ pⱼ² (chance agreement)."""
FLEISS_DETAIL = (
    "Pᵢ = Σⱼ nᵢⱼ(nᵢⱼ − 1) / (nᵢ(nᵢ − 1)), P̄ = mean of Pᵢ over items with nᵢ ≥ 2, pⱼ = Σᵢ nᵢⱼ / Σᵢ nᵢ, P̄ₑ = Σⱼ pⱼ²"
)
KRIPPENDORFF_FORMULA = "α = 1 − Dₒ / Dₑ"
"""Krippendorff's alpha; Dₒ = observed, Dₑ = expected disagreement (coincidence matrix)."""
KRIPPENDORFF_DETAIL = (
    "nominal: Dₒ = 1 − Σc o_cc / n, Dₑ = 1 − Σc n_c(n_c − 1) / (n(n − 1)), where o is the "
    "coincidence matrix of pairable values and n the number of pairable values"
)
WILSON_FORMULA = "(p̂ + z²/2n ± z·√(p̂(1 − p̂)/n + z²/4n²)) / (1 + z²/n)"
MAJORITY_VOTE_DESCRIPTION = "label chosen by most annotators; share = top votes / annotations"
DAWID_SKENE_DESCRIPTION = (
    "Dawid–Skene (1979) EM: per-annotator confusion matrices πₖ[true, given] and label priors; "
    "posterior P(true = j | votes) ∝ pⱼ · Πₖ πₖ[j, labelₖ]"
)

Level = Literal["nominal", "ordinal"]
TieBreak = Literal["abstain", "first"]
Engine = Literal["crowdkit", "numpy"]

_EPS = 1e-10

_Ints = NDArray[np.int64]  # indices and vote counts
_Floats = NDArray[np.float64]
# a Dawid-Skene fit: posteriors (n_items, k), error matrices (n_annotators, k true, k given),
# priors (k,), iterations run, converged
_DawidSkeneFit = tuple[_Floats, _Floats, _Floats, int, bool]


class Annotation(NamedTuple):
    """One answer: ``annotator`` gave ``label`` to ``item``. Plain 3-tuples are accepted too."""

    item: Hashable
    annotator: Hashable
    label: str


# --- input handling --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Table:
    """Validated annotations as index arrays (internal)."""

    labels: tuple[str, ...]
    items: tuple[Hashable, ...]
    annotators: tuple[Hashable, ...]
    item_idx: _Ints  # (N,)
    annotator_idx: _Ints  # (N,)
    label_idx: _Ints  # (N,)

    def counts(self) -> _Ints:
        """(n_items, n_labels) matrix of vote counts."""
        out = np.zeros((len(self.items), len(self.labels)), dtype=np.int64)
        np.add.at(out, (self.item_idx, self.label_idx), 1)
        return out


def _check_labels(labels: Sequence[str]) -> tuple[str, ...]:
    out = tuple(labels)
    if not out:
        raise ValueError("labels must not be empty")
    if len(set(out)) != len(out):
        raise ValueError(f"labels must be unique, got {out!r}")
    return out


def _table(annotations: Iterable[tuple[Hashable, Hashable, str]], labels: Sequence[str]) -> _Table:
    label_tuple = _check_labels(labels)
    label_pos = {name: i for i, name in enumerate(label_tuple)}
    items: dict[Hashable, int] = {}
    annotators: dict[Hashable, int] = {}
    seen: set[tuple[int, int]] = set()
    ii: list[int] = []
    aa: list[int] = []
    ll: list[int] = []
    for row in annotations:
        try:
            item, annotator, label = row
        except (TypeError, ValueError):
            raise ValueError(f"annotation must be (item, annotator, label), got {row!r}") from None
        if label not in label_pos:
            raise ValueError(f"label {label!r} of item {item!r} is not one of {label_tuple!r}")
        i = items.setdefault(item, len(items))
        a = annotators.setdefault(annotator, len(annotators))
        if (i, a) in seen:
            raise ValueError(f"annotator {annotator!r} labelled item {item!r} more than once")
        seen.add((i, a))
        ii.append(i)
        aa.append(a)
        ll.append(label_pos[label])
    if not ii:
        raise ValueError("no annotations given")
    return _Table(
        labels=label_tuple,
        items=tuple(items),
        annotators=tuple(annotators),
        item_idx=np.asarray(ii, dtype=np.int64),
        annotator_idx=np.asarray(aa, dtype=np.int64),
        label_idx=np.asarray(ll, dtype=np.int64),
    )


# --- majority vote ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Aggregate:
    """Majority-vote outcome for one item.

    ``label`` is None when the vote is tied and ``tie_break="abstain"``. ``votes`` holds every
    allowed label (zeros included) in ``labels`` order; ``share`` = top vote count / ``n``.
    """

    label: str | None
    votes: Mapping[str, int]
    share: float
    n: int


def majority_vote(
    annotations: Iterable[tuple[Hashable, Hashable, str]],
    *,
    labels: Sequence[str],
    tie_break: TieBreak = "abstain",
) -> dict[Hashable, Aggregate]:
    """Plurality label per item.

    ``tie_break="abstain"`` gives ``label=None`` when two or more labels share the top count;
    ``"first"`` picks the tied label that comes first in ``labels`` (deterministic, independent
    of annotation order).
    """
    if tie_break not in ("abstain", "first"):
        raise ValueError(f"tie_break must be 'abstain' or 'first', got {tie_break!r}")
    table = _table(annotations, labels)
    counts = table.counts()
    out: dict[Hashable, Aggregate] = {}
    for i, item in enumerate(table.items):
        row = counts[i]
        n = int(row.sum())
        top = int(row.max())
        winners = np.flatnonzero(row == top)
        label = table.labels[int(winners[0])] if len(winners) == 1 or tie_break == "first" else None
        votes = {name: int(c) for name, c in zip(table.labels, row, strict=True)}
        out[item] = Aggregate(label=label, votes=votes, share=top / n, n=n)
    return out


# --- Dawid–Skene -----------------------------------------------------------------------------


@dataclass(frozen=True)
class DawidSkeneResult:
    """Dawid–Skene fit.

    * ``posteriors[item][label]`` — P(true label | all annotations); each item's values sum to 1.
    * ``label_of[item]`` — the most probable label (ties: first in ``labels``).
    * ``confusion[annotator][true][given]`` — P(annotator gives ``given`` | true label is ``true``),
      a full ``labels × labels`` nested dict whose rows sum to 1 (a row for a true label the
      model never infers is uninformative, ≈ uniform).
    * ``priors[label]`` — estimated class prevalence.
    * ``iterations`` — EM iterations run; ``converged`` — stopped by ``tol`` before ``max_iter``.
    """

    labels: tuple[str, ...]
    posteriors: Mapping[Hashable, Mapping[str, float]]
    label_of: Mapping[Hashable, str]
    confusion: Mapping[Hashable, Mapping[str, Mapping[str, float]]]
    priors: Mapping[str, float]
    iterations: int
    converged: bool
    engine: str

    def accuracy_of(self, annotator: Hashable) -> float:
        """Model-estimated accuracy of ``annotator``: Σⱼ priorⱼ · π[j, j]."""
        conf = self.confusion[annotator]
        return float(sum(self.priors[lab] * conf[lab][lab] for lab in self.labels))


def dawid_skene(
    annotations: Iterable[tuple[Hashable, Hashable, str]],
    *,
    labels: Sequence[str],
    max_iter: int = 100,
    tol: float = 1e-5,
    gold: Mapping[Hashable, str] | None = None,
    engine: Engine = "crowdkit",
) -> DawidSkeneResult:
    """Dawid–Skene EM over all annotations, initialised from (soft) majority vote.

    ``engine="crowdkit"`` (default) runs ``crowdkit.aggregation.DawidSkene`` (stops when the
    per-annotation ELBO gain < ``tol``); ``engine="numpy"`` runs the same EM vectorised in numpy
    (stops when no posterior moves by more than ``tol``) and is kept as a dependency-light
    fallback and a cross-check. ``gold`` maps items with known answers to their label; those
    items' posteriors are clamped to the known label in every iteration (both engines), which
    anchors the confusion matrices. Gold items not present in ``annotations`` are ignored.
    """
    if max_iter < 0:
        raise ValueError("max_iter must be >= 0")
    table = _table(annotations, labels)
    n_items, k = len(table.items), len(table.labels)
    gold_idx = np.full(n_items, -1, dtype=np.int64)
    if gold:
        label_pos = {name: i for i, name in enumerate(table.labels)}
        item_pos = {item: i for i, item in enumerate(table.items)}
        for item, lab in gold.items():
            if lab not in label_pos:
                raise ValueError(f"gold label {lab!r} of item {item!r} is not one of {table.labels!r}")
            if item in item_pos:
                gold_idx[item_pos[item]] = label_pos[lab]
    if engine == "crowdkit":
        post, errs, priors, iterations, converged = _ds_crowdkit(table, max_iter, tol, gold_idx)
    elif engine == "numpy":
        post, errs, priors, iterations, converged = _ds_numpy(table, max_iter, tol, gold_idx)
    else:
        raise ValueError(f"engine must be 'crowdkit' or 'numpy', got {engine!r}")
    labs = table.labels
    return DawidSkeneResult(
        labels=labs,
        posteriors={item: {labs[j]: float(post[i, j]) for j in range(k)} for i, item in enumerate(table.items)},
        label_of={item: labs[int(np.argmax(post[i]))] for i, item in enumerate(table.items)},
        confusion={
            ann: {labs[t]: {labs[g]: float(errs[a, t, g]) for g in range(k)} for t in range(k)}
            for a, ann in enumerate(table.annotators)
        },
        priors={labs[j]: float(priors[j]) for j in range(k)},
        iterations=iterations,
        converged=converged,
        engine=engine,
    )


def _clamp_gold(post: _Floats, gold_idx: _Ints) -> _Floats:
    rows = np.flatnonzero(gold_idx >= 0)
    if rows.size:
        post = post.copy()
        post[rows] = 0.0
        post[rows, gold_idx[rows]] = 1.0
    return post


def _ds_numpy(table: _Table, max_iter: int, tol: float, gold_idx: _Ints) -> _DawidSkeneFit:
    n_items, n_ann, k = len(table.items), len(table.annotators), len(table.labels)
    it, an, lb = table.item_idx, table.annotator_idx, table.label_idx
    counts = table.counts().astype(float)
    post = _clamp_gold(counts / counts.sum(axis=1, keepdims=True), gold_idx)

    def m_step(post: _Floats) -> tuple[_Floats, _Floats]:
        # errs[a, true, given] = Σ over a's annotations with label `given` of P(item true = true)
        given_true = np.zeros((n_ann, k, k))
        np.add.at(given_true, (an, lb), post[it])
        errs = np.clip(given_true.transpose(0, 2, 1), _EPS, None)
        errs /= errs.sum(axis=2, keepdims=True)
        return errs, post.mean(axis=0)

    errs, priors = m_step(post)
    iterations, converged = 0, False
    for _ in range(max_iter):
        iterations += 1
        log_post = np.tile(np.log(np.clip(priors, _EPS, None)), (n_items, 1))
        np.add.at(log_post, it, np.log(errs[an, :, lb]))
        log_post -= log_post.max(axis=1, keepdims=True)
        new = np.exp(log_post)
        new = _clamp_gold(new / new.sum(axis=1, keepdims=True), gold_idx)
        delta = float(np.abs(new - post).max())
        post = new
        errs, priors = m_step(post)
        if delta < tol:
            converged = True
            break
    return post, errs, priors, iterations, converged


def _ds_crowdkit(table: _Table, max_iter: int, tol: float, gold_idx: _Ints) -> _DawidSkeneFit:
    import pandas as pd
    from crowdkit.aggregation import DawidSkene

    n_items, n_ann, k = len(table.items), len(table.annotators), len(table.labels)
    data = pd.DataFrame({"task": table.item_idx, "worker": table.annotator_idx, "label": table.label_idx})
    rows = np.flatnonzero(gold_idx >= 0)
    true_labels = pd.Series(gold_idx[rows], index=rows) if rows.size else None
    model = DawidSkene(n_iter=max_iter, tol=tol)
    with warnings.catch_warnings():
        # crowd-kit 1.4.2 uses pandas APIs (inplace=, copy=) deprecated in pandas 3.
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.simplefilter("ignore", FutureWarning)
        model.fit(data, true_labels=true_labels)
    probas, errs_df = model.probas_, model.errors_
    assert probas is not None and errs_df is not None  # fit() sets both
    post = probas.reindex(index=range(n_items), columns=range(k), fill_value=0.0).to_numpy(float)
    post = np.clip(post, 0.0, None)
    post /= post.sum(axis=1, keepdims=True)
    errs = np.zeros((n_ann, k, k))  # [annotator, true, given]
    # errs_df: index (worker, given label), columns: true label, all integer codes; pandas types
    # an index entry as Hashable only
    for key, row in errs_df.iterrows():
        worker, given = cast("tuple[SupportsInt, SupportsInt]", key)
        for true, value in row.items():
            errs[int(worker), int(cast("SupportsInt", true)), int(given)] = float(value)
    # labels nobody used are absent from crowd-kit's matrices: renormalise rows, uniform if empty
    sums = errs.sum(axis=2, keepdims=True)
    errs = np.where(sums > 0, errs / np.where(sums > 0, sums, 1.0), 1.0 / k)
    priors = post.mean(axis=0)
    iterations = len(model.loss_history_)
    return post, errs, priors, iterations, iterations < max_iter


# --- agreement coefficients ------------------------------------------------------------------


@dataclass(frozen=True)
class AgreementScore:
    """A chance-corrected agreement coefficient.

    ``value`` is κ or α (nan when undefined, see module docstring). ``n_items`` counts the
    items that entered the computation (those with ≥ 2 annotations), ``n_annotations`` their
    annotations. ``observed`` / ``expected`` are the observed and chance agreement
    (P̄, P̄ₑ for kappa; 1 − Dₒ, 1 − Dₑ for nominal alpha; None where not computed).
    """

    method: str
    formula: str
    value: float
    n_items: int
    n_annotations: int
    observed: float | None
    expected: float | None

    @property
    def defined(self) -> bool:
        return not math.isnan(self.value)


def _pairable(counts: _Ints) -> _Ints:
    """Rows of items with at least two annotations."""
    rows: _Ints = counts[counts.sum(axis=1) >= 2]
    return rows


def fleiss_kappa(annotations: Iterable[tuple[Hashable, Hashable, str]], *, labels: Sequence[str]) -> AgreementScore:
    """Fleiss' kappa, generalised to items with unequal numbers of raters.

    Items with a single annotation are dropped (they carry no agreement information). For each
    remaining item Pᵢ = Σⱼ nᵢⱼ(nᵢⱼ − 1) / (nᵢ(nᵢ − 1)); P̄ is the unweighted mean of Pᵢ;
    pⱼ = Σᵢ nᵢⱼ / Σᵢ nᵢ over the same items and P̄ₑ = Σⱼ pⱼ². With equal nᵢ this is exactly
    Fleiss (1971); with unequal nᵢ it is the usual generalisation (every item weighted equally,
    category proportions pooled over all ratings). Annotator identity is not used.
    Undefined (nan) when P̄ₑ = 1 (all ratings use one label) or no item has two ratings.
    """
    table = _table(annotations, labels)
    counts = _pairable(table.counts()).astype(float)
    n_i = counts.sum(axis=1)
    if counts.shape[0] == 0:
        return AgreementScore("Fleiss' kappa", FLEISS_FORMULA, math.nan, 0, 0, None, None)
    p_i = (counts * (counts - 1)).sum(axis=1) / (n_i * (n_i - 1))
    p_bar = float(p_i.mean())
    p_j = counts.sum(axis=0) / n_i.sum()
    p_e = float((p_j**2).sum())
    value = math.nan if 1.0 - p_e < 1e-12 else (p_bar - p_e) / (1.0 - p_e)
    return AgreementScore("Fleiss' kappa", FLEISS_FORMULA, value, int(counts.shape[0]), int(n_i.sum()), p_bar, p_e)


def krippendorff_alpha(
    annotations: Iterable[tuple[Hashable, Hashable, str]],
    *,
    labels: Sequence[str],
    level: Level = "nominal",
) -> AgreementScore:
    """Krippendorff's alpha (computed by the ``krippendorff`` package from value counts).

    Handles missing annotations natively; units with fewer than two values are not pairable
    and are excluded (``n_items`` counts pairable items). ``level="ordinal"`` treats the order
    of ``labels`` as the rank order. Undefined (nan) when all pairable values are the same
    label or nothing is pairable. For ``nominal`` the observed/expected agreement
    (1 − Dₒ, 1 − Dₑ) are returned as well, from the coincidence matrix.
    """
    if level not in ("nominal", "ordinal"):
        raise ValueError(f"level must be 'nominal' or 'ordinal', got {level!r}")
    method = f"Krippendorff's alpha ({level})"
    table = _table(annotations, labels)
    counts = _pairable(table.counts()).astype(float)
    n_items = int(counts.shape[0])
    n_values = float(counts.sum())
    if n_items == 0:
        return AgreementScore(method, KRIPPENDORFF_FORMULA, math.nan, 0, 0, None, None)
    observed = expected = None
    if level == "nominal":
        m_u = counts.sum(axis=1)
        o_diag = ((counts * (counts - 1)).sum(axis=1) / (m_u - 1)).sum()
        n_c = counts.sum(axis=0)
        observed = float(o_diag / n_values)
        expected = float((n_c * (n_c - 1)).sum() / (n_values * (n_values - 1)))
    if int((counts.sum(axis=0) > 0).sum()) < 2:
        value = math.nan  # one label only: Dₑ = 0
    else:
        import krippendorff

        value = float(
            krippendorff.alpha(
                value_counts=counts,
                value_domain=list(range(len(table.labels))),
                level_of_measurement=level,
            )
        )
    return AgreementScore(method, KRIPPENDORFF_FORMULA, value, n_items, int(n_values), observed, expected)


@dataclass(frozen=True)
class GroupAgreement:
    """Agreement within one group of items (e.g. one perturbation type).

    ``n_items`` = items of the group with at least one annotation; the scores carry their own
    ``n_items`` (items with ≥ 2 annotations).
    """

    fleiss_kappa: AgreementScore
    krippendorff_alpha: AgreementScore
    n_items: int
    n_annotations: int


def agreement_by(
    annotations: Iterable[tuple[Hashable, Hashable, str]],
    key_of_item: Mapping[Hashable, Hashable],
    *,
    labels: Sequence[str],
    level: Level = "nominal",
) -> dict[Hashable, GroupAgreement]:
    """Fleiss' κ and Krippendorff's α per group (``key_of_item[item]`` → group).

    Annotations of items missing from ``key_of_item`` are ignored (e.g. gold items). Groups are
    keyed in order of first appearance in ``annotations``; a group with no annotations is absent.
    Raises ValueError when ``annotations`` is empty.
    """
    rows = list(annotations)
    if not rows:
        raise ValueError("no annotations given")
    _check_labels(labels)
    grouped: dict[Hashable, list[tuple[Hashable, Hashable, str]]] = {}
    for row in rows:
        item = row[0]
        if item in key_of_item:
            grouped.setdefault(key_of_item[item], []).append(row)
    return {
        group: GroupAgreement(
            fleiss_kappa=fleiss_kappa(group_rows, labels=labels),
            krippendorff_alpha=krippendorff_alpha(group_rows, labels=labels, level=level),
            n_items=len({r[0] for r in group_rows}),
            n_annotations=len(group_rows),
        )
        for group, group_rows in grouped.items()
    }


# --- annotator quality -----------------------------------------------------------------------


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> tuple[float, float]:
    """Wilson score interval for a binomial proportion (Wilson 1927; Newcombe 1998, method 3)."""
    if n <= 0:
        raise ValueError("n must be positive")
    if not 0 <= successes <= n:
        raise ValueError("successes must be between 0 and n")
    if not 0.0 < confidence < 1.0:
        raise ValueError("confidence must be in (0, 1)")
    z = NormalDist().inv_cdf(0.5 + confidence / 2.0)
    p = successes / n
    denom = 1.0 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return low, high


@dataclass(frozen=True)
class Accuracy:
    """Accuracy on gold items with a Wilson score confidence interval."""

    n: int
    correct: int
    accuracy: float
    ci_low: float
    ci_high: float
    confidence: float = 0.95


def gold_accuracy(answers: Iterable[tuple[Hashable, bool]], *, confidence: float = 0.95) -> dict[Hashable, Accuracy]:
    """Per-annotator accuracy on gold items from ``(annotator, correct)`` pairs."""
    tally: dict[Hashable, list[int]] = {}
    for annotator, correct in answers:
        t = tally.setdefault(annotator, [0, 0])
        t[0] += 1
        t[1] += bool(correct)
    if not tally:
        raise ValueError("no gold answers given")
    out: dict[Hashable, Accuracy] = {}
    for annotator, (n, k) in tally.items():
        low, high = wilson_interval(k, n, confidence)
        out[annotator] = Accuracy(n, k, k / n, low, high, confidence)
    return out


@dataclass(frozen=True)
class AnnotatorAgreement:
    """How often an annotator's label equals the aggregate label (``agreed`` of ``n``)."""

    n: int
    agreed: int
    rate: float


def agreement_with_aggregate(
    annotations: Iterable[tuple[Hashable, Hashable, str]],
    aggregate: Mapping[Hashable, str | Aggregate | None],
) -> dict[Hashable, AnnotatorAgreement]:
    """Per-annotator agreement with the aggregate label of each item.

    ``aggregate`` maps item → label, or item → ``Aggregate`` (``majority_vote`` output), or use
    ``DawidSkeneResult.label_of``. Items with no aggregate label (missing, or an abstained tie)
    are skipped. Note the annotator's own vote is part of a majority vote, which inflates the
    rate when items have few annotations; Dawid–Skene labels are less affected.
    """
    tally: dict[Hashable, list[int]] = {}
    for item, annotator, label in annotations:
        target = aggregate.get(item)
        if isinstance(target, Aggregate):
            target = target.label
        if target is None:
            continue
        t = tally.setdefault(annotator, [0, 0])
        t[0] += 1
        t[1] += label == target
    return {a: AnnotatorAgreement(n, k, k / n) for a, (n, k) in tally.items()}
