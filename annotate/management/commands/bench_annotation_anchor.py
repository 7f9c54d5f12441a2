"""python manage.py bench_annotation_anchor [--annotators 50] [--items 5000] [--seconds 60] [--ls-db sqlite,postgresql]
[--json]

An anchor for the annotation figures (issue 33): the same annotate-then-answer scenario (Locust,
N annotators, the same think time, token auth) against Label Studio and against this app, on the
same box in one run, so that the ratio means something whatever else loads the machine.

Label Studio runs from its OWN virtualenv (``--ls-venv``, default ``var/ls-venv``; install it
with ``python3.11 -m venv var/ls-venv && var/ls-venv/bin/pip install label-studio gunicorn``,
never into the project's environment) under gunicorn with the same workers and threads,
on 127.0.0.1, with its version check off. ``experiments/label_studio_anchor/`` holds its set-up
(``ls_setup.py``, run with Label Studio's Python) and its Locust user (``ls_locust.py``): ``GET
/api/projects/{id}/next/`` (its labelling stream) → think → ``POST /api/tasks/{id}/annotations/``.
Label Studio gets a fresh SQLite file under ``var/`` and/or a fresh PostgreSQL database named
``<this DATABASE_URL's name>_labelstudio`` on the same server. This app is measured with
``bench_annotation_load --scenario api`` twice: the same two requests per answer
(``--no-next-in-answer``) and one (``?next=1``). Prints each system's answers/s, latencies,
server CPU per answer and over-answered / duplicate counts (Label Studio's read from its tables),
then the ratios; ``--json``: one object on the last line.
"""

from __future__ import annotations

import io
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]  # no stubs installed (types-psutil)
from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import connection

from annotate.management.commands import bench_annotation
from annotate.management.commands.bench_annotation_load import CpuSampler, steady_stats

EXPERIMENT = Path(settings.BASE_DIR) / "experiments" / "label_studio_anchor"


