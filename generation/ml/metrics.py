"""Per-run generation metrics: candidates per original, acceptance by filter, distinct-1/2,
self-BLEU, mean token edit distance, mean similarity, share per control code, and the
"introduced text" statistics (distinct-1 of inserted/replacing tokens, largest share of one
introduced token) that expose shortcut words such as "not".

All plain Python/numpy, no downloads (self-BLEU is implemented here, not taken from NLTK).
"""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

from generation.ml.rules.tokens import introduced_removed, words


# -- diversity ---------------------------------------------------------------------------------
def ngrams(tokens: Sequence[str], n: int) -> list[tuple[str, ...]]:
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def distinct_n(texts: Iterable[str], n: int) -> float:
    """Distinct n-grams / all n-grams over ``texts`` (0 when there are none)."""
    total, seen = 0, set()
    for t in texts:
        grams = ngrams(words(t), n)
        total += len(grams)
        seen.update(grams)
    return len(seen) / total if total else 0.0


def bleu(hypothesis: Sequence[str], references: Sequence[Sequence[str]], max_n: int = 4) -> float:
    """Sentence BLEU (uniform weights, brevity penalty, add-epsilon smoothing for empty orders)."""
    if not hypothesis or not references:
        return 0.0
    log_p = 0.0
    for n in range(1, max_n + 1):
        hyp = Counter(ngrams(hypothesis, n))
        total = sum(hyp.values())
        if total == 0:
            log_p += math.log(1e-9)
            continue
        max_ref: Counter[tuple[str, ...]] = Counter()
        for ref in references:
            for g, c in Counter(ngrams(ref, n)).items():
                if c > max_ref[g]:
                    max_ref[g] = c
        clipped = sum(min(c, max_ref[g]) for g, c in hyp.items())
        log_p += math.log(clipped / total if clipped else 0.1 / total)
    hl = len(hypothesis)
    rl = min((len(r) for r in references), key=lambda x: (abs(x - hl), x))
    bp = 1.0 if hl > rl else math.exp(1 - rl / hl)
    return bp * math.exp(log_p / max_n)


def self_bleu(texts: Sequence[str], max_n: int = 4, max_texts: int = 300, seed: int = 0) -> float:
    """Mean BLEU of each text against all the others (lower = more diverse), over at most
    ``max_texts`` texts (a seeded sample)."""
    items = list(texts)
    if len(items) > max_texts:
        items = random.Random(seed).sample(items, max_texts)
    return self_bleu_all(items, max_n)


def self_bleu_all(texts: Sequence[str], max_n: int = 4) -> float:
    """Self-BLEU of every text against all the others (``bleu`` with each text as the
    hypothesis and the rest as references, averaged) in O(n-grams) instead of
    O(texts^2 x n-grams): for every n-gram the two largest counts over all texts give the
    largest count over "all texts but this one"."""
    toks = [words(t) for t in texts]
    if len(toks) < 2:
        return 0.0
    counts = [[Counter(ngrams(t, n)) for n in range(1, max_n + 1)] for t in toks]
    top: list[dict[tuple[str, ...], tuple[int, int, int]]] = [{} for _ in range(max_n)]  # g -> (c1, j1, c2)
    for j, per_n in enumerate(counts):
        for n, cnt in enumerate(per_n):
            best = top[n]
            for g, c in cnt.items():
                c1, j1, c2 = best.get(g, (0, -1, 0))
                if c > c1:
                    best[g] = (c, j, c1)
                elif c > c2:
                    best[g] = (c1, j1, c)
    lengths = [len(t) for t in toks]
    scores = []
    for i, hyp in enumerate(toks):
        if not hyp:
            scores.append(0.0)
            continue
        log_p = 0.0
        for n in range(max_n):
            hyp_n = counts[i][n]
            total = sum(hyp_n.values())
            if total == 0:
                log_p += math.log(1e-9)
                continue
            clipped = 0
            for g, c in hyp_n.items():
                c1, j1, c2 = top[n][g]
                clipped += min(c, c2 if j1 == i else c1)
            log_p += math.log(clipped / total if clipped else 0.1 / total)
        hl = len(hyp)
        rl = min((lengths[j] for j in range(len(toks)) if j != i), key=lambda x: (abs(x - hl), x))
        bp = 1.0 if hl > rl else math.exp(1 - rl / hl)
        scores.append(bp * math.exp(log_p / max_n))
    return sum(scores) / len(scores)


# -- edits -------------------------------------------------------------------------------------
def token_edit_distance(a: Sequence[str], b: Sequence[str]) -> int:
    """Word-level Levenshtein distance (common prefix/suffix stripped first: cheap for minimal
    edits of long texts)."""
    i = 0
    while i < len(a) and i < len(b) and a[i] == b[i]:
        i += 1
    j = 0
    while j < len(a) - i and j < len(b) - i and a[len(a) - 1 - j] == b[len(b) - 1 - j]:
        j += 1
    a, b = a[i : len(a) - j], b[i : len(b) - j]
    if not a or not b:
        return max(len(a), len(b))
    prev = list(range(len(b) + 1))
    for x, ca in enumerate(a, 1):
        cur = [x] + [0] * len(b)
        for y, cb in enumerate(b, 1):
            cur[y] = min(prev[y] + 1, cur[y - 1] + 1, prev[y - 1] + (ca != cb))
        prev = cur
    return prev[-1]


class IntroducedStats(TypedDict):
    introduced_tokens: int
    introduced_distinct_1: float
    introduced_max_share: float
    introduced_top: str


