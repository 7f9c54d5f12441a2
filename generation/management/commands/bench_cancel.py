"""``python manage.py bench_cancel [--generator llm-prompt] [--data PATH] [--format cad-sentiment]
[--originals N] [--after 20,40] [--json]``

How long a cancel takes to land on a running generation run: a throwaway project is filled with
``--originals`` originals of a data file, then for each delay of ``--after`` a run of
``--generator`` (default ``llm-prompt`` with the bundled SmolLM2 or the configured causal LM)
is executed in a thread of this process as a worker would, cancelled ``delay`` seconds after it
started running, and the time from the cancel request to the job's ``cancelled`` status is
measured. Prints one line per run and, with ``--json``, a JSON object as the last line. Uses the
configured database (the project is deleted at the end unless ``--keep``).
"""

from __future__ import annotations

import json
import statistics
import threading
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connections


class Command(BaseCommand):
    help = "Measure how long a cancel takes to land on a running generation run."

    def add_arguments(self, parser: CommandParser) -> None:
        default_data = Path(settings.COUNTERPART["SHARED_DATA_DIR"]) / "cad"
        parser.add_argument("--generator", default="llm-prompt")
        parser.add_argument("--data", default=str(default_data))
        parser.add_argument("--format", default="cad-sentiment")
        parser.add_argument("--split", default="dev")
        parser.add_argument("--originals", type=int, default=64)
        parser.add_argument("--after", default="20,40", help="seconds of running before each cancel")
        parser.add_argument("--keep", action="store_true", help="keep the throwaway project")
        parser.add_argument("--json", action="store_true")
        parser.add_argument(
            "--trace", type=float, default=0, help="dump every thread's stack this many s after each cancel"
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        from generation.management.commands.bench_generation import TASK_FOR_FORMAT, load_originals
        from generation.models import GenerationRun
        from generation.services.runs import run_cancel, run_create, run_execute
        from projects.models import Candidate, Example, Job, Label
        from projects.services.projects import project_create

        if not Path(opts["data"]).exists():
            raise CommandError(f"no data file {opts['data']}")
        task = TASK_FOR_FORMAT.get(opts["format"])
        if task is None:
            raise CommandError(f"--format: one of {', '.join(TASK_FOR_FORMAT)}")
        delays = [float(x) for x in str(opts["after"]).split(",") if x.strip()]
        originals = load_originals(opts["format"], opts["data"], task, opts["split"], opts["originals"])
        project = project_create(name=f"bench-cancel-{int(time.time())}", task=task)
        labels = {lab.name: lab for lab in Label.objects.filter(project=project)}
        Example.objects.bulk_create(
            [
                Example(project=project, external_id=o.id, fields=dict(o.fields), label=labels.get(o.label or ""))
                for o in originals
            ]
        )
        rows: list[dict[str, Any]] = []
        try:
            for delay in delays:
                run = run_create(project=project, generator=opts["generator"], options={"filters": ["dedup"]})
                errors: list[BaseException] = []

                def execute(run_id: int = run.pk, errors: list[BaseException] = errors) -> None:
                    try:
                        run_execute(run_id=run_id)
                    except BaseException as exc:  # noqa: BLE001 - reported below
                        errors.append(exc)
                    finally:
                        connections.close_all()

                worker = threading.Thread(target=execute, daemon=True)
                worker.start()
                started = self._wait(lambda r=run: Job.objects.get(pk=r.job_id).status != "queued", 600)
                time.sleep(delay)
                job = Job.objects.get(pk=run.job_id)
                if job.finished:
                    raise CommandError(f"run {run.pk} ended ({job.status}) before the cancel; use a shorter --after")
                done_before = job.done
                t0 = time.monotonic()
                run_cancel(run=GenerationRun.objects.select_related("job").get(pk=run.pk))
                if opts["trace"]:
                    import faulthandler
                    import sys

                    faulthandler.dump_traceback_later(opts["trace"], file=sys.stderr)
                self._wait(lambda r=run: Job.objects.get(pk=r.job_id).finished, 3600)
                latency = time.monotonic() - t0
                if opts["trace"]:
                    faulthandler.cancel_dump_traceback_later()
                worker.join(timeout=60)
                job = Job.objects.get(pk=run.job_id)
                if errors:
                    raise CommandError(f"run {run.pk} raised {errors[0]!r}")
                row = {
                    "run": run.pk,
                    "after_s": delay,
                    "started_s": round(started, 1),
                    "cancel_latency_s": round(latency, 2),
                    "status": job.status,
                    "originals_done_at_cancel": done_before,
                    "originals_done": job.done,
                }
                rows.append(row)
                self.stdout.write(
                    f"run {run.pk}: cancelled after {delay:.0f} s of running; landed in {latency:.2f} s "
                    f"({job.status}, {job.done} originals written)"
                )
        finally:
            if not opts["keep"]:
                Candidate.objects.filter(project=project).delete()
                Example.objects.filter(project=project).delete()  # examples protect their labels
                project.delete()
        latencies = [r["cancel_latency_s"] for r in rows]
        summary = {
            "generator": opts["generator"],
            "lm": settings.COUNTERPART.get("CAUSAL_LM_PATH") or "bundled SmolLM2-135M-Instruct",
            "device": settings.COUNTERPART.get("DEVICE"),
            "batch_size": settings.COUNTERPART.get("GENERATION_BATCH_SIZE"),
            "runs": rows,
            "max_latency_s": max(latencies) if latencies else None,
            "median_latency_s": statistics.median(latencies) if latencies else None,
        }
        self.stdout.write(
            f"cancel latency: median {summary['median_latency_s']} s, max {summary['max_latency_s']} s "
            f"over {len(rows)} runs"
        )
        if opts["json"]:
            self.stdout.write(json.dumps(summary))

    @staticmethod
    def _wait(cond: Any, timeout: float) -> float:
        t0 = time.monotonic()
        while not cond():
            if time.monotonic() - t0 > timeout:
                raise CommandError(f"gave up after {timeout:.0f} s")
            time.sleep(0.1)
        return time.monotonic() - t0
