"""``python manage.py bench_pairwise --task TASK --format FORMAT [--split S] PATH… [--budget 0.1]
[--seeds N] [--warm-start FORMAT:PATH[:SPLIT]] [--mixed] [--no-siblings] [--task-model PATH]
[--skip METHOD,…] [--min-valid-sweep P,…] [--strata-alpha-sweep A,…] [--json]``

The label-efficiency benchmark (docs/formats.md §3): no database, pure ML over the records read
from the data (see ``labeling/ml/bench.py`` for the exact setting). Progress goes to stderr;
a human-readable table, or with ``--json`` a single JSON object as the last stdout line. When
the pair file carries ``counterfactual.valid``, each method also reports its accuracy on the
valid candidates, and the output has the export simulation (docs/formats.md §3). With
``--task-model`` (issue 26) it adds ``f alone``, ``capc+f`` and ``chosen`` and each thresholded
method's export; a task model whose metadata says it saw the pool's counterfactuals is refused.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable
from typing import Any, TypeVar

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from labeling.ml.base_classifier import TooFewLabels
from labeling.ml.bench import CURVE, run_benchmark
from labeling.ml.pairs import (
    LabelledPairs,
    mixed_pool,
    pairs_from_records,
    parse_warm_spec,
    sample_by_group,
    without_pool,
)
from labeling.ml.task_inputs import load_task, read_task_meta, task_leak
from labeling.services import embedder
from projects.formats import FORMATS, TASK_FIELDS, TASK_LABELS, FormatError, Problem, read, read_report
from projects.models import TASKS

N = TypeVar("N", int, float)


def _checked(parse: Callable[[str], N], ok: Callable[[N], bool], expected: str) -> Callable[[str], N]:
    """An argparse ``type`` that says what it takes: argparse hides a ValueError's text ("invalid
    _budget value"), so a value ``parse`` cannot read or ``ok`` refuses raises an
    ArgumentTypeError naming ``expected``."""

    def convert(value: str) -> N:
        try:
            parsed = parse(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{value!r}: {expected}") from None
        if not ok(parsed):
            raise argparse.ArgumentTypeError(f"{value!r}: {expected}")
        return parsed

    return convert


# NaN passes no comparison, so it is refused too
_budget = _checked(float, lambda b: 0 < b < 1, "a share of the pool between 0 and 1 (exclusive), e.g. 0.1")
# 5 made every label abstain, and said nothing
_threshold = _checked(float, lambda t: 0 <= t <= 1, "a confidence between 0 and 1, e.g. 0.7")
# about N pairs; a negative N read nothing and said the file was empty
_limit = _checked(int, lambda n: n >= 0, "a number of pairs, 0 for all")


def _shares(raw: str, option: str) -> list[float]:
    """A comma-separated list of numbers between 0 and 1 (CommandError otherwise)."""
    try:
        values = [float(v) for v in raw.split(",") if v.strip()]
    except ValueError:
        values = [-1.0]
    if any(not 0 <= v <= 1 for v in values):
        raise CommandError(f"{option}: comma-separated numbers between 0 and 1")
    return values


def held_out_warm(
    warm: LabelledPairs, pool: LabelledPairs, fields: list[str], spec: str, say: Callable[[str], object]
) -> tuple[LabelledPairs, int]:
    """The warm-start pairs that share no original or counterfactual with the pool, and how many
    were left out (``without_pool``, said through ``say``); a CommandError when none is left."""
    if not warm.pairs:
        raise CommandError(f"no labelled pairs in the warm-start data {spec}")
    kept, dropped = without_pool(warm, pool, fields)
    if not kept.pairs:
        raise CommandError(
            f"every pair of the warm-start data {spec} shares an original or a counterfactual with the pool: "
            "h would be pre-trained on the pairs it is scored on; warm-start from another split"
        )
    if dropped:
        say(f"warm start: left out {dropped} pairs that share an original or a counterfactual with the pool")
    return kept, dropped


def data_name(fmt: str, paths: list[str], split: str) -> str:
    """The data as the command was given it: ``FORMAT PATH… [split S]``."""
    return f"{fmt} {' '.join(paths)}" + (f" split {split}" if split else "")


def read_pairs(
    fmt: str, paths: list[str], task: str, split: str, say: Callable[[str], object], limit: int = 0
) -> LabelledPairs:
    """The labelled pairs of the data, read with the task's text fields (a file of another task
    is refused as a whole, a row with other fields is a problem: never text left empty), its
    problems and warnings said through ``say``, and what was read (``read_report``).
    ``limit``: about that many pairs, whole groups drawn at random (seed 0)."""
    warnings: list[Problem] = []  # rows read with a note, or left out by the reader (CAD's misaligned rows)
    try:
        fields = list(TASK_FIELDS[task])
        records = list(read(fmt, paths, task=task, split=split, text_fields=fields, warn=warnings.append))
    except FormatError as exc:
        raise CommandError(str(exc)) from None
    data, problems = pairs_from_records(records, TASK_LABELS[task])
    for line in read_report(data_name(fmt, paths, split), f"{len(data.pairs)} labelled pairs", problems, warnings):
        say(line)
    if limit and limit < len(data.pairs):
        data = sample_by_group(data, limit, seed=0)
        say(f"--limit {limit}: {len(data.pairs)} pairs, whole originals drawn at random (seed 0)")
    return data


def _fmt(v: object) -> str:
    return f"{v:.3f}" if isinstance(v, float | int) else "n/a"


class Command(BaseCommand):
    help = "Label-efficiency benchmark of the pairwise classifier and its baselines (no database)."
    requires_system_checks = ()

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", metavar="PATH")
        parser.add_argument("--task", required=True, choices=TASKS)
        parser.add_argument("--format", required=True, choices=FORMATS, dest="data_format")
        parser.add_argument("--split", default="")
        parser.add_argument("--budget", type=_budget, default=0.1, help="fraction given to humans (default 0.1)")
        parser.add_argument("--seeds", type=int, default=5)
        parser.add_argument("--warm-start", default="", metavar="FORMAT:PATH[:SPLIT]")
        parser.add_argument("--base", default="minilm", choices=["minilm", "tfidf"], help="base classifier f")
        parser.add_argument("--threshold", type=_threshold, default=None, help="abstain threshold for coverage figures")
        parser.add_argument(
            "--limit",
            type=_limit,
            default=0,
            help="use about N pairs: whole groups (originals) drawn at random, seed 0 (0: all)",
        )
        parser.add_argument(
            "--mixed",
            action="store_true",
            help="add label-preserving pairs (siblings with the same label, trivial determiner edits) to the "
            "pool and report each method's accuracy on flips and non-flips",
        )
        parser.add_argument(
            "--no-siblings",
            action="store_true",
            help="h without its sibling stage (sibling counterfactuals of one original labelled independently)",
        )
        parser.add_argument(
            "--task-model",
            default="",
            metavar="PATH",
            help="a trained task model (Hugging Face folder): adds f alone, capc+f and chosen (issue 26)",
        )
        parser.add_argument(
            "--skip",
            default="",
            metavar="METHOD,…",
            help="methods not to run, comma-separated: random-pairs, training-only, capc+active, curve",
        )
        parser.add_argument(
            "--min-valid-sweep",
            default="",
            metavar="P,…",
            help="also simulate each method's export at these stricter validity thresholds (e.g. 0.6,0.7,0.8)",
        )
        parser.add_argument(
            "--strata-alpha-sweep",
            default="",
            metavar="A,…",
            help="also simulate chosen's export with the strata's one-sided bound at these levels (e.g. 0.2,0.3)",
        )
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        t0 = time.perf_counter()
        task = opts["task"]
        labels, fields = list(TASK_LABELS[task]), list(TASK_FIELDS[task])
        paths = [os.path.expanduser(p) for p in opts["paths"]]
        data = read_pairs(opts["data_format"], paths, task, opts["split"], self.stderr.write, opts["limit"])
        if opts["mixed"]:
            data = mixed_pool(data, seed=0)
        if len(data.pairs) < 20:
            what = data_name(opts["data_format"], paths, opts["split"])
            raise CommandError(
                f"only {len(data.pairs)} labelled pairs read from {what}; the benchmark needs at least 20"
            )
        warm, warm_excluded = None, 0
        if opts["warm_start"]:
            try:
                wfmt, wpath, wsplit = parse_warm_spec(opts["warm_start"])
            except ValueError as exc:
                raise CommandError(str(exc)) from None
            warm, warm_excluded = held_out_warm(
                read_pairs(wfmt, [wpath], task, wsplit, self.stderr.write),
                data,
                fields,
                opts["warm_start"],
                self.stderr.write,
            )
        if opts["seeds"] < 1:
            raise CommandError("--seeds must be at least 1")
        threshold = opts["threshold"] if opts["threshold"] is not None else settings.COUNTERPART["MIN_CONFIDENCE"]
        embed = embedder().encode  # h always uses MiniLM embeddings; --base only changes f
        skip = [m.strip() for m in opts["skip"].split(",") if m.strip()]
        unknown = sorted(set(skip) - {"random-pairs", "training-only", "capc+active", "curve"})
        if unknown:
            raise CommandError(f"--skip: unknown method {', '.join(unknown)}")
        sweep = _shares(opts["min_valid_sweep"], "--min-valid-sweep")
        alphas = _shares(opts["strata_alpha_sweep"], "--strata-alpha-sweep")
        task_model = None
        if opts["task_model"]:
            try:
                meta = read_task_meta(opts["task_model"])
                leak = task_leak(
                    meta,
                    labelled=[p.counterfactual for p in data.pairs],
                    originals=[p.original for p in data.pairs],
                    fields=fields,
                )
                if leak.refused or leak.originals_seen:
                    raise CommandError(
                        f"task model {opts['task_model']} was trained on {leak.labelled_seen} counterfactuals and "
                        f"{leak.originals_seen} originals of this pool: the benchmark would measure memorised labels"
                    )
                task_model = load_task(opts["task_model"], labels, fields, settings.COUNTERPART["DEVICE"])
            except (ValueError, FileNotFoundError) as exc:
                raise CommandError(f"task model: {exc}") from None
            self.stderr.write(f"task model {opts['task_model']}: {leak.message()}")
        try:
            result = run_benchmark(
                data,
                task=task,
                labels=labels,
                fields=fields,
                embed=embed,
                budget=opts["budget"],
                seeds=opts["seeds"],
                warm=warm,
                curve=CURVE,
                base_kind=opts["base"],
                threshold=threshold,
                log=lambda m: print(m, file=sys.stderr, flush=True),
                split_flips=opts["mixed"],
                siblings=not opts["no_siblings"],
                task_model=task_model,
                skip=skip,
                min_valid_sweep=sweep,
                alpha_sweep=alphas,
            )
        except TooFewLabels as exc:
            raise CommandError(str(exc)) from None
        result["seconds"] = round(time.perf_counter() - t0, 1)
        if warm is not None:
            result["warm_start_excluded"] = warm_excluded
        if opts["json"]:
            self.stdout.write(json.dumps(result))
            return
        self.stdout.write(f"{task}: {result['n_pairs']} pairs, budget {result['budget']}, {result['seeds']} seeds")
        for name, m in result["methods"].items():
            if "error" in m:
                self.stdout.write(f"  {name:14s} error: {m['error']}")
                continue
            ece = f"  ece {m['ece']:.3f}" if "ece" in m else ""
            split = ""
            if "accuracy_flips" in m:
                split = f"  flips {_fmt(m['accuracy_flips'])}  non-flips {_fmt(m['accuracy_non_flips'])}"
            valid = f"  valid {_fmt(m['accuracy_valid'])}" if "accuracy_valid" in m else ""
            self.stdout.write(
                f"  {name:14s} accuracy {m['accuracy']:.3f}  macro-F1 {m['macro_f1']:.3f}{ece}{split}{valid}"
            )
        if result["budget_curve"]["capc"]:
            self.stdout.write(
                "  budget curve (capc accuracy): "
                + ", ".join(f"{k}: {v}" for k, v in result["budget_curve"]["capc"].items())
            )
        if "export" in result:
            e = result["export"]
            self.stdout.write(
                f"  export ({e['method']}, {result.get('valid_share', 0):.0%} of the pool valid): "
                f"correct {_fmt(e['correct'])}, invalid {_fmt(e['invalid'])}, coverage {_fmt(e['coverage'])}"
            )
        for name, ex in result.get("exports", {}).items():
            self.stdout.write(
                f"  export ({name}): correct {_fmt(ex['correct'])}, invalid {_fmt(ex['invalid'])}, "
                f"coverage {_fmt(ex['coverage'])}"
            )
        if "chosen_candidates" in result:
            self.stdout.write(
                "  h's CV chose: " + ", ".join(f"{k} ({v})" for k, v in result["chosen_candidates"].items())
            )
        self.stdout.write(f"  {result['seconds']} s")
