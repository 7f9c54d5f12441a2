"""A generation run on a REAL Celery worker (prefork pool) over the REAL Redis broker,
sharing a file-based SQLite database with this test. The worker's pool process is killed
(SIGKILL) mid-run; with ``acks_late`` + ``reject_on_worker_lost`` the message is requeued,
a fresh pool process executes the same run id, and the run resumes from its last
committed batch: no duplicate candidates, every original covered."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
N = 24


def _env(tmp_path: Path, redis_url: str) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "CELERY_BROKER_URL": redis_url,
        "CELERY_RESULT_BACKEND": "",
        "DJANGO_LOG_LEVEL": "WARNING",
        "PYTHONPATH": str(REPO),
    }


def _query(db: Path, sql: str, *args: object) -> list[tuple]:
    con = sqlite3.connect(db, timeout=30)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def _wait_for(predicate, timeout: float, what: str):  # noqa: ANN001
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


def _start_worker(env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "tests.integration.generation_worker_app", "worker",
         "-Q", "generation", "--concurrency", "1", "--pool", "prefork", "--loglevel", "WARNING",
         "--without-gossip", "--without-mingle", "--without-heartbeat"],
        cwd=REPO, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )


def _seed(env: dict[str, str], name: str, options: dict) -> int:
    """Create the project and start the run (enqueued on commit, over Redis); the run id."""
    out = subprocess.run(
        [sys.executable, "-c", "import sys; from tests.integration.generation_worker_app import seed; "
         f"seed({name!r}, {N}, sys.argv[1])", json.dumps(options)],
        cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=True,
    )
    return int(out.stdout.strip().splitlines()[-1])


def _stop(worker: subprocess.Popen) -> None:
    worker.terminate()
    try:
        worker.wait(timeout=20)
    except subprocess.TimeoutExpired:
        worker.kill()
        worker.wait()


@pytest.fixture(scope="module")
def worker_env(tmp_path_factory):
    """One real worker (prefork, concurrency 1) for this module, over Redis, on a SQLite file."""
    from tests.conftest import _reachable, need

    url = os.environ.get("COUNTERPART_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
    need(_reachable("127.0.0.1", 6379), "Redis not reachable on 127.0.0.1:6379")
    import redis

    redis.Redis.from_url(url).delete("generation")  # no stale messages from an aborted run
    tmp = tmp_path_factory.mktemp("generation-worker")
    env = _env(tmp, url)
    worker = _start_worker(env)
    try:
        yield env, tmp / "db.sqlite3"
    finally:
        _stop(worker)


@pytest.mark.broker
@pytest.mark.slow
def test_worker_killed_mid_run_resumes_without_duplicates(redis_url, worker_env, tmp_path):
    env, db = worker_env
    pid_file = tmp_path / "generator.pid"
    gate = tmp_path / "gate"  # the generator waits at its 7th original until this exists
    options = {"batch_size": 2, "filters": ["dedup", "artifacts"],
               "generator_options": {"delay": 0.05, "pid_file": str(pid_file), "gate_file": str(gate),
                                     "gate_after": 6}}
    run_id = _seed(env, "killed", options)

    def progress() -> tuple[str, int, int]:
        return _query(db, "SELECT status, done, total FROM generation_generationrun WHERE id = ?", run_id)[0]

    # Let a few batches commit, then kill the pool process doing the work.
    _wait_for(lambda: progress()[1] >= 6 and pid_file.exists(), 90, "the first batches")
    first_pid = int(pid_file.read_text())
    status, done_at_kill, total = progress()
    assert (status, done_at_kill, total) == ("running", 6, N)
    os.kill(first_pid, signal.SIGKILL)
    gate.touch()  # let the next process through

    # The message is requeued (reject_on_worker_lost) and a new pool process resumes it.
    _wait_for(lambda: progress()[0] in ("succeeded", "failed", "cancelled"), 120, "the run to finish")
    status, done, total = progress()
    assert (status, done, total) == ("succeeded", N, N)
    assert int(pid_file.read_text()) != first_pid  # finished by another process

    rows = _query(db, "SELECT c.external_id, e.external_id FROM generation_candidate c "
                      "JOIN generation_example e ON e.id = c.example_id WHERE c.generation_run_id = ?", run_id)
    ids = [r[0] for r in rows]
    assert len(ids) == len(set(ids)) == 3 * N  # no duplicates
    assert Counter(r[1] for r in rows) == {f"ex-{i:03d}": 3 for i in range(N)}  # full coverage
    metrics = json.loads(_query(db, "SELECT metrics FROM generation_generationrun WHERE id = ?", run_id)[0][0])
    assert metrics["candidates"] == 3 * N and metrics["originals"] == N


@pytest.mark.broker
@pytest.mark.slow
def test_cancel_reaches_a_running_worker(redis_url, worker_env, tmp_path):
    env, db = worker_env
    gate = tmp_path / "gate"
    run_id = _seed(env, "cancelled", {"batch_size": 2, "filters": "none",
                                      "generator_options": {"gate_file": str(gate), "gate_after": 2}})

    def progress() -> tuple[str, int, int]:
        return _query(db, "SELECT status, done, total FROM generation_generationrun WHERE id = ?", run_id)[0]

    _wait_for(lambda: progress()[1] >= 2, 90, "the first batch")
    subprocess.run(  # what the Cancel button / API does, from another process
        [sys.executable, "-c", "import sys, django; django.setup(); from generation.models import GenerationRun; "
         "from generation.services.runs import run_cancel; run_cancel(run=GenerationRun.objects.get(pk=int(sys.argv[1])))",
         str(run_id)], cwd=REPO, env=env, check=True, timeout=120,
    )
    gate.touch()  # the batch in flight finishes; the worker sees the cancel before the next
    _wait_for(lambda: progress()[0] != "running", 60, "the worker to stop")
    status, done, total = progress()
    assert (status, done, total) == ("cancelled", 4, N)
    n = _query(db, "SELECT COUNT(*) FROM generation_candidate WHERE generation_run_id = ?", run_id)[0][0]
    assert n == 3 * done
