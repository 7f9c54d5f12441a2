"""``python manage.py bench_rules_validity [--task nli,sentiment] [--originals N] [--filters ...]
[--fixture DIR] [--dump DIR] [--per-code N] [--unit reviews|sentences] [--rewriter auto|on|off]
[--review-writer auto|on|off] [--json]``

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
those the LM keeps and of those it drops (issue 31.5's routing).

Sentiment (issue 31) is judged on the **whole review**: the fixture's sentiment rows hold the
whole original and edited review, each read by two readers (``readers``; ``valid`` and ``flip``
are the share of readers who said so), and the bench reports ``valid & flip`` beside them and
the pooled candidates per review. ``--teacher TASK=PATH`` (a task model folder, e.g. one
trained with ``train_task_model``) reports every code with and without the teacher filter at
``--teacher-threshold`` (and each P of ``--sweep``). ``--batch DIR --batch-rows FILE`` writes a
blind reader batch of the run's unjudged pooled reviews (``--controls N`` CAD dev revisions
mixed in); ``--readers DIR --batch-rows FILE`` reads the readers' answers back into the fixture
and prints their agreement. ``--unit sentences`` takes, instead of CAD's dev reviews, the single
sentences CAD's dev annotators rewrote, each a one-sentence text (its controls the annotators'
rewrites); ``--rewriter auto|on|off``, ``--review-writer auto|on|off`` and
``--review-flip-sentences N`` set the written flip of one-sentence texts, the flip of longer
reviews written whole, and the length of text the review-wide flips are pooled on.
``--ceiling PER_REVIEW`` generates nothing: from every judged candidate of the originals, the
best pool of PER_REVIEW per original a perfect selector could choose, and its valid & flip (what
no filter, teacher or critic can beat without a new generator). No database.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from generation.management.commands.bench_generation import add_fluency_option

FIXTURE_DIR = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "generation-validity"
FORMAT_FOR_TASK = {"nli": "cad-nli", "sentiment": "cad-sentiment"}


class Command(BaseCommand):
    help = "Score a fresh default rules run against the judged validity dev fixture."
    requires_system_checks = ()

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--task", default="nli,sentiment", help="nli, sentiment or both (comma-separated)")
        parser.add_argument("--originals", type=int, default=100, help="CAD dev originals per task")
        parser.add_argument(
            "--offset", type=int, default=0, help="skip this many dev originals first (a sample not tuned on)"
        )
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
        parser.add_argument(
            "--teacher",
            default="",
            help="TASK=PATH[,TASK=PATH]: score each code with and without this task model as teacher",
        )
        parser.add_argument("--teacher-threshold", dest="teacher_threshold", type=float, default=None)
        parser.add_argument("--sweep", default="", help="comma-separated teacher thresholds P to report too")
        parser.add_argument("--batch", default="", help="write a blind reader batch of unjudged pooled reviews here")
        parser.add_argument("--batch-rows", dest="batch_rows", default="", help="the batch's rows (JSON lines)")
        parser.add_argument("--controls", type=int, default=40, help="CAD dev revisions mixed into --batch")
        parser.add_argument("--readers", default="", help="a finished reader batch folder: merge it into the fixture")
        parser.add_argument("--judged-on", dest="judged_on", default="", help="with --readers: the round's name")
        parser.add_argument(
            "--pool",
            default="",
            help="FILE ({task} is replaced): save the pooled candidates there, or score the pool saved there "
            "instead of generating (e.g. against a newer fixture)",
        )
        parser.add_argument(
            "--unit",
            default="reviews",
            choices=("reviews", "sentences"),
            help="sentiment: the originals are CAD dev reviews, or the single sentences CAD's dev revisions "
            "rewrote, each a one-sentence text with its review's label (controls: the annotators' rewrites)",
        )
        parser.add_argument(
            "--review-flip-sentences",
            dest="review_flip_sentences",
            type=int,
            default=None,
            help="sentiment: pool the review-wide flips on texts of at most N sentences (0: any; default: the "
            "generator's)",
        )
        parser.add_argument(
            "--rewriter",
            default="auto",
            choices=("auto", "on", "off"),
            help="sentiment: the written review flip (the CAD-trained rewriter; auto: when its adapter is there)",
        )
        parser.add_argument(
            "--review-writer",
            dest="review_writer",
            default=None,
            choices=("auto", "on", "off"),
            help="sentiment: the flip of a review of several sentences written whole by the CAD-trained review "
            "writer (default: the generator's)",
        )
        add_fluency_option(parser, suffix="; --lm-split splits by it")
        parser.add_argument(
            "--ceiling",
            type=float,
            default=None,
            metavar="PER_REVIEW",
            help="no generation: the best share of valid & flip a pool of PER_REVIEW candidates per original "
            "could have if a perfect selector chose it from every judged candidate of the originals",
        )
        parser.add_argument("--json", action="store_true", help="print the JSON object as the last line")

    def handle(self, *args: Any, **opts: Any) -> None:
        if opts["readers"]:
            return self._merge_readers(opts)
        from generation.ml import filters as ml_filters
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
        if opts["ceiling"] is not None:
            return self._ceiling(opts, data, tasks)
        fixture = Path(opts["fixture"])
        if not fixture.is_dir():  # was: every figure scored against no judgement, null, without a word
            raise CommandError(f"--fixture {fixture}: folder not found (it holds <task>.jsonl judgements)")
        if opts["gold"] not in ("", "none") and not Path(opts["gold"]).is_file():  # was: left out without a word
            raise CommandError(f"--gold {opts['gold']}: file not found (a generated-gold pairs-jsonl file, or none)")
        baseline: dict[str, Any] = {}
        if (fixture / "baseline.json").is_file():
            baseline = json.loads((fixture / "baseline.json").read_text(encoding="utf-8"))
        encoder = Encoder(model_path=cfg.get("MINILM_PATH") or None, device=cfg.get("DEVICE", "cpu"))
        result: dict[str, Any] = {}
        for task in tasks:
            filters = (
                [f for f in opts["filters"].split(",") if f] if opts["filters"] else run_quality.default_filters(task)
            )
            unknown = [f for f in filters if f not in run_quality.FILTER_NAMES]
            if unknown:
                raise CommandError(f"unknown filter(s) {unknown}; known: {list(run_quality.FILTER_NAMES)}")
            scorer = None
            if "perplexity" in filters:
                from generation.ml.base import GeneratorConfigError
                from generation.services.runs import perplexity_scorer

                try:
                    scorer = perplexity_scorer(task, opts["fluency"])
                except GeneratorConfigError as exc:
                    raise CommandError(str(exc)) from exc
                if scorer is None:
                    self.stderr.write("no causal language model: the perplexity filter is skipped")
            originals = _originals(opts, data, task)
            saved = Path(opts["pool"].replace("{task}", task)) if opts["pool"] else None
            if saved is not None and saved.is_file():
                pooled, n_cands = _load_pool(saved)
                self.stdout.write(f"  the pool saved in {saved} (no generation)")
            else:
                pooled, n_cands = validity_fixture.pooled_candidates(
                    originals,
                    generator=_generator(
                        opts["seed"], task, opts["rewriter"], opts["review_flip_sentences"], opts["review_writer"]
                    ),
                    filters=filters,
                    band=ml_filters.band_for(task),
                    encoder=encoder,
                    scorer=scorer,
                    max_ratio=float(cfg["PERPLEXITY_MAX_RATIO"]),
                )
                if saved is not None:
                    _save_pool(saved, pooled, n_cands)
            path = fixture / f"{task}.jsonl"
            if not path.is_file():
                self.stderr.write(f"no judgements for {task} in {fixture} ({path.name} not found): validity is null")
            judged = validity_fixture.read_fixture(str(path)) if path.is_file() else {}
            r = validity_fixture.score(pooled, judged, n_cands)
            r.update(
                originals=len(originals),
                filters=filters,
                pooled_per_original=round(len(pooled) / len(originals), 3),
            )
            result[task] = r
            self._print(task, r, baseline.get(task))
            teachers = _teacher_paths(opts["teacher"])
            if task in teachers:
                r["teacher"] = self._teacher_report(task, teachers[task], pooled, judged, n_cands, originals, opts)
            if opts["batch"] and task == "sentiment":
                self._write_batch(pooled, judged, data, opts)
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
                r["lm_split"] = self._lm_split(
                    originals, task, filters, judged, encoder, scorer, opts["seed"], opts["rewriter"]
                )
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
        rewriter: str = "off",
    ) -> dict[str, dict[str, Any]]:
        """Per code, on the judged candidates pooled WITHOUT the perplexity filter: validity of
        all of them, of those the LM keeps and of those it drops."""
        from generation.ml import filters as ml_filters
        from generation.services import run_quality, validity_fixture

        cfg = settings.COUNTERPART
        pre, _ = validity_fixture.pooled_candidates(
            originals,
            generator=_generator(seed, task, rewriter),
            filters=[f for f in filters if f != "perplexity"],
            band=ml_filters.band_for(task),
            encoder=encoder,
        )
        rows = [p for p in pre if p.key in judged]
        verdicts = ml_filters.perplexity(
            scorer,
            [p.before for p in rows],
            [p.after for p in rows],
            max_ratio=run_quality.scorer_max_ratio(scorer, float(cfg["PERPLEXITY_MAX_RATIO"])),
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

    def _teacher_report(
        self,
        task: str,
        path: str,
        pooled: list[Any],
        judged: dict[str, dict[str, Any]],
        n_cands: int,
        originals: list[Any],
        opts: dict[str, Any],
    ) -> dict[str, Any]:
        """The pool with the teacher at P (and each P of --sweep): per code pooled share,
        validity and flips on the judged overlap, pooled per original."""
        from generation.ml import teacher as ml_teacher
        from generation.services import validity_fixture
        from labeling.selectors import teacher_from_folder

        labels = list(originals[0].labels)
        fields = list(originals[0].fields)
        try:
            f = teacher_from_folder(path=path, labels=labels, fields=fields)
        except (OSError, ValueError) as exc:
            raise CommandError(f"--teacher {task}={path}: {exc}") from None
        results = ml_teacher.teacher_filter(
            f,
            labels,
            [dict(p.cand.fields) for p in pooled],
            [p.original.label for p in pooled],
            [p.cand.target_label for p in pooled],
            threshold=0.0,
        )
        p_default = opts["teacher_threshold"]
        if p_default is None:
            p_default = ml_teacher.DEFAULT_THRESHOLD
        ps = [p_default] + [float(x) for x in opts["sweep"].split(",") if x.strip()]
        out: dict[str, Any] = {"model": Path(path).name, "threshold": p_default, "by_threshold": {}}
        for thr in ps:
            kept = [p for p, res in zip(pooled, results, strict=True) if _teacher_keeps(p, res, thr)]
            r = validity_fixture.score(kept, judged, n_cands)
            r["pooled_per_original"] = round(len(kept) / len(originals), 3)
            out["by_threshold"][f"{thr:g}"] = r
            self.stdout.write(f"  with the teacher ({Path(path).name}) at P = {thr:g}:")
            self._print(task, {**r, "originals": len(originals), "filters": ["teacher"]}, None)
        return out

    def _write_batch(
        self, pooled: list[Any], judged: dict[str, dict[str, Any]], data: str, opts: dict[str, Any]
    ) -> None:
        from generation.services import review_batches
        from projects.formats import read
        from projects.formats.records import PairRecord

        if not opts["batch_rows"]:
            raise CommandError("--batch needs --batch-rows FILE (where the batch's rows are kept)")
        rows = [review_batches.review_row(p) for p in pooled if p.key not in judged]
        import random

        if opts["unit"] == "sentences":  # the annotators' own rewrites of single sentences
            sents = _dev_sentence_pairs(data)
            chosen = random.Random(opts["seed"]).sample(sents, min(opts["controls"], len(sents)))
            target = {"positive": "negative", "negative": "positive"}
            controls = [(f"cad-dev-sentence/{p.original[:40]}/rev", p.revised, target[p.source]) for p in chosen]
        else:
            revs = [
                r for r in read("cad-sentiment", [data], task="sentiment", split="dev") if isinstance(r, PairRecord)
            ]
            picked = random.Random(opts["seed"]).sample(revs, min(opts["controls"], len(revs)))
            controls = [(f"{r.original.id}/rev", r.cf_fields["text"], str(r.cf_label)) for r in picked]
        info = review_batches.write_batch(Path(opts["batch"]), rows, controls, seed=opts["seed"])
        with open(opts["batch_rows"], "w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
        self.stdout.write(
            f"  reader batch: {info['lines']} lines ({info['candidates']} candidates, {info['controls']} controls) "
            f"-> {opts['batch']}; rows -> {opts['batch_rows']} (write REQUEST there when it looks right)"
        )

    def _ceiling(self, opts: dict[str, Any], data: str, tasks: list[str]) -> None:
        """``--ceiling``: what a perfect selector could pool from the fixture alone (no model loaded)."""
        from generation.services import validity_fixture

        if opts["ceiling"] <= 0:
            raise CommandError("--ceiling must be > 0 (candidates per original)")
        result: dict[str, Any] = {}
        for task in tasks:
            ids = [o.id for o in _originals(opts, data, task)]
            path = Path(opts["fixture"]) / f"{task}.jsonl"
            if not path.is_file():
                raise CommandError(f"no judged {task} candidates: {path} is missing")
            judged = validity_fixture.read_fixture(str(path))
            result[task] = validity_fixture.selection_ceiling(judged, ids, per_review=opts["ceiling"])
            for line in _ceiling_lines(task, result[task]):
                self.stdout.write(line)
        if opts["json"]:
            self.stdout.write(json.dumps(result, sort_keys=True))

    def _merge_readers(self, opts: dict[str, Any]) -> None:
        from generation.services import review_batches

        folder = Path(opts["readers"])
        if not opts["batch_rows"] or not Path(opts["batch_rows"]).is_file():
            raise CommandError("--readers needs --batch-rows FILE (the rows written with --batch)")
        answers = [
            review_batches.read_answers(folder / f"reader{i}.tsv")
            for i in (1, 2)
            if (folder / f"reader{i}.tsv").is_file()
        ]
        if not answers:
            raise CommandError(f"no reader1.tsv / reader2.tsv in {folder}")
        controls = dict(line.split("\t")[:2] for line in (folder / "controls.tsv").read_text().splitlines() if line)
        rows = review_batches.read_rows(Path(opts["batch_rows"]))
        judged = review_batches.merge_readers(rows, answers, judged_on=opts["judged_on"] or folder.name)
        path = Path(opts["fixture"]) / "sentiment.jsonl"
        old = review_batches.read_rows(path) if path.is_file() else []
        new_keys = {r["key"] for r in judged}
        keep = [r for r in old if r["key"] not in new_keys and r.get("readers")]
        with open(path, "w", encoding="utf-8") as fh:
            for r in keep + judged:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
        agree = review_batches.agreement(answers, controls, [r["key"] for r in rows])
        self.stdout.write(f"{len(judged)} judged rows merged into {path} ({len(keep) + len(judged)} rows)")
        self.stdout.write(json.dumps(agree, sort_keys=True))

    def _print(self, task: str, r: dict[str, Any], base: dict[str, Any] | None) -> None:
        def pct(x: float | None) -> str:
            return "  -  " if x is None else f"{x:5.1%}"

        self.stdout.write(
            f"{task}: {r['originals']} originals, {r['candidates']} candidates, {r['pooled']} pooled "
            f"(filters {','.join(r['filters'])}); judged overlap {r['judged']} "
            f"({r.get('judged_by_two_readers', 0)} by two blind readers): "
            f"valid {pct(r['valid'])}, flips {pct(r['flips'])}, valid & flip {pct(r.get('valid_flips'))}; "
            f"weighted by share of the pool: valid {pct(r['pool_valid'])}, flips {pct(r['pool_flips'])}, "
            f"valid & flip {pct(r.get('pool_valid_flips'))}; pooled per original {r.get('pooled_per_original', 0):.2f}"
        )
        self.stdout.write(
            f"  {'code':<12} {'pooled':>6} {'share':>6} {'judged':>6} {'valid':>6} {'flips':>6} {'v&f':>6}"
        )
        for code, c in r["by_code"].items():
            self.stdout.write(
                f"  {code:<12} {c['pooled']:>6} {pct(c['share']):>6} {c['judged']:>6} "
                f"{pct(c['valid']):>6} {pct(c['flips']):>6} {pct(c.get('valid_flips')):>6}"
            )
        for aim, c in (r.get("by_aim") or {}).items():  # each code by the label it aims at
            self.stdout.write(
                f"  {aim:<12} {c['pooled']:>6} {'':>6} {c['judged']:>6} "
                f"{pct(c['valid']):>6} {pct(c['flips']):>6} {pct(c.get('valid_flips')):>6}"
            )
        line = (
            f"  diversity: introduced tokens {r['introduced_tokens']}, distinct-1 {r['introduced_distinct_1']:.4f}, "
            f"top '{r['introduced_top']}' {r['introduced_max_share']:.1%}; "
            f"distinct-2 {r['distinct_2']:.4f}, self-BLEU {r['self_bleu']:.4f}"
        )
        if base:
            line += f" (baseline: distinct-2 {base['distinct_2']:.4f}, self-BLEU {base['self_bleu']:.4f})"
        self.stdout.write(line)


def _originals(opts: dict[str, Any], data: str, task: str) -> list[Any]:
    """The dev originals the options name: ``--originals`` of them after ``--offset``."""
    from generation.management.commands.bench_generation import load_originals

    if opts["offset"] < 0:
        raise CommandError("--offset must be >= 0")
    if task == "sentiment" and opts["unit"] == "sentences":
        originals = _dev_sentences(data)
    else:
        originals = load_originals(FORMAT_FOR_TASK[task], data, task, "dev", opts["offset"] + opts["originals"])
    originals = originals[opts["offset"] : opts["offset"] + opts["originals"]]
    if not originals:
        raise CommandError(f"no {task} dev originals in {data}")
    return originals


def _ceiling_lines(task: str, c: dict[str, Any]) -> list[str]:
    lines = [
        f"{task}: {c['judged']} judged candidates of {c['originals_judged']} of {c['originals']} originals, "
        f"{c['valid_flips']} valid & flip (reader-weighted; {c['valid_flips_per_original']} per original); "
        f"{c['originals_with_a_sure_valid_flip']} originals have one every reader called valid and flipped",
        f"  best pool of {c['per_review']:g} per original ({c['oracle_pool']}): "
        f"valid & flip at most {c['oracle_pool_valid_flips']}",
    ]
    lines += [
        f"  {code:<11} judged {v['judged']:>4}  valid & flip {v['valid_flips']}" for code, v in c["by_code"].items()
    ]
    return lines


def _teacher_paths(spec: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for part in (p.strip() for p in spec.split(",") if p.strip()):
        task, sep, path = part.partition("=")
        if not sep or task not in FORMAT_FOR_TASK or not path:
            raise CommandError(f"--teacher: TASK=PATH with TASK one of {sorted(FORMAT_FOR_TASK)}, not {part!r}")
        out[task] = path
    return out


def _teacher_keeps(p: Any, res: Any, threshold: float) -> bool:
    """The teacher's verdict at ``threshold`` (``teacher_filter`` at P = 0 gives f's probability
    of the aimed label and, for a label-keeping candidate, whether f keeps it): a flip needs
    P(target) >= threshold; untargeted candidates pass."""
    target, orig = p.cand.target_label, p.original.label
    if target is None or orig is None:
        return True
    return bool(res.score >= threshold) if target != orig else bool(res.keep)


def _save_pool(path: Path, pooled: list[Any], n_cands: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"candidates": n_cands}) + "\n")
        for p in pooled:
            o, c = p.original, p.cand
            row = {
                "original": {
                    "id": o.id,
                    "fields": o.fields,
                    "label": o.label,
                    "labels": list(o.labels),
                    "task": o.task,
                },
                "candidate": {
                    "fields": c.fields,
                    "generator": c.generator,
                    "perturbation": c.perturbation,
                    "target_label": c.target_label,
                    "meta": c.meta,
                },
                "key": p.key,
                "before": p.before,
                "after": p.after,
            }
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")


def _load_pool(path: Path) -> tuple[list[Any], int]:
    from generation.ml.base import GeneratedCandidate, Original
    from generation.services.validity_fixture import Pooled

    lines = path.read_text(encoding="utf-8").splitlines()
    head = json.loads(lines[0])
    out = []
    for line in lines[1:]:
        r = json.loads(line)
        o = Original(
            r["original"]["id"],
            r["original"]["fields"],
            r["original"]["label"],
            tuple(r["original"]["labels"]),
            r["original"]["task"],
        )
        c = r["candidate"]
        cand = GeneratedCandidate(
            o.id, c["fields"], c["generator"], c["perturbation"], target_label=c["target_label"], meta=c["meta"]
        )
        out.append(Pooled(o, cand, r["key"], r["before"], r["after"]))
    return out, int(head["candidates"])


def _generator(
    seed: int, task: str, rewriter: str, review_flip_sentences: int | None = None, review_writer: str | None = None
) -> Any:
    """The default ``rules`` generator; on sentiment with the written review flip as a run has it
    (``rewriter``: auto, on, off), reading the run's causal LM, the review-wide flips on texts
    of at most ``review_flip_sentences`` sentences and the whole-review writer as
    ``review_writer`` says (None: the generator's defaults)."""
    from generation.ml.base import GeneratorConfigError
    from generation.ml.rules import RulesGenerator
    from generation.services.runs import default_causal_lm_path

    kw: dict[str, Any] = {} if review_flip_sentences is None else {"review_flip_sentences": review_flip_sentences}
    if review_writer is not None:
        kw["review_writer"] = review_writer if task == "sentiment" else "off"
    if task != "sentiment":
        rewriter = "off"
    uses_lm = rewriter != "off" or kw.get("review_writer", "off") != "off"
    try:
        return RulesGenerator(
            seed=seed, rewriter=rewriter, causal_lm_path=default_causal_lm_path() if uses_lm else "", **kw
        )
    except GeneratorConfigError as exc:
        raise CommandError(str(exc)) from exc


def _dev_sentence_pairs(data: str) -> list[Any]:
    """The sentences CAD's sentiment dev revisions rewrote, each beside the annotator's rewrite
    (``rewriter.cad_sentence_pairs``)."""
    from generation.ml import rewriter
    from generation.ml.rules.tokens import sentence_spans

    path = Path(data) / "sentiment" / "combined" / "paired" / "dev_paired.tsv"
    if not path.is_file():
        raise CommandError(f"no CAD sentiment dev_paired.tsv at {path}")
    try:
        return list(rewriter.cad_sentence_pairs(path, sentence_spans))
    except ValueError as exc:
        raise CommandError(str(exc)) from exc


def _dev_sentences(data: str) -> list[Any]:
    """``--unit sentences``: each sentence a CAD dev revision rewrote as a one-sentence sentiment
    original with its review's label (``rewriter.sentence_originals``)."""
    from generation.ml import rewriter

    return rewriter.sentence_originals(_dev_sentence_pairs(data))
