"""``python manage.py bench_generation [--json] [--originals N] [--data PATH] [--format F]
[--task T] [--band LO,HI] [--seed S] [--repeat K]``

Generation throughput, measured in one process (docs/formats.md §3):

1. MiniLM sentences/s: a fresh, cache-less encoder encodes distinct sentences of the originals
   that the generator may edit (a field of an NLI pair, a 3-60-word sentence of a review: what
   the similarity filter compares), at most ``--minilm-texts``.
2. ``rules``: candidates/s of the rules generator alone (WordNet/tagger caches cleared first).
3. ``rules+similarity``: generator + similarity band end to end (fresh encoder, candidates
   encoded in batches of 256), candidates/s and the number accepted.

4. ``rules+perplexity``: generator + perplexity filter end to end (a fresh scorer with the
   default causal LM: ``PERPLEXITY_LM_PATH``/``CAUSAL_LM_PATH``/the bundled SmolLM2) on the first
   ``--lm-originals`` originals, candidates/s, plus the median perplexity ratio of the
   similarity-accepted rules candidates with and without the perplexity filter
   (``generation/services/bench_quality.py``). ``--no-lm`` leaves it out. With it, the human
   counterfactuals of the file (``--human-edits`` edits; each changed sentence of a review)
   go through the same perplexity filter and similarity band (``"human_edits"``): the check
   that the filters' defaults pass what people write.
5. ``--generators rules,llm-prompt,concept-constrained,…``: per generator on the first
   ``--quality-originals`` originals, the run filters as a run applies them and the quality
   table (yield, acceptance by filter, flip rate by the MiniLM base classifier trained on
   ``--classifier-train`` labelled originals of the train split, distinct-n, self-BLEU, edit
   distance, seconds per original) under ``"quality"``.

``--pipeline``: instead of the steps above, a default run's pipeline without the database
(``bench_quality.run_pipeline``): the run's generator (``--generator``, default ``rules``) on
the originals, ``GENERATION_BATCH_SIZE`` at a time, through the run's default filters for the
task (or ``--filters``), with the models a run loads. It reports originals/s (model loading
included, and after it) and, per stage (model loading, generation, similarity, dedup,
artifacts, perplexity), wall and CPU (process) seconds and their shares; ``--pooled-out PATH``
writes the pooled candidates as JSON lines (to compare two versions: ``--compare PATH``
reports how many pooled candidates each side alone has). A run records the same stages,
database writes included, in ``run.metrics["stages"]``.

Model and corpus loading happen once before the timings (except under ``--pipeline``). No database is touched. The JSON
object is the last line of stdout (``--json``); extra keys beyond §3 are additive.
"""

from __future__ import annotations

import functools
import json
import os
import resource
import time
from collections import Counter
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, cast

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from generation.ml.base import GeneratedCandidate, Original, Skip, by_label_in_turn
from projects.ml.textkeys import text_hash

TASK_FOR_FORMAT = {"cad-nli": "nli", "cad-sentiment": "sentiment"}


def add_fluency_option(parser: CommandParser, prefix: str = "", suffix: str = "") -> None:
    """``--fluency auto|lm|ngram|ngram-classifier``: the perplexity filter's scorer for a benchmark's run."""
    from generation.services.runs import FLUENCY_CHOICES

    parser.add_argument(
        "--fluency",
        default=None,
        choices=FLUENCY_CHOICES,
        help=f"{prefix}the perplexity filter's scorer: the causal LM, the n-gram model (generation/ml/fluency.py) "
        f"at its distilled ratio or by its classifier, or auto, the run default per task (default: "
        f"COUNTERPART_FLUENCY_SCORER){suffix}",
    )