def introduced_stats(introduced: Iterable[Sequence[str]]) -> IntroducedStats:
    """Over all candidates' introduced (inserted or replacing) tokens: how many, distinct-1,
    and the token with the largest share."""
    counts: Counter[str] = Counter()
    for toks in introduced:
        counts.update(t.lower() for t in toks if any(c.isalnum() for c in t))
    return _introduced_summary(counts)


def _introduced_summary(counts: Counter[str]) -> IntroducedStats:
    total = sum(counts.values())
    if not total:
        return {"introduced_tokens": 0, "introduced_distinct_1": 0.0, "introduced_max_share": 0.0, "introduced_top": ""}
    top, top_n = counts.most_common(1)[0]
    return {
        "introduced_tokens": total,
        "introduced_distinct_1": len(counts) / total,
        "introduced_max_share": top_n / total,
        "introduced_top": top,
    }


class RunStats:
    """The text statistics of a run, accumulated candidate by candidate: n-gram sets and
    counters grow with the vocabulary, not with the run, and self-BLEU is taken over a
    reservoir sample of ``sample_size`` candidates. ``run_metrics`` and the run service
    (``generation/services/run_quality.py``) both use it."""

    def __init__(self, *, sample_size: int = 500, seed: int = 0) -> None:
        self.sample_size = sample_size
        self.uni: set[tuple[str, ...]] = set()
        self.bi: set[tuple[str, ...]] = set()
        self.n_uni = 0
        self.n_bi = 0
        self.introduced: Counter[str] = Counter()
        self.edit_sum = 0
        self.sim_sum = 0.0
        self.sim_n = 0
        self.n = 0
        self.sample: list[str] = []
        self._rng = random.Random(seed)

    @staticmethod
    def measure(before: str, after: str, introduced: Sequence[str] | None) -> tuple[list[str], list[str], int]:
        """What ``add`` needs of one candidate: its tokens, introduced tokens, edit distance."""
        toks = words(after)
        if introduced is None:
            introduced = introduced_removed(before, after)[0]
        intro = [t.lower() for t in introduced if any(ch.isalnum() for ch in t)]
        return toks, intro, token_edit_distance(words(before), toks)

    def add(self, after: str, measured: tuple[list[str], list[str], int], similarity: float | None) -> None:
        toks, intro, edit = measured
        self.n += 1
        uni, bi = ngrams(toks, 1), ngrams(toks, 2)
        self.uni.update(uni)
        self.bi.update(bi)
        self.n_uni += len(uni)
        self.n_bi += len(bi)
        self.introduced.update(intro)
        self.edit_sum += edit
        if similarity is not None:
            self.sim_sum += similarity
            self.sim_n += 1
        if len(self.sample) < self.sample_size:  # reservoir sample for self-BLEU
            self.sample.append(after)
        else:
            j = self._rng.randrange(self.n)
            if j < self.sample_size:
                self.sample[j] = after

    def summary(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "candidates": self.n,
            "distinct_1": len(self.uni) / self.n_uni if self.n_uni else 0.0,
            "distinct_2": len(self.bi) / self.n_bi if self.n_bi else 0.0,
            "self_bleu": self_bleu_all(self.sample),
            "mean_token_edit_distance": self.edit_sum / self.n if self.n else 0.0,
            "mean_similarity": self.sim_sum / self.sim_n if self.sim_n else None,
        }
        out.update(_introduced_summary(self.introduced))
        return out


# -- a run -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CandidateStat:
    """What the metrics need to know of one candidate."""

    original: str  # the compared original text (the changed field, or the edited window)
    candidate: str
    code: str = ""
    introduced: tuple[str, ...] | None = None  # None: derived from the word diff
    similarity: float | None = None
    kept: Mapping[str, bool] = field(default_factory=dict)  # filter name -> kept by it


class RunMetrics(IntroducedStats):
    originals: int
    candidates: int
    candidates_per_original: float
    acceptance_by_filter: dict[str, float]
    accepted_all_filters: float
    distinct_1: float
    distinct_2: float
    self_bleu: float
    mean_token_edit_distance: float
    mean_similarity: float | None
    share_per_code: dict[str, float]


def run_metrics(n_originals: int, stats: Sequence[CandidateStat], *, self_bleu_max: int = 300) -> RunMetrics:
    """The metrics stored on a GenerationRun (JSON-ready)."""
    n = len(stats)
    by_filter: dict[str, list[bool]] = {}
    for s in stats:
        for name, ok in s.kept.items():
            by_filter.setdefault(name, []).append(bool(ok))
    codes = Counter(s.code or "other" for s in stats)
    acc = RunStats(sample_size=self_bleu_max)
    for s in stats:
        acc.add(s.candidate, RunStats.measure(s.original, s.candidate, s.introduced), s.similarity)
    text = acc.summary()
    out: RunMetrics = {
        "originals": n_originals,
        "candidates": n,
        "candidates_per_original": n / n_originals if n_originals else 0.0,
        "acceptance_by_filter": {k: sum(v) / len(v) for k, v in sorted(by_filter.items())},
        "accepted_all_filters": (sum(all(s.kept.values()) for s in stats) / n) if n else 0.0,
        "distinct_1": text["distinct_1"],
        "distinct_2": text["distinct_2"],
        "self_bleu": text["self_bleu"],
        "mean_token_edit_distance": text["mean_token_edit_distance"],
        "mean_similarity": text["mean_similarity"],
        "share_per_code": {c: k / n for c, k in sorted(codes.items())} if n else {},
        "introduced_tokens": text["introduced_tokens"],
        "introduced_distinct_1": text["introduced_distinct_1"],
        "introduced_max_share": text["introduced_max_share"],
        "introduced_top": text["introduced_top"],
    }
    return out
