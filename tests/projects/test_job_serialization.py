"""Jobs that change a project's candidates (generation, route, train, autolabel, import) run
one at a time per project: a second one stays queued "waiting behind job #N" and its message
is sent again after a short countdown; other kinds and other projects are not held up. On
PostgreSQL, real concurrent executions (threads with their own connections) of two route
jobs of one project both succeed with no duplicate item."""

from __future__ import annotations

import threading
import time
from datetime import timedelta

import pytest
from django.db import connections
from django.db.models import Count
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from annotate.models import Item
from projects import tasks
from projects.models import Job
from projects.selectors import job_as_dict, job_waiting_behind
from projects.services import jobs as svc
from projects.services.projects import project_create
from tests.annotate.factories import project_with_candidates, researcher
from tests.conftest import need

pytestmark = pytest.mark.postgres_too

CALLS: list[int] = []


def _handler(job: Job, ctx: svc.JobContext) -> dict:
    CALLS.append(job.pk)
    ctx.progress(1, 1)
    return {"ok": True}


@pytest.fixture
def kinds(monkeypatch):
    """``route`` (exclusive) and ``export`` (not) with a test handler."""
    monkeypatch.setitem(svc._KINDS, "route", svc.JobKind("route", "ml", _handler, exclusive=True))
    monkeypatch.setitem(svc._KINDS, "export", svc.JobKind("export", "default", _handler))
    CALLS.clear()


@pytest.fixture
def behind(kinds, db):
    """A project, its running exclusive job and a second one that tried to start and waits."""
    project = project_create(name="serial", task="nli")
    first = svc.job_create(kind="route", project=project)
    second = svc.job_create(kind="route", project=project)
    _running(first)
    return project, first, svc.job_execute(job_id=second.pk)


def _running(job: Job, *, heartbeat_age: float = 0.0) -> None:
    Job.objects.filter(pk=job.pk).update(
        status="running", token="live", heartbeat_at=timezone.now() - timedelta(seconds=heartbeat_age)
    )


def test_the_kinds_that_change_candidates_are_registered_exclusive():
    assert {k for k in svc.EXCLUSIVE_KINDS if k in svc._KINDS} <= {k.name for k in svc._KINDS.values() if k.exclusive}
    assert {"generation", "route", "train", "autolabel"} <= {k.name for k in svc._KINDS.values() if k.exclusive}
    assert not svc.job_kind("export").exclusive and not svc.job_kind("evaluate").exclusive


def test_a_second_exclusive_job_waits_behind_the_running_one_then_runs(behind):
    _project, first, waiting = behind
    second = waiting
    assert waiting.status == "queued" and job_waiting_behind(waiting) == first.pk and not CALLS
    assert job_as_dict(job=waiting)["waiting_behind"] == first.pk
    # a job killed while running still holds its project (the sweep resumes it): no overtaking
    _running(first, heartbeat_age=3600)
    assert job_waiting_behind(svc.job_execute(job_id=second.pk)) == first.pk
    Job.objects.filter(pk=first.pk).update(status="succeeded")
    done = svc.job_execute(job_id=second.pk)
    assert done.status == "succeeded" and done.result == {"ok": True} and [second.pk] == CALLS
    assert job_waiting_behind(done) is None


@pytest.mark.django_db
def test_other_kinds_and_other_projects_are_not_held_up(kinds):
    project = project_create(name="serial", task="nli")
    other = project_create(name="other", task="nli")
    running = svc.job_create(kind="route", project=project)
    _running(running)
    export = svc.job_create(kind="export", project=project)
    elsewhere = svc.job_create(kind="route", project=other)
    assert svc.job_execute(job_id=export.pk).status == "succeeded"
    assert svc.job_execute(job_id=elsewhere.pk).status == "succeeded"


@pytest.mark.django_db
def test_the_task_sends_a_waiting_job_again_after_a_countdown(kinds, monkeypatch, settings):
    monkeypatch.setattr(svc, "_eager", lambda: False)  # as a real worker
    sent: list[dict] = []
    monkeypatch.setattr(tasks.job_execute_task, "apply_async", lambda args, **kw: sent.append({"id": args[0], **kw}))
    project = project_create(name="serial", task="nli")
    first = svc.job_create(kind="route", project=project)
    second = svc.job_create(kind="route", project=project)
    _running(first)
    assert tasks.job_execute_task(second.pk) == "queued"
    assert sent == [{"id": second.pk, "queue": "ml", "countdown": svc.job_wait_seconds()}]
    assert 0 < svc.job_wait_seconds() < float(settings.COUNTERPART["JOB_STALE_SECONDS"])


@pytest.mark.django_db
def test_a_waiting_job_is_cancelled_at_once_and_a_lost_one_is_re_sent_by_the_sweep(kinds, monkeypatch):
    sent: list[int] = []
    monkeypatch.setattr(tasks.job_execute_task, "apply_async", lambda args, **kw: sent.append(args[0]))
    project = project_create(name="serial", task="nli")
    first = svc.job_create(kind="route", project=project)
    second = svc.job_create(kind="route", project=project)
    third = svc.job_create(kind="route", project=project)
    _running(first)
    svc.job_execute(job_id=second.pk)
    svc.job_execute(job_id=third.pk)
    assert svc.job_cancel(job=Job.objects.get(pk=third.pk)).status == "cancelled"
    # the worker holding second's delayed message died: once its last send is stale, resend
    now = timezone.now()
    Job.objects.filter(pk=second.pk).update(enqueued_at=now - timedelta(hours=1))
    assert svc.jobs_sweep(now=now) == [second.pk] and sent == [second.pk]
    assert svc.jobs_sweep(now=now) == []


