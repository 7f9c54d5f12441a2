"""python manage.py bench_annotation [--url URL] [--annotators N] [--items N] [--seconds S] [--k 3] [--json]

Serving load test of the annotation API (closed loop: next-item, then submit). Seeds a project
with N pooled items in the configured database (point DATABASE_URL at a scratch database),
starts gunicorn on a free port (unless --url names a server that shares this database), drives
N concurrent annotators over HTTP with token auth, then checks in the database that no item
has more than k annotations, that every 201 the clients saw is stored, and that there are no
duplicates. The last line with --json is the docs/formats.md §3 object.
"""

from __future__ import annotations

import json
import logging
import math
import os
import random
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError, connection, transaction
from django.db.models import Count, F
from django.utils import timezone

from annotate.models import Annotation, Item
from projects import permissions, states
from projects.models import Candidate, Example, Label, Project, ProjectMembership
from projects.services.projects import project_create


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _pct(sorted_ms: list[float], p: float) -> float | None:
    """The ``p``-th percentile of sorted latencies; None (JSON null) with no sample, never a
    0.0 that reads as a latency of 0 ms (e.g. next-item with ``?next=1`` answers, or no request)."""
    if not sorted_ms:
        return None
    idx = min(len(sorted_ms) - 1, max(0, math.ceil(p / 100 * len(sorted_ms)) - 1))
    return round(sorted_ms[idx], 2)


logging.getLogger("httpx").setLevel(logging.WARNING)
logging.getLogger("httpcore").setLevel(logging.WARNING)


