"""``python manage.py bench_train_warm [--warm cad-nli:train] [--pairs 60] [--cache-dir DIR] [--json]``

"Train h" with a warm start, twice, on two scratch projects (each ``--pairs`` human-labelled
CAD dev pairs): the first with empty caches (cold: every warm-start pair through MiniLM), the
second in a fresh encoder with only the disk caches left (warm: the warm-start set's features
come from the cross-project cache). Prints per run the wall time, the time to the first step
report, the step-progress callbacks, the texts run through MiniLM and whether the warm-start
features were a cache hit. ``--cache-dir`` keeps the caches between invocations (default: a
new temporary directory, so the first run is cold). Everything is rolled back; model files go
to a temporary directory. Figures and the command: docs/labelling.md.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time
from collections.abc import Sequence
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction
from django.db.models import F

from labeling import services
from projects import states
from projects.aggregates import project_stats_recompute
from projects.models import Candidate, Project
from projects.services.imports import data_import
from projects.services.projects import project_create


class _Recorder:
    def __init__(self) -> None:
        self.t0 = time.perf_counter()
        self.first: float | None = None
        self.steps: list[tuple[float, str, int]] = []
        self.updates = 0

    def step(
        self, name: str, *, index: int, count: int, total: int = 0, unit: str = "", plan: Sequence[str] = ()
    ) -> None:
        now = time.perf_counter() - self.t0
        self.first = now if self.first is None else self.first
        self.steps.append((round(now, 2), name, total))

    def step_progress(self, done: int, total: int | None = None) -> None:
        self.updates += 1


class _Rollback(Exception):
    pass


class Command(BaseCommand):
    help = "Time 'Train h' with a warm start, cold and warm (cross-project feature cache)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--warm", default="cad-nli:train", help="FORMAT:SPLIT of a CAD warm-start set")
        parser.add_argument("--pairs", type=int, default=60, help="human-labelled pairs per scratch project")
        parser.add_argument("--mode", choices=["pc", "capc"], default="capc")
        parser.add_argument("--cache-dir", default="", help="embedding + feature cache (default: a new temp dir)")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        fmt, _, split = opts["warm"].partition(":")
        cad = os.path.join(settings.COUNTERPART["SHARED_DATA_DIR"], "cad")
        if fmt not in ("cad-nli", "cad-sentiment") or not os.path.isdir(cad):
            raise CommandError(f"need a CAD warm-start set (cad-nli:train, cad-sentiment:train) under {cad}")
        spec = f"{fmt}:{cad}:{split or 'train'}"
        task = "nli" if fmt == "cad-nli" else "sentiment"
        cache = opts["cache_dir"] or tempfile.mkdtemp(prefix="bench-train-warm-")
        models = tempfile.mkdtemp(prefix="bench-train-models-")
        settings.COUNTERPART = {**settings.COUNTERPART, "EMBEDDING_CACHE_DIR": cache, "MODEL_DIR": models}
        runs: list[dict[str, Any]] = []
        try:
            with transaction.atomic():
                for name in ("cold", "warm"):
                    self._fresh_process_caches()
                    project = self._project(f"bench-warm-{name}-{time.time_ns()}", task, fmt, cad, opts["pairs"])
                    encoder = services.embedder()
                    before = encoder.encoded_count
                    rec = _Recorder()
                    t0 = time.perf_counter()
                    try:
                        model = services.pairwise_train(
                            project=project, mode=opts["mode"], warm_start=spec, progress=rec
                        )
                    except ValidationError as exc:  # e.g. a split the CAD folder lacks: rolled back, said
                        raise CommandError("; ".join(exc.messages)) from None
                    runs.append(
                        {
                            "run": name,
                            "seconds": round(time.perf_counter() - t0, 1),
                            "first_progress_s": rec.first,
                            "step_updates": rec.updates,
                            "texts_encoded": services.embedder().encoded_count - before,
                            "warm_pairs": model.n_warm,
                            "warm_features_cached": bool(model.metrics.get("warm_features_cached")),
                            "steps": rec.steps,
                        }
                    )
                raise _Rollback
        except _Rollback:
            pass
        finally:
            shutil.rmtree(models, ignore_errors=True)
            if not opts["cache_dir"]:
                shutil.rmtree(cache, ignore_errors=True)
        for r in runs:
            self.stdout.write(
                f"{r['run']}: {r['seconds']} s; first progress after {r['first_progress_s']} s; "
                f"{r['step_updates']} progress updates; {r['texts_encoded']} texts through MiniLM; "
                f"{r['warm_pairs']} warm-start pairs, features cached: {r['warm_features_cached']}"
            )
            for at, step, total in r["steps"]:
                self.stdout.write(f"    {at:8.2f} s  {step}" + (f" ({total})" if total else ""))
        if opts["json"]:
            self.stdout.write(json.dumps({"cpus": os.cpu_count(), "load": os.getloadavg()[0], "runs": runs}))

    @staticmethod
    def _fresh_process_caches() -> None:
        """As a new worker process: no in-memory embeddings or encodings, only the disk caches."""
        from projects.ml import embeddings

        embeddings._shared.clear()
        services._WARM_CACHES.clear()

    @staticmethod
    def _project(name: str, task: str, fmt: str, cad: str, n: int) -> Project:
        project = project_create(name=name, task=task)
        data_import(project=project, format=fmt, paths=[cad], split="dev")
        ids = Candidate.objects.filter(project=project).order_by("id")
        labels = list(ids.values_list("gold_label", flat=True).distinct().order_by())
        per_label = n // len(labels)
        keep = [c for lab in labels for c in ids.filter(gold_label=lab).values_list("id", flat=True)[:per_label]]
        Candidate.objects.filter(project=project).exclude(id__in=keep).delete()
        Candidate.objects.filter(id__in=keep).update(
            state=states.HUMAN_LABELED, label=F("gold_label"), label_source="human"
        )
        project_stats_recompute(project_id=project.pk)  # written around the services: recount
        return project