def test_the_job_box_and_the_jobs_page_say_what_a_job_waits_behind(behind):
    _project, first, second = behind
    c = Client()
    c.force_login(researcher())
    box = c.get(f"/jobs/{second.pk}/", HTTP_HX_REQUEST="true")
    assert box.status_code == 200 and f"waiting behind job #{first.pk}".encode() in box.content
    assert f"waiting behind job #{first.pk}".encode() in c.get("/jobs/").content


@pytest.mark.django_db
def test_two_route_requests_at_once_queue_the_second_behind_the_first(django_capture_on_commit_callbacks):
    """Through the API: both answer 202 with a job; the second (its message sent while the
    first is running) waits, then runs and routes nothing twice."""
    project = project_with_candidates(name="api-route", n=30)
    api = APIClient()
    api.force_authenticate(researcher())
    first = Job.objects.create(kind="route", project=project, status="running", token="live")
    Job.objects.filter(pk=first.pk).update(heartbeat_at=timezone.now())
    with django_capture_on_commit_callbacks(execute=True):  # the message is sent (eager) and tried
        r = api.post(f"/api/v1/projects/{project.pk}/route/", {"budget": 0.5, "strategy": "random"}, format="json")
    assert r.status_code == 202, r.content
    job = Job.objects.get(pk=r.json()["id"])
    assert job.status == "queued" and job_waiting_behind(job) == first.pk
    Job.objects.filter(pk=first.pk).update(status="succeeded")
    assert svc.job_execute(job_id=job.pk).status == "succeeded"
    with django_capture_on_commit_callbacks(execute=True):
        r2 = api.post(f"/api/v1/projects/{project.pk}/route/", {"budget": 0.5, "strategy": "random"}, format="json")
    assert r2.status_code == 202 and Job.objects.get(pk=r2.json()["id"]).status == "succeeded"
    assert not Item.objects.values("candidate", "side").annotate(n=Count("id")).filter(n__gt=1).exists()


# -- PostgreSQL: real concurrent executions ---------------------------------------------------


def _drive(job_id: int, barrier: threading.Barrier, out: dict, waited: list[int], tried: threading.Event) -> None:
    """What a worker does for one job message, and again after each countdown."""
    try:
        barrier.wait(timeout=30)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            job = svc.job_execute(job_id=job_id)
            if job_waiting_behind(job) is None:
                out[job_id] = (job.status, job.error)
                return
            waited.append(job_id)
            tried.set()
            time.sleep(0.05)
        out[job_id] = ("timeout", "")
    except Exception as exc:  # noqa: BLE001 - asserted in the main thread
        out[job_id] = ("raised", repr(exc))
    finally:
        connections.close_all()


@pytest.mark.postgres
def test_two_route_jobs_of_one_project_at_once_on_postgresql_both_succeed_no_duplicate(transactional_db, monkeypatch):
    need(connections["default"].vendor == "postgresql", "needs DATABASE_URL=postgres://...")
    project = project_with_candidates(name="pg-route", n=120)
    real = svc.job_kind("route")
    tried = threading.Event()

    def gated(job: Job, ctx: svc.JobContext) -> dict:
        tried.wait(10)  # the first to claim holds on until the other one has tried and waited
        return real.handler(job, ctx)

    monkeypatch.setitem(svc._KINDS, "route", svc.JobKind("route", "ml", gated, exclusive=True))
    jobs = [
        svc.job_create(kind="route", project=project, params={"budget": 0.5, "strategy": "random", "seed": s})
        for s in (1, 2)
    ]
    barrier = threading.Barrier(2)
    out: dict = {}
    waited: list[int] = []
    threads = [threading.Thread(target=_drive, args=(j.pk, barrier, out, waited, tried)) for j in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=180)
    assert out == {j.pk: ("succeeded", "") for j in jobs}, out
    assert waited, "one job must have waited behind the other"
    assert not Item.objects.values("candidate", "side").annotate(n=Count("id")).filter(n__gt=1).exists()
    routed = Item.objects.filter(project=project, is_gold=False).values("candidate").distinct().count()
    assert routed == round(0.5 * 120)  # the second job topped up nothing: routed once


@pytest.mark.postgres
def test_many_exclusive_jobs_claimed_at_once_on_postgresql_never_overlap(transactional_db, monkeypatch):
    """Six jobs of three exclusive kinds, six threads claiming at the same instant: the
    project's row lock lets exactly one run at a time, and every one ends succeeded."""
    need(connections["default"].vendor == "postgresql", "needs DATABASE_URL=postgres://...")
    project = project_create(name="pg-serial", task="nli")
    lock = threading.Lock()
    running: list[int] = []
    overlap: list[int] = []

    def slow(job: Job, ctx: svc.JobContext) -> dict:
        with lock:
            running.append(job.pk)
            overlap.append(len(running))
        time.sleep(0.2)
        with lock:
            running.remove(job.pk)
        return {}

    for name in ("route", "train", "autolabel"):
        monkeypatch.setitem(svc._KINDS, name, svc.JobKind(name, "ml", slow, exclusive=True))
    jobs = [svc.job_create(kind=k, project=project) for k in ("route", "train", "autolabel") * 2]
    barrier = threading.Barrier(len(jobs))
    out: dict = {}
    threads = [threading.Thread(target=_drive, args=(j.pk, barrier, out, [], threading.Event())) for j in jobs]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=180)
    assert out == {j.pk: ("succeeded", "") for j in jobs}, out
    assert overlap and max(overlap) == 1
