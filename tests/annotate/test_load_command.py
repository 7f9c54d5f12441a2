"""The plumbing of ``bench_annotation_load`` (issue 25.2): gunicorn on PostgreSQL, Locust
headless with a few simulated annotators for a few seconds, the report and the fairness
invariants read from the database. The 1,000-annotator figures are in docs/annotation.md."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import need

REPO = Path(__file__).resolve().parents[2]


def _scratch_env() -> dict[str, str]:
    import psycopg

    need(Path(sys.executable).with_name("locust").exists(), "Locust is not installed (requirements-dev.txt)")
    base = os.environ.get("DATABASE_URL") or os.environ["COUNTERPART_TEST_POSTGRES_URL"]
    server, name = base.rsplit("/", 1)
    scratch = f"{name.split('?')[0]}_loadtest"
    with psycopg.connect(f"{server}/postgres", autocommit=True) as conn:
        if not conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", [scratch]).fetchone():
            conn.execute(f'CREATE DATABASE "{scratch}"')
    return {**os.environ, "DATABASE_URL": f"{server}/{scratch}", "DJANGO_SETTINGS_MODULE": "config.settings.test"}


@pytest.mark.slow
@pytest.mark.postgres
def test_load_command_runs_locust_against_gunicorn_and_checks_fairness(require_postgres):
    env = _scratch_env()
    args = ["--annotators", "6", "--items", "30", "--seconds", "8", "--spawn-rate", "6", "--no-next-in-answer"]
    args += ["--think-min", "0.05", "--think-max", "0.2", "--workers", "1", "--threads", "4", "--json"]
    proc = subprocess.run(
        [sys.executable, "manage.py", "bench_annotation_load", *args],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["database"] == "postgresql" and result["users_started"] == 6
    assert result["submitted"] > 0 and result["answers_per_s"] > 0 and result["next_item_p95_ms"] > 0
    assert (result["over_assigned"], result["lost"], result["duplicates"], result["counter_mismatch"]) == (0, 0, 0, 0)
    assert (result["errors"], result["starved"]) == (0, 0)
    assert "next-item: n=" in proc.stdout and "starved 0" in proc.stdout


@pytest.mark.slow
@pytest.mark.postgres
def test_load_command_browser_and_one_round_trip_api_scenarios(require_postgres):
    """The browser scenario (issue 33): log-in through the form (CSRF), the page, htmx answers that return
    the next item, skips, undos and heartbeats (every second here, to see them in a short run);
    and the API scenario with ?next=1: one request per answer after the first."""
    env = _scratch_env() | {"COUNTERPART_HEARTBEAT_SECONDS": "1"}
    common = ["--annotators", "6", "--items", "300", "--seconds", "10", "--spawn-rate", "6", "--json"]
    common += ["--think-min", "0.05", "--think-max", "0.2", "--workers", "1", "--threads", "4"]
    browser = ["--scenario", "browser", "--skip-rate", "0.2", "--undo-rate", "0.3", "--pause-rate", "0.2", "--login"]
    browser += ["--pause-seconds", "1.5,3"]  # a pause long enough for heartbeats, short enough for a 10 s window
    results = {}
    for name, extra in (("browser", browser), ("api", ["--scenario", "api"])):
        proc = subprocess.run(
            [sys.executable, "manage.py", "bench_annotation_load", *common, *extra],
            cwd=REPO,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
        )
        assert proc.returncode == 0, proc.stderr[-3000:]
        results[name] = json.loads(proc.stdout.strip().splitlines()[-1])
    b, a = results["browser"], results["api"]
    assert b["scenario"] == "browser" and b["users_started"] == 6 and b["submitted"] > 0
    assert b["counts"]["answer"] > 0 and b["counts"]["next-item"] == 0  # the answer brings the next item
    assert b["counts"]["heartbeat"] > 0 and b["counts"]["skip"] > 0 and b["counts"]["undo"] > 0
    assert a["counts"]["next-item"] == 0 and a["requests_per_answer"] == 1.0  # ?next=1: one round trip
    for r in (a, b):
        assert (r["over_assigned"], r["lost"], r["duplicates"], r["counter_mismatch"], r["starved"]) == (0, 0, 0, 0, 0)
        assert r["errors"] == 0, r["error_kinds"]
        assert 0 < r["locust_cpu_share"] < 1 and 0 < r["server_cpu_share"] < 1 and r["server_cpu_ms_per_answer"] > 0