class Command(BaseCommand):
    help = "Label Studio vs this app: the same annotate-then-answer Locust scenario on the same box in one run."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--annotators", type=int, default=50)
        parser.add_argument("--items", type=int, default=5000)
        parser.add_argument("--seconds", type=float, default=60.0)
        parser.add_argument("--spawn-rate", type=float, default=0.0, help="default N/10 per second")
        parser.add_argument("--think-min", type=float, default=0.5)
        parser.add_argument("--think-max", type=float, default=2.0)
        parser.add_argument("--k", type=int, default=3)
        parser.add_argument("--workers", type=int, default=4)
        parser.add_argument("--threads", type=int, default=8)
        parser.add_argument("--ls-venv", default=str(Path(settings.BASE_DIR) / "var" / "ls-venv"))
        parser.add_argument("--ls-db", default="sqlite,postgresql", help="Label Studio's databases, comma-separated")
        parser.add_argument("--cache-url", default=None, help="this app's DJANGO_CACHE_URL (see bench_annotation_load)")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        if not (0 < opts["annotators"] <= 5000 and 0 < opts["items"] <= 200_000 and 0 < opts["seconds"] <= 1800):
            raise CommandError("--annotators 1–5,000, --items 1–200,000, --seconds up to 1,800")
        if not 0 <= opts["think_min"] <= opts["think_max"]:
            raise CommandError("--think-min must be between 0 and --think-max")
        ls_python = Path(opts["ls_venv"], "bin", "python")
        ls_gunicorn = Path(opts["ls_venv"], "bin", "gunicorn")
        if not ls_python.exists() or not ls_gunicorn.exists():
            raise CommandError(
                f"no Label Studio virtualenv at {opts['ls_venv']}: python3.11 -m venv var/ls-venv && "
                "var/ls-venv/bin/pip install label-studio gunicorn"
            )
        dbs = [d.strip() for d in opts["ls_db"].split(",") if d.strip()]
        if not dbs or any(d not in ("sqlite", "postgresql") for d in dbs):
            raise CommandError("--ls-db: sqlite and/or postgresql")
        if "postgresql" in dbs and connection.vendor != "postgresql":
            raise CommandError("--ls-db postgresql needs DATABASE_URL on PostgreSQL (its server hosts Label Studio's)")
        spawn = opts["spawn_rate"] or max(1.0, opts["annotators"] / 10)
        ramp = opts["annotators"] / spawn
        if ramp >= opts["seconds"]:
            raise CommandError(f"the ramp-up ({ramp:.0f} s) leaves no steady window in --seconds {opts['seconds']}")
        rows: list[dict[str, Any]] = []
        load_at_start = os.getloadavg()
        for db in dbs:
            rows.append(self._label_studio(db=db, ls_python=ls_python, ls_gunicorn=ls_gunicorn, spawn=spawn, opts=opts))
        for next_in_answer in (False, True):
            rows.append(self._ours(next_in_answer=next_in_answer, spawn=spawn, opts=opts))
        result = self._summary(rows, opts, load_at_start)
        if opts["json"]:
            self.stdout.write(json.dumps(result))

    # --- Label Studio -----------------------------------------------------------------------

    def _ls_env(self, db: str, work: Path) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "DATABASE_", "CP_", "COUNTERPART_"))}
        env |= {
            "DJANGO_SETTINGS_MODULE": "core.settings.label_studio",
            "LABEL_STUDIO_BASE_DATA_DIR": str(work),
            "LATEST_VERSION_CHECK": "false",
            "COLLECT_ANALYTICS": "false",
            "DEBUG": "false",
            "LOG_LEVEL": "WARNING",
        }
        if db == "sqlite":
            return env | {"DJANGO_DB": "sqlite", "DATABASE_NAME": str(work / "label_studio.sqlite3")}
        params = connection.get_connection_params()
        name = f"{settings.DATABASES['default']['NAME']}_labelstudio"
        self._fresh_postgres(name)
        return env | {
            "DJANGO_DB": "default",
            "POSTGRE_NAME": name,
            "POSTGRE_USER": str(params.get("user") or "postgres"),
            "POSTGRE_PASSWORD": str(params.get("password") or ""),
            "POSTGRE_HOST": str(params.get("host") or "127.0.0.1"),
            "POSTGRE_PORT": str(params.get("port") or 5432),
        }

    def _fresh_postgres(self, name: str) -> None:
        import psycopg

        params = connection.get_connection_params()
        params = {k: v for k, v in params.items() if k in ("host", "port", "user", "password")}
        with psycopg.connect(dbname="postgres", autocommit=True, **params) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            conn.execute(f'CREATE DATABASE "{name}"')

    def _label_studio(
        self, *, db: str, ls_python: Path, ls_gunicorn: Path, spawn: float, opts: dict[str, Any]
    ) -> dict[str, Any]:
        out = self.stdout
        base = Path(settings.BASE_DIR) / "var" / "ls-anchor"
        base.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(prefix=f"{db}-", dir=base) as tmp:
            work = Path(tmp)
            env = self._ls_env(db, work)
            t0 = time.perf_counter()
            setup_cmd = [str(ls_python), str(EXPERIMENT / "ls_setup.py"), "--annotators", str(opts["annotators"])]
            setup_cmd += ["--tasks", str(opts["items"]), "--k", str(opts["k"])]
            setup = subprocess.run(
                setup_cmd,
                env=env,
                capture_output=True,
                text=True,
                timeout=1800,
            )
            if setup.returncode != 0:
                raise CommandError(f"Label Studio set-up failed: {setup.stderr[-2000:]}")
            made = json.loads(setup.stdout.strip().splitlines()[-1])
            out.write(
                f"Label Studio ({db}): {opts['items']} tasks, {opts['annotators']} annotators set up in "
                f"{time.perf_counter() - t0:.0f} s"
            )
            port = bench_annotation._free_port()
            label_studio_dir = next(Path(opts["ls_venv"]).glob("lib/python3*/site-packages/label_studio"))
            serve = [str(ls_gunicorn), "core.wsgi:application", "--chdir", str(label_studio_dir)]
            serve += ["-b", f"127.0.0.1:{port}", "-w", str(opts["workers"]), "--threads", str(opts["threads"])]
            serve += ["-k", "gthread", "--log-level", "warning", "--timeout", "120"]
            serve += ["--keep-alive", str(int(opts["think_max"]) + 5)]
            server = subprocess.Popen(
                serve,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.DEVNULL,
            )
            url = f"http://127.0.0.1:{port}"
            try:
                self._wait_up(server, url + "/health")
                tokens = work / "tokens"
                tokens.write_text("\n".join(made["tokens"]), encoding="utf-8")
                row = self._locust(
                    locustfile=EXPERIMENT / "ls_locust.py",
                    user_class="LabelStudioAnnotator",
                    url=url,
                    server=server,
                    env_extra={"CP_LOAD_TOKENS": str(tokens), "CP_LOAD_PROJECT": str(made["project"])},
                    spawn=spawn,
                    opts=opts,
                    work=work,
                )
            finally:
                bench_annotation.Command._stop_server(server)
            row |= {"system": "Label Studio", "database": db, "requests_per_answer_design": 2}
            row |= self._ls_check(db, env, made["project"], opts["k"])
        self._print_row(row)
        return row

    def _wait_up(self, proc: subprocess.Popen[Any], url: str) -> None:
        import httpx

        deadline = time.time() + 120
        while time.time() < deadline:
            if proc.poll() is not None:
                raise CommandError(f"Label Studio's gunicorn exited with {proc.returncode}")
            try:
                if httpx.get(url, timeout=2).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.5)
        raise CommandError("Label Studio did not come up within 120 s")

    def _ls_check(self, db: str, env: dict[str, str], project: int, k: int) -> dict[str, int]:
        """Over-answered tasks (more annotations than its overlap k) and duplicates (one user twice
        on a task), read from Label Studio's ``task_completion`` table."""
        over_sql = (
            "SELECT COUNT(*) FROM (SELECT task_id FROM task_completion WHERE project_id = %s "
            "GROUP BY task_id HAVING COUNT(*) > %s) t"
        )
        dup_sql = (
            "SELECT COUNT(*) FROM (SELECT task_id FROM task_completion WHERE project_id = %s "
            "GROUP BY task_id, completed_by_id HAVING COUNT(*) > 1) t"
        )
        if db == "sqlite":
            with sqlite3.connect(env["DATABASE_NAME"]) as conn:
                over = conn.execute(over_sql.replace("%s", "?"), [project, k]).fetchone()[0]
                dup = conn.execute(dup_sql.replace("%s", "?"), [project]).fetchone()[0]
                stored = conn.execute("SELECT COUNT(*) FROM task_completion WHERE project_id = ?", [project]).fetchone()
        else:
            import psycopg

            with psycopg.connect(
                dbname=env["POSTGRE_NAME"],
                host=env["POSTGRE_HOST"],
                port=int(env["POSTGRE_PORT"]),
                user=env["POSTGRE_USER"],
                password=env["POSTGRE_PASSWORD"] or None,
            ) as conn:
                over = conn.execute(over_sql, [project, k]).fetchone()[0]  # type: ignore[index]
                dup = conn.execute(dup_sql, [project]).fetchone()[0]  # type: ignore[index]
                stored = conn.execute(
                    "SELECT COUNT(*) FROM task_completion WHERE project_id = %s", [project]
                ).fetchone()
        return {"over_assigned": int(over), "duplicates": int(dup), "stored": int(stored[0]) if stored else 0}

    def _locust(
        self,
        *,
        locustfile: Path,
        user_class: str,
        url: str,
        server: subprocess.Popen[Any],
        env_extra: dict[str, str],
        spawn: float,
        opts: dict[str, Any],
        work: Path,
    ) -> dict[str, Any]:
        locust = Path(sys.executable).with_name("locust")
        dump = work / "requests.json"
        env = {
            **os.environ,
            **env_extra,
            "CP_LOAD_OUT": str(dump),
            "CP_LOAD_THINK_MIN": str(opts["think_min"]),
            "CP_LOAD_THINK_MAX": str(opts["think_max"]),
            "CP_LOAD_AGREEMENT": "0.9",
        }
        cmd = [str(locust), "-f", str(locustfile), user_class, "--headless", "--users", str(opts["annotators"])]
        cmd += ["--spawn-rate", str(spawn), "--run-time", f"{int(opts['seconds'])}s", "--host", url]
        cmd += ["--only-summary", "--loglevel", "WARNING"]
        load = os.getloadavg()
        t_start = time.time()
        run = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        sampler = CpuSampler(psutil.Process(run.pid), psutil.Process(server.pid))
        sampler.start()
        try:
            _, stderr = run.communicate(timeout=opts["seconds"] + 180)
        finally:
            sampler.stop.set()
            sampler.join()
            if run.poll() is None:
                run.kill()
        if not dump.exists():
            raise CommandError(f"Locust wrote no results (exit {run.returncode}): {stderr[-2000:]}")
        data = json.loads(dump.read_text(encoding="utf-8"))
        stats = steady_stats(data=data, t_start=t_start, ramp=opts["annotators"] / spawn, sampler=sampler)
        stats.pop("latencies")
        stats.pop("error_rows")
        return {**stats, "submitted": len(data["answered"]), "load_average_at_start": [round(x, 2) for x in load]}

    # --- this app ---------------------------------------------------------------------------

    def _ours(self, *, next_in_answer: bool, spawn: float, opts: dict[str, Any]) -> dict[str, Any]:
        args = ["--scenario", "api", "--annotators", str(opts["annotators"]), "--items", str(opts["items"])]
        args += ["--seconds", str(opts["seconds"]), "--spawn-rate", str(spawn), "--k", str(opts["k"])]
        args += ["--think-min", str(opts["think_min"]), "--think-max", str(opts["think_max"])]
        args += ["--workers", str(opts["workers"]), "--threads", str(opts["threads"]), "--json"]
        args += ["--next-in-answer" if next_in_answer else "--no-next-in-answer"]
        if opts["cache_url"] is not None:
            args += ["--cache-url", opts["cache_url"]]
        buf = io.StringIO()
        call_command("bench_annotation_load", *args, stdout=buf, stderr=io.StringIO())
        row: dict[str, Any] = json.loads(buf.getvalue().strip().splitlines()[-1])
        row |= {
            "system": "Counterpart" + (" ?next=1" if next_in_answer else ""),
            "requests_per_answer_design": 1 if next_in_answer else 2,
        }
        self._print_row(row)
        return row

    # --- report -----------------------------------------------------------------------------

    def _print_row(self, row: dict[str, Any]) -> None:
        self.stdout.write(
            f"{row['system']} ({row['database']}): {row['answers_per_s']} answers/s, {row['requests_per_s']} "
            f"requests/s; next p95 {row['next_item_p95_ms']} ms, answer p95 {row['answer_p95_ms']} ms, all p95 "
            f"{row['p95_ms']} ms; server CPU {row.get('server_cpu_ms_per_answer')} ms/answer; errors "
            f"{row['errors']}; over-answered {row['over_assigned']}, duplicates {row['duplicates']}; load average "
            f"{row['load_average_at_start'][0]} at start, {row['load_average_during'][0]}–"
            f"{row['load_average_during'][1]} during"
        )

    def _summary(self, rows: list[dict[str, Any]], opts: dict[str, Any], load: tuple[float, ...]) -> dict[str, Any]:
        keys = ["system", "database", "answers_per_s", "requests_per_s", "next_item_p95_ms", "answer_p95_ms"]
        keys += ["p50_ms", "p95_ms", "p99_ms", "server_cpu_ms_per_answer", "locust_cpu_share", "server_cpu_share"]
        keys += ["machine_cpu_share", "errors", "over_assigned", "duplicates", "load_average_at_start"]
        keys += ["load_average_during", "submitted"]
        table = [{k: r.get(k) for k in keys} for r in rows]
        ours = {r["system"]: r for r in rows if r["system"].startswith("Counterpart")}
        ratios = {}
        for r in rows:
            if r["system"] != "Label Studio" or not r["answers_per_s"]:
                continue
            for name, o in ours.items():
                ratios[f"{name} / Label Studio ({r['database']}) answers/s"] = round(
                    o["answers_per_s"] / r["answers_per_s"], 2
                )
                if o.get("server_cpu_ms_per_answer") and r.get("server_cpu_ms_per_answer"):
                    ratios[f"Label Studio ({r['database']}) / {name} server CPU per answer"] = round(
                        r["server_cpu_ms_per_answer"] / o["server_cpu_ms_per_answer"], 2
                    )
        for name, value in ratios.items():
            self.stdout.write(f"ratio {name}: {value}")
        return {
            "annotators": opts["annotators"],
            "items": opts["items"],
            "k": opts["k"],
            "think_s": [opts["think_min"], opts["think_max"]],
            "seconds": opts["seconds"],
            "gunicorn": f"-w {opts['workers']} --threads {opts['threads']}",
            "load_average_at_start": [round(x, 2) for x in load],
            "rows": table,
            "ratios": ratios,
        }