def load_originals(
    fmt: str, path: str, task: str, split: str, limit: int, say: Callable[[str], object] | None = None
) -> list[Original]:
    """``limit`` originals of a data file via ``projects.formats.read`` (pairs give their
    originals), taken in turn from each label, in file order within a label: the CAD files are
    sorted by label, so the first 400 training originals of CAD-sentiment hold 398 negatives,
    and a judge trained on them calls everything negative. ``say``: see :func:`_read`."""
    from projects.formats.reading import TASK_LABELS
    from projects.formats.records import OriginalRecord, PairRecord

    labels = tuple(TASK_LABELS.get(task, []))
    seen: set[str] = set()
    originals: list[Original] = []
    for rec in _read(fmt, path, task, split, say):
        orig = rec if isinstance(rec, OriginalRecord) else rec.original if isinstance(rec, PairRecord) else None
        if orig is None or orig.id in seen:
            continue
        seen.add(orig.id)
        originals.append(Original(id=orig.id, fields=dict(orig.fields), label=orig.label, labels=labels, task=task))
    return by_label_in_turn(originals)[:limit]


def _read(fmt: str, path: str, task: str, split: str, say: Callable[[str], object] | None = None) -> list[Any]:
    """The records of a data file, read with the task's labels and text fields; a file the
    format cannot read (missing split, unknown task, a format or the text fields of another
    task, …) is a CommandError with the reader's message, not a traceback. A row that cannot be
    read (malformed, a label outside the task's set, other fields) is left out; ``say``
    receives a ``problem: FILE:LINE: …`` line for each and what was read."""
    from projects.formats import TASK_FIELDS, TASK_LABELS, FormatError, Problem, read, read_report

    warnings: list[Problem] = []
    try:
        rows = list(
            read(
                fmt,
                [path],
                task=task,
                split=split,
                labels=list(TASK_LABELS[task]) if task in TASK_LABELS else None,
                text_fields=list(TASK_FIELDS[task]) if task in TASK_FIELDS else None,
                warn=warnings.append,
            )
        )
    except FormatError as exc:
        raise CommandError(str(exc)) from None
    problems = [r for r in rows if isinstance(r, Problem)]
    records = [r for r in rows if not isinstance(r, Problem)]
    if say is not None:
        name = f"{fmt} {path}" + (f" split {split}" if split else "")
        for line in read_report(name, f"{len(records)} records", problems, warnings):
            say(line)
    return records


def load_pairs(
    fmt: str, path: str, task: str, split: str, say: Callable[[str], object] | None = None
) -> list[tuple[dict[str, str], dict[str, str]]]:
    """(original fields, revised fields) of the human counterfactual pairs of a data file."""
    from projects.formats.records import PairRecord

    return [
        (dict(rec.original.fields), dict(rec.cf_fields))
        for rec in _read(fmt, path, task, split, say)
        if isinstance(rec, PairRecord)
    ]


def _repeat(originals: list[Original], n: int) -> Iterator[Original]:
    """``n`` originals, cycling with fresh ids (for runs larger than the file: memory check)."""
    for i in range(n):
        o = originals[i % len(originals)]
        yield (
            o if i < len(originals) else Original(f"{o.id}#{i // len(originals)}", o.fields, o.label, o.labels, o.task)
        )


def _clear_caches() -> None:
    from generation.ml.rules import phrases, tokens
    from generation.ml.rules import wordnet as wnx

    for mod in (wnx, phrases, tokens):
        for obj in vars(mod).values():
            if callable(getattr(obj, "cache_clear", None)):
                obj.cache_clear()


def _torch_threads() -> int | None:
    try:
        import torch
    except ImportError:
        return None
    return int(torch.get_num_threads())


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def minilm_texts(base: list[Original], n: int, limit: int) -> list[str]:
    """The unit the similarity filter encodes: a field of an NLI pair, a sentence of a review
    that the generator may edit (same word-count range as RulesConfig), distinct, at most
    ``limit``."""
    from generation.ml.rules import RulesConfig
    from generation.ml.rules.tokens import sentence_spans, words

    cfg = RulesConfig()
    return list(
        dict.fromkeys(
            t[s:e]
            for o in _repeat(base, n)
            for t in o.fields.values()
            if t
            for s, e in sentence_spans(t)
            if cfg.min_words <= len(words(t[s:e])) <= cfg.max_sentence_words
        )
    )[:limit]


