"""``python manage.py bench_validity [--model DIR] [--judged FILE] [--data DIR] [--json]``

The validity filter's figures (docs/generation.md, "Validity filter"): on the generated-gold
dev set (``SHARED_DATA_DIR/generated-gold/cad-nli-dev-rules.jsonl``, 340 judged ``rules``
candidates), the AUC of the discriminator's score for "invalid", and at its calibrated
threshold the share of invalid candidates removed and of valid ones kept, per control code
too; the pass rate of CAD-NLI dev's first 300 human edits and of the held-out train edits the
threshold was set on. ``--train`` trains the model first (``train_validity``) into
``--model``. No database.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from projects.formats import read_report


class Command(BaseCommand):
    help = "Measure the validity filter on the generated-gold dev set and CAD's human edits."
    requires_system_checks = ()

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--model", default="", help="model folder (default: the validity filter's)")
        parser.add_argument("--judged", default="", help="pairs-jsonl with counterfactual.valid")
        parser.add_argument("--data", default="", help="CAD folder (default: SHARED_DATA_DIR/cad)")
        parser.add_argument("--train", action="store_true", help="train the model into --model first")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--json", action="store_true", help="print the JSON object as the last line")

    def handle(self, *args: Any, **opts: Any) -> None:
        from generation.ml.validity import ValidityDiscriminator
        from generation.services import validity_bench
        from generation.services.runs import validity_model_path

        cfg = settings.COUNTERPART
        shared = Path(cfg["SHARED_DATA_DIR"])
        model = opts["model"] or validity_model_path()
        data = opts["data"] or str(shared / "cad")
        judged = opts["judged"] or str(shared / "generated-gold" / "cad-nli-dev-rules.jsonl")
        if opts["train"]:
            from django.core.management import call_command

            call_command("train_validity", out=model, data=data, seed=opts["seed"], stdout=self.stdout)
        if not (Path(model) / "validity.json").is_file():
            raise CommandError(f"no validity model in {model}: run train_validity (or bench_validity --train)")
        skipped: list[str] = []
        try:  # the judged set first, before any model loads: a file that cannot give the figures is refused
            rows = validity_bench.judged_rows(judged, problems=skipped)
        except (OSError, ValueError) as exc:  # FormatError is a ValueError: it names the file
            raise CommandError(f"judged set {judged}: cannot read it as pairs-jsonl: {exc}") from None
        for line in read_report(f"judged set {judged}", f"{len(rows)} candidates with counterfactual.valid", skipped):
            self.stderr.write(line)
        if {valid for _, _, valid, _ in rows} != {True, False}:
            raise CommandError(
                f"judged set {judged}: {len(rows)} candidates with counterfactual.valid, "
                f"{sum(v for _, _, v, _ in rows)} of them valid; the figures need valid and invalid candidates"
            )
        scorer = ValidityDiscriminator(model, encoder_path=cfg["MINILM_PATH"] or None, device=cfg["DEVICE"])
        try:
            r = validity_bench.bench(scorer, data_dir=data, judged_path=judged, seed=opts["seed"])
        except (OSError, ValueError) as exc:  # the CAD folder's human edits (FormatError is a ValueError)
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"judged set: {r['n']} candidates, {r['n_invalid']} invalid; AUC for invalid {r['auc']:.3f}\n"
            f"threshold {r['threshold']:.4f}: invalid removed {r['invalid_removed']:.1%}, "
            f"valid kept {r['valid_kept']:.1%}\n"
            f"human edits passed: CAD-NLI dev {r['human_pass']:.1%} (first {r['human_edits_dev']}), "
            f"held-out train {r['held_out_pass']:.1%}\n"
            f"best threshold for the judged set at 90 % valid kept: "
            f"{r['invalid_removed_at_valid_kept_90']:.1%} invalid removed"
        )
        for code, c in r["by_code"].items():
            self.stdout.write(
                f"  {code:<12} n={c['n']:<3} invalid removed {c['invalid_removed']}  valid kept {c['valid_kept']}"
            )
        if opts["json"]:
            self.stdout.write(json.dumps(r, sort_keys=True))
