"""``python manage.py train_validity [--out DIR] [--data DIR] [--seed S] [--epochs E]``

Trains the validity filter's discriminator (``generation/ml/validity.py``): a logistic
regression on frozen MiniLM features of CAD-NLI train's human edits (valid) against synthetic
corruptions of their originals (invalid), with the threshold that passes 90 % of held-out
human edits. Writes ``validity.json`` to ``--out`` (default ``MODEL_DIR/validity-minilm``);
``COUNTERPART_VALIDITY_MODEL_PATH`` pointed at that folder makes the filter use it instead of
the one shipped in ``generation/ml/validity_model/`` (made by this command, seed 0).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Train the validity filter's discriminator (frozen MiniLM + logistic regression) and calibrate it."
    requires_system_checks = ()

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--out", default="", help="model folder (default: the validity filter's)")
        parser.add_argument("--data", default="", help="CAD folder (default: SHARED_DATA_DIR/cad)")
        parser.add_argument(
            "--encoder", default="", help="encoder (default: COUNTERPART_MINILM_PATH, else the bundled MiniLM)"
        )
        parser.add_argument("--seed", type=int, default=0)

    def handle(self, *args: Any, **opts: Any) -> None:
        from generation.services import validity_bench

        cfg = settings.COUNTERPART
        out = opts["out"] or str(Path(cfg["MODEL_DIR"]) / "validity-minilm")
        data = opts["data"] or str(Path(cfg["SHARED_DATA_DIR"]) / "cad")
        encoder = opts["encoder"] or cfg["MINILM_PATH"] or None
        t0 = time.perf_counter()
        disc = validity_bench.train(
            data_dir=data, out=out, encoder_path=encoder, seed=opts["seed"], device=cfg["DEVICE"]
        )
        self.stdout.write(
            f"validity model written to {out} (threshold {disc.threshold:.4f}, "
            f"{time.perf_counter() - t0:.0f} s); point COUNTERPART_VALIDITY_MODEL_PATH at it to use it"
        )
