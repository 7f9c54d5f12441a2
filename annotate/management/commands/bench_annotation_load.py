"""python manage.py bench_annotation_load [--scenario api|browser] [--annotators 1000] [--items 20000]
[--seconds 90] [--json]

The annotation load test with a real load tool (issues 25.2 and 33): seeds a project with N
routed items and N annotator accounts (API tokens; signed-in sessions for the browser) in the
configured database (point DATABASE_URL at a scratch PostgreSQL database), starts gunicorn on
127.0.0.1 (unless --url; ``--app-dir`` serves another checkout of the code, e.g. the commit
before a change, against the same database), and runs Locust headless (``annotate/locustfile.py``)
with N simulated annotators:

* ``--scenario api``: next-item → think 2–10 s → answer, token auth; the answer carries the next
  lease (``?next=1``) unless ``--no-next-in-answer``;
* ``--scenario browser``: the annotator page's own requests (session, CSRF, the page, the htmx
  answer whose response is the next item, heartbeats at the page's interval, skips and undos).

Prints answers/s, p50/p95/p99 per request kind and over all requests (measured by Locust, over
the steady window after the ramp-up), errors, the CPU seconds used by Locust, by gunicorn and
by the whole machine (psutil) with the load average, and the fairness invariants read from the
database at the end: over-answered, lost, duplicate, starved. Seeding, server and verification
are ``bench_annotation``'s (the closed-loop throughput test).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
from importlib import import_module
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]  # no stubs installed (types-psutil)
from django.conf import settings
from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
from django.contrib.auth.hashers import make_password
from django.core.management.base import CommandError
from django.db import DatabaseError, connection
from django.db.models import F

from annotate import selectors
from annotate.management.commands import bench_annotation
from annotate.models import Annotation, Assignment, Item
from projects.models import Project

LOCUSTFILE = Path(__file__).resolve().parents[2] / "locustfile.py"
USER_CLASS = {"api": "ApiAnnotator", "browser": "BrowserAnnotator"}
# what an annotator in the browser does besides answering (--skip-rate, --undo-rate, --pause-rate)
SKIP_RATE, UNDO_RATE, PAUSE_RATE = 0.03, 0.02, 0.02
PAUSE_MAX_S = 120  # the longest pause on an item (annotate/locustfile.py, PAUSE)


def tree_cpu(proc: psutil.Process | None) -> float:
    """CPU seconds (user + system) used so far by ``proc`` and its live children; 0 without one."""
    if proc is None:
        return 0.0
    total = 0.0
    for p in [proc, *proc.children(recursive=True)]:
        try:
            t = p.cpu_times()
            total += t.user + t.system + getattr(t, "children_user", 0.0) + getattr(t, "children_system", 0.0)
        except psutil.Error:  # exited between the listing and the read
            continue
    return total


def machine_busy() -> float:
    """CPU seconds the whole machine has spent busy (all cores, every process)."""
    t = psutil.cpu_times()
    return float(sum(t) - t.idle - getattr(t, "iowait", 0.0))


class CpuSampler(threading.Thread):
    """Samples (time, Locust CPU, server CPU, machine busy CPU, 1-min load average) every second
    while the run lasts, so that the steady window's share can be read off afterwards."""

    def __init__(self, locust: psutil.Process, server: psutil.Process | None) -> None:
        super().__init__(daemon=True)
        self.locust, self.server = locust, server
        self.samples: list[tuple[float, float, float, float, float]] = []
        self.stop = threading.Event()

    def sample(self) -> None:
        self.samples.append(
            (time.time(), tree_cpu(self.locust), tree_cpu(self.server), machine_busy(), os.getloadavg()[0])
        )

    def run(self) -> None:
        while not self.stop.is_set():
            self.sample()
            self.stop.wait(1.0)

    def window(self, start: float, end: float) -> dict[str, float]:
        """CPU used between the samples nearest ``start`` and ``end``."""
        if len(self.samples) < 2:
            return {}
        a = min(self.samples, key=lambda s: abs(s[0] - start))
        b = min(self.samples, key=lambda s: abs(s[0] - end))
        if b[0] <= a[0]:
            a, b = self.samples[0], self.samples[-1]
        span = b[0] - a[0]
        loads = [s[4] for s in self.samples if a[0] <= s[0] <= b[0]]
        return {
            "span_s": span,
            "locust_cpu_s": b[1] - a[1],
            "server_cpu_s": b[2] - a[2],
            "machine_cpu_s": b[3] - a[3],
            "load_min": min(loads),
            "load_max": max(loads),
        }


