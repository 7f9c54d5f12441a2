"""``python manage.py bench_loop --originals FORMAT:PATH:SPLIT [--task nli] [--limit N] [--seed S] [--json]``

The whole loop, end to end, on the product's own services (``workspace/loop/run.py``): whole
originals picked by seed are imported, the generator runs with its defaults, 10 % of the pool
is routed (the default strategy, check items included), the routed items are answered through
the annotation services from a labels file of people's judgements (each reader one annotator),
f (``--task-model``) and h are trained, the rest auto-labelled, the set exported, and the
training-set variants compared on the evaluation sets (default: the originals' data set, split
``dev``). When routed candidates have no judgement yet it writes them as a labelling batch
(``--batch-dir``) and stops, saying how many. ``--batch-all`` writes the whole pool instead;
``--merge-answers FOLDER`` folds a batch's ``reader*.tsv`` answers into the labels file.

It runs on a scratch database: a fresh SQLite file (``--scratch-db``, under ``var/``) migrated
by a child process that runs the loop, unless ``DATABASE_URL`` is set (then that database is used,
with a new project) or ``--in-place`` (the configured database; the tests use it). A table is
printed, and with ``--json`` a JSON object on the last line (docs/formats.md).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from projects.formats import TASK_LABELS, FormatError, check_inputs, parse_spec
from workspace.loop.labels import BRIEFS, merge_answers, read_labels, write_labels
from workspace.loop.run import VARIANT_TITLES, LabelsNeeded, Loop, LoopConfig, default_eval_spec

CHILD_ENV = "COUNTERPART_BENCH_LOOP_CHILD"
LABELS_DIR = Path(__file__).resolve().parents[2] / "loop" / "labels"
DEFAULT_LABELS = {"nli": LABELS_DIR / "nli-cad-train.jsonl"}


class Command(BaseCommand):
    help = "The whole loop end to end on a scratch database: pool, 10 % human answers, h, export, robustness."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--originals", default="", help="FORMAT:PATH[:SPLIT], e.g. cad-nli:../shared/data/cad:train"
        )
        parser.add_argument("--task", default="nli", choices=sorted(TASK_LABELS))
        parser.add_argument("--limit", type=int, default=70, help="whole originals picked by --seed (0: all)")
        parser.add_argument("--seed", type=int, default=0, help="picks the originals, seeds generation and routing")
        parser.add_argument("--generator", default="rules")
        parser.add_argument("--filters", default="", help="the run's filters (default: the generator's defaults)")
        parser.add_argument("--labels", default="", help="labels file (default: the committed one of the task)")
        parser.add_argument("--batch-dir", default="var/bench_loop/batch", help="where a labelling batch is written")
        parser.add_argument("--batch-all", action="store_true", help="write the whole pool as a batch and stop")
        parser.add_argument("--merge-answers", metavar="FOLDER", help="fold a batch's reader*.tsv into --labels")
        parser.add_argument(
            "--task-model", default="", help="f: a task-model folder, 'train' (through the product, capped) or none"
        )
        parser.add_argument("--task-data", default="", help="with --task-model train: FORMAT:PATH of task data")
        parser.add_argument("--task-model-max-examples", type=int, default=2000, help="the CPU cap of 'train'")
        parser.add_argument("--warm-start", default="", help="h's warm start (as train_pairwise --warm-start)")
        parser.add_argument("--eval", action="append", default=[], help="FORMAT:PATH[:SPLIT] (repeatable)")
        parser.add_argument("--seeds", type=int, default=3, help="seeds of the evaluation classifier")
        parser.add_argument("--classifier", default="minilm-lr", choices=["minilm-lr", "tfidf-lr", "finetune"])
        parser.add_argument("--budget", type=float, default=None, help="routed share (default: the project's, 0.1)")
        parser.add_argument("--check-pairs", type=int, default=10, help="pairs with a known answer for check items")
        parser.add_argument("--controls", type=int, default=40, help="control pairs mixed into a batch")
        parser.add_argument("--work-dir", default="var/bench_loop/work")
        parser.add_argument("--scratch-db", default="var/bench_loop/loop.sqlite3")
        parser.add_argument("--in-place", action="store_true", help="use the configured database as it is")
        parser.add_argument("--json", action="store_true", help="a JSON object on the last line")

    def handle(self, *args: Any, **opts: Any) -> None:
        labels_path = opts["labels"] or str(DEFAULT_LABELS.get(opts["task"], ""))
        labels = list(TASK_LABELS[opts["task"]])
        if opts["merge_answers"]:
            return self._merge(opts["merge_answers"], labels_path, labels)
        if not opts["originals"]:
            raise CommandError("--originals FORMAT:PATH[:SPLIT] is required")
        if opts["task_model"] not in ("", "train") and not Path(opts["task_model"]).is_dir():
            # before the scratch database, the import and the generation run: not minutes later
            raise CommandError(
                f"--task-model: task model directory not found: {opts['task_model']} "
                "(a train_task_model folder; 'train' trains one, none without the flag)"
            )
        _check_inputs(opts, labels_path, labels)
        if not opts["in_place"] and not os.environ.get("DATABASE_URL") and not os.environ.get(CHILD_ENV):
            return self._in_scratch(opts)
        brief = ""
        briefs_dir = Path(settings.COUNTERPART["SHARED_DATA_DIR"]).parent / "briefs"
        if (briefs_dir / BRIEFS.get(opts["task"], "-")).is_file():
            brief = (briefs_dir / BRIEFS[opts["task"]]).read_text(encoding="utf-8")
        cfg = LoopConfig(
            originals=opts["originals"],
            task=opts["task"],
            limit=opts["limit"],
            seed=opts["seed"],
            generator=opts["generator"],
            filters=opts["filters"],
            labels_file=labels_path,
            batch_dir=opts["batch_dir"],
            work_dir=opts["work_dir"],
            task_model=opts["task_model"],
            task_data=opts["task_data"],
            task_model_max_examples=opts["task_model_max_examples"],
            warm_start=opts["warm_start"],
            evals=tuple(opts["eval"]),
            seeds=opts["seeds"],
            classifier=opts["classifier"],
            check_pairs=opts["check_pairs"],
            budget=opts["budget"],
            controls=opts["controls"],
            batch_all=opts["batch_all"],
            brief=brief,
        )
        quiet = opts["json"]
        loop = Loop(cfg, log=(lambda m: None) if quiet else (lambda m: self.stdout.write(m)))
        try:
            result = loop.run()
        except LabelsNeeded as exc:
            self.stdout.write(str(exc))
            if opts["json"]:
                self.stdout.write(
                    json.dumps({"labels_needed": exc.missing, "batch_lines": exc.lines, "batch_dir": str(exc.folder)})
                )
            return None
        except (ValueError, ValidationError, FileNotFoundError) as exc:
            raise CommandError(" ".join(getattr(exc, "messages", [str(exc)]))) from exc
        self._table(result)
        if opts["json"]:
            self.stdout.write(json.dumps(result))
        return None

    def _merge(self, folder: str, labels_path: str, labels: list[str]) -> None:
        if not labels_path:
            raise CommandError("--labels is required for this task")
        try:
            lf = read_labels(labels_path, labels=labels)
            counts = merge_answers(folder, lf, labels=labels)
        except (ValueError, FileNotFoundError) as exc:
            raise CommandError(str(exc)) from exc
        write_labels(labels_path, lf)
        self.stdout.write(f"merged {counts} into {labels_path}: {len(lf.entries)} texts, readers {lf.readers}")

    def _in_scratch(self, opts: dict[str, Any]) -> None:
        """Run the loop in a child process on a fresh, migrated SQLite file."""
        if len(sys.argv) < 2 or sys.argv[1] != "bench_loop":
            raise CommandError("called from code: pass --in-place (or set DATABASE_URL)")
        db = Path(opts["scratch_db"]).resolve()
        db.parent.mkdir(parents=True, exist_ok=True)
        for suffix in ("", "-wal", "-shm"):
            Path(f"{db}{suffix}").unlink(missing_ok=True)
        env = {**os.environ, "DATABASE_URL": f"sqlite:///{db}", CHILD_ENV: "1"}
        manage = [sys.executable, str(Path(settings.BASE_DIR) / "manage.py")]
        subprocess.run([*manage, "migrate", "-v0"], env=env, check=True)
        if not opts["json"]:
            self.stdout.write(f"scratch database: {db}")
        rc = subprocess.run([*manage, "bench_loop", *sys.argv[2:]], env=env).returncode
        if rc:
            raise CommandError(f"the loop failed (exit status {rc})")

    def _table(self, r: dict[str, Any]) -> None:
        w = self.stdout.write
        p, h, e = r["pool"], r["h"], r["export"]
        w("")
        w(
            f"pool: {p['pool']} candidates from {p['originals']} originals; judged {p['judged']}, "
            f"readers agree on {p['readers_agree']}"
        )
        w(f"  valid {_pct(p['valid_share'])}, flips {_pct(p['flip_share'])} (of valid: {_pct(p['flip_share_valid'])})")
        w(
            f"routing: {r['routing']['routed']} routed, {r['routing']['check_items']} check items; "
            f"answers {r['routing']['answers']}"
        )
        w(
            f"h on the rest of the pool (readers agree, valid; n={h['n_valid']}): accuracy {_f(h['accuracy_valid'])}, "
            f"ECE {_f(h['ece_valid'])}; nothing flips {_f(h['invariant_valid'])}; f alone {_f(h['f_alone_valid'])}"
        )
        w(f"  auto-labelled {h['autolabel']['auto_labeled']}, abstained {h['autolabel']['abstained']}")
        w(
            f"export: {e['written']} pairs written, {e['pairs']} with a label: coverage {_pct(e['coverage'])}, "
            f"correct {_pct(e['correct'])} "
            f"(of {e['correct_of']} with an agreed label), invalid {_pct(e['invalid'])}"
        )
        for name, ev in r["eval"].items():
            w("")
            w(
                f"{name} (n={ev['n']}, left out as training text: {ev['excluded']}); "
                f"{r['classifier']}, {r['seeds']} seeds"
            )
            w(f"  {'variant':<46} {'train':>6} {'acc':>6} {'gain [95% CI]':>24} {'share':>6}")
            for v, s in ev["variants"].items():
                if "error" in s:  # a variant that could not run (the export with nothing exported)
                    w(f"  {VARIANT_TITLES.get(v, v):<46} error: {s['error']}")
                    continue
                gain = (
                    "" if "gain" not in s else f"{s['gain']:+.3f} [{s['gain_ci95'][0]:+.3f}, {s['gain_ci95'][1]:+.3f}]"
                )
                share = s.get("share_of_gold_gain")
                w(
                    f"  {VARIANT_TITLES.get(v, v):<46} {s['n_train']:>6} {s['accuracy']:>6.3f} {gain:>24} "
                    f"{'' if share is None else f'{share:.2f}':>6}"
                )


def _check_inputs(opts: dict[str, Any], labels_path: str, labels: list[str]) -> None:
    """Refuse a bad labels file, or a data spec whose files are not there, before the scratch
    database, the import, the generation run and a labelling batch: not at the evaluation,
    after people answered."""
    try:
        if labels_path:
            read_labels(labels_path, labels=labels)
    except ValueError as exc:
        raise CommandError(str(exc)) from None
    evals = [("--eval", e) for e in opts["eval"]] or [
        ("no --eval: the default evaluation set, the originals' dev split,", default_eval_spec(opts["originals"]))
    ]
    specs = [("--originals", opts["originals"]), *evals]
    specs += [(o, opts[k]) for o, k in (("--warm-start", "warm_start"), ("--task-data", "task_data")) if opts[k]]
    for option, spec in specs:
        try:
            fmt, path, split = parse_spec(spec)
            check_inputs(fmt, [path], split=split, max_file_bytes=None, max_line_bytes=None)
        except (ValueError, FormatError) as exc:
            raise CommandError(f"{option} {spec}: {exc}") from None


def _f(v: float | None) -> str:
    return "n/a" if v is None else f"{v:.3f}"


def _pct(v: float | None) -> str:
    return "n/a" if v is None else f"{100 * v:.1f} %"
