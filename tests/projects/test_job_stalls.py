"""Stalls are visible (job box, /jobs/, the run page, the API), /jobs/ is in the navigation,
exports report progress while they write, and a worker restarted without celery beat resumes
the job it was killed in (a second sweep once the stale threshold has passed)."""

from __future__ import annotations

from datetime import timedelta
from types import SimpleNamespace

import pytest
from django.test import Client
from django.utils import timezone

from generation.services.runs import run_create
from projects import tasks
from projects.models import Job
from projects.selectors import job_as_dict, job_progress
from projects.services import exports
from projects.services import jobs as svc
from projects.services.projects import project_create
from tests.annotate.factories import annotator, project_with_candidates, researcher
from tests.generation.run_fixtures import make_project, register_test_generators

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


@pytest.fixture
def stale_60(settings):
    settings.COUNTERPART = {**settings.COUNTERPART, "JOB_STALE_SECONDS": 60, "JOB_HEARTBEAT_SECONDS": 10}


def _client():
    c = Client()
    c.force_login(researcher())
    return c


def test_a_queued_job_no_worker_picked_up_and_a_running_one_without_heartbeat_are_stalled(stale_60):
    project = project_create(name="stalls", task="nli")
    now = timezone.now()
    queued = svc.job_create(kind="export", project=project)
    Job.objects.filter(pk=queued.pk).update(enqueued_at=now - timedelta(seconds=300))
    running = svc.job_create(kind="export", project=project)
    Job.objects.filter(pk=running.pk).update(
        status="running", started_at=now - timedelta(hours=1), heartbeat_at=now - timedelta(seconds=200)
    )
    alive = svc.job_create(kind="export", project=project)
    Job.objects.filter(pk=alive.pk).update(status="running", started_at=now, heartbeat_at=now - timedelta(seconds=5))
    fresh = svc.job_create(kind="export", project=project)
    Job.objects.filter(pk=fresh.pk).update(enqueued_at=now - timedelta(seconds=5))
    q, r, a, f = (Job.objects.get(pk=j.pk) for j in (queued, running, alive, fresh))
    assert job_progress(job=q, now=now).stalled == "stalled: no worker has picked it up for 300 s"
    assert job_progress(job=r, now=now).stalled == "stalled: no worker has reported for 200 s"
    assert job_progress(job=a, now=now).stalled == "" and job_progress(job=f, now=now).stalled == ""
    assert job_as_dict(job=r, now=now)["stalled"] == "stalled: no worker has reported for 200 s"
    assert job_as_dict(job=a, now=now)["stalled"] is None
    Job.objects.filter(pk=running.pk).update(status="succeeded")  # a finished job is never stalled
    assert job_progress(job=Job.objects.get(pk=running.pk), now=now).stalled == ""

    c = _client()
    box = c.get(f"/jobs/{queued.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert "stalled: no worker has picked it up for" in box and 'data-role="stalled"' in box
    page = c.get("/jobs/").content.decode()
    assert "stalled: no worker has picked it up for" in page
    assert c.get(f"/jobs/{alive.pk}/", HTTP_HX_REQUEST="true").content.decode().count("stalled") == 0


def test_the_jobs_command_says_stalled_and_no_false_eta(stale_60):
    """QA: `jobs` said "running … about 0 s left" for a job whose worker had died, and never
    "stalled"; the ETA of the last batch ran down to 0 while nothing moved."""
    from io import StringIO

    from django.core.management import call_command

    project = project_create(name="cmd-jobs", task="nli")
    now = timezone.now()
    job = svc.job_create(kind="export", project=project)
    Job.objects.filter(pk=job.pk).update(
        status="running",
        started_at=now - timedelta(seconds=400),
        heartbeat_at=now - timedelta(seconds=200),
        done=100,
        total=1000,
    )
    out = StringIO()
    call_command("jobs", "--project", "cmd-jobs", stdout=out)
    line = out.getvalue()
    assert "stalled: no worker has reported for" in line
    assert "s left" not in line and "/s" not in line
    assert "100 / 1000" in line
    Job.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now())  # alive again: its rate is shown
    out = StringIO()
    call_command("jobs", "--project", "cmd-jobs", stdout=out)
    assert "stalled" not in out.getvalue() and "s left" in out.getvalue()


