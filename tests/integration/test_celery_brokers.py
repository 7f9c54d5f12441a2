"""A real Celery worker process over the real brokers: the embedded default (kombu's
SQLAlchemy transport on a SQLite file, what ``make run`` uses) and Redis."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from celery import Celery

REPO = Path(__file__).resolve().parents[2]


def _roundtrip(broker: str, backend: str, tmp_path: Path) -> str:
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "config.settings.local",
        "DATABASE_URL": f"sqlite:///{tmp_path / 'db.sqlite3'}",
        "CELERY_BROKER_URL": broker,
        "CELERY_RESULT_BACKEND": backend,
    }
    log = open(tmp_path / "worker.log", "w+")  # noqa: SIM115 - closed below
    worker = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "celery",
            "-A",
            "config",
            "worker",
            "-Q",
            "default",
            "--concurrency",
            "1",
            "--pool",
            "solo",
            "--loglevel",
            "INFO",
        ],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        client = Celery(broker=broker, backend=backend)
        result = client.send_task("counterpart.ping", queue="default")
        try:
            return str(result.get(timeout=180))
        except Exception:  # noqa: BLE001 - any failure to answer (timeout, broker error) fails with the log
            log.seek(0)
            pytest.fail(f"no answer from the worker; its log:\n{log.read()[-4000:]}")
    finally:
        log.close()
        worker.terminate()
        try:
            worker.wait(timeout=20)
        except subprocess.TimeoutExpired:
            worker.kill()


@pytest.mark.broker
def test_embedded_sqlalchemy_broker_roundtrip(tmp_path):
    broker = f"sqla+sqlite:///{tmp_path / 'broker.sqlite3'}"
    backend = f"db+sqlite:///{tmp_path / 'results.sqlite3'}"
    assert _roundtrip(broker, backend, tmp_path) == "pong"


@pytest.mark.broker
def test_redis_broker_roundtrip(tmp_path, redis_url):
    assert _roundtrip(redis_url, redis_url, tmp_path) == "pong"


def test_default_broker_needs_no_server():
    from django.conf import settings

    if os.environ.get("CELERY_BROKER_URL"):
        pytest.skip("CELERY_BROKER_URL is set in this environment")
    assert settings.CELERY_BROKER_URL.startswith("sqla+sqlite:///")
    assert settings.CELERY_TASK_ACKS_LATE is True
