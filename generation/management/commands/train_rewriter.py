"""``python manage.py train_rewriter [--unit sentence|review] [--cad DIR] [--base PATH] [--out DIR]
[--start-from DIR] [--epochs E] [--minutes M] [--rank R] [--lr LR] [--batch-size B] [--limit N]
[--skip N] [--dev N] [--evaluate] [--seed S] [--threads T]``

Trains the sentence rewriter of sentiment's written review flip (``generation/ml/rewriter.py``):
a low-rank adapter on the bundled SmolLM2-135M-Instruct (or ``--base``, a local causal LM
folder), learnt from the sentences CAD's sentiment **train** revisions rewrote
(``--cad``, default ``SHARED_DATA_DIR/cad/sentiment/combined/paired``), each beside its
original. Writes ``adapter.pt`` and ``meta.json`` to ``--out`` (default: the shipped adapter's
folder, ``generation/ml/rewriter_model/``, which this command made with its defaults: one epoch,
about 40 minutes on two CPU cores) and prints the meta. ``--dev N`` then rewrites N sentences of
CAD's **dev** revisions and reports how many pass the flip's checks (an edit, read on the other
side by the opinion model) and how many are the annotator's own; ``--evaluate`` does only that,
for the adapter in ``--out``.

``--unit review`` trains the **whole-review writer** instead (``generation/ml/review_writer_model/``):
the same adapter learnt from whole CAD train reviews beside their revisions, starting from the
sentence rewriter's adapter (``--start-from``); ``--dev N`` then writes N CAD dev reviews and
reports the share ``rewritten.review_problem`` accepts, with the count of each problem.

``--limit N`` trains on the first N pairs of a seeded random order of all of them; ``--skip K``
leaves out its first K, the pairs an earlier ``--limit K`` run saw, so that an adapter can go on
learning (``--start-from`` it) from pairs it has not met.
"""

from __future__ import annotations