def steady_stats(*, data: dict[str, Any], t_start: float, ramp: float, sampler: CpuSampler) -> dict[str, Any]:
    """Figures of a Locust dump over the steady window (from the first request + ``ramp`` to
    the last response): answers/s, requests/s, p50/p95/p99 per request name and over all
    requests, errors by kind, and the CPU shares of Locust, the server and the machine.
    Also returns ``latencies`` (ms per name) and ``error_rows`` for the caller to print."""
    steady_from = min((r[1] for r in data["requests"]), default=t_start) + ramp
    steady = [r for r in data["requests"] if r[1] >= steady_from]
    window_end = max((r[1] + r[2] / 1000 for r in steady), default=steady_from)
    window = window_end - steady_from

    def ok(r: list[Any]) -> bool:
        # a log-in answers with a redirect; Label Studio's "no task left" is a 404 (not an error);
        # a heartbeat's 286 is htmx's "stop polling" (the lease ended): a browser stops there
        return r[3] in (200, 201, 204) or (r[0] == "login" and r[3] == 302) or (r[0] == "heartbeat" and r[3] == 286)

    names = sorted({r[0] for r in steady} | {"next-item", "answer"})
    lat = {name: [r[2] for r in steady if r[0] == name and ok(r)] for name in names}
    every = [r[2] for r in steady if ok(r)]
    answers = sum(1 for r in steady if r[0] == "answer" and ok(r))
    answers -= sum(1 for r in steady if r[0] == "undo" and ok(r))  # an undone answer is answered again
    errors = [r for r in data["requests"] if not ok(r) and not (r[0] == "next-item" and r[3] == 404)]
    error_kinds: dict[str, int] = {}
    for r in errors:
        error_kinds[f"{r[0]} {r[3]}"] = error_kinds.get(f"{r[0]} {r[3]}", 0) + 1
    cpu = sampler.window(steady_from, window_end)
    cores = psutil.cpu_count() or 1
    span = cpu.get("span_s", 0.0)
    stats: dict[str, Any] = {
        "seconds": round(window, 1),
        "answers_per_s": round(answers / window, 1) if window > 0 else 0.0,
        "requests_per_s": round(len(steady) / window, 1) if window > 0 else 0.0,
        "requests_per_answer": round(len(steady) / answers, 2) if answers else 0.0,
        "p50_ms": _pct(every, 50),
        "p95_ms": _pct(every, 95),
        "p99_ms": _pct(every, 99),
        **{f"{n.replace('-', '_')}_p{p}_ms": _pct(lat[n], p) for n in names for p in (50, 95, 99)},
        "counts": {n: len(lat[n]) for n in names},
        "errors": len(errors),
        "error_kinds": error_kinds,
        "cores": cores,
        "load_average_during": [round(cpu.get("load_min", 0.0), 2), round(cpu.get("load_max", 0.0), 2)],
        "latencies": lat,
        "error_rows": errors,
    }
    if span > 0:
        stats |= {
            "locust_cpu_share": round(cpu["locust_cpu_s"] / (span * cores), 3),
            "server_cpu_share": round(cpu["server_cpu_s"] / (span * cores), 3),
            "machine_cpu_share": round(cpu["machine_cpu_s"] / (span * cores), 3),
            "server_cpu_ms_per_answer": round(1000 * cpu["server_cpu_s"] / (answers / window * span), 2)
            if answers and window > 0
            else None,
            "server_cpu_ms_per_request": round(1000 * cpu["server_cpu_s"] / (len(steady) / window * span), 2)
            if steady and window > 0
            else None,
        }
    return stats


