"""``python manage.py bench_augmentation --task TASK --format FORMAT [--split S] PATH…
--eval FORMAT:PATH[:SPLIT] [--eval …] [--budget 0.1] [--seeds N]
[--classifier minilm-lr|tfidf-lr|finetune] [--warm-start FORMAT:PATH[:SPLIT]] [--limit N] [--json]``

The augmentation evaluation (FORMATS.md §3): a classifier f' trained on the pool's originals
plus each variant's labelled counterfactuals, scored on held-out evaluation sets. No
database; see ``labeling/ml/augmentation.py`` for the setting. Evaluation examples whose text
also occurs in the pool are left out and counted (``excluded``); when nothing is left the
command refuses. Progress goes to stderr; a table, or with ``--json`` one JSON object as the
last stdout line.
"""

from __future__ import annotations

import json
import os
import sys
import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from labeling.evaluation import finetune_options, read_eval_sets
from labeling.management.commands.bench_pairwise import (
    _budget,
    _limit,
    _threshold,
    data_name,
    held_out_warm,
    read_pairs,
)
from labeling.ml.augmentation import CLASSIFIERS, EvalSet, classifier_factory
from labeling.ml.augmentation import run_augmentation as run
from labeling.ml.base_classifier import TooFewLabels
from labeling.ml.pairs import parse_warm_spec
from labeling.services import embedder
from projects.formats import FORMATS, TASK_FIELDS, TASK_LABELS, read_report
from projects.models import TASKS


class Command(BaseCommand):
    help = "Augmentation evaluation: f' trained with each labelled variant, scored on held-out sets (no database)."
    requires_system_checks = ()

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", metavar="PATH")
        parser.add_argument("--task", required=True, choices=TASKS)
        parser.add_argument("--format", required=True, choices=FORMATS, dest="data_format")
        parser.add_argument("--split", default="")
        parser.add_argument("--eval", action="append", default=[], metavar="FORMAT:PATH[:SPLIT]", dest="evals")
        parser.add_argument("--budget", type=_budget, default=0.1, help="fraction given to humans (default 0.1)")
        parser.add_argument("--seeds", type=int, default=3)
        parser.add_argument("--classifier", default="minilm-lr", choices=CLASSIFIERS, help="f' (default minilm-lr)")
        parser.add_argument("--warm-start", default="", metavar="FORMAT:PATH[:SPLIT]", help="adds variant capc+warm")
        parser.add_argument("--threshold", type=_threshold, default=None, help="abstain threshold for capc-confident")
        parser.add_argument(
            "--limit",
            type=_limit,
            default=0,
            help="use about N pairs of the pool: whole groups at random, seed 0 (0: all)",
        )
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        t0 = time.perf_counter()
        task = opts["task"]
        labels, fields = list(TASK_LABELS[task]), list(TASK_FIELDS[task])
        if not opts["evals"]:
            raise CommandError("give at least one --eval FORMAT:PATH[:SPLIT]")
        if opts["seeds"] < 1:
            raise CommandError("--seeds must be at least 1")
        paths = [os.path.expanduser(p) for p in opts["paths"]]
        data = read_pairs(opts["data_format"], paths, task, opts["split"], self.stderr.write, opts["limit"])
        if len(data.pairs) < 20:
            what = data_name(opts["data_format"], paths, opts["split"])
            raise CommandError(
                f"only {len(data.pairs)} labelled pairs read from {what}; the evaluation needs at least 20"
            )
        evals: list[EvalSet] = []
        for spec in opts["evals"]:
            skipped: list[str] = []
            noted: list[str] = []
            try:
                sets = read_eval_sets(spec, task, labels, fields, problems=skipped, warnings=noted)
            except ValueError as exc:
                raise CommandError(str(exc)) from None
            sizes = ", ".join(f"{len(s.records)} {s.name.removeprefix(spec).lstrip('/') or 'examples'}" for s in sets)
            for line in read_report(f"evaluation set {spec}", sizes, skipped, noted):
                self.stderr.write(line)
            evals += sets
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
        threshold = opts["threshold"] if opts["threshold"] is not None else settings.COUNTERPART["MIN_CONFIDENCE"]
        embed = embedder().encode
        factory = classifier_factory(
            opts["classifier"], labels=labels, fields=fields, embed=embed, finetune=finetune_options()
        )
        try:
            result = run(
                data,
                evals,
                task=task,
                labels=labels,
                fields=fields,
                embed=embed,
                budget=opts["budget"],
                seeds=opts["seeds"],
                classifier=opts["classifier"],
                make_classifier=factory,
                threshold=threshold,
                warm=warm,
                log=lambda m: print(m, file=sys.stderr, flush=True),
            )
        except (TooFewLabels, ValueError) as exc:
            raise CommandError(str(exc)) from None
        result["seconds"] = round(time.perf_counter() - t0, 1)
        if warm is not None:
            result["warm_start_excluded"] = warm_excluded
        if opts["json"]:
            self.stdout.write(json.dumps(result))
            return
        self.stdout.write(
            f"{task}: {result['n_pairs']} pairs, budget {result['budget']}, {result['seeds']} seeds, "
            f"f' = {result['classifier']}"
        )
        if result.get("excluded"):
            self.stdout.write(
                f"  left out {result['excluded']} test examples whose text is also in the pool (originals or "
                "counterfactuals): a test set must not be training data"
            )
        for name, ev in result["eval"].items():
            left_out = f", {ev['excluded']} left out: also in the pool" if ev.get("excluded") else ""
            self.stdout.write(f"  {name} (n = {ev['n']}{left_out})")
            for v, scores in ev["variants"].items():
                m: dict[str, Any] = dict(scores)
                if "error" in m:
                    self.stdout.write(f"    {v:15s} error: {m['error']}")
                    continue
                extra = ""
                if m.get("gain") is not None:
                    extra = f"  gain {m['gain']:+.3f}"
                if m.get("share_of_gold_gain") is not None:
                    extra += f"  share of gold gain {m['share_of_gold_gain']:.2f}"
                if m.get("p_vs_originals") is not None:
                    extra += f"  p {m['p_vs_originals']:.3f}"
                self.stdout.write(f"    {v:15s} accuracy {m['accuracy']:.3f}  macro-F1 {m['macro_f1']:.3f}{extra}")
        self.stdout.write(f"  {result['seconds']} s")
