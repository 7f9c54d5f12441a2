"""The rules generator's validity dev fixture (issue 27): a fresh ``rules`` run through the run
filters, re-scored against candidates a person judged. No database.

The fixture (``tests/fixtures/generation-validity/<task>.jsonl``, README there) holds one judged
pooled candidate per line: ``key`` (:func:`candidate_key`: the original's id and the
candidate's fields), ``code``, the changed text before and after (``original`` /
``candidate``; the edited sentence of a review), ``valid``, ``flip`` (the gold label changes)
and the annotator's ``reason``. A new run's pooled candidates that are identical to a judged
one are scored by its judgement; the others are reported as unjudged (``dump_unjudged`` writes a
sample of them in the same format, for the next round of judging).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from generation.ml import filters as ml_filters
from generation.ml import metrics as ml_metrics
from generation.ml.base import GeneratedCandidate, Original
from generation.ml.rules.tokens import introduced_removed
from generation.services import run_quality


def candidate_key(original_id: str, fields: dict[str, Any]) -> str:
    """What identifies a candidate across runs: its original and its exact fields."""
    blob = json.dumps([original_id, {k: fields[k] for k in sorted(fields)}], ensure_ascii=False)
    return hashlib.sha1(blob.encode("utf-8")).hexdigest()[:16]


@dataclass
class Pooled:
    original: Original
    cand: GeneratedCandidate
    key: str
    before: str
    after: str


def pooled_candidates(
    originals: Sequence[Original],
    *,
    generator: Any,
    filters: Iterable[str],
    band: tuple[float, float],
    encoder: Any,
    scorer: Any = None,
    max_ratio: float = ml_filters.PERPLEXITY_MAX_RATIO,
) -> tuple[list[Pooled], int]:
    """Run ``generator`` on ``originals`` and the run filters on its candidates, as a run does;
    (the pooled candidates, the number of candidates before filtering)."""
    by_id = {o.id: o for o in originals}
    pairs = [(by_id[c.original_id], c) for c in generator.generate(originals) if isinstance(c, GeneratedCandidate)]
    verdicts = run_quality.apply_filters(
        pairs, filters=list(filters), band=band, encoder=encoder, scorer=scorer, max_ratio=max_ratio
    )
    out = []
    for (o, c), v in zip(pairs, verdicts, strict=True):
        if v.keep:
            before, after = ml_filters.comparison_texts(o.fields, c.fields, c.meta)
            out.append(Pooled(o, c, candidate_key(o.id, c.fields), before, after))
    return out, len(pairs)


def read_fixture(path: str) -> dict[str, dict[str, Any]]:
    rows: dict[str, dict[str, Any]] = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                if row.get("valid") is not None:
                    rows[row["key"]] = row
    return rows


def read_generated_gold(path: str) -> dict[str, dict[str, Any]]:
    """The generated-gold dev set (pairs-jsonl with ``counterfactual.valid`` and ``.label``) as
    judgements keyed like the fixture: valid, and flip = its label differs from the original's."""
    rows: dict[str, dict[str, Any]] = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if not line.strip():
                continue
            r = json.loads(line)
            cf, orig = r["counterfactual"], r["original"]
            if cf.get("valid") is None:
                continue
            key = candidate_key(str(orig["id"]), dict(cf["fields"]))
            rows[key] = {
                "key": key,
                "code": cf.get("perturbation"),
                "valid": bool(cf["valid"]),
                "flip": cf.get("label") is not None and cf.get("label") != orig.get("label"),
            }
    return rows


def row_for(p: Pooled) -> dict[str, Any]:
    """A fixture line for a pooled candidate, judgement empty."""
    field = str(p.cand.meta.get("field", ""))
    other = {k: v for k, v in p.original.fields.items() if k != field}
    return {
        "key": p.key,
        "original_id": p.original.id,
        "label": p.original.label,
        "code": p.cand.perturbation,
        "field": field,
        "detail": p.cand.meta.get("detail", ""),
        "context": other,
        "original": p.before,
        "candidate": p.after,
        "valid": None,
        "flip": None,
        "reason": "",
    }


