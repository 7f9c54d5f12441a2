"""Parts of ``bench_generation`` that need the language model: the ``rules+perplexity`` rate and
the per-generator quality table. No database is touched.

* :func:`rules_perplexity` — the rules generator with the perplexity filter alone, end to end
  (a fresh scorer: no cache carried over), candidates/s; plus the median perplexity ratio
  (candidate / original, edited window) of the rules candidates the similarity band accepts
  ("today") against those that the band *and* the perplexity filter accept, and the share of
  originals each leaves covered.
* :func:`human_edits` — the same perplexity and similarity filters on the human counterfactuals
  of the data file (Kaushik et al.'s revisions): the share each passes, the calibration of their
  defaults (a fluency filter should pass what people write).
* :func:`generator_quality` — one generator over a few originals through the run filters
  (similarity, dedup, artifacts, perplexity: ``run_quality.apply_filters``, as a run applies
  them): yield, acceptance by filter, intended-label flip rate judged by the MiniLM base
  classifier, distinct-1/2, self-BLEU, token edit distance, seconds per original.
"""

from __future__ import annotations

import statistics
import time
from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from generation.ml import filters as ml_filters
from generation.ml import metrics as ml_metrics
from generation.ml.base import GeneratedCandidate, Original, Skip
from generation.services import run_quality


def _median(xs: Sequence[float]) -> float | None:
    return round(float(statistics.median(xs)), 4) if xs else None


def rules_perplexity(
    originals: Sequence[Original],
    *,
    make_scorer: Callable[[], Any],
    encoder: Any,
    band: tuple[float, float],
    max_ratio: float,
    seed: int = 0,
    batch: int = 64,
) -> dict[str, Any]:
    from generation.ml.rules import RulesGenerator

    gen = RulesGenerator(seed=seed)
    scorer = make_scorer()
    by_id = {o.id: o for o in originals}
    cands: list[GeneratedCandidate] = []
    ratios: list[float] = []
    pending: list[GeneratedCandidate] = []

    def flush() -> None:
        texts = [ml_filters.comparison_texts(by_id[c.original_id].fields, c.fields, c.meta) for c in pending]
        res = ml_filters.perplexity(
            scorer,
            [a for a, _ in texts],
            [b for _, b in texts],
            max_ratio=max_ratio,
            context_words=run_quality.PERPLEXITY_CONTEXT_WORDS,
        )
        ratios.extend(r.score for r in res)
        cands.extend(pending)
        pending.clear()

    t0 = time.perf_counter()
    for item in gen.generate(originals):
        if isinstance(item, GeneratedCandidate):
            pending.append(item)
            if len(pending) >= batch:
                flush()
    if pending:
        flush()
    seconds = time.perf_counter() - t0
    # the similarity verdicts of the same candidates (not timed: measured by rules+similarity)
    texts = [ml_filters.comparison_texts(by_id[c.original_id].fields, c.fields, c.meta) for c in cands]
    sim = ml_filters.similarity_band(encoder, [a for a, _ in texts], [b for _, b in texts], band) if texts else []
    today = [r for r, s in zip(ratios, sim, strict=True) if s.keep]
    both = [r for r, s in zip(ratios, sim, strict=True) if s.keep and r <= max_ratio]
    cov_today = {c.original_id for c, s in zip(cands, sim, strict=True) if s.keep}
    cov_both = {c.original_id for c, s, r in zip(cands, sim, ratios, strict=True) if s.keep and r <= max_ratio}
    n = len(originals)
    return {
        "originals": n,
        "candidates": len(cands),
        "candidates_per_s": round(len(cands) / seconds, 2) if seconds else 0.0,
        "accepted": sum(1 for r in ratios if r <= max_ratio),
        "max_ratio": max_ratio,
        "context_words": run_quality.PERPLEXITY_CONTEXT_WORDS,
        "median_ratio_all": _median(ratios),
        "median_ratio_similarity": _median(today),
        "median_ratio_similarity+perplexity": _median(both),
        "originals_with_accepted_similarity": round(len(cov_today) / n, 4) if n else 0.0,
        "originals_with_accepted_similarity+perplexity": round(len(cov_both) / n, 4) if n else 0.0,
        "seconds": round(seconds, 2),
    }


def edited_parts(original: str, revised: str, *, by_sentence: bool) -> list[tuple[str, str]]:
    """What a filter compares for a human revision: each changed sentence, paired with the one
    it replaces, when ``by_sentence`` and both texts have as many sentences (a review);
    otherwise the whole texts (an NLI sentence). [] when nothing changed."""
    if original == revised:
        return []
    if by_sentence:
        from generation.ml.rules.tokens import sentence_spans

        a = [original[x:y] for x, y in sentence_spans(original)]
        b = [revised[x:y] for x, y in sentence_spans(revised)]
        if len(a) == len(b):
            return [(x, y) for x, y in zip(a, b, strict=True) if x != y]
    return [(original, revised)]


