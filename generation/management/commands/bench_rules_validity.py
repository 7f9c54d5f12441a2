"""``python manage.py bench_rules_validity [--task nli,sentiment] [--originals N] [--filters ...]
[--fixture DIR] [--dump DIR] [--per-code N] [--json]``

The default ``rules`` run's validity against the judged dev fixture (issue 27;
``tests/fixtures/generation-validity/``, see its README): the generator over the first
``--originals`` CAD **dev** originals of each task (taken in turn from each label), the run's
filters (default: the run defaults, perplexity included when a language model is available),
then per control code: pooled candidates, share of the pool, how many of them are identical to
a judged candidate, validity and label flips on that overlap; a diversity line (distinct-2,
self-BLEU of the pooled changed text) against the fixture's ``baseline.json``. ``--dump DIR``
writes up to ``--per-code`` unjudged pooled candidates per code to ``DIR/<task>.jsonl`` (the
fixture's format, judgement empty) for the next round of judging. The diversity line also gives
distinct-1 of the words the edits introduced and the most frequent one's share (issue 31.4);
``--lm-split`` the validity per code of the judged candidates without the perplexity filter, of
those the LM keeps and of those it drops (issue 31.5's routing). No database.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

FIXTURE_DIR = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "generation-validity"
FORMAT_FOR_TASK = {"nli": "cad-nli", "sentiment": "cad-sentiment"}


class Command(BaseCommand):
    help = "Score a fresh default rules run against the judged validity dev fixture."
    requires_system_checks = ()

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--task", default="nli,sentiment", help="nli, sentiment or both (comma-separated)")
        parser.add_argument("--originals", type=int, default=100, help="CAD dev originals per task")
        parser.add_argument("--data", default="", help="CAD folder (default: SHARED_DATA_DIR/cad)")
        parser.add_argument(
            "--filters", default="", help="comma-separated run filters (default: the run's defaults for the task)"
        )
        parser.add_argument("--fixture", default=str(FIXTURE_DIR), help="folder with <task>.jsonl judgements")
        parser.add_argument("--dump", default="", help="write unjudged pooled candidates to DIR/<task>.jsonl")
        parser.add_argument("--per-code", dest="per_code", type=int, default=50)
        parser.add_argument(
            "--gold",
            default="",
            help="NLI: also score against a judged pairs-jsonl (default: SHARED_DATA_DIR/generated-gold/"
            "cad-nli-dev-rules.jsonl when it exists; 'none' to skip)",
        )
        parser.add_argument(
            "--lm-split",
            dest="lm_split",
            action="store_true",
            help="also: per code, the validity of the judged candidates before the perplexity filter, of those "
            "the LM keeps and of those it drops (what decides run_quality.PERPLEXITY_EXEMPT)",
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--json", action="store_true", help="print the JSON object as the last line")

    def handle(self, *args: Any, **opts: Any) -> None:
        from generation.management.commands.bench_generation import load_originals
        from generation.ml import filters as ml_filters
        from generation.ml.rules import RulesGenerator
        from generation.services import run_quality, validity_fixture
        from projects.ml.embeddings import Encoder

        cfg = settings.COUNTERPART
        data = opts["data"] or str(Path(cfg["SHARED_DATA_DIR"]) / "cad")
        if not os.path.exists(data):
            raise CommandError(f"data not found: {data} (give --data PATH)")
        tasks = [t.strip() for t in opts["task"].split(",") if t.strip()]
        bad = [t for t in tasks if t not in FORMAT_FOR_TASK]
        if bad or not tasks:
            raise CommandError(f"--task: one or more of {sorted(FORMAT_FOR_TASK)}")
        if opts["originals"] < 1:
            raise CommandError("--originals must be >= 1")
        fixture = Path(opts["fixture"])
        baseline: dict[str, Any] = {}
        if (fixture / "baseline.json").is_file():
            baseline = json.loads((fixture / "baseline.json").read_text(encoding="utf-8"))
        encoder = Encoder(model_path=cfg.get("MINILM_PATH") or None, device=cfg.get("DEVICE", "cpu"))
        scorer = None
        result: dict[str, Any] = {}
        for task in tasks:
            filters = (
                [f for f in opts["filters"].split(",") if f] if opts["filters"] else run_quality.default_filters(task)
            )
            unknown = [f for f in filters if f not in run_quality.FILTER_NAMES]
            if unknown:
                raise CommandError(f"unknown filter(s) {unknown}; known: {list(run_quality.FILTER_NAMES)}")
            if "perplexity" in filters and scorer is None:
                from generation.services.runs import perplexity_scorer

                scorer = perplexity_scorer()
                if scorer is None:
                    self.stderr.write("no causal language model: the perplexity filter is skipped")
            originals = load_originals(FORMAT_FOR_TASK[task], data, task, "dev", opts["originals"])
            if not originals:
                raise CommandError(f"no {task} dev originals in {data}")
            pooled, n_cands = validity_fixture.pooled_candidates(
                originals,
                generator=RulesGenerator(seed=opts["seed"]),
                filters=filters,
                band=ml_filters.band_for(task),
                encoder=encoder,
                scorer=scorer,
                max_ratio=float(cfg["PERPLEXITY_MAX_RATIO"]),
            )
            path = fixture / f"{task}.jsonl"
            judged = validity_fixture.read_fixture(str(path)) if path.is_file() else {}
            r = validity_fixture.score(pooled, judged, n_cands)
            r.update(originals=len(originals), filters=filters)
            result[task] = r
            self._print(task, r, baseline.get(task))
            gold = opts["gold"] or str(Path(cfg["SHARED_DATA_DIR"]) / "generated-gold" / "cad-nli-dev-rules.jsonl")
            if task == "nli" and gold != "none" and Path(gold).is_file():
                g = validity_fixture.score(pooled, validity_fixture.read_generated_gold(gold), n_cands)
                r["generated_gold"] = {
                    k: g[k] for k in ("judged", "valid", "flips", "pool_valid", "pool_flips", "by_code")
                }
                valid = "-" if g["valid"] is None else f"{g['valid']:.1%}"
                per_code = ", ".join(
                    f"{c} {v['valid']:.0%} ({v['judged']})" for c, v in g["by_code"].items() if v["judged"]
                )
                self.stdout.write(
                    f"  generated-gold overlap ({Path(gold).name}): {g['judged']} judged, valid {valid}; {per_code}"
                )
            if opts["lm_split"] and scorer is not None:
                r["lm_split"] = self._lm_split(originals, task, filters, judged, encoder, scorer, opts["seed"])
            if opts["dump"]:
                out = Path(opts["dump"])
                out.mkdir(parents=True, exist_ok=True)
                rows = validity_fixture.dump_unjudged(pooled, judged, per_code=opts["per_code"], seed=opts["seed"])
                with open(out / f"{task}.jsonl", "w", encoding="utf-8") as fh:
                    for row in rows:
                        fh.write(json.dumps(row, ensure_ascii=False) + "\n")
                self.stdout.write(f"  {len(rows)} unjudged pooled candidates -> {out / f'{task}.jsonl'}")
        if opts["json"]:
            self.stdout.write(json.dumps(result, sort_keys=True))

    def _lm_split(
        self,
        originals: list[Any],
        task: str,
        filters: list[str],
        judged: dict[str, dict[str, Any]],
        encoder: Any,
        scorer: Any,
        seed: int,
    ) -> dict[str, dict[str, Any]]:
        """Per code, on the judged candidates pooled WITHOUT the perplexity filter: validity of
        all of them, of those the LM keeps and of those it drops."""
        from generation.ml import filters as ml_filters
        from generation.ml.rules import RulesGenerator
        from generation.services import run_quality, validity_fixture

        cfg = settings.COUNTERPART
        pre, _ = validity_fixture.pooled_candidates(
            originals,
            generator=RulesGenerator(seed=seed),
            filters=[f for f in filters if f != "perplexity"],
            band=ml_filters.band_for(task),
            encoder=encoder,
        )
        rows = [p for p in pre if p.key in judged]
        verdicts = ml_filters.perplexity(
            scorer,
            [p.before for p in rows],
            [p.after for p in rows],
            max_ratio=float(cfg["PERPLEXITY_MAX_RATIO"]),
            context_words=run_quality.PERPLEXITY_CONTEXT_WORDS,
        )
        out: dict[str, dict[str, Any]] = {}
        for p, v in zip(rows, verdicts, strict=True):
            c = out.setdefault(p.cand.perturbation, {"judged": 0, "valid": 0, "kept": 0, "kept_valid": 0})
            ok = bool(judged[p.key]["valid"])
            c["judged"] += 1
            c["valid"] += ok
            c["kept"] += v.keep
            c["kept_valid"] += ok and v.keep
        self.stdout.write("  without the LM (judged): code, judged, valid; LM keeps: n, valid; LM drops: n, valid")
        for code, c in sorted(out.items()):
            dropped = c["judged"] - c["kept"]
            c["valid_rate"] = round(c["valid"] / c["judged"], 3)
            c["kept_valid_rate"] = round(c["kept_valid"] / c["kept"], 3) if c["kept"] else None
            c["dropped_valid_rate"] = round((c["valid"] - c["kept_valid"]) / dropped, 3) if dropped else None
            self.stdout.write(
                f"  {code:<12} {c['judged']:>4} {c['valid_rate']:>6.1%} | {c['kept']:>4} "
                f"{'-' if c['kept_valid_rate'] is None else format(c['kept_valid_rate'], '.1%'):>6} | {dropped:>4} "
                f"{'-' if c['dropped_valid_rate'] is None else format(c['dropped_valid_rate'], '.1%'):>6}"
            )
        return out

    def _print(self, task: str, r: dict[str, Any], base: dict[str, Any] | None) -> None:
        def pct(x: float | None) -> str:
            return "  -  " if x is None else f"{x:5.1%}"

        self.stdout.write(
            f"{task}: {r['originals']} originals, {r['candidates']} candidates, {r['pooled']} pooled "
            f"(filters {','.join(r['filters'])}); judged overlap {r['judged']} "
            f"({r['judged_by_two_readers']} by two blind readers): "
            f"valid {pct(r['valid'])}, flips {pct(r['flips'])}; weighted by share of the pool: "
            f"valid {pct(r['pool_valid'])}, flips {pct(r['pool_flips'])}"
        )
        self.stdout.write(f"  {'code':<12} {'pooled':>6} {'share':>6} {'judged':>6} {'valid':>6} {'flips':>6}")
        for code, c in r["by_code"].items():
            self.stdout.write(
                f"  {code:<12} {c['pooled']:>6} {pct(c['share']):>6} {c['judged']:>6} "
                f"{pct(c['valid']):>6} {pct(c['flips']):>6}"
            )
        line = (
            f"  diversity: introduced tokens {r['introduced_tokens']}, distinct-1 {r['introduced_distinct_1']:.4f}, "
            f"top '{r['introduced_top']}' {r['introduced_max_share']:.1%}; "
            f"distinct-2 {r['distinct_2']:.4f}, self-BLEU {r['self_bleu']:.4f}"
        )
        if base:
            line += f" (baseline: distinct-2 {base['distinct_2']:.4f}, self-BLEU {base['self_bleu']:.4f})"
        self.stdout.write(line)
