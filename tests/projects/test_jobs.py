"""The one job mechanism: create/enqueue after commit, broker down → failed + 503, claiming
(a finished or live-owned job is left alone, a stale one is taken over), the heartbeat sweep,
cancel, progress, the ``jobs`` command, the jobs API and the polling fragment."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.utils import timezone
from rest_framework.test import APIClient

from projects import tasks
from projects.models import Job
from projects.selectors import job_progress
from projects.services import jobs as svc
from projects.services.projects import project_create
from tests.annotate.factories import annotator, researcher

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]

CALLS: list[int] = []


def _handler(job: Job, ctx: svc.JobContext) -> dict:
    CALLS.append(job.pk)
    for i in range(job.params.get("steps", 3)):
        ctx.check_cancelled()
        ctx.progress(i + 1, job.params.get("steps", 3))
    if job.params.get("fail"):
        raise svc.JobFailed("the data cannot do that")
    return {"answer": 42}


@pytest.fixture(autouse=True)
def _export_kind_is_a_test_handler(monkeypatch):
    """Tests drive the mechanism through the ``export`` kind with a test handler."""
    monkeypatch.setitem(svc._KINDS, "export", svc.JobKind("export", "default", _handler))
    CALLS.clear()


@pytest.fixture
def project():
    return project_create(name="jobs", task="nli")


def test_a_job_is_enqueued_on_commit_and_runs_to_success(project, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        job = svc.job_start(kind="export", project=project, params={"steps": 4})
        assert job.status == "queued" and not CALLS  # nothing runs before the commit
    assert len(callbacks) == 1
    job.refresh_from_db()
    assert (job.status, job.done, job.total, job.result, job.attempts) == ("succeeded", 4, 4, {"answer": 42}, 1)
    assert job.started_at and job.finished_at and job.enqueued_at and job.token
    p = job_progress(job=job)
    assert p.finished and p.percent == 100 and p.eta_seconds is None


def test_broker_down_marks_the_job_failed_with_a_clear_message(
    project, monkeypatch, django_capture_on_commit_callbacks
):
    def down(*a, **k):
        raise ConnectionError("[Errno 111] Connection refused")

    monkeypatch.setattr(tasks.job_execute_task, "apply_async", down)
    with (
        pytest.raises(svc.BrokerUnavailable, match="broker is unreachable"),
        django_capture_on_commit_callbacks(execute=True),
    ):
        svc.job_start(kind="export", project=project)
    job = Job.objects.get()
    assert job.status == "failed" and "could not enqueue the job" in job.error and not CALLS


def test_a_queue_declared_by_two_processes_at_once_is_sent_again(
    project, monkeypatch, django_capture_on_commit_callbacks
):
    """The embedded SQL broker: a worker starting and the web process declaring the same queue
    at once made the second insert of the queue's row fail (a 500 on an import); the send is
    tried again, once."""
    from sqlalchemy.exc import IntegrityError

    sent: list[int] = []

    def racing(args, **kw):  # type: ignore[no-untyped-def]
        if not sent:
            sent.append(-1)
            raise IntegrityError("INSERT INTO kombu_queue", {}, Exception("UNIQUE constraint failed: kombu_queue.name"))
        sent.append(args[0])

    monkeypatch.setattr(tasks.job_execute_task, "apply_async", racing)
    with django_capture_on_commit_callbacks(execute=True):
        job = svc.job_start(kind="export", project=project)
    assert sent == [-1, job.id]
    assert Job.objects.get().status == "queued"


@pytest.fixture
def embedded_broker(tmp_path, monkeypatch):
    """The app sends to a real embedded broker (kombu's SQL transport on a fresh SQLite file),
    not eagerly; its pools are this test's. Yields the file."""
    from celery import current_app

    broker = tmp_path / "broker.sqlite3"
    monkeypatch.setitem(current_app.conf, "broker_url", f"sqla+sqlite:///{broker}")
    monkeypatch.setitem(current_app.conf, "task_always_eager", False)
    monkeypatch.setattr(current_app, "_pool", None)  # pools for this broker, not the test settings' one
    monkeypatch.setattr(current_app.amqp, "_producer_pool", None)
    try:
        yield broker
    finally:
        current_app.pool.force_close_all()


# kombu's own SQL transport models use SQLAlchemy's deprecated ``noload`` strategy
@pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy is deprecated")
def test_the_queue_race_on_the_real_embedded_broker_sends_the_job_once(
    project, embedded_broker, monkeypatch, django_capture_on_commit_callbacks
):
    """The same race on kombu's real SQL transport (a SQLite broker file): the row of the queue
    appears between this process's look-up and its insert, and the insert fails inside the real
    channel. The job's message still lands, once, and the next job's message after it."""
    import sqlite3

    from kombu.transport import sqlalchemy as sqla
    from sqlalchemy import insert

    original = sqla.Channel._get_or_create
    raced: list[str] = []

    def racing(self, queue):  # type: ignore[no-untyped-def]
        if not raced:
            raced.append(queue)
            engine, _ = self._open()
            with engine.begin() as other:  # the other process's insert, after our look-up
                other.execute(insert(self.queue_cls.__table__).values(name=queue))
            self.session.add(self.queue_cls(queue))
            self.session.commit()  # the real IntegrityError
        return original(self, queue)

    monkeypatch.setattr(sqla.Channel, "_get_or_create", racing)
    with django_capture_on_commit_callbacks(execute=True):
        job = svc.job_start(kind="export", project=project)
    with django_capture_on_commit_callbacks(execute=True):  # the next request's job
        after = svc.job_start(kind="export", project=project, params={"format": "csv"})  # another export
    assert raced == [svc.job_kind("export").queue]
    assert Job.objects.filter(pk__in=[job.pk, after.pk], status="queued").count() == 2
    with sqlite3.connect(embedded_broker) as db:
        assert db.execute("SELECT count(*) FROM kombu_message").fetchone() == (2,)
        assert db.execute("SELECT name FROM kombu_queue").fetchall() == [(raced[0],)]


@pytest.mark.filterwarnings("ignore:The ``noload`` loader strategy is deprecated")
def test_the_queues_declared_up_front_leave_no_row_for_a_sender_to_insert(
    project, embedded_broker, monkeypatch, django_capture_on_commit_callbacks
):
    """``jobs --declare-queues`` (scripts/run.sh, scripts/workers.sh) declares every job queue in
    a fresh embedded broker; a job sent after it inserts no queue row of its own, so there is no
    race left to lose; an unreachable broker is said in words."""
    import sqlite3

    from celery import current_app

    out = StringIO()
    call_command("jobs", "--declare-queues", stdout=out)
    with sqlite3.connect(embedded_broker) as db:
        declared = [name for (name,) in db.execute("SELECT name FROM kombu_queue ORDER BY id")]
        before = db.execute("SELECT max(id) FROM kombu_queue").fetchone()
    with django_capture_on_commit_callbacks(execute=True):
        svc.job_start(kind="export", project=project)
    assert declared == svc.job_queues() and {"default", "interactive", "generation"} <= set(declared)
    assert out.getvalue().strip() == f"declared the job queues: {', '.join(declared)}"
    with sqlite3.connect(embedded_broker) as db:
        assert db.execute("SELECT max(id) FROM kombu_queue").fetchone() == before
        assert db.execute("SELECT count(*) FROM kombu_message").fetchone() == (1,)
    current_app.pool.force_close_all()
    monkeypatch.setitem(current_app.conf, "broker_url", "redis://127.0.0.1:1/0")  # nothing listens there
    monkeypatch.setattr(current_app, "_pool", None)
    with pytest.raises(CommandError, match="could not declare the job queues: the task broker is unreachable"):
        call_command("jobs", "--declare-queues")


def _stepped(job: Job, ctx: svc.JobContext) -> dict:
    for index in (1, 2):
        ctx.step(f"step {index}", index=index, count=2)
    if job.params.get("fail"):
        raise svc.JobFailed("the second step failed")
    return {}


def test_a_job_counted_in_steps_reads_all_done_once_it_succeeds(project, monkeypatch):
    """``step`` writes ``done`` as each step begins (1 of 2 while the last runs): a succeeded job
    reads 2 of 2, not 1 of 2; a failed one keeps where it got to, and so does a job counted in
    units (``progress``), whose count is what it did."""
    monkeypatch.setitem(svc._KINDS, "export", svc.JobKind("export", "default", _stepped))
    ok = svc.job_create(kind="export", project=project, params={})
    bad = svc.job_create(kind="export", project=project, params={"fail": True})
    svc.job_execute(job_id=ok.pk)
    svc.job_execute(job_id=bad.pk)
    ok.refresh_from_db()
    bad.refresh_from_db()
    assert (ok.status, ok.done, ok.total) == ("succeeded", 2, 2)
    assert (bad.status, bad.done, bad.total) == ("failed", 1, 2)
    # a job counted in units keeps its count: a generation run out of originals early read 4 of 5
    monkeypatch.setitem(svc._KINDS, "export", svc.JobKind("export", "default", lambda job, ctx: ctx.progress(4, 5)))
    units = svc.job_execute(job_id=svc.job_create(kind="export", project=project, params={}).pk)
    assert (units.status, units.done, units.total) == ("succeeded", 4, 5)


def test_a_handler_failure_is_recorded_not_hidden(project):
    job = svc.job_create(kind="export", project=project, params={"fail": True})
    svc.job_execute(job_id=job.pk)
    job.refresh_from_db()
    assert (job.status, job.error) == ("failed", "the data cannot do that")


def test_an_unexpected_exception_fails_the_job_with_a_plain_message_and_is_logged(project, monkeypatch, caplog):
    """No raw exception text (it may be database text) on the job: a reference to the
    traceback in the worker's log."""

    def boom(job, ctx):
        raise RuntimeError('duplicate key value violates unique constraint "item_unique_candidate_side"')

    monkeypatch.setitem(svc._KINDS, "export", svc.JobKind("export", "default", boom))
    job = svc.job_create(kind="export", project=project)
    with pytest.raises(RuntimeError):
        svc.job_execute(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "failed"
    assert job.error.startswith("an internal error stopped the job (logged as job-")
    assert "duplicate" not in job.error and "RuntimeError" not in job.error
    ref = job.error.split("logged as ")[1].split(" ")[0]
    logged = [r for r in caplog.records if ref in r.getMessage()]
    assert logged and logged[0].exc_info and "item_unique_candidate_side" in str(logged[0].exc_info[1])


def test_finished_and_live_jobs_are_left_alone_stale_ones_are_taken_over(project):
    done = svc.job_create(kind="export", project=project)
    svc.job_execute(job_id=done.pk)
    assert svc.job_execute(job_id=done.pk).attempts == 1 and [done.pk] == CALLS  # a redelivered message
    live = svc.job_create(kind="export", project=project)
    Job.objects.filter(pk=live.pk).update(status="running", heartbeat_at=timezone.now(), token="other", attempts=1)
    assert svc.job_execute(job_id=live.pk).token == "other" and live.pk not in CALLS
    Job.objects.filter(pk=live.pk).update(heartbeat_at=timezone.now() - timedelta(minutes=10))
    resumed = svc.job_execute(job_id=live.pk)
    assert resumed.status == "succeeded" and resumed.attempts == 2 and resumed.token != "other"


def test_a_superseded_execution_stops_without_finishing_the_job(project, monkeypatch):
    def stolen(job, ctx):
        Job.objects.filter(pk=job.pk).update(token="someone-else")  # presumed dead, taken over
        ctx.progress(1, 2)
        return {"never": "recorded"}

    monkeypatch.setitem(svc._KINDS, "export", svc.JobKind("export", "default", stolen))
    job = svc.job_create(kind="export", project=project)
    job = svc.job_execute(job_id=job.pk)
    assert job.status == "running" and job.result == {} and job.token == "someone-else"


def test_cancel_a_queued_job_at_once_and_a_running_one_at_its_next_step(project):
    queued = svc.job_cancel(job=svc.job_create(kind="export", project=project))
    assert queued.status == "cancelled" and queued.finished_at
    assert svc.job_execute(job_id=queued.pk).status == "cancelled" and not CALLS

    def cancel_midway(job, ctx):
        ctx.progress(1, 3)
        svc.job_cancel(job=job)
        ctx.check_cancelled()
        raise AssertionError("not reached")

    svc._KINDS["export"] = svc.JobKind("export", "default", cancel_midway)
    running = svc.job_create(kind="export", project=project)
    running = svc.job_execute(job_id=running.pk)
    assert (running.status, running.done) == ("cancelled", 1)


def test_the_sweep_re_enqueues_stale_running_jobs_once_per_window(project, settings, monkeypatch):
    settings.COUNTERPART = {**settings.COUNTERPART, "JOB_STALE_SECONDS": 60}
    sent: list[int] = []
    monkeypatch.setattr(tasks.job_execute_task, "apply_async", lambda args, **kw: sent.append(args[0]))
    now = timezone.now()
    stale = svc.job_create(kind="export", project=project)
    fresh = svc.job_create(kind="export", project=project)
    queued = svc.job_create(kind="export", project=project)
    Job.objects.filter(pk=stale.pk).update(
        status="running", heartbeat_at=now - timedelta(seconds=90), enqueued_at=now - timedelta(hours=1)
    )
    Job.objects.filter(pk=fresh.pk).update(status="running", heartbeat_at=now - timedelta(seconds=5))
    assert svc.jobs_sweep(now=now) == [stale.pk] and sent == [stale.pk]
    assert svc.jobs_sweep(now=now + timedelta(seconds=10)) == []  # not again within the window
    Job.objects.filter(pk=fresh.pk).update(heartbeat_at=now + timedelta(seconds=55))  # its worker beats on
    assert svc.jobs_sweep(now=now + timedelta(seconds=61)) == [stale.pk]
    assert queued.pk not in sent and fresh.pk not in sent


def test_unknown_kind_is_refused(project):
    with pytest.raises(LookupError):
        svc.job_create(kind="generation-typo", project=project)


def test_jobs_command_json_is_the_formats_contract(project):
    job = svc.job_create(kind="export", project=project)
    svc.job_execute(job_id=job.pk)
    svc.job_create(kind="export", project=project)
    out = StringIO()
    call_command("jobs", "--project", "jobs", "--json", stdout=out)
    rows = json.loads(out.getvalue().strip().splitlines()[-1])
    assert [r["status"] for r in rows] == ["queued", "succeeded"]  # newest first
    for key in ("id", "kind", "project", "status", "done", "total", "error", "started_at", "finished_at"):
        assert key in rows[0]
    assert rows[1]["project"] == "jobs" and rows[1]["kind"] == "export" and rows[1]["error"] is None
    text = StringIO()
    call_command("jobs", stdout=text)
    assert "export" in text.getvalue() and "succeeded" in text.getvalue()


def test_jobs_api_list_detail_cancel_and_roles(project):
    job = svc.job_create(kind="export", project=project)
    api = APIClient()
    api.force_authenticate(researcher())
    assert api.get("/api/v1/jobs/").json()[0]["id"] == job.pk
    assert api.get(f"/api/v1/jobs/?project={project.pk}&kind=export").status_code == 200
    assert api.get("/api/v1/jobs/?project=abc").status_code == 400
    assert api.get("/api/v1/jobs/?kind=nope").status_code == 400
    assert api.get("/api/v1/jobs/?limit=0").status_code == 400
    assert api.get("/api/v1/jobs/999999/").status_code == 404
    assert api.get(f"/api/v1/jobs/{job.pk}/").json()["status"] == "queued"
    r = api.post(f"/api/v1/jobs/{job.pk}/cancel/")
    assert r.status_code == 200 and r.json()["status"] == "cancelled"
    assert api.post(f"/api/v1/jobs/{job.pk}/cancel/").status_code == 409
    other = APIClient()
    other.force_authenticate(annotator(project))
    assert other.get("/api/v1/jobs/").status_code == 403
    assert APIClient().get("/api/v1/jobs/").status_code in (401, 403)


def test_the_fragment_polls_until_the_job_ends_then_stops_and_says_so(project):
    job = svc.job_create(kind="export", project=project, params={"steps": 2})
    c = Client()
    c.force_login(researcher())
    r = c.get(f"/jobs/{job.pk}/", HTTP_HX_REQUEST="true")
    assert r.status_code == 200 and b'hx-trigger="every 1s"' in r.content
    svc.job_execute(job_id=job.pk)
    r = c.get(f"/jobs/{job.pk}/", HTTP_HX_REQUEST="true")
    assert r.status_code == 286 and b"every 1s" not in r.content and b"succeeded" in r.content
    assert json.loads(r["HX-Trigger"])["job-finished"]["id"] == job.pk
    assert c.get("/jobs/").status_code == 200
    assert c.get("/jobs/99999/").status_code == 404


def test_the_fragment_url_opened_without_htmx_is_a_page_not_a_bare_fragment(project):
    """The job box's polling URL opened directly (a new tab, a crawler) was the bare ``<div>``:
    no title, no heading, no styles. It is now the box on a page of its own."""
    job = svc.job_create(kind="export", project=project)
    c = Client()
    c.force_login(researcher())
    html = c.get(f"/jobs/{job.pk}/").content.decode()
    assert html.startswith("<!doctype html>") and f"<title>Job {job.pk} · {project.name}</title>" in html
    assert f"<h1>Job {job.pk} · {project.name}" in html and f'id="job-{job.pk}"' in html
    box = c.get(f"/jobs/{job.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert "<html" not in box and f'id="job-{job.pk}"' in box


def test_a_job_that_is_gone_is_the_apps_404_page_and_its_poll_stops(project):
    """``/jobs/<id>/`` of no job answered the bare text "no such job"; its box's poll (the job
    deleted with its project) swapped that text in and went on polling."""
    c = Client()
    c.force_login(researcher())
    page = c.get("/jobs/99999/")
    assert page.status_code == 404 and '<h1 id="error-heading">Not found (404)</h1>' in page.content.decode()
    poll = c.get("/jobs/99999/", HTTP_HX_REQUEST="true")
    assert poll.status_code == 286 and "<html" not in poll.content.decode()


def test_the_fragment_shows_a_result_with_a_key_called_items(project):
    """Routing's result has an "items" count: the template must not read ``result.items`` as
    that key (it did, and the route page's job fragment answered 500 once routing succeeded)."""
    job = svc.job_create(kind="export", project=project)
    Job.objects.filter(pk=job.pk).update(status="succeeded", result={"routed": 3, "items": 3})
    c = Client()
    c.force_login(researcher())
    r = c.get(f"/jobs/{job.pk}/", HTTP_HX_REQUEST="true")
    assert r.status_code == 286 and b"<dt>items</dt><dd>3</dd>" in r.content


@pytest.fixture
def broker_down(monkeypatch):
    def down(*a, **k):
        raise ConnectionError("[Errno 111] Connection refused")

    monkeypatch.setattr(tasks.job_execute_task, "apply_async", down)


@pytest.mark.django_db(transaction=True)  # autocommit: on_commit runs inside the view, as in production
def test_broker_down_answers_503_from_every_page_and_api_that_starts_a_job(broker_down):
    """Generation (page + API), routing (page + API): the job is marked failed with a clear
    message, the answer is 503 with that message, nothing runs inline."""
    from generation.models import GenerationRun
    from tests.generation.run_fixtures import make_project, register_test_generators

    register_test_generators()
    project = make_project(name="down", n=3)
    user = researcher()
    page, api = Client(), APIClient()
    page.force_login(user)
    api.force_authenticate(user)
    r = page.post(f"/projects/{project.pk}/runs/new/", {"generator": "test-echo", "filters": ["dedup"]})
    assert r.status_code == 503 and b"task broker is unreachable" in r.content
    r = api.post(f"/api/v1/generation/projects/{project.pk}/runs/", {"generator": "test-echo"}, format="json")
    assert r.status_code == 503 and "task broker is unreachable" in r.json()["detail"]
    r = api.post(f"/api/v1/projects/{project.pk}/route/", {"strategy": "random"}, format="json")
    assert r.status_code == 503
    r = page.post(f"/annotate/projects/{project.pk}/route/", {"strategy": "random"})
    assert r.status_code == 503 and b"task broker is unreachable" in r.content
    assert {j.status for j in Job.objects.all()} == {"failed"} and Job.objects.count() == 4
    assert all("could not enqueue the job" in j.error for j in Job.objects.all())
    assert not GenerationRun.objects.filter(job__status="succeeded").exists()


def test_the_job_service_finds_the_job_task_by_name_without_importing_the_tasks_module():
    """projects.services.jobs and projects.tasks import one way only (tasks -> service): the
    service looks the task up in the Celery registry, where projects.apps registered it."""
    import ast
    import inspect

    task = svc._job_task()
    assert task.name == svc.JOB_TASK == tasks.job_execute_task.name
    imported = {node.module for node in ast.walk(ast.parse(inspect.getsource(svc))) if isinstance(node, ast.ImportFrom)}
    assert "projects.tasks" not in imported


def test_a_job_that_keeps_killing_its_worker_is_failed_by_the_sweep_not_resumed_for_ever(
    project, settings, monkeypatch
):
    """QA probe: a job whose execution kills the worker (out of memory) was re-enqueued by every
    sweep after every restart, for ever, 'running' with attempts 1, 2, 3, … Now the sweep fails
    it once it has been executed JOB_MAX_ATTEMPTS times, with a message that says why."""
    settings.COUNTERPART = {**settings.COUNTERPART, "JOB_STALE_SECONDS": 60, "JOB_MAX_ATTEMPTS": 3}
    sent: list[int] = []
    monkeypatch.setattr(tasks.job_execute_task, "apply_async", lambda args, **kw: sent.append(args[0]))
    ended: list[tuple[int, str]] = []
    monkeypatch.setitem(
        svc._KINDS,
        "export",
        svc.JobKind("export", "default", _handler, on_end=lambda job_id, status: ended.append((job_id, status))),
    )
    now = timezone.now()
    job = svc.job_create(kind="export", project=project)
    for attempts, resumed in ((1, True), (2, True), (3, False)):
        Job.objects.filter(pk=job.pk).update(
            status="running", attempts=attempts, heartbeat_at=now - timedelta(seconds=90), enqueued_at=None
        )
        assert (svc.jobs_sweep(now=now) == [job.pk]) is resumed
    job.refresh_from_db()
    assert job.status == "failed" and job.finished_at
    assert job.error == svc.gave_up_message(3) and "stopped 3 times" in job.error
    assert sent == [job.pk, job.pk] and ended == [(job.pk, "failed")]
    assert svc.job_execute(job_id=job.pk).status == "failed" and not CALLS  # a late message does nothing