def machine_paths_out(text: str) -> str:
    """A flame graph without this machine's paths: the virtualenv (its real location, and as
    linked from the checkout) as ``.venv``, the checkout as ``.`` (py-spy writes the process
    command lines and file names as it finds them)."""
    venv = Path(sys.executable).resolve().parents[1]
    for path, short in ((venv, ".venv"), (Path(settings.BASE_DIR) / ".venv", ".venv"), (settings.BASE_DIR, ".")):
        for variant in {str(path), str(Path(path).resolve())}:
            text = text.replace(variant + "/", short + "/").replace(variant, short)
    # labels py-spy cut short ("process 1:&quot;/wo..") before the paths could be recognised
    return re.sub(r"&quot;/[^<&]*\.\.</text>", "&quot;..</text>", text)


def signed_in_sessions(users: list[Any]) -> list[str]:
    """A signed-in session for each user, as ``django.contrib.auth.login`` leaves it (the
    browser scenario starts signed in; ``--login`` makes every user log in over HTTP instead)."""
    store_class = import_module(settings.SESSION_ENGINE).SessionStore
    backend = settings.AUTHENTICATION_BACKENDS[-1]
    keys = []
    for user in users:
        store = store_class()
        store[SESSION_KEY] = user._meta.pk.value_to_string(user)
        store[BACKEND_SESSION_KEY] = backend
        store[HASH_SESSION_KEY] = user.get_session_auth_hash()
        store.save(must_create=True)
        keys.append(f"{user.get_username()} {store.session_key}")
    return keys


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


def _pct(values: list[float], p: float) -> float | None:
    return bench_annotation._pct(sorted(values), p)


