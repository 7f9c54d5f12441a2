"""Generation runs (jobs) on a REAL Celery worker (prefork pool, embedded beat) over the REAL
Redis broker, sharing a file-based SQLite database with this test.

* The worker's pool process is killed (SIGKILL) mid-run.
* The whole worker — main process, pool and beat, its process group — is killed with
  ``kill -9`` mid-run, and a new worker is started.

Either way the job's heartbeat stops; the stale-job sweep (beat, and once when a worker
starts) re-enqueues it, a new execution claims it and resumes after the last committed
batch: no duplicate candidates, every original covered, no ``--resume`` by hand. The stale
threshold is shortened here (``COUNTERPART_JOB_STALE_SECONDS``) so the test takes seconds;
with the defaults (60 s stale, 30 s sweep) a job resumes within about 90 s of the kill."""

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
        "COUNTERPART_JOB_HEARTBEAT_SECONDS": "0.5",
        "COUNTERPART_JOB_STALE_SECONDS": "3",
        "COUNTERPART_JOB_SWEEP_SECONDS": "1",
        "CELERY_BEAT_SCHEDULE_FILENAME": str(tmp_path / "celerybeat-schedule"),
    }


def _query(db: Path, sql: str, *args: object) -> list[tuple]:
    con = sqlite3.connect(db, timeout=30)
    try:
        return con.execute(sql, args).fetchall()
    finally:
        con.close()


def _wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    pytest.fail(f"timed out waiting for {what}")


def _start_worker(env: dict[str, str], log: Path | None = None, *, beat: bool = True) -> subprocess.Popen:
    """A worker on the generation and default queues with an embedded beat (-B; none with
    ``beat=False``), in its own process group (so the test can kill all of it at once)."""
    out = open(log, "ab") if log else subprocess.DEVNULL  # noqa: SIM115 - closed with the process
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "tests.integration.generation_worker_app",
            "worker",
            *(["-B"] if beat else []),
            "-Q",
            "generation,default",
            "--concurrency",
            "1",
            "--pool",
            "prefork",
            "--loglevel",
            "WARNING",
            "--without-gossip",
            "--without-mingle",
            "--without-heartbeat",
        ],
        cwd=REPO,
        env=env,
        stdout=out,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )


def _clean_broker(url: str) -> None:
    """No stale messages (or unacked ones of a killed worker) from an earlier run."""
    import redis

    r = redis.Redis.from_url(url)
    r.delete("generation", "default", "unacked", "unacked_index", "unacked_mutex")


def _progress(db: Path, run_id: int) -> tuple[str, int, int]:
    return _query(
        db,
        "SELECT j.status, j.done, j.total FROM generation_generationrun r "
        "JOIN projects_job j ON j.id = r.job_id WHERE r.id = ?",
        run_id,
    )[0]


def _check_candidates(db: Path, run_id: int) -> None:
    rows = _query(
        db,
        "SELECT c.external_id, e.external_id FROM generation_candidate c "
        "JOIN generation_example e ON e.id = c.example_id "
        "WHERE c.job_id = (SELECT job_id FROM generation_generationrun WHERE id = ?)",
        run_id,
    )
    ids = [r[0] for r in rows]
    assert len(ids) == len(set(ids)) == 3 * N  # no duplicates
    assert Counter(r[1] for r in rows) == {f"ex-{i:03d}": 3 for i in range(N)}  # full coverage
    metrics = json.loads(_query(db, "SELECT metrics FROM generation_generationrun WHERE id = ?", run_id)[0][0])
    assert metrics["candidates"] == 3 * N and metrics["originals"] == N