def human_edits(
    pairs: Sequence[tuple[dict[str, str], dict[str, str]]],
    *,
    scorer: Any,
    encoder: Any,
    band: tuple[float, float],
    max_ratio: float,
    by_sentence: bool,
    limit: int = 300,
) -> dict[str, Any]:
    """The perplexity filter (at ``max_ratio``, on the edited window) and the similarity band on
    up to ``limit`` human edits (``edited_parts`` of each (original, revised) pair of fields):
    the share each passes and the quantiles of the perplexity ratio."""
    parts: list[tuple[str, str]] = []
    for orig, rev in pairs:
        for k in orig:
            parts += edited_parts(orig[k], rev.get(k, orig[k]), by_sentence=by_sentence)
    parts = parts[:limit]
    if not parts:
        return {"edits": 0}
    a, b = [x for x, _ in parts], [y for _, y in parts]
    ratios = np.array(
        [
            r.score
            for r in ml_filters.perplexity(
                scorer, a, b, max_ratio=max_ratio, context_words=run_quality.PERPLEXITY_CONTEXT_WORDS
            )
        ]
    )
    sim = ml_filters.similarity_band(encoder, a, b, band)
    return {
        "edits": len(parts),
        "perplexity_pass": round(float(np.mean(ratios <= max_ratio)), 4),
        "perplexity_pass_at_1.5": round(float(np.mean(ratios <= 1.5)), 4),
        "ratio_p50": round(float(np.percentile(ratios, 50)), 4),
        "ratio_p90": round(float(np.percentile(ratios, 90)), 4),
        "similarity_pass": round(sum(1 for r in sim if r.keep) / len(sim), 4),
        "max_ratio": max_ratio,
        "band": list(band),
    }


class FlipJudge:
    """A MiniLM base classifier — frozen sentence embeddings of each field, concatenated, and
    logistic regression — trained on labelled originals; also usable as a ``TextClassifier``
    teacher (text or (a, b) in). The same recipe as labelling's ``minilm`` base classifier,
    written here because generation does not import the labelling app."""

    def __init__(
        self,
        records: Sequence[dict[str, str]],
        y: Sequence[str],
        labels: Sequence[str],
        fields: Sequence[str],
        embed: Any,
    ) -> None:
        from sklearn.linear_model import LogisticRegression

        self.labels = tuple(labels)
        self.fields = list(fields)
        self.embed = embed
        self.clf = LogisticRegression(max_iter=2000, C=1.0)
        self.clf.fit(self._features(records), [self.labels.index(v) for v in y])

    def _features(self, records: Sequence[dict[str, str]]) -> np.ndarray:
        blocks = [np.asarray(self.embed([str(r.get(f, "")) for r in records]), dtype=np.float32) for f in self.fields]
        return np.hstack(blocks)

    def proba_records(self, records: Sequence[dict[str, str]]) -> np.ndarray:
        proba = np.zeros((len(records), len(self.labels)))
        if records:
            proba[:, self.clf.classes_] = self.clf.predict_proba(self._features(records))
        return proba

    def predict_proba(self, inputs: Sequence[Any]) -> np.ndarray:  # TextClassifier
        recs = [{self.fields[0]: x} if isinstance(x, str) else dict(zip(self.fields, x, strict=False)) for x in inputs]
        return self.proba_records(recs)


