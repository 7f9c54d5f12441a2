"""The statistics behind the researcher dashboard's charts, from plain values (no Django).

- :func:`reliability_bins`, :func:`confidence_histogram`, :func:`coverage_curve`: h's
  out-of-fold predictions (confidence of the predicted label, correct or not);
- :func:`bootstrap_agreement`: Fleiss' κ and Krippendorff's α with a percentile bootstrap CI,
  resampling *items* (an item's answers stay together);
- :func:`swapped_nouns`, :func:`noun_category`: the noun a caption pair swapped and its WordNet
  lexicographer file (``noun.animal``, ``noun.artifact``…), as in the COCO-Counterfactuals
  error analysis;
- :func:`caption_outcomes`: per image of a pair, how often annotators chose its own caption,
  the other one, both or neither, and whether the pair was valid (each image got its own);
- :func:`two_proportion_test`, :func:`mcnemar_one_sided`: the tests behind the science
  warnings (auto vs human flip share; h vs the invariant baseline on the same pairs).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

from annotate.ml import agreement

N_BINS = 10
THRESHOLDS = tuple(round(0.05 * i, 2) for i in range(20))  # 0.0 … 0.95


def _bin(c: float, n_bins: int) -> int:
    return min(max(int(c * n_bins), 0), n_bins - 1)


@dataclass(frozen=True)
class ReliabilityBin:
    lo: float
    hi: float
    n: int
    mean_confidence: float | None
    accuracy: float | None


def reliability_bins(
    confidence: Sequence[float], correct: Sequence[int | bool], n_bins: int = N_BINS
) -> list[ReliabilityBin]:
    """Equal-width bins over [0, 1] (as in ``labeling.ml.metrics.ece``): count, mean confidence
    and accuracy of the predictions in each (None for an empty bin)."""
    sums: list[list[float]] = [[0, 0.0, 0.0] for _ in range(n_bins)]
    for c, ok in zip(confidence, correct, strict=True):
        b = sums[_bin(c, n_bins)]
        b[0] += 1
        b[1] += c
        b[2] += 1.0 if ok else 0.0
    out = []
    for i, (n, s, k) in enumerate(sums):
        out.append(
            ReliabilityBin(
                round(i / n_bins, 4),
                round((i + 1) / n_bins, 4),
                int(n),
                s / n if n else None,
                k / n if n else None,
            )
        )
    return out


def confidence_histogram(confidence: Sequence[float], n_bins: int = N_BINS) -> list[tuple[float, float, int]]:
    counts = Counter(_bin(c, n_bins) for c in confidence)
    return [(round(i / n_bins, 4), round((i + 1) / n_bins, 4), counts.get(i, 0)) for i in range(n_bins)]


@dataclass(frozen=True)
class CoveragePoint:
    threshold: float
    n: int  # predictions at or above the threshold
    coverage: float | None  # n / all
    accuracy: float | None  # accuracy on those


def coverage_curve(
    confidence: Sequence[float], correct: Sequence[int | bool], thresholds: Sequence[float] = THRESHOLDS
) -> list[CoveragePoint]:
    """At each threshold t: the share of predictions with confidence >= t (what h would label
    rather than abstain) and their accuracy."""
    pairs = list(zip(confidence, correct, strict=True))
    total = len(pairs)
    out = []
    for t in thresholds:
        kept = [ok for c, ok in pairs if c >= t]
        out.append(
            CoveragePoint(
                float(t),
                len(kept),
                len(kept) / total if total else None,
                sum(1 for ok in kept if ok) / len(kept) if kept else None,
            )
        )
    return out


# -- agreement with a bootstrap CI ----------------------------------------------------------
@dataclass(frozen=True)
class AgreementCI:
    n_items: int  # items with at least two answers
    n_annotations: int
    kappa: float | None
    kappa_ci: tuple[float, float] | None
    alpha: float | None
    alpha_ci: tuple[float, float] | None
    reason: str = ""  # why a figure is n/a


def _finite(x: float) -> float | None:
    return None if math.isnan(x) else float(x)


def _percentiles(values: list[float], level: float = 0.95) -> tuple[float, float] | None:
    vals = sorted(v for v in values if not math.isnan(v))
    if len(vals) < 10:
        return None
    lo = vals[int((1 - level) / 2 * (len(vals) - 1))]
    hi = vals[int((1 + level) / 2 * (len(vals) - 1))]
    return (float(lo), float(hi))


MIN_ITEMS_FOR_CI = 5


def bootstrap_agreement(
    annotations: Iterable[tuple[Hashable, Hashable, str]],
    *,
    labels: Sequence[str],
    n_boot: int = 200,
    seed: int = 0,
) -> AgreementCI:
    """κ and α of ``(item, annotator, choice)`` answers with 95% percentile-bootstrap
    intervals over items (items drawn with replacement, each copy a new item). With fewer
    than ``MIN_ITEMS_FOR_CI`` items that have two answers the interval is not computed."""
    rows = list(annotations)
    by_item: dict[Hashable, list[tuple[Hashable, str]]] = {}
    for item, annotator, choice in rows:
        by_item.setdefault(item, []).append((annotator, choice))
    multi = {i: a for i, a in by_item.items() if len({x for x, _ in a}) >= 2}
    n_ann = sum(len(a) for a in multi.values())
    if not multi:
        distinct = {a for _, a, _ in rows}
        why = "one annotator" if len(distinct) <= 1 else "no item has two answers yet"
        return AgreementCI(0, n_ann, None, None, None, None, f"n/a ({why})")
    flat = [(i, a, c) for i, ans in multi.items() for a, c in ans]
    kappa = _finite(agreement.fleiss_kappa(flat, labels=labels).value)
    alpha = _finite(agreement.krippendorff_alpha(flat, labels=labels).value)
    reason = "" if kappa is not None else "n/a (every answer is the same choice)"
    kci = aci = None
    if len(multi) >= MIN_ITEMS_FOR_CI and kappa is not None:
        rng = random.Random(seed)
        keys = list(multi)
        ks: list[float] = []
        als: list[float] = []
        for _ in range(n_boot):
            sample = [(k, i) for k, i in enumerate(rng.choices(keys, k=len(keys)))]
            boot = [(k, a, c) for k, i in sample for a, c in multi[i]]
            ks.append(agreement.fleiss_kappa(boot, labels=labels).value)
            als.append(agreement.krippendorff_alpha(boot, labels=labels).value)
        kci, aci = _percentiles(ks), _percentiles(als)
    elif kappa is not None:
        reason = f"CI n/a (fewer than {MIN_ITEMS_FOR_CI} items with two answers)"
    return AgreementCI(len(multi), n_ann, kappa, kci, alpha, aci, reason)


# -- COCO-Counterfactuals outcome analysis --------------------------------------------------
def _words(text: str) -> list[str]:
    return [w.strip(".,;:!?\"'()").lower() for w in text.split()]


def swapped_nouns(caption_a: str, caption_b: str) -> tuple[str, str] | None:
    """The word of ``caption_a`` replaced in ``caption_b`` when the two differ in one place
    (articles "a"/"an" that follow the noun are ignored); None otherwise."""
    a = [w for w in _words(caption_a) if w]
    b = [w for w in _words(caption_b) if w]
    if len(a) != len(b):
        return None
    diff = [(x, y) for x, y in zip(a, b, strict=True) if x != y and {x, y} != {"a", "an"}]
    return diff[0] if len(diff) == 1 else None


@lru_cache(maxsize=4096)
def noun_category(word: str) -> str:
    """The WordNet lexicographer file of ``word``'s first noun sense without the ``noun.``
    prefix (``animal``, ``artifact``, ``person``…), ``unknown`` when WordNet has no noun sense
    (or its data is not installed). Read from two lines of WordNet's files, not from a loaded
    WordNet (seconds, paid by the first dashboard request of a process)."""
    from projects.ml.wordnet import noun_lexname

    try:
        lexname = noun_lexname(word.lower().replace(" ", "_")) or noun_lexname(word.lower())
    except LookupError:
        return "unknown"
    return lexname.removeprefix("noun.") if lexname else "unknown"


OUTCOMES = ("own", "other", "both", "neither")


@dataclass(frozen=True)
class CaptionOutcomes:
    """``image_0`` is the original's image (its own caption is ``caption_a``), ``image_1`` the
    counterfactual's (its own is ``caption_b``): how many *answers* chose its own caption, the
    other one, both or neither (:data:`OUTCOMES`). ``pairs``: pairs whose two items both have a
    final (aggregated) choice; ``valid``: of those, the pairs where each image's final choice
    was its own caption (the paper's "both images matched their own caption")."""

    image_0: dict[str, int]
    image_1: dict[str, int]
    pairs: int
    valid: int

    @property
    def valid_share(self) -> float | None:
        return self.valid / self.pairs if self.pairs else None


def caption_outcome(side: str, choice: str) -> str | None:
    """``own`` | ``other`` | ``both`` | ``neither`` for a canonical choice on ``side``'s image."""
    own, other = ("caption_a", "caption_b") if side == "original" else ("caption_b", "caption_a")
    return {own: "own", other: "other", "both": "both", "neither": "neither"}.get(choice)


def caption_outcomes(
    answers: Iterable[tuple[str, str]], results: Mapping[Hashable, Mapping[str, str]]
) -> CaptionOutcomes:
    """``answers``: ``(side, canonical choice)`` of every answer on a real item;
    ``results[pair] = {"original": final choice, "counterfactual": final choice}`` (a side is
    missing while it has no final choice)."""
    img = {"original": dict.fromkeys(OUTCOMES, 0), "counterfactual": dict.fromkeys(OUTCOMES, 0)}
    for side, choice in answers:
        o = caption_outcome(side, choice)
        if side in img and o is not None:
            img[side][o] += 1
    pairs = valid = 0
    for sides in results.values():
        if sides.get("original") and sides.get("counterfactual"):
            pairs += 1
            valid += (
                caption_outcome("original", sides["original"]) == "own"
                and caption_outcome("counterfactual", sides["counterfactual"]) == "own"
            )
    return CaptionOutcomes(img["original"], img["counterfactual"], pairs, valid)


# -- the science warnings' tests ------------------------------------------------------------
@dataclass(frozen=True)
class ProportionTest:
    """Two proportions ``k1/n1`` and ``k2/n2``, their difference and the two-sided p-value of
    the pooled two-proportion z-test (None when it is undefined: an empty group, or both
    shares 0 or both 1)."""

    share_1: float | None
    share_2: float | None
    difference: float | None
    p_value: float | None


def two_proportion_test(k1: int, n1: int, k2: int, n2: int) -> ProportionTest:
    if n1 <= 0 or n2 <= 0:
        return ProportionTest(k1 / n1 if n1 > 0 else None, k2 / n2 if n2 > 0 else None, None, None)
    p1, p2 = k1 / n1, k2 / n2
    pooled = (k1 + k2) / (n1 + n2)
    se = math.sqrt(pooled * (1 - pooled) * (1 / n1 + 1 / n2))
    if se == 0:
        return ProportionTest(p1, p2, p1 - p2, None if p1 == p2 else 0.0)
    z = (p1 - p2) / se
    return ProportionTest(p1, p2, p1 - p2, math.erfc(abs(z) / math.sqrt(2)))


def mcnemar_one_sided(a_correct: Sequence[int | bool], b_correct: Sequence[int | bool]) -> float | None:
    """Exact one-sided McNemar p-value that method A (``a_correct``, per example) is more
    accurate than method B on the same examples: P(X >= wins) for X ~ Binomial(wins + losses,
    1/2), where wins counts examples only A got right and losses those only B got right. None
    when the two lists differ in length or are empty; 1.0 when they never disagree."""
    if not a_correct or len(a_correct) != len(b_correct):
        return None
    wins = sum(1 for a, b in zip(a_correct, b_correct, strict=True) if a and not b)
    losses = sum(1 for a, b in zip(a_correct, b_correct, strict=True) if b and not a)
    n = wins + losses
    if n == 0:
        return 1.0
    tail: float = sum(math.comb(n, k) for k in range(wins, n + 1)) / 2**n
    return min(1.0, tail)