def dump_unjudged(
    pooled: Sequence[Pooled], judged: dict[str, dict[str, Any]], *, per_code: int, seed: int = 0
) -> list[dict[str, Any]]:
    """Up to ``per_code`` unjudged pooled candidates per code (seeded sample), as fixture lines."""
    by_code: dict[str, list[Pooled]] = defaultdict(list)
    for p in pooled:
        if p.key not in judged:
            by_code[p.cand.perturbation].append(p)
    rng = random.Random(seed)
    out = []
    for code in sorted(by_code):
        ps = by_code[code]
        out += [row_for(p) for p in rng.sample(ps, min(per_code, len(ps)))]
    return out


def _rate(xs: list[float]) -> float | None:
    return round(sum(xs) / len(xs), 3) if xs else None


def _rates(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Judged count, validity, flips and valid & flipped of judged rows (a judgement is a bool,
    or the share of readers who said so: the whole-review fixture)."""
    return {
        "judged": len(rows),
        "valid": _rate([float(r["valid"]) for r in rows]),
        "flips": _rate([float(r.get("flip") or 0) for r in rows]),
        "valid_flips": _rate([_valid_flip(r) for r in rows]),
    }


def _valid_flip(row: dict[str, Any]) -> float:
    """Valid and flipped: the share of readers who found both (``readers``), else both
    judgements."""
    readers = row.get("readers")
    if readers and "label" in row:
        return float(sum(bool(r["valid"]) and r["label"] != row["label"] for r in readers) / len(readers))
    return float(bool(row["valid"]) and bool(row.get("flip")))


def score(pooled: Sequence[Pooled], judged: dict[str, dict[str, Any]], n_candidates: int) -> dict[str, Any]:
    """Per code and overall: pooled count and share, judged overlap, validity and label flips on
    it (``valid`` / ``flips``: over the judged candidates; ``pool_valid`` / ``pool_flips``: each
    code's rate weighted by its share of the pool); diversity (distinct-2, self-BLEU) of the
    pooled candidates' changed text, and of the words the edits introduced (issue 31.4:
    distinct-1 of introduced tokens, the most frequent one and its share)."""
    codes: dict[str, dict[str, Any]] = {}
    counts = Counter(p.cand.perturbation for p in pooled)
    n = len(pooled)
    all_rows: list[dict[str, Any]] = []
    for code in sorted(counts):
        rows = [judged[p.key] for p in pooled if p.cand.perturbation == code and p.key in judged]
        all_rows += rows
        codes[code] = {"pooled": counts[code], "share": round(counts[code] / n, 3) if n else 0.0, **_rates(rows)}
    aim_pooled: Counter[str] = Counter()
    aim_rows: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for p in pooled:  # issue 31: a code can aim at either label ("delete" keeps it or flips it)
        if p.cand.target_label is None or p.original.label is None:
            continue
        name = f"{p.cand.perturbation}:{'keep' if p.cand.target_label == p.original.label else 'flip'}"
        aim_pooled[name] += 1
        if p.key in judged:
            aim_rows[name].append(judged[p.key])
    aims = {name: {"pooled": k, **_rates(aim_rows[name])} for name, k in aim_pooled.items()}
    texts = [p.after for p in pooled]
    # the judged sample is stratified by code (up to 50 each): the pool's figures weight each
    # code's rate by its share of the pool (codes with no judged candidate left out)
    judged_codes = [c for c in codes.values() if c["judged"]]
    weight = sum(c["share"] for c in judged_codes)
    intro = ml_metrics.introduced_stats(_introduced(p) for p in pooled)
    return {
        "introduced_distinct_1": round(intro["introduced_distinct_1"], 4),
        "introduced_max_share": round(intro["introduced_max_share"], 4),
        "introduced_top": intro["introduced_top"],
        "introduced_tokens": intro["introduced_tokens"],
        "pool_valid": round(sum(c["share"] * c["valid"] for c in judged_codes) / weight, 3) if weight else None,
        "pool_flips": round(sum(c["share"] * c["flips"] for c in judged_codes) / weight, 3) if weight else None,
        "candidates": n_candidates,
        "pooled": n,
        **_rates(all_rows),
        # of them, judged blind by two readers (issue 31.4's batches: a ``readers`` list)
        "judged_by_two_readers": sum(1 for p in pooled if p.key in judged and "readers" in judged[p.key]),
        "pool_valid_flips": round(sum(c["share"] * c["valid_flips"] for c in judged_codes) / weight, 3)
        if weight
        else None,
        "by_code": codes,
        "by_aim": dict(sorted(aims.items())),
        "distinct_2": round(ml_metrics.distinct_n(texts, 2), 4),
        "self_bleu": round(ml_metrics.self_bleu(texts, max_texts=300, seed=0), 4),
    }


def _introduced(p: Pooled) -> list[str]:
    """The words a pooled candidate's edit introduced: the generator's own list
    (``meta["introduced"]``) or, without one, the word diff of the changed text."""
    given = (p.cand.meta or {}).get("introduced")
    if isinstance(given, list | tuple):
        return [str(t) for t in given]
    return introduced_removed(p.before, p.after)[0]


def reasons(pooled: Sequence[Pooled], judged: dict[str, dict[str, Any]]) -> list[tuple[str, str, str]]:
    """(code, candidate, reason) of the judged invalid candidates in this pool."""
    return [
        (p.cand.perturbation, p.after, str(judged[p.key].get("reason", "")))
        for p in pooled
        if p.key in judged and not judged[p.key]["valid"]
    ]


def selection_ceiling(
    judged: dict[str, dict[str, Any]], original_ids: Sequence[str], per_review: float = 1.5
) -> dict[str, Any]:
    """The most any filter, teacher or critic could make of what was ever judged (issue 31).

    Every judged candidate of the given originals, whichever round or generator wrote it, is a
    candidate an oracle could pool. Ranked by their valid & flip (the share of readers who found
    both), the best ``per_review`` × originals of them are the best pool of that size a perfect
    selector could choose from everything judged so far; where fewer were judged, the rest of the
    pool counts as no valid flip (a candidate nobody judged is not known to be one). Also per
    code: judged candidates and reader-weighted valid flips; and how many originals have a
    candidate every reader called valid and flipped."""
    ids = set(original_ids)
    rows = [(r, _valid_flip(r)) for r in judged.values() if r.get("original_id") in ids]
    n = len(ids)
    vf = sorted((v for _, v in rows), reverse=True)
    size = round(per_review * n)
    best = sum(vf[:size])
    per_code: dict[str, list[float]] = defaultdict(list)
    for r, v in rows:
        per_code[str(r.get("code"))].append(v)
    by_code = {code: {"judged": len(vs), "valid_flips": round(sum(vs), 1)} for code, vs in sorted(per_code.items())}
    sure = {r["original_id"] for r, v in rows if v == 1.0}
    return {
        "originals": n,
        "originals_judged": len({r["original_id"] for r, _ in rows}),
        "judged": len(rows),
        "valid_flips": round(sum(vf), 1),
        "valid_flips_per_original": round(sum(vf) / n, 3) if n else None,
        "originals_with_a_sure_valid_flip": len(sure),
        "per_review": per_review,
        "oracle_pool": size,
        "oracle_pool_valid_flips": round(best / size, 3) if size else None,
        "by_code": by_code,
    }


__all__ = [
    "Pooled",
    "candidate_key",
    "dump_unjudged",
    "pooled_candidates",
    "read_fixture",
    "read_generated_gold",
    "reasons",
    "score",
    "selection_ceiling",
]
