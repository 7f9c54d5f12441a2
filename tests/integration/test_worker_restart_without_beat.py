"""A plain worker (``celery worker``: no ``-B``, no beat anywhere) killed with ``kill -9`` in
the middle of a job and restarted at once resumes the job by itself. Its start-up sweep runs
while the killed job's heartbeat is still fresh (the stale threshold is 15 s here, longer than
a restart), so it is the second sweep — scheduled by the worker at start for once the
threshold has passed — that re-sends the job. Before that second sweep, such a job stayed
``running`` forever (until Redis' visibility timeout, hours later)."""

from __future__ import annotations

import os
import signal

import pytest

from tests.integration.test_generation_worker import (
    N,
    _check_candidates,
    _clean_broker,
    _env,
    _progress,
    _query,
    _seed,
    _start_worker,
    _stop,
    _wait_for,
)


@pytest.mark.broker
@pytest.mark.slow
def test_a_plain_worker_restarted_at_once_resumes_the_job_it_was_killed_in(redis_url, tmp_path):
    _clean_broker(redis_url)
    env = {**_env(tmp_path, redis_url), "COUNTERPART_JOB_STALE_SECONDS": "15"}
    db = tmp_path / "db.sqlite3"
    pid_file, gate = tmp_path / "generator.pid", tmp_path / "gate"
    log = tmp_path / "worker.log"
    worker = _start_worker(env, log, beat=False)
    try:
        options = {"delay": 0.05, "pid_file": str(pid_file), "gate_file": str(gate), "gate_after": 6}
        run_id = _seed(env, "no-beat", {"batch_size": 2, "filters": "none", "generator_options": options})
        _wait_for(lambda: _progress(db, run_id)[1] >= 6 and pid_file.exists(), 90, "the first batches")
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
        gate.touch()
        worker = _start_worker(env, log, beat=False)  # at once: the heartbeat is still fresh
        _wait_for(lambda: _progress(db, run_id)[0] != "running", 150, "the job to resume and finish")
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
        _clean_broker(redis_url)