import json
import random
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = "Train the CAD sentence rewriter of the written sentiment review flip."
    requires_system_checks = ()

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--cad", default="", help="CAD sentiment paired folder (train_paired.tsv, dev_paired.tsv)")
        parser.add_argument("--base", default="", help="causal LM folder (default: the bundled SmolLM2)")
        parser.add_argument("--out", default="", help="adapter folder (default: the shipped adapter's)")
        parser.add_argument("--epochs", type=float, default=1.0)
        parser.add_argument("--minutes", type=float, default=0.0, help="stop after this many minutes (0: no limit)")
        parser.add_argument("--rank", type=int, default=8)
        parser.add_argument("--lr", type=float, default=5e-4)
        parser.add_argument(
            "--unit",
            choices=("sentence", "review"),
            default="sentence",
            help="sentence: the sentence rewriter; review: the whole-review writer (its own folder)",
        )
        parser.add_argument("--batch-size", type=int, default=0, help="rows a step (0: 16 sentences, 2 reviews)")
        parser.add_argument(
            "--start-from",
            default="",
            help="adapter folder to start from (default for --unit review: the sentence rewriter's, if there)",
        )
        parser.add_argument("--limit", type=int, default=0, help="train on at most N pairs (0: all)")
        parser.add_argument(
            "--skip",
            type=int,
            default=0,
            help="leave out the first K pairs of the seeded order (those an earlier --limit K run trained on)",
        )
        parser.add_argument(
            "--dev", type=int, default=200, help="CAD dev sentences to rewrite after training (0: none)"
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
        parser.add_argument(
            "--evaluate", action="store_true", help="no training: score the adapter in --out on CAD dev (--dev N)"
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        from generation.ml import rewriter
        from generation.ml.rules.tokens import sentence_spans
        from generation.services.runs import default_causal_lm_path

        shared = Path(settings.COUNTERPART["SHARED_DATA_DIR"])
        cad = Path(opts["cad"] or shared / "cad" / "sentiment" / "combined" / "paired")
        if not (cad / "train_paired.tsv").is_file():
            raise CommandError(f"no CAD train_paired.tsv in {cad} (pass --cad DIR)")
        base = opts["base"] or default_causal_lm_path()
        if not base or not Path(base).is_dir():
            raise CommandError(
                "no causal language model: install the bundled SmolLM2 (scripts/setup.sh) or pass --base"
            )
        if opts["rank"] < 1 or opts["epochs"] <= 0 or opts["lr"] <= 0:
            raise CommandError("--rank, --epochs and --lr must be > 0")
        if opts["limit"] < 0 or opts["skip"] < 0:
            raise CommandError("--limit and --skip must be >= 0")
        review = opts["unit"] == "review"
        out = Path(opts["out"] or (rewriter.REVIEW_MODEL_DIR if review else rewriter.MODEL_DIR))
        start = opts["start_from"] or (str(rewriter.MODEL_DIR) if review and rewriter.read_meta() else "")
        if start and rewriter.read_meta(start) is None:
            raise CommandError(f"no adapter in {start} to start from")
        if opts["evaluate"]:
            meta = rewriter.read_meta(out)
            if meta is None:
                raise CommandError(f"no adapter in {out} to evaluate")
            if not (cad / "dev_paired.tsv").is_file() or opts["dev"] < 1:
                raise CommandError(f"--evaluate needs {cad / 'dev_paired.tsv'} and --dev N >= 1")
            meta["cad_dev"] = self._dev(rewriter, base, out, cad / "dev_paired.tsv", opts["dev"], opts["seed"], meta)
            (out / rewriter.META_FILE).write_text(json.dumps(meta, indent=2) + "\n")
            self.stdout.write(json.dumps(meta))
            return
        try:
            if review:
                pairs = rewriter.cad_review_pairs(cad / "train_paired.tsv")
            else:
                pairs = rewriter.cad_sentence_pairs(cad / "train_paired.tsv", sentence_spans)
        except ValueError as exc:
            raise CommandError(str(exc)) from exc
        if opts["limit"] or opts["skip"]:
            total = len(pairs)
            pairs = rewriter.seeded_slice(pairs, opts["seed"], skip=opts["skip"], limit=opts["limit"])
            if not pairs:
                raise CommandError(f"--skip {opts['skip']} leaves none of the {total} pairs")
        self.stdout.write(f"{len(pairs)} CAD train {opts['unit']} pairs; base {base}; adapter -> {out}")
        meta = rewriter.train(
            pairs,
            base,
            out,
            rank=opts["rank"],
            alpha=2.0 * opts["rank"],
            lr=opts["lr"],
            batch_size=opts["batch_size"] or (2 if review else 16),
            epochs=opts["epochs"],
            unit=opts["unit"],
            init_dir=start or None,
            max_minutes=opts["minutes"],
            seed=opts["seed"],
            threads=opts["threads"],
            progress=lambda m: self.stdout.write(m),
        )
        if opts["dev"] and (cad / "dev_paired.tsv").is_file():
            meta["cad_dev"] = self._dev(rewriter, base, out, cad / "dev_paired.tsv", opts["dev"], opts["seed"], meta)
            (out / rewriter.META_FILE).write_text(json.dumps(meta, indent=2) + "\n")
        self.stdout.write(json.dumps(meta))

    def _dev(
        self, rewriter: Any, base: str, out: Path, dev: Path, n: int, seed: int, meta: dict[str, Any]
    ) -> dict[str, Any]:
        """Rewrite ``n`` sentences CAD's dev revisions rewrote (or ``n`` whole dev reviews, for a
        review writer): the share the flip's checks accept (an edit, on the other side; for
        reviews ``rewritten.review_problem``, with the count of each problem) and the share
        identical to the annotator's."""
        from collections import Counter

        from generation.ml import opinion
        from generation.ml.rules.rewritten import acceptable, review_problem
        from generation.ml.rules.tokens import sentence_spans

        review = meta.get("unit") == "review"
        pairs = rewriter.cad_review_pairs(dev) if review else rewriter.cad_sentence_pairs(dev, sentence_spans)
        pairs = random.Random(seed).sample(pairs, min(n, len(pairs)))
        model = opinion.load()
        if model is None:
            raise CommandError("no opinion model to read the rewrites (python manage.py train_opinion_model)")
        t0 = time.perf_counter()
        rw = rewriter.Rewriter(base, out)
        accepted = same = 0
        problems: Counter[str] = Counter()
        for source in ("positive", "negative"):
            group = [p for p in pairs if p.source == source]
            target = "negative" if source == "positive" else "positive"
            for p, new in zip(group, rw.rewrite([p.original for p in group], source, target), strict=True):
                if review:
                    problem = review_problem(p.original, new, model, source == "positive")
                    problems[problem or "accepted"] += 1
                    accepted += not problem
                else:
                    accepted += acceptable(p.original, new, model, source == "positive")
                same += new.strip() == p.revised.strip()
        unit = "reviews" if review else "sentences"
        out_meta: dict[str, Any] = {
            unit: len(pairs),
            "accepted": round(accepted / len(pairs), 4) if pairs else 0.0,
            "same_as_annotator": round(same / len(pairs), 4) if pairs else 0.0,
            "seconds": round(time.perf_counter() - t0, 1),
        }
        if review:
            out_meta["problems"] = dict(problems.most_common())
        return out_meta
