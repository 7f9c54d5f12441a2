"""``python manage.py bench_task_model [--task nli|sentiment] [--base minilm|mpnet|PATH] [--epochs N]
[--max-public N] [--model PATH] [--probe-steps N] [--eval FORMAT:PATH[:SPLIT] …] [--json]``

The task model f (issue 26) measured where it matters: trained (or found in the cache,
``COUNTERPART_TASK_MODEL_DIR``) on nli-public ``train.jsonl`` plus CAD-NLI **train** originals and
revisions only — never CAD dev —, then scored on CAD-NLI dev originals, CAD-NLI dev revisions
and the generated-gold dev set (``generated-gold/cad-nli-dev-rules.jsonl``: all candidates and
the valid ones). Prints a table, or with ``--json`` one JSON object as the last stdout line
(docs/labelling.md, "Task model"). ``--model PATH`` scores a folder trained elsewhere (a GPU)
and says whether its recorded data hash is this benchmark's training set. ``--probe-steps N``
trains N steps only and extrapolates the full training time (a CPU estimate). An evaluation
example whose text is in the training set is left out and counted (``excluded``): a data folder
whose dev files repeat training rows is scored on the rest only.

``--eval FORMAT:PATH[:SPLIT]`` (repeatable) scores f on held-out data of your own too, read with
the task's labels and text fields and named as ``bench_augmentation`` names its sets: the spec
as given, ``/original`` and ``/counterfactual`` appended for pair formats (a CAD folder's
``test`` split: ``--eval cad-nli:DIR:test``).

``--task sentiment`` (issue 31): the same on ``sentiment-public/train.jsonl`` plus CAD sentiment
**train** originals and revisions, scored on CAD sentiment dev originals and dev revisions.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from labeling.evaluation import read_eval_sets
from labeling.ml import task_bench as B
from labeling.ml import task_model as TM
from labeling.ml.metrics import macro_f1
from labeling.task_training import resolve_base
from projects.formats import read_report

EVAL_NAMES = {
    "cad_dev_originals": "cad-nli:dev/original",
    "cad_dev_revisions": "cad-nli:dev/counterfactual",
    "sentiment:cad_dev_originals": "cad-sentiment:dev/original",
    "sentiment:cad_dev_revisions": "cad-sentiment:dev/counterfactual",
    "gold_rules_all": "generated-gold:cad-nli-dev-rules",
    "gold_rules_valid": "generated-gold:cad-nli-dev-rules/valid",
}


class Command(BaseCommand):
    help = "Train (or load) the task model f on nli-public + CAD-NLI train; score it on CAD-NLI dev and generated gold."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--task",
            default="nli",
            choices=["nli", "sentiment"],
            help="nli (nli-public + CAD-NLI train) or sentiment (sentiment-public + CAD sentiment train)",
        )
        parser.add_argument("--shared", default="", help="the shared data folder (default COUNTERPART_SHARED_DATA)")
        parser.add_argument("--base", default="minilm", help="minilm, mpnet or a local model folder")
        parser.add_argument("--epochs", type=int, default=3)
        parser.add_argument("--batch-size", type=int, default=32)
        parser.add_argument("--learning-rate", type=float, default=5e-5)
        parser.add_argument("--max-length", type=int, default=128)
        parser.add_argument("--max-public", type=int, default=0, help="first N nli-public pairs (0: all)")
        parser.add_argument("--model", default="", help="score this trained folder instead of training")
        parser.add_argument("--probe-steps", type=int, default=0, help="train N steps only; extrapolate the time")
        parser.add_argument(
            "--eval",
            action="append",
            default=[],
            metavar="FORMAT:PATH[:SPLIT]",
            dest="evals",
            help="also score f on this held-out set (repeatable; pair formats give /original and /counterfactual)",
        )
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **o: Any) -> None:
        t0 = time.monotonic()
        shared = o["shared"] or str(settings.COUNTERPART["SHARED_DATA_DIR"])
        skipped: list[str] = []
        try:
            if o["task"] == "sentiment":
                train, evals = B.sentiment_bench_sets(shared, max_public=o["max_public"], problems=skipped)
            else:
                train, evals = B.bench_sets(shared, max_public=o["max_public"], problems=skipped)
        except (OSError, ValueError) as exc:  # a missing or unreadable data file (FormatError is a ValueError)
            raise CommandError(f"cannot read the benchmark data under {shared}: {exc}") from None
        sizes = ", ".join(f"{k} {v}" for k, v in B.sizes(evals).items())
        for line in read_report(shared, f"{len(train[1])} training examples; evaluation {sizes}", skipped):
            self.stderr.write(line)
        labels, fields = (B.SENTIMENT_LABELS, B.SENTIMENT_FIELDS) if o["task"] == "sentiment" else (B.LABELS, B.FIELDS)
        names = {key: EVAL_NAMES[f"{o['task']}:{key}" if o["task"] != "nli" else key] for key in evals}
        for spec in o["evals"]:  # read before any training: a bad spec is refused in a second, not an hour
            problems: list[str] = []
            noted: list[str] = []
            try:
                sets = read_eval_sets(spec, o["task"], list(labels), list(fields), problems=problems, warnings=noted)
            except ValueError as exc:
                raise CommandError(str(exc)) from None
            for line in read_report(
                f"evaluation set {spec}", ", ".join(f"{len(e.records)} {e.name}" for e in sets), problems, noted
            ):
                self.stderr.write(line)
            for e in sets:
                if e.name in names.values():
                    raise CommandError(f"--eval {spec}: the set {e.name!r} is given twice")
                evals[e.name] = (list(e.records), list(e.y))
                names[e.name] = e.name
        cfg = TM.TaskModelConfig(
            labels=labels,
            fields=fields,
            epochs=o["epochs"],
            batch_size=o["batch_size"],
            learning_rate=o["learning_rate"],
            max_length=o["max_length"],
        )
        device = str(settings.COUNTERPART.get("DEVICE") or "") or None
        out: dict[str, Any] = {
            "task": o["task"],
            "n_train": len(train[1]),
            "data_hash": TM.data_hash(*train, fields),
        }
        if o["model"]:
            path = Path(o["model"])
            meta_file = path / TM.META_FILE
            try:
                meta = json.loads(meta_file.read_text(encoding="utf-8")) if meta_file.is_file() else {}
            except (ValueError, OSError) as exc:  # not JSON, not UTF-8, unreadable: the folder is not a model we wrote
                raise CommandError(f"cannot load the task model {path}: {meta_file.name}: {exc}") from None
            if not isinstance(meta, dict):
                raise CommandError(f"cannot load the task model {path}: {meta_file.name} is not a JSON object")
            out.update(
                model=str(path),
                cached=True,
                trained_on_this_data=meta.get("data_hash") == out["data_hash"],
                base=meta.get("base", ""),
                epochs=meta.get("epochs"),
                train_device=meta.get("device", ""),
                train_seconds=meta.get("train_seconds"),
                held_out_accuracy=meta.get("held_out_accuracy"),
            )
        else:
            try:
                base = resolve_base(o["base"])
            except ValidationError as exc:
                raise CommandError("; ".join(exc.messages)) from None
            if o["probe_steps"]:
                # FORMATS.md §3's keys stay, null where a probe has no figure: it trains no model
                out.update(
                    model=None, cached=False, base=o["base"], train_seconds=None, held_out_accuracy=None, eval={}
                )
                self._probe(base, train, cfg, device, o["probe_steps"], out)
                return self._print(out, o["json"], t0)
            last = [0.0]

            def progress(e: dict[str, Any]) -> None:
                if "loss" in e and time.monotonic() - last[0] > 30:
                    last[0] = time.monotonic()
                    eta = e["eta_s"] or 0
                    sys.stderr.write(f"step {e['step']}/{e['total']}, loss {e['loss']:.3f}, about {eta:.0f} s left\n")
                elif "epoch_done" in e:
                    sys.stderr.write(f"epoch {json.dumps(e['epoch_done'])}\n")

            res = TM.train_task_model(
                base, *train, cfg, settings.COUNTERPART["TASK_MODEL_DIR"], device=device, progress=progress
            )
            path = res.path
            out.update(
                model=_shown(path),
                cached=not res.trained,
                trained_on_this_data=True,
                base=o["base"],
                epochs=o["epochs"],
                train_device=res.meta.get("device", ""),
                train_seconds=res.meta.get("train_seconds"),
                held_out_accuracy=res.meta.get("held_out_accuracy"),
            )
        out["model"] = _shown(path) if not o["model"] else o["model"]  # the path as given, or below the project
        try:
            f = TM.load_task_model(path, labels=labels, fields=fields, device=device)
        except (OSError, ValueError) as exc:  # not a folder, or not a model (no config, no tokenizer, …)
            raise CommandError(f"cannot load the task model {out['model']}: {exc}") from None
        out["device"] = f.device
        # held out means not trained on: an evaluation example whose text f trains on is left
        # out and counted (``excluded``), as the evaluation and the project's task model do
        evals, excluded = B.without_training(evals, train[0], fields)
        scores: dict[str, Any] = {}
        for key, (recs, ys) in evals.items():
            name = names[key]
            if not ys:
                scores[name] = {"n": 0, "accuracy": None, "macro_f1": None, "excluded": excluded[key]}
                continue
            t = time.monotonic()
            p = f.predict_proba(recs)
            gold = np.array([labels.index(y) for y in ys])
            pred = p.argmax(axis=1)
            scores[name] = {
                "n": len(ys),
                "accuracy": round(float((pred == gold).mean()), 4),
                "macro_f1": round(float(macro_f1(gold, pred, len(labels))), 4),
                "seconds": round(time.monotonic() - t, 1),
            }
            if excluded[key]:
                scores[name]["excluded"] = excluded[key]
        out["eval"] = scores
        self._print(out, o["json"], t0)

    def _probe(
        self, base: str, train: B.LabelledSet, cfg: TM.TaskModelConfig, device: str | None, n: int, out: dict[str, Any]
    ) -> None:
        """Train ``n`` steps in a scratch folder, time them (the first step, which loads the
        model, is left out of the rate) and extrapolate one epoch and the whole run."""
        import tempfile

        seen: list[float] = []

        def progress(e: dict[str, Any]) -> None:
            if "loss" in e:
                seen.append(time.monotonic())
                out["total_steps"] = e["total"]

        scratch = tempfile.mkdtemp(prefix="task-model-probe-")
        try:
            TM.train_task_model(
                base, *train, cfg, scratch, device=device, progress=progress, cancel=lambda: len(seen) >= n
            )
        except TM.TaskModelCancelled:
            pass
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        if len(seen) < 2:
            raise CommandError("too few steps to measure; raise --probe-steps")
        rate = (len(seen) - 1) / (seen[-1] - seen[0])
        total = int(out["total_steps"])
        per_epoch = total // cfg.epochs
        out.update(
            probe_steps=len(seen),
            steps_per_s=round(rate, 3),
            examples_per_s=round(rate * cfg.batch_size, 1),
            batch_size=cfg.batch_size,
            epochs=cfg.epochs,
            steps_per_epoch=per_epoch,
            estimated_epoch_s=round(per_epoch / rate, 1),
            estimated_total_s=round(total / rate, 1),
            examples_in_60_min=int(rate * 3600 * cfg.batch_size),
            device=device or TM.resolve_device(None),
        )

    def _print(self, out: dict[str, Any], as_json: bool, t0: float) -> None:
        out["seconds"] = round(time.monotonic() - t0, 1)
        if as_json:
            self.stdout.write(json.dumps(out))
            return
        for k, v in out.items():
            if k != "eval":
                self.stdout.write(f"{k}: {v}")
        for name, s in out.get("eval", {}).items():
            left_out = f"  ({s['excluded']} left out: f trains on them)" if s.get("excluded") else ""
            if s["accuracy"] is None:
                self.stdout.write(f"{name:45s} n={s['n']:4d}{left_out}")
                continue
            self.stdout.write(
                f"{name:45s} n={s['n']:4d}  accuracy {s['accuracy']:.3f}  macro-F1 {s['macro_f1']:.3f}{left_out}"
            )


def _shown(path: Path) -> str:
    """A model folder as the JSON shows it: relative to the project root when it is below it
    (the default cache, ``var/task-models``), never this machine's absolute path; else as set."""
    try:
        return str(Path(path).resolve().relative_to(Path(settings.BASE_DIR).resolve()))
    except ValueError:
        return str(path)
