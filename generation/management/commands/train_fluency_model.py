"""``python manage.py train_fluency_model [--out DIR] [--holdout K] [--distill N] [--tasks sentiment,nli]``

Trains the n-gram fluency scorer (``generation/ml/fluency.py``), the cheap stand-in for the
perplexity filter's SmolLM2 (issue 31.5), in two steps:

1. **Counts** a word trigram model on ``sentiment-public/train.jsonl`` and ``nli-public/train.jsonl``
   (under ``SHARED_DATA_DIR``) plus CAD's sentiment and NLI **train** files, every ``--holdout``-th
   public row left out (CAD dev and test are not read: they are what the fixture judges).
2. **Distils** (``--distill N``, N originals per task, 0 to skip): the default ``rules`` generator
   on N held-out public rows per task (sentiment: reviews of at least 400 characters), the cheap
   filters a run applies (similarity, dedup, artifacts), then the edited windows of what they
   keep scored by SmolLM2 (the run's perplexity LM, at ``COUNTERPART_PERPLEXITY_MAX_RATIO``) and by
   the n-gram model. Per task, the n-gram ratio at which its keep/drop decisions agree most
   often with SmolLM2's becomes that task's ``max_ratio`` in ``meta.json``, with the agreement
   and Cohen's kappa. And a classifier of the same decisions (``fluency.fit_classifier``: a logistic
   regression over ``fluency.FEATURES`` of the window, its probability cut chosen on out-of-fold
   predictions) goes to ``meta.json``'s ``classifier``, for ``--fluency ngram-classifier``.

Writes ``ngram.npz`` and ``meta.json`` to ``--out`` (default: the shipped model's folder,
``generation/ml/fluency_model/``, which this command made with its defaults). ``--distill-only``
distils an existing model again without counting.
"""

from __future__ import annotations

import csv
import json
import random
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

MIN_REVIEW_CHARS = 400


def _jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if line.strip():
                try:
                    yield json.loads(line)
                except json.JSONDecodeError as exc:
                    raise CommandError(f"{path}:{n}: not JSON ({exc.msg})") from None


def _tsv_texts(path: Path, columns: tuple[str, ...]) -> Iterator[str]:
    with open(path, encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh, delimiter="\t", quoting=csv.QUOTE_NONE):
            for c in columns:
                if row.get(c):
                    yield row[c]