class Command(BaseCommand):
    help = "Load-test next-item + submit with N concurrent annotators; verify no over-assignment or loss."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument(
            "--url", default="", help="target a running server (sharing this DATABASE_URL) instead of starting one"
        )
        parser.add_argument("--annotators", type=int, default=50)
        parser.add_argument("--items", type=int, default=100_000)
        parser.add_argument("--seconds", type=float, default=60.0)
        parser.add_argument("--k", type=int, default=3)
        parser.add_argument("--workers", type=int, default=4, help="gunicorn workers")
        parser.add_argument("--threads", type=int, default=8, help="gunicorn threads per worker")
        parser.add_argument(
            "--agreement", type=float, default=0.9, help="chance an annotator gives the item's 'true' label"
        )
        parser.add_argument("--keep", action="store_true", help="keep the bench project afterwards")
        parser.add_argument("--json", action="store_true")

    # --- seeding -------------------------------------------------------------------------

    def _series(self, n: int) -> str:
        """SQL producing rows ``i`` = 0 … n-1 (PostgreSQL generate_series, SQLite recursive CTE)."""
        if connection.vendor == "postgresql":
            return f"SELECT g AS i FROM generate_series(0, {int(n) - 1}) AS g"
        return f"WITH RECURSIVE s(i) AS (SELECT 0 UNION ALL SELECT i + 1 FROM s WHERE i < {int(n) - 1}) SELECT i FROM s"

    @staticmethod
    def _stop_server(proc: subprocess.Popen[Any] | None) -> None:
        """Stop the gunicorn this command started (if it started one); kill it after 20 s."""
        if proc is None:
            return
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()

    def _migrate_and_seed(self, *, n_items: int, k: int, n_annotators: int) -> tuple[Project, list[str]]:
        """Migrate the configured database, seed it (:meth:`_seed`) and say how long that took."""
        call_command("migrate", verbosity=0)
        t0 = time.perf_counter()
        seeded = self._seed(n_items=n_items, k=k, n_annotators=n_annotators)
        self.stdout.write(
            f"seeded {n_items} items, {n_annotators} annotators in {time.perf_counter() - t0:.1f} s "
            f"({connection.vendor})"
        )
        return seeded

    def _seed(self, *, n_items: int, k: int, n_annotators: int) -> tuple[Project, list[str]]:
        """N routed candidates and their items, written by the database itself: one template
        candidate is made through the ORM, then copied N times with INSERT … SELECT over a
        number series (seconds for 1,000,000 rows; the column list comes from the model, so
        new candidate columns are copied too)."""
        name = f"bench-{int(time.time() * 1000)}"
        project = project_create(name=name, task="nli", annotators_per_item=k, human_budget=1.0)
        labels = list(Label.objects.filter(project=project).order_by("position"))
        example = Example.objects.create(
            project=project,
            external_id="e0",
            fields={"premise": "A man is playing a guitar on stage.", "hypothesis": "A man is performing music."},
            label=labels[0],
        )
        template = Candidate.objects.create(
            project=project,
            external_id="template",
            example=example,
            fields={"premise": "A man is playing a guitar on stage.", "hypothesis": "A man is not performing music."},
            generator="bench",
            perturbation="negation",
            target_label=labels[2],
            state=states.ROUTED,
        )
        qn = connection.ops.quote_name
        cols = [f.column for f in Candidate._meta.concrete_fields if not f.primary_key]
        concat = "CONCAT('c', s.i)" if connection.vendor == "postgresql" else "('c' || s.i)"
        select_cols = [concat if c == "external_id" else f"t.{qn(c)}" for c in cols]
        rand = "(random() * 2147483647)::int" if connection.vendor == "postgresql" else "(abs(random()) %% 2147483647)"
        with transaction.atomic(), connection.cursor() as cur:
            cur.execute(
                f"INSERT INTO {qn(Candidate._meta.db_table)} ({', '.join(qn(c) for c in cols)}) "
                f"SELECT {', '.join(select_cols)} FROM ({self._series(n_items)}) s, {qn(Candidate._meta.db_table)} t "
                f"WHERE t.id = %s",
                [template.pk],
            )
            template.delete()
            cur.execute(
                "INSERT INTO annotate_item (project_id, candidate_id, kind, side, is_gold, gold_choice, k, taken, done,"
                " status, priority, result, result_agreement, created_at, completed_at)"
                f" SELECT c.project_id, c.id, 'task_label', '', %s, '', %s, 0, 0, 'open', {rand}, '', NULL, %s, NULL"
                f" FROM {qn(Candidate._meta.db_table)} c WHERE c.project_id = %s",
                [False, k, connection.ops.adapt_datetimefield_value(timezone.now()), project.pk],
            )
        User = get_user_model()
        from rest_framework.authtoken.models import Token

        group, _ = Group.objects.get_or_create(name=permissions.ANNOTATOR)
        users = User.objects.bulk_create([User(username=f"{name}-a{i}", password="!") for i in range(n_annotators)])
        users = list(User.objects.filter(username__startswith=f"{name}-a"))
        group.user_set.add(*users)
        now = timezone.now()
        ProjectMembership.objects.bulk_create(
            [ProjectMembership(project=project, user=u, qualified_at=now) for u in users]
        )
        tokens = Token.objects.bulk_create([Token(user=u, key=Token.generate_key()) for u in users])
        if connection.vendor == "postgresql":
            with connection.cursor() as cur:
                cur.execute("ANALYZE annotate_item; ANALYZE annotate_assignment; ANALYZE annotate_annotation;")
        return project, [t.key for t in tokens]

    # --- server --------------------------------------------------------------------------

    def _start_server(self, *, workers: int, threads: int, app_dir: str = "") -> tuple[subprocess.Popen[bytes], str]:
        """gunicorn on a free loopback port serving this checkout, or ``app_dir``'s (another
        checkout of the code, e.g. the commit before a change, on the same database)."""
        port = _free_port()
        env = {
            **os.environ,
            "DJANGO_DEBUG": "0",
            "DJANGO_LOG_LEVEL": "WARNING",
            "DJANGO_SETTINGS_MODULE": os.environ.get("DJANGO_SETTINGS_MODULE", "config.settings.local"),
        }
        gunicorn = Path(sys.executable).with_name("gunicorn")
        cmd = [
            str(gunicorn) if gunicorn.exists() else "gunicorn",
            "config.wsgi:application",
            "-b",
            f"127.0.0.1:{port}",
            "-w",
            str(workers),
            "--threads",
            str(threads),
            "-k",
            "gthread",
            "--log-level",
            "warning",
            "--timeout",
            "120",
            "--chdir",
            str(Path(app_dir).resolve()) if app_dir else str(settings.BASE_DIR),
        ]
        proc = subprocess.Popen(cmd, cwd=str(settings.BASE_DIR), env=env)
        url = f"http://127.0.0.1:{port}"
        import httpx

        deadline = time.time() + 60
        while time.time() < deadline:
            if proc.poll() is not None:
                raise CommandError(f"gunicorn exited with {proc.returncode}")
            try:
                r = httpx.get(url + "/accounts/login/", timeout=2)
                if r.status_code == 200:
                    return proc, url
            except httpx.HTTPError:
                pass
            time.sleep(0.2)
        proc.terminate()
        raise CommandError("gunicorn did not come up within 60 s")

    # --- load ----------------------------------------------------------------------------

    def _drive(
        self, *, url: str, project_id: int, tokens: list[str], seconds: float, agreement: float
    ) -> dict[str, Any]:
        lat_next: list[float] = []
        lat_submit: list[float] = []
        seen: list[tuple[int, int]] = []  # (assignment, annotation id) of every 201
        errors: list[str] = []
        lock = threading.Lock()
        start_evt = threading.Event()
        ready = threading.Semaphore(0)
        deadline_box: list[float] = [0.0]

        from urllib.parse import urlsplit

        parts = urlsplit(url)
        host, port = parts.hostname or "127.0.0.1", parts.port or 80

        def annotator(token: str, seed: int) -> None:
            # A keep-alive connection per annotator with the standard library's http.client:
            # the client shares the machine with the server, so it should cost little CPU.
            import http.client

            rng = random.Random(seed)
            my_next: list[float] = []
            my_sub: list[float] = []
            my_seen: list[tuple[int, int]] = []
            my_err: list[str] = []
            headers = {"Authorization": f"Token {token}", "Content-Type": "application/json"}
            conn = http.client.HTTPConnection(host, port, timeout=60)
            released = False

            def call(path: str, body: bytes = b"", method: str = "POST") -> tuple[int, bytes]:
                nonlocal conn
                for attempt in range(2):
                    try:
                        conn.request(method, path, body=body, headers=headers)
                        resp = conn.getresponse()
                        return resp.status, resp.read()
                    except (http.client.HTTPException, OSError):
                        conn.close()
                        conn = http.client.HTTPConnection(host, port, timeout=60)
                        if attempt:
                            raise
                raise AssertionError("unreachable")

            try:
                for _ in range(3):  # warm-up (untimed): connection open, workers have loaded the app
                    call("/api/v1/projects/", method="GET")
                released = True
                ready.release()
                start_evt.wait()
                while time.perf_counter() < deadline_box[0]:
                    t0 = time.perf_counter()
                    status, raw = call(f"/api/v1/projects/{project_id}/next-item/")
                    my_next.append((time.perf_counter() - t0) * 1000)
                    if status == 204:
                        break
                    if status != 200:
                        my_err.append(f"next-item {status}: {raw[:200]!r}")
                        continue
                    body = json.loads(raw)
                    labels = [c for c in body["choices"] if c != "unclear"]
                    truth = sorted(labels)[body["item"]["id"] % len(labels)]
                    choice = truth if rng.random() < agreement else rng.choice(body["choices"])
                    payload = json.dumps({"choice": choice, "duration_ms": rng.randint(800, 6000)}).encode()
                    t1 = time.perf_counter()
                    status, raw = call(f"/api/v1/assignments/{body['assignment']}/annotation/", payload)
                    my_sub.append((time.perf_counter() - t1) * 1000)
                    if status == 201:
                        my_seen.append((body["assignment"], json.loads(raw)["id"]))
                    else:
                        my_err.append(f"submit {status}: {raw[:200]!r}")
            except Exception as exc:  # noqa: BLE001 - reported with the results
                my_err.append(f"client error: {exc!r}")
                if not released:
                    ready.release()
            finally:
                conn.close()
            with lock:
                lat_next.extend(my_next)
                lat_submit.extend(my_sub)
                seen.extend(my_seen)
                errors.extend(my_err)

        threads = [threading.Thread(target=annotator, args=(t, i), daemon=True) for i, t in enumerate(tokens)]
        for t in threads:
            t.start()
        for _ in threads:
            ready.acquire()
        t_start = time.perf_counter()
        deadline_box[0] = t_start + seconds
        start_evt.set()
        for t in threads:
            t.join()
        elapsed = time.perf_counter() - t_start
        return {"next": lat_next, "submit": lat_submit, "seen": seen, "errors": errors, "elapsed": elapsed}

    # --- verification --------------------------------------------------------------------

    def _verify(self, project: Project, seen: list[tuple[int, int]]) -> dict[str, int]:
        k_max = max(int(settings.COUNTERPART["MAX_ANNOTATORS_PER_ITEM"]), project.annotators_per_item)
        per_item = Annotation.objects.filter(project=project).values("item_id").annotate(n=Count("id"))
        over = per_item.filter(n__gt=F("item__k")).count() + per_item.filter(n__gt=k_max).count()
        dups = (
            Annotation.objects.filter(project=project)
            .values("item_id", "annotator_id")
            .annotate(n=Count("id"))
            .filter(n__gt=1)
            .count()
        )
        stored = set(Annotation.objects.filter(project=project).values_list("assignment_id", "id"))
        lost = sum(1 for pair in seen if pair not in stored)
        inconsistent = (
            Item.objects.filter(project=project)
            .exclude(done=0)
            .annotate(n=Count("annotations"))
            .exclude(n=F("done"))
            .count()
        )
        extended = Item.objects.filter(project=project, k__gt=project.annotators_per_item).count()
        complete = Item.objects.filter(project=project, status="complete").count()
        labelled = Candidate.objects.filter(project=project, state=states.HUMAN_LABELED).count()
        return {
            "over_assigned": over,
            "duplicates": dups,
            "lost": lost,
            "counter_mismatch": inconsistent,
            "stored": len(stored),
            "extended": extended,
            "complete": complete,
            "human_labeled": labelled,
        }

    def handle(self, *args: Any, **opts: Any) -> None:
        n_ann, n_items, k = opts["annotators"], opts["items"], opts["k"]
        if n_ann < 1 or n_items < 1 or k < 1 or opts["seconds"] <= 0:
            raise CommandError("--annotators, --items, --k and --seconds must be positive")
        out = self.stdout
        project, tokens = self._migrate_and_seed(n_items=n_items, k=k, n_annotators=n_ann)
        proc = None
        try:
            if opts["url"]:
                url = opts["url"].rstrip("/")
            else:
                proc, url = self._start_server(workers=opts["workers"], threads=opts["threads"])
                out.write(f"gunicorn -w {opts['workers']} --threads {opts['threads']} on {url}")
            res = self._drive(
                url=url, project_id=project.pk, tokens=tokens, seconds=opts["seconds"], agreement=opts["agreement"]
            )
        finally:
            self._stop_server(proc)
        check = self._verify(project, res["seen"])
        both = sorted(res["next"] + res["submit"])
        nxt, sub = sorted(res["next"]), sorted(res["submit"])
        submitted = len(res["seen"])
        result = {
            "annotators": n_ann,
            "items": n_items,
            "k": k,
            "database": connection.vendor,
            "seconds": round(res["elapsed"], 2),
            "submitted": submitted,
            "throughput_per_s": round(submitted / res["elapsed"], 1) if res["elapsed"] else 0.0,
            "p50_ms": _pct(both, 50),
            "p95_ms": _pct(both, 95),
            "p99_ms": _pct(both, 99),
            "over_assigned": check["over_assigned"],
            "lost": check["lost"],
            "duplicates": check["duplicates"],
            # extra keys (compatible extension)
            "next_item_p50_ms": _pct(nxt, 50),
            "next_item_p95_ms": _pct(nxt, 95),
            "next_item_p99_ms": _pct(nxt, 99),
            "submit_p50_ms": _pct(sub, 50),
            "submit_p95_ms": _pct(sub, 95),
            "submit_p99_ms": _pct(sub, 99),
            "errors": len(res["errors"]),
            "counter_mismatch": check["counter_mismatch"],
            "items_complete": check["complete"],
            "items_extended": check["extended"],
        }
        for e in res["errors"][:5]:
            self.stderr.write(e)
        out.write(
            f"{submitted} annotations in {result['seconds']} s = {result['throughput_per_s']}/s; "
            f"latency (next-item and submit requests) p50 {result['p50_ms']} ms, p95 {result['p95_ms']} ms, "
            f"p99 {result['p99_ms']} ms; "
            f"next-item p95 {result['next_item_p95_ms']} ms, submit p95 {result['submit_p95_ms']} ms"
        )
        out.write(
            f"verified: over-assigned {check['over_assigned']}, lost {check['lost']}, "
            f"duplicates {check['duplicates']}, "
            f"counter mismatches {check['counter_mismatch']}, errors {len(res['errors'])}; "
            f"{check['complete']} items complete, {check['extended']} got extra annotations"
        )
        if not opts["keep"]:
            t1 = time.perf_counter()
            try:
                self._cleanup(project)
                out.write(f"removed the bench project in {time.perf_counter() - t1:.1f} s")
            except DatabaseError as exc:
                self.stderr.write(f"could not remove the bench project {project.name!r}: {exc}")
        if not both and res["errors"]:  # nothing was measured: a failure, not a run of 0 annotations/s
            raise CommandError(
                f"no request to {url} succeeded ({res['errors'][0]}): is the server running there, on this database?"
            )
        if opts["json"]:
            out.write(json.dumps(result))

    def _cleanup(self, project: Project) -> None:
        """Remove the bench project with plain DELETEs (the ORM's cascade would load every
        row into memory first)."""
        User = get_user_model()
        prefix = f"{project.name}-a"
        with transaction.atomic(), connection.cursor() as cur:
            for table in ["annotate_annotation", "annotate_assignment", "annotate_item"]:
                cur.execute(f"DELETE FROM {table} WHERE project_id = %s", [project.pk])
            cur.execute(f"DELETE FROM {Candidate._meta.db_table} WHERE project_id = %s", [project.pk])
            Example.objects.filter(project=project).delete()
            project.delete()
            User.objects.filter(username__startswith=prefix).delete()
