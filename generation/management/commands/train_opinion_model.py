"""``python manage.py train_opinion_model [--data PATH] [--cad DIR|none] [--out DIR] [--seed S] [--c C]``

Trains the sentence-level opinion model the review-wide sentiment flip reads
(``generation/ml/opinion.py``): a logistic regression over words and word pairs (negation scope
marked) on ``sentiment-public/train.jsonl`` (default ``SHARED_DATA_DIR/sentiment-public``) plus
the sentences CAD's sentiment **train** revisions changed (``--cad``, default
``SHARED_DATA_DIR/cad/sentiment/combined/paired``: review sentences, on both sides of a
revision), 10 % held out; the sentences CAD's **dev** revisions changed are scored too
(``cad_dev_sentences``). Writes ``opinion.json.gz`` to ``--out`` (default: the shipped model's folder,
``generation/ml/opinion_model/``, which this command made with its defaults) and prints the
held-out accuracy on snippets and on whole reviews.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = "Train the sentence-level opinion model of the review-wide sentiment flip."
    requires_system_checks = ()

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--data", default="", help="JSON lines of text/label/source (default: sentiment-public)")
        parser.add_argument(
            "--cad",
            default="",
            help="CAD sentiment paired folder whose train revisions' changed sentences are added "
            "and whose dev ones are scored (default: SHARED_DATA_DIR/cad/sentiment/combined/paired; "
            "'none' to leave them out)",
        )
        parser.add_argument("--out", default="", help="model folder (default: the shipped model's)")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--c", type=float, default=0.3, help="inverse L2 strength of the regression")

    def handle(self, *args: Any, **opts: Any) -> None:
        from generation.ml import opinion
        from generation.ml.rules.tokens import sentence_spans

        data = opts["data"] or str(Path(settings.COUNTERPART["SHARED_DATA_DIR"]) / "sentiment-public" / "train.jsonl")
        if not Path(data).is_file():
            raise CommandError(f"no training data at {data} (pass --data PATH)")
        try:
            rows = opinion.read_rows(data)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        shared = Path(settings.COUNTERPART["SHARED_DATA_DIR"])
        cad = (
            None if opts["cad"] == "none" else Path(opts["cad"] or shared / "cad" / "sentiment" / "combined" / "paired")
        )
        dev: list[dict[str, str]] = []
        if cad is not None:
            if not (cad / "train_paired.tsv").is_file():
                raise CommandError(f"no CAD train_paired.tsv in {cad} (pass --cad DIR, or --cad none)")
            try:
                rows += opinion.cad_sentences(cad / "train_paired.tsv", sentence_spans)
                if (cad / "dev_paired.tsv").is_file():
                    dev = opinion.cad_sentences(cad / "dev_paired.tsv", sentence_spans)
            except ValueError as exc:
                raise CommandError(str(exc)) from exc
        t0 = time.perf_counter()
        model, _ = opinion.train(rows, seed=opts["seed"], c=opts["c"])
        model.meta["data"] = Path(data).parent.name + "/" + Path(data).name + (" + CAD train" if cad else "")
        if dev:  # sentences of reviews, on both sides of a revision: what the flip reads
            model.meta["cad_dev_sentences"] = opinion.accuracy(model, dev)
            model.meta["cad_dev_sentences_n"] = len(dev)
        path = model.save(opts["out"] or opinion.MODEL_DIR)
        self.stdout.write(json.dumps({"model": str(path), "seconds": round(time.perf_counter() - t0, 1), **model.meta}))