class Command(BaseCommand):
    help = "Train the n-gram fluency scorer and distil SmolLM2's perplexity-filter decisions into its thresholds."
    requires_system_checks = ()

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--out", default="", help="model folder (default: the shipped model's)")
        parser.add_argument("--holdout", type=int, default=25, help="every K-th public row is left out (K >= 2)")
        parser.add_argument("--min-trigram", dest="min_trigram", type=int, default=2)
        parser.add_argument(
            "--distill", type=int, default=600, help="held-out originals per task to distil on (0: none)"
        )
        parser.add_argument("--tasks", default="sentiment,nli")
        parser.add_argument("--distill-only", dest="distill_only", action="store_true")
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument(
            "--classifier-from",
            dest="classifier_from",
            default="",
            help="fit only the classifiers, from the windows a --dump wrote (no generation, no LM), into the "
            "model at --out",
        )
        parser.add_argument(
            "--dump",
            default="",
            help="write every distilled window (task, code, texts, both ratios) to this JSON-lines file",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        from generation.ml import fluency

        if opts["holdout"] < 2:
            raise CommandError("--holdout must be >= 2")
        shared = Path(settings.COUNTERPART["SHARED_DATA_DIR"])
        sent, nli = shared / "sentiment-public" / "train.jsonl", shared / "nli-public" / "train.jsonl"
        for p in (sent, nli):
            if not p.is_file():
                raise CommandError(f"no training data at {p} (set COUNTERPART_SHARED_DATA)")
        out = Path(opts["out"] or fluency.MODEL_DIR)
        k = opts["holdout"]
        if opts["classifier_from"]:  # from a dump: the public rows are not read
            model = fluency.NgramLM.load(out)
            self._classifiers_from(model, Path(opts["classifier_from"]), opts["seed"])
            model.save(out)
            self.stdout.write(json.dumps({"model": str(out), "classifier": model.meta["classifier"]}, sort_keys=True))
            return
        sent_rows = list(_jsonl(sent))
        nli_rows = list(_jsonl(nli))
        t0 = time.perf_counter()
        if opts["distill_only"]:
            model = fluency.NgramLM.load(out)
        else:
            try:
                model = fluency.NgramLM.train(
                    self._corpus(shared, sent_rows, nli_rows, k), min_trigram=opts["min_trigram"]
                )
            except ValueError as exc:  # nothing to count, or a vocabulary too large for the keys
                raise CommandError(str(exc)) from exc
            model.meta["data"] = f"sentiment-public + nli-public (every {k}-th row held out) + CAD train"
            model.meta["holdout"] = k
            for key in ("max_ratio", "distilled", "classifier"):
                model.meta.pop(key, None)
            model.save(out)
            self.stdout.write(
                f"counted {model.meta['tokens']:,} tokens of {model.meta['documents']:,} documents in "
                f"{time.perf_counter() - t0:.0f} s: vocabulary {model.meta['vocab']:,}, "
                f"{model.meta['bigram_types']:,} bigram types, {model.meta['trigrams_stored']:,} trigrams stored"
            )
        if opts["distill"] > 0:
            tasks = [t.strip() for t in opts["tasks"].split(",") if t.strip()]
            held = {
                "sentiment": [
                    r for i, r in enumerate(sent_rows) if i % k == 0 and len(r.get("text", "")) >= MIN_REVIEW_CHARS
                ],
                "nli": [r for i, r in enumerate(nli_rows) if i % k == 0],
            }
            ratios: dict[str, float] = {}
            report: dict[str, Any] = {}
            every: tuple[list[float], list[bool]] = ([], [])
            dump: list[dict[str, Any]] = []
            classifiers: dict[str, Any] = {}
            for task in tasks:
                if task not in held:
                    raise CommandError(f"--tasks: sentiment and/or nli, not {task!r}")
                rows = held[task]
                random.Random(opts["seed"]).shuffle(rows)
                r, decisions = self._distill(model, task, rows[: opts["distill"]], opts["seed"], dump)
                every[0].extend(decisions[0])
                every[1].extend(decisions[1])
                ratios[task] = r["max_ratio"]
                report[task] = r
                classifiers[task] = self._classifier(
                    model, task, [d for d in dump if d["task"] == task], decisions[1], opts["seed"]
                )
                self.stdout.write(
                    f"{task}: {r['windows']} windows of {r['originals']} held-out originals; SmolLM2 drops "
                    f"{r['lm_drop_rate']:.1%}; n-gram ratio <= {r['max_ratio']:.3f} agrees on {r['agreement']:.1%} "
                    f"(kappa {r['kappa']:.2f}), drops {r['ngram_drop_rate']:.1%}; "
                    f"held out {r['heldout_agreement']:.1%}; {r['lm_ms_per_window']:.2f} ms a window by SmolLM2, "
                    f"{r['ngram_ms_per_window']:.3f} by the n-gram model"
                )
            # "*": for a task with no threshold of its own, the one that agrees best over all of them
            overall = fluency.best_threshold(*every)
            ratios["*"] = overall["max_ratio"]
            report["*"] = {"windows": len(every[0]), **overall}
            model.meta["max_ratio"] = ratios
            model.meta["distilled"] = report
            model.meta["classifier"] = classifiers
            if opts["dump"]:
                Path(opts["dump"]).parent.mkdir(parents=True, exist_ok=True)
                with open(opts["dump"], "w", encoding="utf-8") as fh:
                    for row in dump:
                        fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            model.save(out)
        self.stdout.write(json.dumps({"model": str(out), **model.meta}, sort_keys=True))

    def _classifier(
        self, model: Any, task: str, windows: list[dict[str, Any]], lm_keep: list[bool], seed: int
    ) -> dict[str, Any]:
        from generation.ml import fluency

        try:
            c = fluency.fit_classifier(
                np.array([fluency.window_features(model, d["before"], d["after"]) for d in windows]), lm_keep, seed=seed
            )
        except ValueError as exc:
            raise CommandError(f"{task}: {exc}") from exc
        self.stdout.write(
            f"{task}: classifier of the LM's decisions ({len(c['features'])} features of the window) at "
            f"P >= {c['threshold']:.2f}: held-out agreement {c['heldout_agreement']:.1%} "
            f"(kappa {c['heldout_kappa']:.2f}), drops {c['drop_rate']:.1%}"
        )
        return c

    def _classifiers_from(self, model: Any, path: Path, seed: int) -> None:
        if not path.is_file():
            raise CommandError(f"--classifier-from: no file {path} (write one with --dump)")
        max_ratio = float(settings.COUNTERPART["PERPLEXITY_MAX_RATIO"])
        by_task: dict[str, list[dict[str, Any]]] = {}
        for n, row in enumerate(_jsonl(path), 1):
            if not {"task", "before", "after", "lm_ratio"} <= row.keys():
                raise CommandError(f"{path}:{n}: needs task, before, after and lm_ratio")
            by_task.setdefault(str(row["task"]), []).append(row)
        model.meta["classifier"] = {
            task: self._classifier(model, task, rows, [float(r["lm_ratio"]) <= max_ratio for r in rows], seed)
            for task, rows in sorted(by_task.items())
        }

    def _corpus(self, shared: Path, sent_rows: list[dict[str, Any]], nli_rows: list[dict[str, Any]], k: int) -> Any:
        for i, r in enumerate(sent_rows):
            if i % k and r.get("text"):
                yield r["text"]
        seen: set[str] = set()
        for i, r in enumerate(nli_rows):
            if i % k:
                for key in ("premise", "hypothesis"):
                    t = r.get(key) or ""
                    if t and t not in seen:
                        seen.add(t)
                        yield t
        cad = shared / "cad"
        paired = cad / "sentiment" / "combined" / "paired" / "train_paired.tsv"
        if paired.is_file():
            yield from _tsv_texts(paired, ("Text",))
        for sub in ("original", "revised_premise", "revised_hypothesis"):
            path = cad / "NLI" / sub / "train.tsv"
            if path.is_file():
                for t in _tsv_texts(path, ("sentence1", "sentence2")):
                    if t not in seen:
                        seen.add(t)
                        yield t

    def _distill(
        self, model: Any, task: str, rows: list[dict[str, Any]], seed: int, dump: list[dict[str, Any]]
    ) -> tuple[dict[str, Any], tuple[list[float], list[bool]]]:
        """SmolLM2's and the n-gram model's decisions on the cheap-filtered candidates of ``rows``:
        the report, and (n-gram ratios, SmolLM2 keeps) for the overall threshold."""
        from generation.management.commands.bench_rules_validity import _generator
        from generation.ml import filters as ml_filters
        from generation.ml import fluency
        from generation.ml.base import Original
        from generation.services import run_quality, validity_fixture
        from generation.services.runs import perplexity_scorer
        from projects.formats.reading import TASK_FIELDS, TASK_LABELS
        from projects.ml.embeddings import Encoder

        cfg = settings.COUNTERPART
        labels = tuple(TASK_LABELS[task])
        originals = [
            Original(
                id=f"held-{task}-{i}",
                fields={f: str(r.get(f, "")) for f in TASK_FIELDS[task]},
                label=str(r.get("label", "")),
                labels=labels,
                task=task,
            )
            for i, r in enumerate(rows)
            if str(r.get("label", "")) in labels
        ]
        lm = perplexity_scorer(choice="lm")
        if lm is None:
            raise CommandError("no causal language model to distil (the bundled SmolLM2 is missing)")
        encoder = Encoder(model_path=cfg.get("MINILM_PATH") or None, device=cfg.get("DEVICE", "cpu"))
        pre, _ = validity_fixture.pooled_candidates(
            originals,
            generator=_generator(seed, task, "off"),
            filters=["similarity", "dedup", "artifacts"],
            band=ml_filters.band_for(task),
            encoder=encoder,
        )
        windows = [ml_filters.edit_windows(p.before, p.after, run_quality.PERPLEXITY_CONTEXT_WORDS) for p in pre]
        if not windows:
            raise CommandError(f"{task}: no candidates to distil on")
        a, b = [w[0] for w in windows], [w[1] for w in windows]
        max_ratio = float(cfg["PERPLEXITY_MAX_RATIO"])
        t = time.perf_counter()
        lm_res = ml_filters.perplexity(lm, a, b, max_ratio=max_ratio)
        lm_keep = [r.keep for r in lm_res]
        lm_s = time.perf_counter() - t
        scorer = fluency.NgramScorer(model)
        t = time.perf_counter()
        ng = ml_filters.perplexity(scorer, a, b, max_ratio=float("inf"))
        ng_s = time.perf_counter() - t
        scores = [r.score for r in ng]
        dump.extend(
            {
                "task": task,
                "code": p.cand.perturbation,
                "before": x,
                "after": y,
                "lm_ratio": lr.score,
                "ngram_ratio": nr,
            }
            for p, x, y, lr, nr in zip(pre, a, b, lm_res, scores, strict=True)
        )
        best = fluency.best_threshold(scores, lm_keep)
        ng_keep = [r.score <= best["max_ratio"] for r in ng]
        # the same cut chosen on the windows of half the originals, its agreement on the other half's
        half = [int(p.original.id.rsplit("-", 1)[1]) % 2 == 0 for p in pre]
        fit = fluency.best_threshold(
            [x for x, h in zip(scores, half, strict=True) if h], [y for y, h in zip(lm_keep, half, strict=True) if h]
        )
        rest = [(x <= fit["max_ratio"]) == y for x, y, h in zip(scores, lm_keep, half, strict=True) if not h]
        report = {
            "originals": len(originals),
            "windows": len(windows),
            "lm_max_ratio": max_ratio,
            "lm_drop_rate": round(1 - sum(lm_keep) / len(lm_keep), 4),
            "ngram_drop_rate": round(1 - sum(ng_keep) / len(ng_keep), 4),
            **best,
            "heldout_agreement": round(sum(rest) / len(rest), 4) if rest else None,
            "lm_ms_per_window": round(1000 * lm_s / len(windows), 3),
            "ngram_ms_per_window": round(1000 * ng_s / len(windows), 4),
        }
        return report, (scores, lm_keep)
