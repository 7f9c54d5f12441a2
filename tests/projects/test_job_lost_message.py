"""A queued job whose message the broker lost (QA probe: jobs started while the worker was
stopped, then Redis flushed / restarted without persistence; or a web process killed between
its commit and the send). Nothing ever sent the message again: the job stayed ``queued`` for
ever, "stalled: no worker has picked it up", with workers running. Now the sweep sends it again
once it has waited ``lost_message_seconds()`` (10 min by default), at most once per that time;
a duplicate of a message still queued is harmless (the claim)."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from projects import tasks
from projects.models import Job
from projects.services import jobs as svc
from projects.services.projects import project_create

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


@pytest.fixture(autouse=True)
def _broker(sent_messages):
    """No worker runs the jobs: they stay queued."""
    return sent_messages


def _queued(project, *, ago: float, **params) -> Job:  # type: ignore[no-untyped-def]
    job = svc.job_create(kind="export", project=project, params=params)
    Job.objects.filter(pk=job.pk).update(enqueued_at=timezone.now() - timedelta(seconds=ago))
    return job


def test_a_job_queued_long_past_with_its_message_lost_is_sent_again_once(sent_messages):
    project = project_create(name="lost", task="nli")
    window = svc.lost_message_seconds()
    lost = _queued(project, ago=window + 5)
    recent = _queued(project, ago=30)  # merely waiting in a busy queue: left alone
    command = _queued(project, ago=window + 5, foreground=True)  # a command's own: not a worker's
    cancelled = _queued(project, ago=window + 5)
    Job.objects.filter(pk=cancelled.pk).update(status="cancelled")

    assert svc.jobs_sweep() == [lost.pk]
    assert sent_messages == [lost.pk]
    assert svc.jobs_sweep() == []  # not again before another window has passed
    assert Job.objects.get(pk=lost.pk).status == "queued"
    assert Job.objects.get(pk=recent.pk).status == "queued" and recent.pk not in sent_messages
    assert Job.objects.get(pk=command.pk).status in ("queued", "failed") and command.pk not in sent_messages


def test_a_broker_down_at_the_re_send_leaves_the_job_queued(monkeypatch):
    def down(*a, **k):  # type: ignore[no-untyped-def]
        raise ConnectionError("[Errno 111] Connection refused")

    monkeypatch.setattr(tasks.job_execute_task, "apply_async", down)
    project = project_create(name="down", task="nli")
    job = _queued(project, ago=svc.lost_message_seconds() + 5)
    assert svc.jobs_sweep() == []
    job.refresh_from_db()
    assert (job.status, job.error) == ("queued", "")  # its first message may still be in the queue
