"""A Redis broker that takes the connection but never answers (hung, or a host or firewall that
drops the packets; QA probe: ``CELERY_BROKER_URL`` at a silent port). redis-py waits for ever
by default: the API request that started a job never answered and its job stayed ``queued``.
The transport's socket timeouts (``config.settings.base.broker_transport_options``) make the
send fail: the job is failed with the broker message and the request answers 503."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from rest_framework.test import APIClient

from config.env import ImproperlyConfiguredEnv
from config.settings.base import broker_transport_options
from projects.models import Job
from projects.services.projects import project_create
from tests.annotate.factories import researcher

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]

GIVE_UP = 30.0  # the silent server hangs up after this long, so a failing test does not hang


@pytest.fixture
def silent_redis():
    """A TCP server that accepts every connection and never sends a byte. Yields its URL."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    def hang_up() -> None:
        stop.set()
        for conn in held:
            conn.close()

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    timer = threading.Timer(GIVE_UP, hang_up)
    timer.start()
    try:
        yield f"redis://127.0.0.1:{server.getsockname()[1]}/0"
    finally:
        timer.cancel()
        hang_up()
        thread.join()
        server.close()


@pytest.fixture
def hung_broker(silent_redis, monkeypatch):
    from celery import current_app

    options = broker_transport_options(silent_redis, socket_timeout=2)
    monkeypatch.setitem(current_app.conf, "broker_url", silent_redis)
    monkeypatch.setitem(current_app.conf, "broker_transport_options", options)
    monkeypatch.setitem(current_app.conf, "task_always_eager", False)
    monkeypatch.setattr(current_app, "_pool", None)  # pools for this broker, not the test settings' one
    monkeypatch.setattr(current_app.amqp, "_producer_pool", None)
    try:
        yield
    finally:
        current_app.pool.force_close_all()


@pytest.mark.django_db(transaction=True)  # autocommit: on_commit runs inside the view, as in production
def test_a_job_started_against_a_silent_redis_fails_in_seconds_with_503(hung_broker):
    user = researcher()
    project = project_create(name="hung", task="nli", created_by=user)
    client = APIClient()
    client.force_authenticate(user)
    started = time.monotonic()
    r = client.post(f"/api/v1/projects/{project.pk}/route/", {"budget": 0.1}, format="json")
    elapsed = time.monotonic() - started
    # a send is tried twice (about 2 x the 2 s timeout here); without timeouts it waits until the
    # server hangs up (GIVE_UP)
    assert elapsed < GIVE_UP / 2, f"the request waited {elapsed:.1f} s on a broker that does not answer"
    assert r.status_code == 503
    assert "task broker is unreachable" in r.json()["detail"]
    job = Job.objects.get(project=project)
    assert job.status == "failed" and job.error.startswith("could not enqueue the job")


def test_redis_urls_get_socket_timeouts_and_others_no_options():
    for url in ("redis://127.0.0.1:6379/0", "rediss://cache.example:6380/1"):
        options = broker_transport_options(url, socket_timeout=10)
        assert options["socket_timeout"] == options["socket_connect_timeout"] == 10
        assert options["visibility_timeout"] > 6 * 3600
    assert broker_transport_options("sqla+sqlite:///var/b.sqlite3", socket_timeout=10) == {}
    assert broker_transport_options("amqp://guest@127.0.0.1//", socket_timeout=10) == {}
    with pytest.raises(ImproperlyConfiguredEnv, match="CELERY_BROKER_SOCKET_TIMEOUT"):
        broker_transport_options("redis://127.0.0.1:6379/0", socket_timeout=0)