def minilm_sentences_per_s(encoder: Any, texts: list[str]) -> float | None:
    """Sentences/s of a cache-less MiniLM encoder over ``texts``: the yardstick the speed
    targets are ratios to (docs/formats.md §3). The callers pass an ``Encoder(pack=False)``:
    sentence-transformers' own padded ``encode``, what a user of the library gets, not the
    project's packed rows. ``None`` when no text qualifies (data of one- or two-word texts):
    nothing was measured, which is not a rate of 0."""
    if not texts:
        return None
    t0 = time.perf_counter()
    encoder.encode(texts)
    return len(texts) / max(time.perf_counter() - t0, 1e-9)


def load_average() -> list[float] | None:
    """The machine's 1/5/15-minute load average (None where the OS has none): printed beside
    every timing, since a shared machine slows a benchmark down."""
    try:
        return [round(x, 2) for x in os.getloadavg()]
    except OSError:
        return None


class Command(BaseCommand):
    help = "Benchmark candidate generation (rules, rules+similarity) against raw MiniLM encoding."
    requires_system_checks = ()

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="print the JSON object as the last line")
        parser.add_argument(
            "--originals", type=int, default=200, help="number of originals (cycled if the file has fewer)"
        )
        parser.add_argument("--data", default="", help="data path (default: SHARED_DATA_DIR/cad)")
        parser.add_argument(
            "--format", default="cad-nli", help="data format (cad-nli, cad-sentiment, pairs-jsonl, csv)"
        )
        parser.add_argument("--task", default="", help="task (default: from the format; nli)")
        parser.add_argument("--split", default="dev")
        parser.add_argument("--band", default="", help="similarity band LO,HI (default: the task's)")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--batch", type=int, default=256, help="candidates per similarity batch")
        parser.add_argument(
            "--minilm-texts",
            dest="minilm_texts",
            type=int,
            default=400,
            help="distinct sentences of the originals encoded for the raw MiniLM rate",
        )
        parser.add_argument("--no-lm", dest="no_lm", action="store_true", help="skip the language-model steps")
        parser.add_argument(
            "--lm-originals", dest="lm_originals", type=int, default=50, help="originals for rules+perplexity"
        )
        parser.add_argument(
            "--human-edits",
            dest="human_edits",
            type=int,
            default=300,
            help="human counterfactual edits of the file to run the perplexity and similarity filters on (0: none)",
        )
        parser.add_argument(
            "--generators", default="", help="comma-separated generators for the quality table (e.g. rules,llm-prompt)"
        )
        parser.add_argument(
            "--pipeline", action="store_true", help="time a run's pipeline stage by stage (no database)"
        )
        parser.add_argument("--generator", default="rules", help="the generator of --pipeline")
        parser.add_argument(
            "--lm-every-code",
            dest="lm_every_code",
            action="store_true",
            help="--pipeline: the perplexity LM scores every control code (no PERPLEXITY_EXEMPT routing)",
        )
        add_fluency_option(parser, "--pipeline: ")
        parser.add_argument(
            "--padded",
            action="store_true",
            help="--pipeline: MiniLM and the perplexity LM on padded batches, not packed rows (projects/ml/packing.py)",
        )
        parser.add_argument("--filters", default="", help="filters of --pipeline (default: the task's run defaults)")
        parser.add_argument("--pooled-out", dest="pooled_out", default="", help="--pipeline: write pooled candidates")
        parser.add_argument(
            "--compare", default="", help="--pipeline: pooled candidates (a --pooled-out file) to compare with"
        )
        parser.add_argument("--quality-originals", dest="quality_originals", type=int, default=30)
        parser.add_argument(
            "--classifier-train",
            dest="classifier_train",
            type=int,
            default=400,
            help="labelled originals (train split) the MiniLM flip judge is trained on",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        from generation.ml import filters
        from generation.ml.metrics import introduced_stats
        from generation.ml.rules import RulesGenerator
        from projects.ml.embeddings import Encoder

        fmt: str = opts["format"]
        task: str = opts["task"] or TASK_FOR_FORMAT.get(fmt, "nli")
        if not opts["data"] and fmt not in TASK_FOR_FORMAT:  # the default data is the CAD folder
            raise CommandError(f"--format {fmt} needs --data PATH (the default data is the shared CAD folder)")
        path = opts["data"] or str(Path(settings.COUNTERPART["SHARED_DATA_DIR"]) / "cad")
        if not os.path.exists(path):
            raise CommandError(f"data not found: {path} (give --data PATH)")
        n: int = opts["originals"]
        if n < 1:
            raise CommandError("--originals must be >= 1")
        try:
            override: tuple[float, float] | None = None
            if opts["band"]:
                lo, hi = (float(x) for x in opts["band"].split(","))  # not two numbers: ValueError, as before
                override = (lo, hi)
            band = filters.band_for(task, override)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        base = load_originals(fmt, path, task, opts["split"], n, say=self.stderr.write)
        if not base:
            raise CommandError(f"no originals read from {path} ({fmt}, split {opts['split']})")
        if len(base) < n:
            self.stderr.write(f"--originals {n}: the data holds {len(base)} originals, cycled with new ids")
        if opts["pipeline"]:
            self._pipeline(opts, list(_repeat(base, n)), task, band)
            return
        t_start = time.perf_counter()
        model_path = settings.COUNTERPART.get("MINILM_PATH") or None
        device = settings.COUNTERPART.get("DEVICE", "cpu")
        loader = Encoder(model_path=model_path, device=device)
        loader.encode(["warm up the model"])
        model = loader.model

        def fresh_encoder(pack: bool = True) -> Encoder:
            enc = Encoder(model_path=model_path, device=device, pack=pack)
            enc._model = model  # share the loaded weights, not the cache
            return enc

        warm = RulesGenerator(seed=opts["seed"] + 1)
        warm.warm_up()  # WordNet, the taggers, the lexicons and inflection tables, as a run loads them
        list(warm.generate(base[:2]))

        # 1. raw MiniLM
        texts = minilm_texts(base, n, opts["minilm_texts"])
        minilm_rate = minilm_sentences_per_s(fresh_encoder(pack=False), texts)

        # 2. rules alone
        _clear_caches()
        gen = RulesGenerator(seed=opts["seed"])
        t0 = time.perf_counter()
        n_cands = n_skips = 0
        # generate() is typed for a Sequence; the benchmark streams (RulesGenerator only iterates)
        for item in gen.generate(_repeat(base, n)):  # type: ignore[arg-type]
            if isinstance(item, Skip):
                n_skips += 1
            else:
                n_cands += 1
        rules_s = time.perf_counter() - t0

        # 3. rules + similarity band, end to end
        _clear_caches()
        gen = RulesGenerator(seed=opts["seed"])
        enc = fresh_encoder()
        t0 = time.perf_counter()
        originals_by_id: dict[str, Original] = {}
        batch: list[GeneratedCandidate] = []
        accepted = total = 0
        ok_originals: set[str] = set()
        codes: Counter[str] = Counter()
        accepted_codes: Counter[str] = Counter()
        introduced: list[list[str]] = []

        def flush() -> None:
            nonlocal accepted, total
            pairs = [filters.comparison_texts(originals_by_id[c.original_id].fields, c.fields, c.meta) for c in batch]
            results = filters.similarity_band(enc, [a for a, _ in pairs], [b for _, b in pairs], band)
            for c, r in zip(batch, results, strict=True):
                total += 1
                codes[c.perturbation] += 1
                if r.keep:
                    accepted += 1
                    ok_originals.add(c.original_id)
                    accepted_codes[c.perturbation] += 1
                    # the rules generator's meta["introduced"]: the words it put in (a list)
                    words_in = cast(list[object], c.meta.get("introduced", []))
                    introduced.append([str(x) for x in words_in])
            batch.clear()

        def originals_iter() -> Iterator[Original]:
            for o in _repeat(base, n):
                originals_by_id[o.id] = o
                yield o

        for item in gen.generate(originals_iter()):  # type: ignore[arg-type]  # streamed, as above
            if isinstance(item, GeneratedCandidate):
                batch.append(item)
                if len(batch) >= opts["batch"]:
                    flush()
                    originals_by_id = {k: v for k, v in originals_by_id.items() if k == item.original_id}
        if batch:
            flush()
        e2e_s = time.perf_counter() - t0

        rules_rate = n_cands / rules_s if rules_s else 0.0
        e2e_rate = total / e2e_s if e2e_s else 0.0
        intro = introduced_stats(introduced)
        result: dict[str, Any] = {
            "originals": n,
            "minilm_sentences_per_s": round(minilm_rate, 2) if minilm_rate else None,
            "generators": {
                "rules": {"candidates_per_s": round(rules_rate, 2), "candidates": n_cands, "skips": n_skips},
                "rules+similarity": {"candidates_per_s": round(e2e_rate, 2), "accepted": accepted, "candidates": total},
            },
            "task": task,
            "format": fmt,
            "band": list(band),
            "e2e_over_minilm": round(e2e_rate / minilm_rate, 3) if minilm_rate else None,
            "originals_with_accepted": round(len(ok_originals) / n, 4),
            "codes_accepted": dict(sorted(accepted_codes.items())),
            "introduced_distinct_1": round(intro["introduced_distinct_1"], 4),
            "introduced_max_share": round(intro["introduced_max_share"], 4),
            "introduced_top": intro["introduced_top"],
            "minilm_texts": len(texts),
            "peak_rss_mb": round(_peak_rss_mb(), 1),
            "seconds": round(time.perf_counter() - t_start, 2),
        }
        w = self.stdout.write
        if not opts["no_lm"]:
            self._lm_steps(opts, result, base, fmt, path, task, band, fresh_encoder, minilm_rate)
            result["seconds"] = round(time.perf_counter() - t_start, 2)
        w(f"originals: {n} ({task}, {fmt}); similarity band {band}")
        w(
            f"MiniLM: {minilm_rate:.1f} sentences/s ({len(texts)} texts)"
            if minilm_rate
            else "MiniLM: not measured (no sentence of the data has the words a candidate's sentence needs)"
        )
        w(f"rules: {rules_rate:.1f} candidates/s ({n_cands} candidates, {n_skips} skips)")
        w(
            f"rules+similarity: {e2e_rate:.1f} candidates/s ({accepted}/{total} accepted; "
            f"{result['e2e_over_minilm']} x MiniLM)"
        )
        w(
            f"originals with >=1 accepted: {result['originals_with_accepted']:.1%}; codes accepted: "
            f"{result['codes_accepted']}"
        )
        w(
            f"introduced tokens: distinct-1 {intro['introduced_distinct_1']:.3f}, top {intro['introduced_top']!r} "
            f"{intro['introduced_max_share']:.1%}; peak RSS {result['peak_rss_mb']} MB"
        )
        rp = result["generators"].get("rules+perplexity")
        if rp:
            w(
                f"rules+perplexity: {rp['candidates_per_s']:.1f} candidates/s ({rp['accepted']}/{rp['candidates']} "
                f"accepted at ratio <= {rp['max_ratio']}; {result['perplexity_over_minilm']} x MiniLM); median ratio "
                f"of similarity-accepted {rp['median_ratio_similarity']} -> {rp['median_ratio_similarity+perplexity']} "
                f"with the filter; coverage {rp['originals_with_accepted_similarity']:.1%} -> "
                f"{rp['originals_with_accepted_similarity+perplexity']:.1%} ({rp['originals']} originals)"
            )
        for name, q in (result.get("quality") or {}).items():
            w(
                f"{name}: yield {q['yield']:.0%}, accepted for {q['originals_with_accepted']:.0%} of originals "
                f"({q['accepted']}/{q['candidates']}), by filter {q['acceptance_by_filter']}, flip {q['flip_rate']}, "
                f"distinct-1/2 {q['distinct_1']}/{q['distinct_2']}, self-BLEU {q['self_bleu']}, "
                f"edit {q['mean_token_edit_distance']}, {q['seconds_per_original']} s/original"
            )
        if opts["json"]:
            w(json.dumps(result))

    def _pipeline(self, opts: dict[str, Any], originals: list[Original], task: str, band: tuple[float, float]) -> None:
        from generation.ml import filters, registry
        from generation.ml.base import GeneratorConfigError
        from generation.services import bench_quality
        from generation.services.run_quality import FILTER_NAMES, PERPLEXITY_EXEMPT, default_filters
        from generation.services.runs import fluency_choice, perplexity_scorer
        from projects.ml.embeddings import Encoder

        cfg = settings.COUNTERPART
        names = [f.strip() for f in opts["filters"].split(",") if f.strip()] if opts["filters"] else None
        chosen = default_filters(task) if names is None else [f for f in FILTER_NAMES if f in names]
        name: str = opts["generator"]
        if not registry.is_registered(name):
            raise CommandError(f"unknown generator {name!r}; choose one of {', '.join(registry.names())}")
        # checked before the run, not after a minute of it
        if opts["compare"] and not Path(opts["compare"]).is_file():
            raise CommandError(f"--compare: no file {opts['compare']} (write one with --pooled-out)")
        if opts["pooled_out"]:
            Path(opts["pooled_out"]).parent.mkdir(parents=True, exist_ok=True)

        def load() -> tuple[Any, Any, Any]:
            context: dict[str, Any] = {k.lower(): v for k, v in cfg.items() if isinstance(v, str | int | float)}
            context["task"] = task
            generator = registry.create(name, {}, context, run_options={"seed": opts["seed"]})
            warm = registry.create(name, {}, context, run_options={"seed": opts["seed"]})
            # what a run loads before its first batch (runs.py calls the same warm_up), then two
            # originals through a second generator (the run's generator is untouched)
            warm_up = getattr(generator, "warm_up", None)
            if callable(warm_up):
                warm_up()
            list(warm.generate(originals[:2]))
            encoder = None
            pack = not opts["padded"]
            if "similarity" in chosen:
                encoder = Encoder(model_path=cfg.get("MINILM_PATH") or None, device=cfg.get("DEVICE", "cpu"), pack=pack)
                encoder.encode(["warm up"])
            try:
                scorer = perplexity_scorer(task, opts["fluency"]) if "perplexity" in chosen else None
            except GeneratorConfigError as exc:
                raise CommandError(str(exc)) from exc
            if isinstance(scorer, filters.PerplexityScorer):
                # a scorer of its own (the process's shared one keeps its cache), packed or not
                scorer = filters.PerplexityScorer(
                    model=scorer.model, tokenizer=scorer.tokenizer, device=scorer.device, batch_size=32, pack=pack
                )
                scorer.score(["warm up the model"])
                scorer.clear_cache()
            return generator, encoder, scorer

        load_before = load_average()
        res = bench_quality.run_pipeline(
            originals,
            load=load,
            filters=chosen,
            band=band,
            max_ratio=float(cfg["PERPLEXITY_MAX_RATIO"]),
            batch_size=int(cfg["GENERATION_BATCH_SIZE"]),
            perplexity_exempt={} if opts["lm_every_code"] else None,
        )
        res["perplexity_exempt"] = (
            {} if opts["lm_every_code"] else {f"{g}/{t}": sorted(c) for (g, t), c in PERPLEXITY_EXEMPT.items()}
        )
        pooled = res.pop("pooled")
        # the yardstick in the same process and minutes: MiniLM sentences/s of a fresh encoder
        texts = minilm_texts(originals, len(originals), opts["minilm_texts"])
        minilm_rate = minilm_sentences_per_s(
            Encoder(model_path=cfg.get("MINILM_PATH") or None, device=cfg.get("DEVICE", "cpu"), pack=False), texts
        )
        res["minilm_sentences_per_s"] = round(minilm_rate, 2) if minilm_rate else None
        res["originals_per_s_over_minilm"] = (
            round(res["originals_per_s_after_loading"] / minilm_rate, 4)
            if res["originals_per_s_after_loading"] and minilm_rate
            else None
        )
        res["load_average"] = {"before": load_before, "after": load_average()}
        for row in res["stages"].values():
            row["originals_per_s"] = round(res["originals"] / row["wall_s"], 2) if row["wall_s"] else None
        if opts["pooled_out"]:
            with open(opts["pooled_out"], "w", encoding="utf-8") as fh:
                for row in pooled:
                    fh.write(json.dumps(row, sort_keys=True) + "\n")
        if opts["compare"]:
            with open(opts["compare"], encoding="utf-8") as fh:
                other = {line.strip() for line in fh if line.strip()}
            mine = {json.dumps(row, sort_keys=True) for row in pooled}
            res["compare"] = {
                "both": len(mine & other),
                "only_here": len(mine - other),
                "only_there": len(other - mine),
            }
        res.update(
            generator=name,
            task=task,
            packed_rows=not opts["padded"],
            perplexity_dtype=str(cfg.get("PERPLEXITY_DTYPE", "float32")),
            fluency_scorer=fluency_choice(task, opts["fluency"]) if "perplexity" in chosen else None,
            torch_threads=_torch_threads(),
            peak_rss_mb=round(_peak_rss_mb(), 1),
        )
        w = self.stdout.write
        w(
            f"{name} run pipeline on {res['originals']} originals ({task}; filters {', '.join(chosen) or 'none'}): "
            f"{res['originals_per_s']} originals/s ({res['originals_per_s_after_loading']} after model loading; "
            f"{res['cpu_originals_per_s']} per CPU second), {res['candidates']} candidates, "
            f"{res['pooled_count']} pooled; perplexity LM in {res['perplexity_dtype']}, "
            f"{res['torch_threads']} torch threads, {'packed rows' if res['packed_rows'] else 'padded batches'}"
        )
        w(
            f"MiniLM in the same run: {res['minilm_sentences_per_s']} sentences/s ({len(texts)} texts); "
            f"originals/s after loading over MiniLM sentences/s: {res['originals_per_s_over_minilm']}; "
            f"load average before {res['load_average']['before']}, after {res['load_average']['after']}"
        )
        w(f"{'stage':<16}{'wall s':>9}{'wall %':>8}{'CPU s':>9}{'CPU %':>8}{'orig/s':>9}")
        for stage, row in res["stages"].items():
            rate = "-" if row["originals_per_s"] is None else f"{row['originals_per_s']:.1f}"
            w(
                f"{stage:<16}{row['wall_s']:>9.2f}{row['wall_share']:>8.1%}{row['cpu_s']:>9.2f}"
                f"{row['cpu_share']:>8.1%}{rate:>9}"
            )
        if "compare" in res:
            c = res["compare"]
            w(
                f"pooled vs {opts['compare']}: {c['both']} in both, {c['only_here']} only here, "
                f"{c['only_there']} only there"
            )
        if opts["json"]:
            w(json.dumps(res))

    def _lm_steps(
        self,
        opts: dict[str, Any],
        result: dict[str, Any],
        base: list[Original],
        fmt: str,
        path: str,
        task: str,
        band: tuple[float, float],
        fresh_encoder: Any,
        minilm_rate: float | None,
    ) -> None:
        from generation.ml import filters, hf, registry
        from generation.services import bench_quality
        from generation.services.runs import default_causal_lm_path, perplexity_lm_path

        cfg = settings.COUNTERPART
        max_ratio = float(cfg["PERPLEXITY_MAX_RATIO"])
        lm_path = perplexity_lm_path()
        if not lm_path:
            self.stderr.write("no causal language model: the perplexity steps are skipped")
            return
        lm = hf.load_causal_lm(lm_path, cfg.get("DEVICE", "cpu"))

        def make_scorer() -> filters.PerplexityScorer:
            return filters.PerplexityScorer(model=lm.model, tokenizer=lm.tokenizer, device=lm.device, batch_size=32)

        make_scorer().score(["warm up the model"])
        rp = bench_quality.rules_perplexity(
            base[: max(1, opts["lm_originals"])],
            make_scorer=make_scorer,
            encoder=fresh_encoder(),
            band=band,
            max_ratio=max_ratio,
            seed=opts["seed"],
        )
        result["generators"]["rules+perplexity"] = rp
        if opts["human_edits"] > 0:
            he = bench_quality.human_edits(
                load_pairs(fmt, path, task, opts["split"]),
                scorer=make_scorer(),
                encoder=fresh_encoder(),
                band=band,
                max_ratio=max_ratio,
                by_sentence=task == "sentiment",
                limit=opts["human_edits"],
            )
            result["human_edits"] = he
            if he.get("edits"):
                self.stdout.write(
                    f"human edits ({he['edits']}): perplexity filter passes {he['perplexity_pass']:.1%} at "
                    f"ratio <= {max_ratio} ({he['perplexity_pass_at_1.5']:.1%} at 1.5; p50 {he['ratio_p50']}, "
                    f"p90 {he['ratio_p90']}); similarity band passes {he['similarity_pass']:.1%}"
                )
        result["perplexity_over_minilm"] = round(rp["candidates_per_s"] / minilm_rate, 3) if minilm_rate else None
        result["perplexity_lm"] = lm_path
        names = [g.strip() for g in opts["generators"].split(",") if g.strip()]
        if not names:
            return
        qn = max(1, opts["quality_originals"])
        originals = base[:qn]
        judge = None
        try:
            train = load_originals(fmt, path, task, "train", opts["classifier_train"])
        except CommandError as exc:  # no train split next to the data: the table goes without flip rates
            self.stderr.write(f"no flip judge: {exc}")
            train = []
        # the judge never sees the originals it judges: a file without splits (pairs-jsonl, csv)
        # gives the same originals for "train", and --split train would overlap too
        # the flip judge never trains on an original it judges (the same text: projects.ml.textkeys)
        judged = {text_hash(o.fields, sorted(o.fields)) for o in originals}
        train = [o for o in train if o.label and text_hash(o.fields, sorted(o.fields)) not in judged]
        if len({o.label for o in train}) < 2:  # a judge of one label cannot be trained (it raised)
            self.stderr.write(f"no flip judge: {len(train)} training originals left, fewer than two labels")
            train = []
        if train:
            fields = list(originals[0].fields)
            judge = bench_quality.FlipJudge(
                [o.fields for o in train],
                [str(o.label) for o in train],
                originals[0].labels,
                fields,
                fresh_encoder().encode,
            )
        context = {k.lower(): v for k, v in cfg.items() if isinstance(v, str | int | float)}
        context["task"] = task
        if not context.get("causal_lm_path") and not context.get("seq2seq_path"):
            context["causal_lm_path"] = default_causal_lm_path()
        quality: dict[str, Any] = {}
        for name in names:
            opts_for = registry.options_for(name)
            gen_opts: dict[str, Any] = {}
            if "teacher" in opts_for and judge is not None and not context.get("teacher_path"):
                gen_opts["teacher"] = judge  # the teacher filter with the MiniLM base classifier
            quality[name] = bench_quality.generator_quality(
                name,
                originals,
                make_generator=functools.partial(
                    registry.create, name, gen_opts, context, run_options={"seed": opts["seed"]}
                ),
                encoder=fresh_encoder(),
                scorer=make_scorer(),
                band=band,
                max_ratio=max_ratio,
                judge=judge,
            )
        result["quality"] = quality
        result["quality_originals"] = len(originals)
        result["flip_judge"] = f"minilm base classifier on {len(train)} train originals" if judge else None