def test_the_run_page_says_a_run_is_stalled(stale_60):
    register_test_generators()
    project = make_project(name="stall-run", n=3)
    run = run_create(project=project, generator="test-echo", options={"filters": ["dedup"]})
    Job.objects.filter(pk=run.job_id).update(
        status="running",
        started_at=timezone.now() - timedelta(hours=1),
        heartbeat_at=timezone.now() - timedelta(hours=1),
    )
    c = _client()
    page = c.get(f"/runs/{run.pk}/").content.decode()
    assert "stalled: no worker has reported for" in page
    api = c.get(f"/api/v1/generation/runs/{run.pk}/").json()
    assert api["progress"]["stalled"].startswith("stalled: no worker has reported for")


def test_jobs_is_in_the_navigation_of_researchers_only():
    project = project_create(name="nav", task="nli")
    c = _client()
    assert 'href="/jobs/"' in c.get("/", follow=True).content.decode()
    a = Client()
    a.force_login(annotator(project))
    page = a.get("/", follow=True)
    assert page.status_code == 200 and 'href="/jobs/"' not in page.content.decode()


def test_an_export_job_reports_rows_written_while_it_writes(monkeypatch, tmp_path, settings):
    settings.MEDIA_ROOT = str(tmp_path)
    project = project_with_candidates(name="export-progress", n=25)
    clock = iter(range(0, 10_000, 2))  # every row looks 2 s after the last report
    monkeypatch.setattr(exports, "_clock", lambda: next(clock))
    seen: list[tuple[int, int, str]] = []
    real_progress = svc.JobContext.progress

    def spy(self, done, total=None):
        seen.append((done, total, Job.objects.get(pk=self.job_id).status))
        return real_progress(self, done, total)

    monkeypatch.setattr(svc.JobContext, "progress", spy)
    job = svc.job_create(kind="export", project=project, params={"format": "pairs-jsonl"})
    job = svc.job_execute(job_id=job.pk)
    assert job.status == "succeeded" and (job.done, job.total) == (25, 25)
    during = [(d, t) for d, t, status in seen if status == "running"]
    assert during[0] == (0, 25)
    # reported as rows were handed to the writer, then once more when the file is in place
    assert [d for d, _ in during[1:]] == [*range(1, 26), 25]
    assert all(t == 25 for _, t in during)


class _Consumer:
    def __init__(self, *queues: str) -> None:
        self.task_consumer = SimpleNamespace(queues=[SimpleNamespace(name=q) for q in queues])


def test_a_starting_worker_sweeps_now_and_again_once_the_stale_threshold_has_passed(monkeypatch, stale_60):
    sent: list[dict] = []
    monkeypatch.setattr(tasks.jobs_sweep_task, "apply_async", lambda **kw: sent.append(kw))
    tasks._sweep_when_a_worker_starts(sender=_Consumer("ml", "default"))
    assert sent == [{"queue": "default"}, {"queue": "default", "countdown": 70.0}]
    sent.clear()
    tasks._sweep_when_a_worker_starts(sender=_Consumer("generation"))  # a worker of one queue
    assert [s["queue"] for s in sent] == ["generation", "generation"]
    assert sent[1]["countdown"] > 60


def test_the_second_sweep_resumes_the_job_a_restarted_worker_was_killed_in(monkeypatch, stale_60):
    """The worker was killed at t=0 while running the job (heartbeat fresh) and restarted
    at once: its first sweep finds nothing stale; the one scheduled after the threshold
    re-sends the job, which resumes — without beat."""
    project = project_create(name="restart", task="nli")
    resent: list[int] = []
    monkeypatch.setattr(tasks.job_execute_task, "apply_async", lambda args, **kw: resent.append(args[0]))
    killed_at = timezone.now()
    job = svc.job_create(kind="export", project=project)
    Job.objects.filter(pk=job.pk).update(
        status="running", token="dead", heartbeat_at=killed_at, enqueued_at=killed_at - timedelta(seconds=1)
    )
    assert svc.jobs_sweep(now=killed_at + timedelta(seconds=2)) == []  # the start-up sweep
    later = killed_at + timedelta(seconds=2 + svc.sweep_after_start_seconds())
    assert svc.jobs_sweep(now=later) == [job.pk] and resent == [job.pk]
