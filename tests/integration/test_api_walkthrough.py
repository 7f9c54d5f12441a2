"""The API walk-through of docs/api.md, run as a script against a live server.

``scripts/api_walkthrough.sh`` (embedded verbatim in docs/api.md — checked here) runs with
curl against a real ``manage.py runserver`` on a free loopback port, with a real Celery worker
on the embedded SQLite broker (the default of a fresh install), sharing a SQLite database
file: create → import → generate (``rules``) → route → answer → train → autolabel → export.
The token is made as the page says, with ``createsuperuser`` and ``drf_create_token``."""

from __future__ import annotations

import json
import os
import re
import shutil
import socket
import sqlite3
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from tests.conftest import need

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "api_walkthrough.sh"
DOC = REPO / "docs" / "api.md"
DATA = REPO / "projects" / "fixtures" / "demo_nli_pairs.jsonl"


def test_the_docs_embed_the_script_verbatim():
    doc = DOC.read_text()
    found = re.search(r"<!-- scripts/api_walkthrough.sh, verbatim -->\n```bash\n(.*?)```\n", doc, re.S)
    assert found is not None, "docs/api.md lost the embedded walk-through"
    assert found.group(1) == SCRIPT.read_text()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _manage(env: dict[str, str], *args: str) -> str:
    out = subprocess.run(
        [sys.executable, "manage.py", *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr[-3000:]
    return out.stdout


def _stop(proc: subprocess.Popen) -> None:
    try:
        os.killpg(proc.pid, 15)
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, 9)
        proc.wait()
    except ProcessLookupError:
        proc.wait()


def _wait_until_serving(base: str, server: subprocess.Popen, log: Path) -> None:
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if server.poll() is not None:
            pytest.fail(f"the server exited: {log.read_text()[-3000:]}")
        try:
            urllib.request.urlopen(f"{base}/api/schema/", timeout=2)
        except urllib.error.HTTPError:
            return  # 401: it answers
        except OSError:
            time.sleep(0.3)
            continue
        return
    pytest.fail("the server did not start")


@pytest.mark.slow
@pytest.mark.broker
def test_the_walkthrough_runs_the_loop_from_zero_against_a_live_server(tmp_path):
    need(shutil.which("curl") is not None and shutil.which("jq") is not None, "curl and jq are needed")
    db = tmp_path / "db.sqlite3"
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
        "DATABASE_URL": f"sqlite:///{db}",
        "CELERY_BROKER_URL": f"sqla+sqlite:///{tmp_path / 'broker.sqlite3'}",
        "CELERY_RESULT_BACKEND": "",
        "CELERY_BEAT_SCHEDULE_FILENAME": str(tmp_path / "celerybeat-schedule"),
        "COUNTERPART_MODEL_DIR": str(tmp_path / "models"),
        "COUNTERPART_EXPORT_DIR": str(tmp_path / "exports"),
        "COUNTERPART_MEDIA_ROOT": str(tmp_path / "media"),
        "DJANGO_LOG_LEVEL": "WARNING",
        "PYTHONPATH": str(REPO),
        "DJANGO_SUPERUSER_PASSWORD": "walk-through-password",
    }
    _manage(env, "migrate", "--verbosity", "0")
    _manage(env, "createsuperuser", "--noinput", "--username", "rita", "--email", "rita@example.org")
    token = _manage(env, "drf_create_token", "rita").split()[2]
    # as scripts/run.sh: the queues declared once before the worker and the server start them
    assert "interactive" in _manage(env, "jobs", "--declare-queues")

    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    server_log, worker_log = tmp_path / "server.log", tmp_path / "worker.log"
    with open(server_log, "wb") as slog, open(worker_log, "wb") as wlog:
        server = subprocess.Popen(
            [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
            cwd=REPO,
            env=env,
            stdout=slog,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        worker = subprocess.Popen(
            [
                *(sys.executable, "-m", "celery", "-A", "config", "worker"),
                *("-Q", "default,ml,interactive,generation", "--pool", "solo", "--loglevel", "WARNING"),
                *("--without-gossip", "--without-mingle", "--without-heartbeat"),
            ],
            cwd=REPO,
            env=env,
            stdout=wlog,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        try:
            _wait_until_serving(base, server, server_log)
            run = subprocess.run(
                ["bash", str(SCRIPT)],
                cwd=tmp_path,
                env={**env, "TOKEN": token, "ME": "rita", "BASE": base, "DATA": str(DATA), "NAME": "walk"},
                capture_output=True,
                text=True,
                timeout=420,
            )
        finally:
            _stop(server)
            _stop(worker)
    # the server's log too: a 500 shows only as curl's exit code in the script's output
    logs = (
        f"{run.stdout}\n{run.stderr[-4000:]}\nworker: {worker_log.read_text()[-3000:]}"
        f"\nserver: {server_log.read_text(errors='replace')[-6000:]}"
    )
    assert run.returncode == 0, logs

    con = sqlite3.connect(db)
    try:
        (project_id,) = con.execute("SELECT id FROM generation_project WHERE name = 'walk'").fetchone()
        jobs = dict(con.execute("SELECT kind, status FROM projects_job WHERE project_id = ?", (project_id,)))
        states = dict(
            con.execute(
                "SELECT state, COUNT(*) FROM generation_candidate WHERE project_id = ? GROUP BY state", (project_id,)
            )
        )
        originals = con.execute(
            "SELECT COUNT(*) FROM generation_example WHERE project_id = ?", (project_id,)
        ).fetchone()
        (answers,) = con.execute(
            "SELECT COUNT(*) FROM annotate_annotation WHERE project_id = ?",
            (project_id,),
        ).fetchone()
    finally:
        con.close()
    for kind in ("generation", "route", "train", "autolabel", "export"):
        assert jobs.get(kind) == "succeeded", (kind, jobs, logs)
    assert originals == (10,)
    assert states.get("human_labeled", 0) >= 10  # answered through the API, enough to train h
    assert sum(states.values()) > 40  # the 40 imported pairs and the rules generator's candidates

    # The export holds exactly the labelled pairs; the script's last line is the list's counts.
    rows = [json.loads(line) for line in (tmp_path / "walk.jsonl").read_text().splitlines()]
    assert len(rows) == states.get("human_labeled", 0) + states.get("auto_labeled", 0)
    assert all(r["counterfactual"]["label"] in {"entailment", "neutral", "contradiction"} for r in rows)
    counts = json.loads(run.stdout.strip().splitlines()[-1])
    assert counts["originals"] == 10 and counts["candidates"] == sum(states.values())
    assert counts["human_labeled"] == states["human_labeled"]
    assert f"answered {answers} items" in run.stdout  # every routed item (check items too), once