def _seed(env: dict[str, str], name: str, options: dict) -> int:
    """Create the project and start the run (enqueued on commit, over Redis); the run id."""
    out = subprocess.run(
        [
            sys.executable,
            "-c",
            f"import sys; from tests.integration.generation_worker_app import seed; seed({name!r}, {N}, sys.argv[1])",
            json.dumps(options),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    return int(out.stdout.strip().splitlines()[-1])


def _stop(worker: subprocess.Popen) -> None:
    try:
        os.killpg(worker.pid, signal.SIGTERM)
        worker.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
    except ProcessLookupError:
        worker.wait()


@pytest.fixture(scope="module")
def worker_env(tmp_path_factory):
    """One real worker (prefork, concurrency 1) for this module, over Redis, on a SQLite file."""
    from tests.conftest import _reachable, need

    url = os.environ.get("COUNTERPART_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
    need(_reachable("127.0.0.1", 6379), "Redis not reachable on 127.0.0.1:6379")
    _clean_broker(url)
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
    options = {
        "batch_size": 2,
        "filters": ["dedup", "artifacts"],
        "generator_options": {"delay": 0.05, "pid_file": str(pid_file), "gate_file": str(gate), "gate_after": 6},
    }
    run_id = _seed(env, "killed", options)

    def progress() -> tuple[str, int, int]:
        return _progress(db, run_id)

    # Let a few batches commit, then kill the pool process doing the work.
    _wait_for(lambda: progress()[1] >= 6 and pid_file.exists(), 90, "the first batches")
    first_pid = int(pid_file.read_text())
    status, done_at_kill, total = progress()
    assert (status, done_at_kill, total) == ("running", 6, N)
    os.kill(first_pid, signal.SIGKILL)
    gate.touch()  # let the next process through

    # The heartbeat stops; the sweep re-enqueues the job and a new pool process resumes it.
    _wait_for(lambda: progress()[0] in ("succeeded", "failed", "cancelled"), 120, "the run to finish")
    status, done, total = progress()
    assert (status, done, total) == ("succeeded", N, N)
    assert int(pid_file.read_text()) != first_pid  # finished by another process
    _check_candidates(db, run_id)


@pytest.mark.broker
@pytest.mark.slow
def test_cancel_reaches_a_running_worker(redis_url, worker_env, tmp_path):
    env, db = worker_env
    gate = tmp_path / "gate"
    run_id = _seed(
        env,
        "cancelled",
        {"batch_size": 2, "filters": "none", "generator_options": {"gate_file": str(gate), "gate_after": 2}},
    )

    def progress() -> tuple[str, int, int]:
        return _progress(db, run_id)

    _wait_for(lambda: progress()[1] >= 2, 90, "the first batch")
    subprocess.run(  # what the Cancel button / API does, from another process
        [
            sys.executable,
            "-c",
            "import sys, django; django.setup(); from generation.models import GenerationRun; "
            "from generation.services.runs import run_cancel; "
            "run_cancel(run=GenerationRun.objects.get(pk=int(sys.argv[1])))",
            str(run_id),
        ],
        cwd=REPO,
        env=env,
        check=True,
        timeout=120,
    )
    gate.touch()  # the generator moves to the next original and sees the cancel there
    _wait_for(lambda: progress()[0] != "running", 60, "the worker to stop")
    status, done, total = progress()
    # cancel is checked between originals (issue 18.7), at most once a second: the batch in
    # flight (originals 3-4) is dropped, or finished when the check before original 3 fell
    # inside the second after the last one; either way nothing after it is generated
    assert status == "cancelled" and done in (2, 4) and total == N, (status, done, total)
    n = _query(
        db,
        "SELECT COUNT(*) FROM generation_candidate "
        "WHERE job_id = (SELECT job_id FROM generation_generationrun WHERE id = ?)",
        run_id,
    )[0][0]
    assert n == 3 * done


@pytest.mark.broker
@pytest.mark.slow
def test_whole_worker_killed_with_kill_9_resumes_on_its_own(redis_url, tmp_path):
    """kill -9 on the worker's process group (main process, pool, beat): nothing acks, rejects
    or marks the job; the message sits unacked in Redis. A new worker's sweep finds the
    stale heartbeat and the job resumes by itself, without duplicates."""
    url = redis_url.rsplit("/", 1)[0] + "/14"  # its own broker db and SQLite file
    _clean_broker(url)
    env = _env(tmp_path, url)
    db = tmp_path / "db.sqlite3"
    pid_file, gate = tmp_path / "generator.pid", tmp_path / "gate"
    log = tmp_path / "worker.log"
    worker = _start_worker(env, log)
    try:
        run_id = _seed(
            env,
            "killed-whole",
            {
                "batch_size": 2,
                "filters": "none",
                "generator_options": {
                    "delay": 0.05,
                    "pid_file": str(pid_file),
                    "gate_file": str(gate),
                    "gate_after": 6,
                },
            },
        )
        _wait_for(lambda: _progress(db, run_id)[1] >= 6 and pid_file.exists(), 90, "the first batches")
        assert _progress(db, run_id) == ("running", 6, N)
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
        killed_at = time.monotonic()
        time.sleep(1)
        assert _progress(db, run_id)[0] == "running"  # nobody marked it: it is stranded
        gate.touch()
        worker = _start_worker(env, log)
        _wait_for(lambda: _progress(db, run_id)[0] != "running", 120, "the job to resume and finish")
        assert time.monotonic() - killed_at < 120
        assert _progress(db, run_id) == ("succeeded", N, N), log.read_text()[-3000:]
        attempts = _query(
            db,
            "SELECT j.attempts FROM generation_generationrun r JOIN projects_job j ON j.id = r.job_id WHERE r.id = ?",
            run_id,
        )[0][0]
        assert attempts == 2
        _check_candidates(db, run_id)
    finally:
        _stop(worker)
        _clean_broker(url)