def generator_quality(
    name: str,
    originals: Sequence[Original],
    *,
    make_generator: Callable[[], Any],
    encoder: Any,
    scorer: Any,
    band: tuple[float, float],
    max_ratio: float,
    judge: FlipJudge | None,
) -> dict[str, Any]:
    t_load = time.perf_counter()
    gen = make_generator()
    load_s = time.perf_counter() - t_load
    per: dict[str, list[GeneratedCandidate]] = {o.id: [] for o in originals}
    skips: Counter[str] = Counter()
    t0 = time.perf_counter()
    for o in originals:
        for item in gen.generate([o]):
            if isinstance(item, Skip):
                skips[item.reason[:80]] += 1
            elif item.original_id in per:
                per[item.original_id].append(item)
    seconds = time.perf_counter() - t0
    by_id = {o.id: o for o in originals}
    pairs = [(by_id[oid], c) for oid, cs in per.items() for c in cs]
    filters = run_quality.default_filters(originals[0].task) if originals else []
    verdicts = run_quality.apply_filters(
        pairs, filters=filters, band=band, encoder=encoder, existing={}, scorer=scorer, max_ratio=max_ratio
    )
    seen: Counter[str] = Counter()
    passed: Counter[str] = Counter()
    stats = ml_metrics.RunStats(sample_size=run_quality.SELF_BLEU_SAMPLE, seed=0)
    kept: list[tuple[Original, GeneratedCandidate]] = []
    ratios: list[float] = []
    for (o, c), v in zip(pairs, verdicts, strict=True):
        for k, ok in v.passed.items():
            seen[k] += 1
            passed[k] += bool(ok)
        if v.keep:
            kept.append((o, c))
            before, after = ml_filters.comparison_texts(o.fields, c.fields, c.meta)
            intro = c.meta.get("introduced")
            stats.add(after, stats.measure(before, after, intro if isinstance(intro, list) else None), None)
            if "perplexity" in v.scores:
                ratios.append(v.scores["perplexity"])
    flips = None
    if judge is not None and kept:
        proba = judge.proba_records([{k: c.fields.get(k, "") for k in judge.fields} for _, c in kept])
        pred = [judge.labels[int(i)] for i in proba.argmax(axis=1)]
        hit = [
            (p == c.target_label) if c.target_label else (p != o.label) for (o, c), p in zip(kept, pred, strict=True)
        ]
        flips = round(sum(hit) / len(hit), 4)
    n = len(originals)
    summary = stats.summary()
    return {
        "originals": n,
        "candidates": len(pairs),
        "accepted": len(kept),
        "yield": round(sum(1 for cs in per.values() if cs) / n, 4) if n else 0.0,
        "originals_with_accepted": round(len({o.id for o, _ in kept}) / n, 4) if n else 0.0,
        "acceptance_by_filter": {k: round(passed[k] / seen[k], 4) for k in sorted(seen)},
        "accepted_all_filters": round(len(kept) / len(pairs), 4) if pairs else 0.0,
        "flip_rate": flips,
        "distinct_1": round(summary["distinct_1"], 4),
        "distinct_2": round(summary["distinct_2"], 4),
        "self_bleu": round(summary["self_bleu"], 4),
        "mean_token_edit_distance": round(summary["mean_token_edit_distance"], 4),
        "median_perplexity_ratio": _median(ratios),
        "seconds_per_original": round(seconds / n, 2) if n else 0.0,
        "load_seconds": round(load_s, 2),
        "skips": dict(skips.most_common(3)),
    }


def run_pipeline(
    originals: Sequence[Original],
    *,
    load: Callable[[], tuple[Any, Any, Any]],
    filters: Sequence[str],
    band: tuple[float, float],
    max_ratio: float,
    batch_size: int,
    max_per_original: int | None = None,
    perplexity_exempt: Any = None,
) -> dict[str, Any]:
    """A run's pipeline without the database, stage by stage: ``load()`` (timed as ``model
    loading``) returns the generator, the MiniLM encoder and the perplexity scorer (or None);
    then, ``batch_size`` originals at a time as a run walks them, the generator's candidates
    (``generation``) and ``run_quality.apply_filters`` (one stage per filter). Returns
    originals/s (with and without the loading), wall and CPU seconds per stage with their
    shares, and the pooled candidates (``pooled``: original id, perturbation, fields).
    ``perplexity_exempt``: as ``run_quality.apply_filters`` (None: the run default)."""
    from generation.ml.stages import StageClock

    clock = StageClock()
    t0 = time.perf_counter()
    with clock("model loading"):
        generator, encoder, scorer = load()
    t_loaded = time.perf_counter()
    pooled: list[dict[str, Any]] = []
    n_cands = 0
    for b in range(0, len(originals), batch_size):
        batch = list(originals[b : b + batch_size])
        with clock("generation"):
            items = list(generator.generate(batch))
        per: dict[str, list[GeneratedCandidate]] = {o.id: [] for o in batch}
        for it in items:
            if isinstance(it, GeneratedCandidate) and it.original_id in per:
                per[it.original_id].append(it)
        by_id = {o.id: o for o in batch}
        pairs = [
            (by_id[oid], c) for oid, cs in per.items() for c in (cs[:max_per_original] if max_per_original else cs)
        ]
        n_cands += len(pairs)
        verdicts = run_quality.apply_filters(
            pairs,
            filters=filters,
            band=band,
            encoder=encoder,
            scorer=scorer,
            max_ratio=max_ratio,
            clock=clock,
            perplexity_exempt=perplexity_exempt,
        )
        pooled.extend(
            {"original": o.id, "perturbation": c.perturbation, "fields": dict(c.fields)}
            for (o, c), v in zip(pairs, verdicts, strict=True)
            if v.keep
        )
    end = time.perf_counter()
    n = len(originals)
    return {
        "originals": n,
        "candidates": n_cands,
        "pooled_count": len(pooled),
        "filters": list(filters),
        "batch_size": batch_size,
        "seconds": round(end - t0, 3),
        "originals_per_s": round(n / (end - t0), 3) if end > t0 else None,
        "originals_per_s_after_loading": round(n / (end - t_loaded), 3) if end > t_loaded else None,
        "cpu_originals_per_s": round(n / sum(clock.cpu.values()), 3) if sum(clock.cpu.values()) else None,
        "stages": clock.table(),
        "pooled": pooled,
    }
