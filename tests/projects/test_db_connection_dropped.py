"""A persistent PostgreSQL connection that the server dropped (QA probe: pg_terminate_backend
on the web process's connections, what a PostgreSQL restart or failover does). Every web thread
keeps its connection (``DATABASE_CONN_MAX_AGE``), so the first request of each thread after the
restart failed ("terminating connection due to administrator command"); with Django's connection
health checks the dead connection is noticed as the request starts and opened again."""

from __future__ import annotations

import io
import time

import psycopg
import pytest
from django.core.handlers.wsgi import WSGIHandler
from django.db import connection
from rest_framework.authtoken.models import Token

from tests.annotate.factories import researcher

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def _terminate(pid: int) -> None:
    """Drop the backend ``pid`` from another connection, as an administrator or a restart does."""
    s = connection.settings_dict
    with psycopg.connect(
        host=s["HOST"] or None, port=s["PORT"] or None, user=s["USER"], password=s["PASSWORD"] or None, dbname=s["NAME"]
    ) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
        for _ in range(100):  # until the server has let go of it
            if not other.execute("SELECT 1 FROM pg_stat_activity WHERE pid = %s", [pid]).fetchone():
                return
            time.sleep(0.05)


def _get(handler: WSGIHandler, path: str, token: str) -> int:
    """One request through Django's real WSGI handler (unlike the test client, it runs the
    request_started signal that checks the persistent connection)."""
    status: list[str] = []
    environ = {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": path,
        "QUERY_STRING": "",
        "SERVER_NAME": "127.0.0.1",
        "SERVER_PORT": "80",
        "HTTP_HOST": "127.0.0.1",
        "HTTP_AUTHORIZATION": f"Token {token}",
        "wsgi.input": io.BytesIO(b""),
        "wsgi.url_scheme": "http",
        "wsgi.errors": io.StringIO(),
    }
    response = handler(environ, lambda s, h, exc_info=None: status.append(s))
    b"".join(response)
    response.close()
    return int(status[0].split()[0])


def test_the_request_after_the_server_dropped_the_connection_succeeds(require_postgres):
    token = Token.objects.create(user=researcher()).key
    handler = WSGIHandler()
    assert _get(handler, "/api/v1/jobs/", token) == 200
    connection.ensure_connection()  # the thread's persistent connection, kept between requests
    assert connection.connection is not None
    _terminate(connection.connection.info.backend_pid)
    assert _get(handler, "/api/v1/jobs/", token) == 200
    assert _get(handler, "/api/v1/jobs/", token) == 200
