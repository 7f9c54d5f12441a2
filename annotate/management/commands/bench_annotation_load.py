"""python manage.py bench_annotation_load [--annotators 1000] [--items 20000] [--seconds 90] [--json]

The annotation load test with a real load tool (issue 25.2): seeds a project with N routed
items and N annotator accounts with API tokens in the configured database (point DATABASE_URL
at a scratch PostgreSQL database), starts gunicorn on 127.0.0.1 (unless --url), and runs Locust
headless (``annotate/locustfile.py``) with N simulated annotators, each doing next-item → think
2–10 s → answer. Prints answers/s, p50/p95/p99 of next-item and answer (measured by Locust, over
the steady window after the ramp-up), errors, and the fairness invariants read from the
database at the end: over-answered, lost, duplicate, starved. Seeding, server and verification
are ``bench_annotation``'s (the closed-loop throughput test).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import CommandError
from django.db import DatabaseError, connection
from django.db.models import F

from annotate import selectors
from annotate.management.commands import bench_annotation
from annotate.models import Assignment, Item
from projects.models import Project

LOCUSTFILE = Path(__file__).resolve().parents[2] / "locustfile.py"


def starved_annotators(project: Project) -> tuple[int, int]:
    """(annotators who may still answer an unfinished item, of those: how many the real pick
    would give nothing). The oracle is written independently of the pick: an open real item
    with a free slot and no assignment of theirs; members who are paused or flagged do not count."""
    User = get_user_model()
    users = User.objects.filter(memberships__project=project, memberships__flagged=False, is_active=True).values_list(
        "pk", flat=True
    )
    open_items = Item.objects.filter(project=project, is_gold=False, status="open", taken__lt=F("k"))
    eligible = starved = 0
    for uid in users:
        had = Assignment.objects.filter(project=project, annotator_id=uid).values("item_id")
        if open_items.exclude(pk__in=had).exists():
            eligible += 1
            if selectors.next_item_for(project_id=project.pk, user_id=uid) is None:
                starved += 1
    return eligible, starved


def _pct(values: list[float], p: float) -> float:
    return bench_annotation._pct(sorted(values), p)


class Command(bench_annotation.Command):
    help = "Load-test the annotation API with Locust: N annotators thinking 2–10 s; check no one starved."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--url", default="", help="target a running server (sharing this DATABASE_URL)")
        parser.add_argument("--annotators", type=int, default=1000)
        parser.add_argument("--items", type=int, default=20_000)
        parser.add_argument("--seconds", type=float, default=90.0, help="Locust run time, ramp-up included")
        parser.add_argument("--spawn-rate", type=float, default=0.0, help="users started per second (default N/10)")
        parser.add_argument("--think-min", type=float, default=2.0)
        parser.add_argument("--think-max", type=float, default=10.0)
        parser.add_argument("--k", type=int, default=3)
        parser.add_argument("--workers", type=int, default=4, help="gunicorn workers")
        parser.add_argument("--threads", type=int, default=8, help="gunicorn threads per worker")
        parser.add_argument("--agreement", type=float, default=0.9)
        parser.add_argument("--keep", action="store_true", help="keep the bench project afterwards")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        n_ann, n_items, k = opts["annotators"], opts["items"], opts["k"]
        if n_ann < 1 or n_items < 1 or k < 1 or opts["seconds"] <= 0:
            raise CommandError("--annotators, --items, --k and --seconds must be positive")
        if not 0 <= opts["think_min"] <= opts["think_max"]:
            raise CommandError("--think-min must be between 0 and --think-max")
        locust = Path(sys.executable).with_name("locust")
        if not locust.exists():
            raise CommandError(f"Locust is not installed ({locust}): pip install -r requirements-dev.txt")
        spawn = opts["spawn_rate"] or max(1.0, n_ann / 10)
        ramp = n_ann / spawn
        if ramp >= opts["seconds"]:
            raise CommandError(f"the ramp-up ({ramp:.0f} s) leaves no steady window in --seconds {opts['seconds']}")
        out = self.stdout
        project, tokens = self._migrate_and_seed(n_items=n_items, k=k, n_annotators=n_ann)
        proc = None
        with tempfile.TemporaryDirectory(prefix="cp-load-") as tmp:
            token_file, dump = Path(tmp, "tokens"), Path(tmp, "requests.json")
            token_file.write_text("\n".join(tokens), encoding="utf-8")
            try:
                if opts["url"]:
                    url = opts["url"].rstrip("/")
                else:
                    # Annotators think 2–10 s between requests on a kept-alive connection:
                    # gunicorn's default keep-alive (2 s) would close it under them, and a
                    # request racing that close gets no response.
                    os.environ.setdefault("GUNICORN_CMD_ARGS", f"--keep-alive {int(opts['think_max']) + 5}")
                    proc, url = self._start_server(workers=opts["workers"], threads=opts["threads"])
                    out.write(f"gunicorn -w {opts['workers']} --threads {opts['threads']} on {url}")
                env = {
                    **os.environ,
                    "CP_LOAD_TOKENS": str(token_file),
                    "CP_LOAD_PROJECT": str(project.pk),
                    "CP_LOAD_OUT": str(dump),
                    "CP_LOAD_THINK_MIN": str(opts["think_min"]),
                    "CP_LOAD_THINK_MAX": str(opts["think_max"]),
                    "CP_LOAD_AGREEMENT": str(opts["agreement"]),
                }
                cmd = [
                    str(locust),
                    "-f",
                    str(LOCUSTFILE),
                    "--headless",
                    "--users",
                    str(n_ann),
                    "--spawn-rate",
                    str(spawn),
                    "--run-time",
                    f"{int(opts['seconds'])}s",
                    "--host",
                    url,
                    "--only-summary",
                    "--loglevel",
                    "WARNING",
                ]
                think = f"think {opts['think_min']:g}–{opts['think_max']:g} s"
                out.write(f"locust --headless -u {n_ann} -r {spawn:g} -t {int(opts['seconds'])}s ({think})")
                t_start = time.time()
                run = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=opts["seconds"] + 180)
                if not dump.exists():
                    raise CommandError(f"Locust wrote no results (exit {run.returncode}): {run.stderr[-2000:]}")
                data = json.loads(dump.read_text(encoding="utf-8"))
            finally:
                self._stop_server(proc)
        result = self._report(project=project, data=data, t_start=t_start, ramp=ramp, opts=opts)
        if not opts["keep"]:
            try:
                self._cleanup(project)
            except DatabaseError as exc:
                self.stderr.write(f"could not remove the bench project {project.name!r}: {exc}")
        if opts["json"]:
            out.write(json.dumps(result))

    def _report(
        self, *, project: Project, data: dict[str, Any], t_start: float, ramp: float, opts: Any
    ) -> dict[str, Any]:
        # the ramp-up counts from Locust's first request (its start-up is not part of it)
        steady_from = min((r[1] for r in data["requests"]), default=t_start) + ramp
        steady = [r for r in data["requests"] if r[1] >= steady_from]
        window = max((r[1] + r[3] / 1000 for r in steady), default=steady_from) - steady_from
        lat = {
            name: [r[2] for r in steady if r[0] == name and r[3] in (200, 201, 204)] for name in ("next-item", "answer")
        }
        answers = sum(1 for r in steady if r[0] == "answer" and r[3] == 201)
        errors = [r for r in data["requests"] if r[3] not in (200, 201, 204)]
        no_item = sum(1 for r in data["requests"] if r[0] == "next-item" and r[3] == 204)
        check = self._verify(project, [tuple(x) for x in data["answered"]])
        eligible, starved = starved_annotators(project)
        result: dict[str, Any] = {
            "annotators": opts["annotators"],
            "items": opts["items"],
            "k": opts["k"],
            "database": connection.vendor,
            "seconds": round(window, 1),
            "users_started": data["users"],
            "think_s": [opts["think_min"], opts["think_max"]],
            "gunicorn": f"-w {opts['workers']} --threads {opts['threads']}" if not opts["url"] else opts["url"],
            "submitted": len(data["answered"]),
            "answers_per_s": round(answers / window, 1) if window > 0 else 0.0,
            "requests_per_s": round(len(steady) / window, 1) if window > 0 else 0.0,
            **{
                f"{n.replace('-', '_')}_p{p}_ms": _pct(lat[n], p) for n in ("next-item", "answer") for p in (50, 95, 99)
            },
            "errors": len(errors),
            "next_item_204": no_item,
            "over_assigned": check["over_assigned"],
            "lost": check["lost"],
            "duplicates": check["duplicates"],
            "counter_mismatch": check["counter_mismatch"],
            "starved": starved,
            "eligible_with_items_left": eligible,
            "items_complete": check["complete"],
            "items_extended": check["extended"],
            "lease_seconds": int(settings.COUNTERPART["LEASE_SECONDS"]),
        }
        out = self.stdout
        out.write(
            f"steady window {result['seconds']} s after a {ramp:.0f} s ramp: {answers} answers = "
            f"{result['answers_per_s']}/s ({result['requests_per_s']} requests/s)"
        )
        for n in ("next-item", "answer"):
            key = n.replace("-", "_")
            out.write(
                f"  {n}: n={len(lat[n])} p50 {result[f'{key}_p50_ms']} ms, p95 {result[f'{key}_p95_ms']} ms, "
                f"p99 {result[f'{key}_p99_ms']} ms"
            )
        for e in errors[:5]:
            self.stderr.write(f"error: {e}")
        out.write(
            f"errors {len(errors)}; next-item 204 {no_item}; over-answered {check['over_assigned']}, "
            f"lost {check['lost']}, duplicates {check['duplicates']}, counter mismatches {check['counter_mismatch']}, "
            f"starved {starved} (of {eligible} annotators with items left)"
        )
        return result