class Command(bench_annotation.Command):
    help = (
        "Load-test the annotator's flow with Locust (API or browser): N annotators thinking 2–10 s; "
        "latencies, CPU shares and the fairness invariants."
    )

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--scenario", choices=sorted(USER_CLASS), default="api")
        parser.add_argument("--url", default="", help="target a running server (sharing this DATABASE_URL)")
        parser.add_argument(
            "--app-dir", default="", help="serve the code of another checkout (e.g. the commit before a change)"
        )
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
        parser.add_argument(
            "--next-in-answer",
            action=argparse.BooleanOptionalAction,
            default=True,
            help="api: ask for the next lease with the answer (?next=1; one request per answer)",
        )
        parser.add_argument("--skip-rate", type=float, default=SKIP_RATE, help="browser: share of items skipped")
        parser.add_argument("--undo-rate", type=float, default=UNDO_RATE, help="browser: share of answers undone")
        parser.add_argument(
            "--pause-rate", type=float, default=PAUSE_RATE, help="browser: share of items left on screen 30–120 s"
        )
        parser.add_argument(
            "--pause-seconds",
            default="30,120",
            help="browser: MIN,MAX seconds an item is left on screen when paused (short runs: a few seconds)",
        )
        parser.add_argument("--login", action="store_true", help="browser: log in with the password form")
        parser.add_argument(
            "--cache-url",
            default=None,
            help="the server's DJANGO_CACHE_URL (redis://…: shared cache and cached sessions; '' for none); "
            "default: this environment's",
        )
        parser.add_argument(
            "--profile",
            default="",
            help="write a py-spy flame graph (SVG) of gunicorn's workers over the steady window to this path",
        )
        parser.add_argument("--keep", action="store_true", help="keep the bench project afterwards")
        parser.add_argument("--json", action="store_true")

    def _check_options(self, opts: dict[str, Any]) -> None:
        if opts["annotators"] < 1 or opts["items"] < 1 or opts["k"] < 1 or opts["seconds"] <= 0:
            raise CommandError("--annotators, --items, --k and --seconds must be positive")
        if not 0 <= opts["think_min"] <= opts["think_max"]:
            raise CommandError("--think-min must be between 0 and --think-max")
        for rate in ("skip_rate", "undo_rate", "pause_rate", "agreement"):
            if not 0 <= opts[rate] <= 1:
                raise CommandError(f"--{rate.replace('_', '-')} must be between 0 and 1")
        try:
            lo, hi = (float(x) for x in str(opts["pause_seconds"]).split(","))
        except ValueError:
            raise CommandError("--pause-seconds must be MIN,MAX seconds, e.g. 30,120") from None
        if not 0 <= lo <= hi:
            raise CommandError("--pause-seconds: MIN must be between 0 and MAX")
        if opts["app_dir"] and not Path(opts["app_dir"], "manage.py").exists():
            raise CommandError(f"--app-dir {opts['app_dir']}: no manage.py there")
        if opts["profile"] and (opts["url"] or not Path(sys.executable).with_name("py-spy").exists()):
            raise CommandError("--profile needs py-spy (requirements-dev.txt) and a server this command starts")

    def handle(self, *args: Any, **opts: Any) -> None:
        self._check_options(opts)
        n_ann, n_items, k = opts["annotators"], opts["items"], opts["k"]
        locust = Path(sys.executable).with_name("locust")
        if not locust.exists():
            raise CommandError(f"Locust is not installed ({locust}): pip install -r requirements-dev.txt")
        spawn = opts["spawn_rate"] or max(1.0, n_ann / 10)
        ramp = n_ann / spawn
        if ramp >= opts["seconds"]:
            raise CommandError(f"the ramp-up ({ramp:.0f} s) leaves no steady window in --seconds {opts['seconds']}")
        out = self.stdout
        load_at_start = os.getloadavg()
        project, tokens = self._migrate_and_seed(n_items=n_items, k=k, n_annotators=n_ann)
        env = self._scenario_env(project=project, opts=opts)
        proc = None
        with tempfile.TemporaryDirectory(prefix="cp-load-") as tmp:
            dump = Path(tmp, "requests.json")
            Path(tmp, "tokens").write_text("\n".join(tokens), encoding="utf-8")
            env |= {"CP_LOAD_TOKENS": str(Path(tmp, "tokens")), "CP_LOAD_OUT": str(dump)}
            if opts["scenario"] == "browser":
                password = "load-test-password"
                users = self._bench_users(project)
                if opts["login"]:
                    get_user_model().objects.filter(pk__in=[u.pk for u in users]).update(
                        password=make_password(password)  # one hash for all: logging in is what is timed
                    )
                Path(tmp, "sessions").write_text("\n".join(signed_in_sessions(users)), encoding="utf-8")
                env |= {"CP_LOAD_SESSIONS": str(Path(tmp, "sessions")), "CP_LOAD_PASSWORD": password}
            try:
                if opts["url"]:
                    url = opts["url"].rstrip("/")
                else:
                    # Annotators think 2–10 s between requests on a kept-alive connection (in the
                    # browser up to PAUSE_MAX_S more on a paused item): gunicorn's default
                    # keep-alive (2 s) would close it under them, and a request racing that
                    # close gets no response.
                    idle = opts["think_max"] + (PAUSE_MAX_S if opts["scenario"] == "browser" else 0)
                    os.environ["GUNICORN_CMD_ARGS"] = f"--keep-alive {int(idle) + 5}"
                    if opts["cache_url"] is not None:
                        os.environ["DJANGO_CACHE_URL"] = opts["cache_url"]
                    proc, url = self._start_server(
                        workers=opts["workers"], threads=opts["threads"], app_dir=opts["app_dir"]
                    )
                    where = f" from {opts['app_dir']}" if opts["app_dir"] else ""
                    out.write(f"gunicorn -w {opts['workers']} --threads {opts['threads']} on {url}{where}")
                cmd = [str(locust), "-f", str(LOCUSTFILE), USER_CLASS[opts["scenario"]], "--headless"]
                cmd += ["--users", str(n_ann), "--spawn-rate", str(spawn), "--run-time", f"{int(opts['seconds'])}s"]
                cmd += ["--host", url, "--only-summary", "--loglevel", "WARNING"]
                think = f"think {opts['think_min']:g}–{opts['think_max']:g} s"
                out.write(
                    f"locust {USER_CLASS[opts['scenario']]} --headless -u {n_ann} -r {spawn:g} "
                    f"-t {int(opts['seconds'])}s ({think})"
                )
                t_start = time.time()
                run = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                sampler = CpuSampler(psutil.Process(run.pid), psutil.Process(proc.pid) if proc else None)
                sampler.start()
                profiler = None
                if opts["profile"] and proc is not None:
                    profiler = threading.Thread(
                        target=self._profile,
                        args=(proc.pid, opts["profile"], ramp + 3, opts["seconds"] - ramp - 6),
                        daemon=True,
                    )
                    profiler.start()
                try:
                    _, stderr = run.communicate(timeout=opts["seconds"] + 180)
                finally:
                    sampler.stop.set()
                    sampler.join()
                    if run.poll() is None:
                        run.kill()
                    if profiler is not None:
                        profiler.join(timeout=60)
                if not dump.exists():
                    raise CommandError(f"Locust wrote no results (exit {run.returncode}): {stderr[-2000:]}")
                data = json.loads(dump.read_text(encoding="utf-8"))
            finally:
                self._stop_server(proc)
        result = self._report(
            project=project, data=data, t_start=t_start, ramp=ramp, opts=opts, sampler=sampler, load=load_at_start
        )
        if not opts["keep"]:
            try:
                self._cleanup(project)
            except DatabaseError as exc:
                self.stderr.write(f"could not remove the bench project {project.name!r}: {exc}")
        sent = data["requests"]
        if sent and all(r[3] == 0 for r in sent):  # Locust's status 0: no HTTP answer at all, nothing measured
            raise CommandError(
                f"no request reached {url} ({len(sent)} connection failures): is the server running there, "
                "on this database?"
            )
        if opts["json"]:
            out.write(json.dumps(result))

    def _profile(self, pid: int, svg: str, delay: float, seconds: float) -> None:
        """py-spy on gunicorn and its workers for ``seconds`` after ``delay``: on-CPU samples
        only (``--idle`` off), the processes not paused (``--nonblocking``)."""
        time.sleep(delay)
        Path(svg).parent.mkdir(parents=True, exist_ok=True)
        spy = Path(sys.executable).with_name("py-spy")
        cmd = [str(spy), "record", "--pid", str(pid), "--subprocesses", "--nonblocking", "--rate", "50"]
        cmd += ["--duration", str(max(1, int(seconds))), "--format", "flamegraph", "--output", svg]
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=seconds + 60)
        if done.returncode != 0:
            self.stderr.write(f"py-spy failed ({done.returncode}): {done.stderr[-500:]}")
        else:
            Path(svg).write_text(machine_paths_out(Path(svg).read_text(encoding="utf-8")), encoding="utf-8")
            self.stdout.write(f"flame graph of the steady window: {svg}")

    def _scenario_env(self, *, project: Project, opts: dict[str, Any]) -> dict[str, str]:
        return {
            **os.environ,
            "CP_LOAD_PROJECT": str(project.pk),
            "CP_LOAD_THINK_MIN": str(opts["think_min"]),
            "CP_LOAD_THINK_MAX": str(opts["think_max"]),
            "CP_LOAD_AGREEMENT": str(opts["agreement"]),
            "CP_LOAD_NEXT_IN_ANSWER": "1" if opts["next_in_answer"] else "0",
            "CP_LOAD_SKIP_RATE": str(opts["skip_rate"]),
            "CP_LOAD_UNDO_RATE": str(opts["undo_rate"]),
            "CP_LOAD_PAUSE_RATE": str(opts["pause_rate"]),
            "CP_LOAD_PAUSE_SECONDS": str(opts["pause_seconds"]),
            "CP_LOAD_LOGIN": "1" if opts["login"] else "0",
        }

    def _bench_users(self, project: Project) -> list[Any]:
        return list(get_user_model().objects.filter(username__startswith=f"{project.name}-a").order_by("pk"))

    def _report(
        self,
        *,
        project: Project,
        data: dict[str, Any],
        t_start: float,
        ramp: float,
        opts: Any,
        sampler: CpuSampler,
        load: tuple[float, float, float],
    ) -> dict[str, Any]:
        stats = steady_stats(data=data, t_start=t_start, ramp=ramp, sampler=sampler)
        answered = [tuple(x) for x in data["answered"]]
        check = self._verify(project, [a for a in answered if a[1] is not None])
        stored = set(Annotation.objects.filter(project=project).values_list("assignment_id", flat=True))
        lost_browser = [a[0] for a in answered if a[1] is None and a[0] not in stored]
        check["lost"] += len(lost_browser)
        no_item = sum(1 for r in data["requests"] if r[0] == "next-item" and r[3] == 204)
        eligible, starved = starved_annotators(project)
        lat = stats.pop("latencies")
        errors = stats.pop("error_rows")
        result: dict[str, Any] = {
            "scenario": opts["scenario"],
            "next_in_answer": bool(opts["next_in_answer"]) if opts["scenario"] == "api" else True,
            "annotators": opts["annotators"],
            "items": opts["items"],
            "k": opts["k"],
            "database": connection.vendor,
            "users_started": data["users"],
            "think_s": [opts["think_min"], opts["think_max"]],
            "gunicorn": f"-w {opts['workers']} --threads {opts['threads']}" if not opts["url"] else opts["url"],
            "app_dir": opts["app_dir"] or ".",
            "cache_url": os.environ.get("DJANGO_CACHE_URL", "") if not opts["url"] else "",
            "submitted": len(answered),
            **stats,
            "refused": len(data.get("refused", [])),
            "undo_unknown": len(data.get("unknown", [])),
            "next_item_204": no_item,
            "over_assigned": check["over_assigned"],
            "lost": check["lost"],
            "duplicates": check["duplicates"],
            "counter_mismatch": check["counter_mismatch"],
            "lost_assignments": {
                str(pk): status
                for pk, status in Assignment.objects.filter(pk__in=lost_browser[:10]).values_list("pk", "status")
            },
            "starved": starved,
            "eligible_with_items_left": eligible,
            "items_complete": check["complete"],
            "items_extended": check["extended"],
            "lease_seconds": int(settings.COUNTERPART["LEASE_SECONDS"]),
            "heartbeat_seconds": int(settings.COUNTERPART["HEARTBEAT_SECONDS"]),
            "load_average_at_start": [round(x, 2) for x in load],
        }
        self._print(result, lat, errors, data.get("refused", []), ramp)
        return result

    def _print(
        self,
        result: dict[str, Any],
        lat: dict[str, list[float]],
        errors: list[Any],
        refused: list[str],
        ramp: float,
    ) -> None:
        out = self.stdout
        out.write(
            f"{result['scenario']} scenario; steady window {result['seconds']} s after a {ramp:.0f} s ramp: "
            f"{result['answers_per_s']} answers/s, {result['requests_per_s']} requests/s "
            f"({result['requests_per_answer']} per answer); all requests p50 {result['p50_ms']} ms, "
            f"p95 {result['p95_ms']} ms, p99 {result['p99_ms']} ms"
        )
        for n, values in lat.items():
            if values or n in ("next-item", "answer"):
                key = n.replace("-", "_")
                out.write(
                    f"  {n}: n={len(values)} p50 {result[f'{key}_p50_ms']} ms, p95 {result[f'{key}_p95_ms']} ms, "
                    f"p99 {result[f'{key}_p99_ms']} ms"
                )
        if "locust_cpu_share" in result:
            out.write(
                f"CPU over the window ({result['cores']} cores): Locust {result['locust_cpu_share']:.0%}, "
                f"gunicorn {result['server_cpu_share']:.0%}, whole machine {result['machine_cpu_share']:.0%}; "
                f"gunicorn {result['server_cpu_ms_per_answer']} ms CPU per answer; load average "
                f"{result['load_average_at_start'][0]} at start, {result['load_average_during'][0]}–"
                f"{result['load_average_during'][1]} during"
            )
        for e in errors[:5]:
            self.stderr.write(f"error: {e}")
        for r in refused[:5]:
            self.stderr.write(f"refused: {r}")
        out.write(
            f"errors {result['errors']} {result['error_kinds'] or ''}; refused by the server (a message on "
            f"the stage) {result['refused']}; next-item 204 "
            f"{result['next_item_204']}; over-answered {result['over_assigned']}, lost {result['lost']}, "
            f"duplicates {result['duplicates']}, counter mismatches {result['counter_mismatch']}, "
            f"starved {result['starved']} (of {result['eligible_with_items_left']} annotators with items left)"
        )
