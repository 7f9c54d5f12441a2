"""python manage.py bench_annotation_table [--annotators 1000] [--baseline 3e25f8e] [--sweep 25,50,100,200,400]
[--anchor-annotators 20] [--json]

The annotation load table of docs/annotation.md in one command (issue 33), every row measured in
the same run on the same box, so that ratios hold whatever else loads it:

1. ``bench_annotation_load`` with N annotators, browser and API scenarios, against the code of
   ``--baseline`` (a git revision, exported once to ``var/base-<rev>`` with ``git archive``; its API
   scenario sends two requests per answer, as that code has no ``?next=1``) and against this
   checkout (the API with ``?next=1``);
2. for both scenarios on this checkout, the largest N of ``--sweep`` whose p95 over all
   requests stays under ``--target-ms`` (it stops at the first N that misses), with answers/s there;
3. ``bench_annotation_anchor``: Label Studio (its own virtualenv) against this app, closed loop
   (no think time) with ``--anchor-annotators`` users: the capacity ratio.

Prints a Markdown table (the load average beside every row) and with ``--json`` one object on
the last line. Point DATABASE_URL at a scratch PostgreSQL database; it loads the whole machine
for tens of minutes.
"""

from __future__ import annotations

import io
import json
import subprocess
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError


class Command(BaseCommand):
    help = "The annotation load table: before/after, the largest N under the p95 target, and Label Studio."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--annotators", type=int, default=1000)
        parser.add_argument("--items", type=int, default=20_000)
        parser.add_argument("--seconds", type=float, default=90.0)
        parser.add_argument("--baseline", default="3e25f8e", help="git revision of the 'before' code ('' to skip)")
        parser.add_argument(
            "--sweep", default="25,50,100,200,400,700,1000", help="N values for the largest N ('' to skip)"
        )
        parser.add_argument("--sweep-seconds", type=float, default=45.0)
        parser.add_argument("--target-ms", type=float, default=50.0)
        parser.add_argument("--anchor-annotators", type=int, default=20, help="0 to skip the Label Studio anchor")
        parser.add_argument("--anchor-seconds", type=float, default=45.0)
        parser.add_argument("--ls-db", default="sqlite,postgresql")
        parser.add_argument(
            "--cache-url", default=None, help="the servers' DJANGO_CACHE_URL (e.g. redis://127.0.0.1:6379/13)"
        )
        parser.add_argument("--workers", type=int, default=4)
        parser.add_argument("--threads", type=int, default=8)
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        try:
            sweep = [int(x) for x in opts["sweep"].split(",") if x.strip()]
        except ValueError as exc:
            raise CommandError(f"--sweep: comma-separated numbers ({exc})") from exc
        if any(n < 1 for n in sweep) or opts["annotators"] < 1:
            raise CommandError("annotator counts must be positive")
        baseline = self._baseline(opts["baseline"]) if opts["baseline"] else ""
        rows: list[dict[str, Any]] = []
        for scenario in ("browser", "api"):
            if baseline:
                rows.append(self._load(scenario, opts["annotators"], opts["seconds"], opts, app_dir=baseline))
            rows.append(self._load(scenario, opts["annotators"], opts["seconds"], opts))
        largest: dict[str, Any] = {}
        for scenario in ("browser", "api") if sweep else ():
            best = None
            for n in sweep:
                row = self._load(scenario, n, opts["sweep_seconds"], opts, label="sweep")
                rows.append(row)
                if row["p95_ms"] is None or row["p95_ms"] >= opts["target_ms"] or row["errors"]:
                    break
                best = row
            largest[scenario] = (
                {"annotators": best["annotators"], "answers_per_s": best["answers_per_s"], "p95_ms": best["p95_ms"]}
                if best
                else None
            )
        anchor = None
        if opts["anchor_annotators"]:
            buf = io.StringIO()
            anchor_args = ["--annotators", str(opts["anchor_annotators"]), "--items", "5000", "--think-min", "0"]
            anchor_args += ["--think-max", "0", "--seconds", str(opts["anchor_seconds"]), "--ls-db", opts["ls_db"]]
            anchor_args += ["--workers", str(opts["workers"]), "--threads", str(opts["threads"]), "--json"]
            if opts["cache_url"] is not None:
                anchor_args += ["--cache-url", opts["cache_url"]]
            call_command("bench_annotation_anchor", *anchor_args, stdout=buf)
            anchor = json.loads(buf.getvalue().strip().splitlines()[-1])
        self._table(rows, largest, anchor, opts)
        if opts["json"]:
            self.stdout.write(json.dumps({"rows": rows, "largest_n_under_target": largest, "anchor": anchor}))

    def _baseline(self, rev: str) -> str:
        if not rev.replace("-", "").replace("_", "").isalnum():
            raise CommandError(f"--baseline {rev!r}: a revision name or hash")
        target = Path(settings.BASE_DIR) / "var" / f"base-{rev}"
        if not (target / "manage.py").exists():
            target.mkdir(parents=True, exist_ok=True)
            archive = subprocess.run(
                ["git", "archive", rev], cwd=settings.BASE_DIR, capture_output=True, timeout=120, check=False
            )
            if archive.returncode != 0:
                raise CommandError(f"git archive {rev} failed: {archive.stderr.decode()[-500:]}")
            subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True, timeout=120)
        return str(target)

    def _load(
        self, scenario: str, n: int, seconds: float, opts: dict[str, Any], *, app_dir: str = "", label: str = ""
    ) -> dict[str, Any]:
        spawn = max(1.0, n / 10)
        args = ["--scenario", scenario, "--annotators", str(n), "--items", str(opts["items"])]
        args += ["--seconds", str(seconds), "--spawn-rate", str(spawn), "--json"]
        args += ["--workers", str(opts["workers"]), "--threads", str(opts["threads"])]
        if app_dir:
            args += ["--app-dir", app_dir, "--no-next-in-answer"]
        if opts["cache_url"] is not None:
            args += ["--cache-url", opts["cache_url"]]
        buf = io.StringIO()
        call_command("bench_annotation_load", *args, stdout=buf, stderr=io.StringIO())
        row: dict[str, Any] = json.loads(buf.getvalue().strip().splitlines()[-1])
        row["code"] = f"baseline {opts['baseline']}" if app_dir else "this checkout"
        row["label"] = label
        self.stdout.write(self._line(row))
        return row

    @staticmethod
    def _line(r: dict[str, Any]) -> str:
        load = f"{r['load_average_at_start'][0]} / {r['load_average_during'][0]}–{r['load_average_during'][1]}"
        return (
            f"| {r['scenario']} | {r['code']}{' (sweep)' if r.get('label') else ''} | {r['annotators']} | "
            f"{r['answers_per_s']} | {r['requests_per_answer']} | {r['p50_ms']} / {r['p95_ms']} / {r['p99_ms']} | "
            f"{r['answer_p95_ms']} | {r.get('server_cpu_ms_per_answer')} | {r.get('locust_cpu_share', 0):.0%} | "
            f"{r['errors']} | {r['over_assigned']} / {r['lost']} / {r['duplicates']} / {r['starved']} | {load} |"
        )

    def _table(
        self, rows: list[dict[str, Any]], largest: dict[str, Any], anchor: dict[str, Any] | None, opts: dict[str, Any]
    ) -> None:
        out = self.stdout
        out.write("")
        out.write(
            "| scenario | code | annotators | answers/s | requests per answer | all requests p50 / p95 / p99 ms | "
            "answer p95 ms | server CPU ms per answer | Locust CPU | errors | over / lost / dup / starved | "
            "load average start / during |"
        )
        out.write("|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            out.write(self._line(r))
        for scenario, best in largest.items():
            if best is None:
                out.write(f"largest N with p95 < {opts['target_ms']:g} ms ({scenario}): none of the sweep")
            else:
                out.write(
                    f"largest N with p95 < {opts['target_ms']:g} ms ({scenario}): {best['annotators']} "
                    f"({best['answers_per_s']} answers/s, p95 {best['p95_ms']} ms)"
                )
        if anchor:
            out.write("")
            out.write(
                "| system | database | answers/s | all p95 ms | server CPU ms per answer | over / dup | load average |"
            )
            out.write("|---|---|---|---|---|---|---|")
            for r in anchor["rows"]:
                out.write(
                    f"| {r['system']} | {r['database']} | {r['answers_per_s']} | {r['p95_ms']} | "
                    f"{r['server_cpu_ms_per_answer']} | {r['over_assigned']} / {r['duplicates']} | "
                    f"{r['load_average_at_start'][0]} / {r['load_average_during'][0]}–{r['load_average_during'][1]} |"
                )
            for name, value in anchor["ratios"].items():
                out.write(f"ratio {name}: {value}")
