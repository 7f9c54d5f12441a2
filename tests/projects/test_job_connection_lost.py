"""A job whose worker loses its PostgreSQL connection mid-run (QA probe: pg_terminate_backend
on the worker's connections during an import, what a PostgreSQL restart or failover does). The
job ended ``failed`` with "an internal error stopped the job", and an import removed the rows it
had written: the user had to start it again by hand. A dropped connection says nothing about the
job, so now it is left ``running`` and resumed by the stale-job sweep like a killed worker's job
(capped by ``COUNTERPART_JOB_MAX_ATTEMPTS``); a database error of the job's own still fails it."""

from __future__ import annotations

from datetime import timedelta

import psycopg
import pytest
from django.db import connection
from django.utils import timezone

from projects.models import Job
from projects.services import jobs as svc
from projects.services.projects import project_create

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]

CALLS: list[int] = []


def _drop_my_connection() -> None:
    """Terminate this process's backend from another connection, as a restart does."""
    s = connection.settings_dict
    connection.ensure_connection()
    assert connection.connection is not None
    pid = connection.connection.info.backend_pid
    with psycopg.connect(
        host=s["HOST"] or None, port=s["PORT"] or None, user=s["USER"], password=s["PASSWORD"] or None, dbname=s["NAME"]
    ) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])


def _handler(job: Job, ctx: svc.JobContext) -> dict:
    CALLS.append(job.pk)
    if len(CALLS) == 1:
        _drop_my_connection()
        Job.objects.filter(pk=job.pk).exists()  # the next statement meets the dropped connection
    ctx.progress(1, 1)
    return {"attempt": len(CALLS)}


def _own_db_error(job: Job, ctx: svc.JobContext) -> dict:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 / 0")  # the job's own database error: the connection stays usable
    return {}


@pytest.fixture(autouse=True)
def _test_kind(monkeypatch):
    monkeypatch.setitem(svc._KINDS, "export", svc.JobKind("export", "default", _handler))
    CALLS.clear()


def _a_minute_passes(job: Job) -> None:
    """The heartbeat of the execution that lost its connection grows stale."""
    stale = timezone.now() - timedelta(seconds=float(svc._cfg("JOB_STALE_SECONDS")) + 5)
    Job.objects.filter(pk=job.pk).update(heartbeat_at=stale)


def test_a_job_whose_database_connection_dropped_is_resumed_not_failed(require_postgres):
    project = project_create(name="lost", task="nli")
    job = svc.job_create(kind="export", project=project)

    svc.job_execute(job_id=job.pk)

    job.refresh_from_db()  # a fresh connection
    assert (job.status, job.error, job.attempts) == ("running", "", 1)
    _a_minute_passes(job)
    assert svc.jobs_sweep() == [job.pk]  # resumed (eager here: run at once)
    job.refresh_from_db()
    assert (job.status, job.attempts, job.result) == ("succeeded", 2, {"attempt": 2})


def test_a_database_error_of_the_job_itself_still_fails_it(require_postgres, monkeypatch):
    monkeypatch.setitem(svc._KINDS, "export", svc.JobKind("export", "default", _own_db_error))
    project = project_create(name="own", task="nli")
    job = svc.job_create(kind="export", project=project)
    with pytest.raises(Exception, match="division by zero"):
        svc.job_execute(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "failed" and job.error.startswith("an internal error stopped the job")
