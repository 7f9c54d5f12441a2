"""Auto-labelling killed mid-run and resumed: the job's counts are what was written over all
its attempts (it once said "auto_labeled 11000" after labelling 15,000: the resumed attempt
counted only its own part). Each block's labels, the run's counts and its cursor commit
together; a resumed attempt goes on after the cursor with the same model and threshold."""

from __future__ import annotations

import itertools
from datetime import timedelta

import pytest
from django.utils import timezone

from labeling import services
from labeling.models import AutolabelRun
from labeling.selectors import _h_latest
from projects import states
from projects.models import Candidate, Job
from projects.services import jobs as job_svc

from .conftest import FakeEncoder
from .test_services import make_project

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


class WorkerKilled(BaseException):
    """Stands in for SIGKILL: nothing after it runs (BaseException: no handler catches it)."""


@pytest.fixture(autouse=True)
def _fake_encoder(monkeypatch, settings, tmp_path):
    settings.COUNTERPART = {**settings.COUNTERPART, "MODEL_DIR": str(tmp_path / "models")}
    monkeypatch.setattr(services, "embedder", lambda: FakeEncoder())


def _kill_after(calls: int, real):
    """A progress callback that lets ``calls`` progress reports through, then kills."""
    seen = {"n": 0}

    def progress(done: int, total: int) -> None:
        seen["n"] += 1
        if seen["n"] > calls:
            raise WorkerKilled()
        real(done, total)

    return progress


def _killed_attempt(job: Job, *, min_confidence: float, reports: int) -> None:
    """A first execution of the job that is killed after ``reports`` progress reports."""

    def attempt(job: Job, ctx: job_svc.JobContext) -> dict:
        kill = _kill_after(reports, ctx.progress)
        services.autolabel(project=job.project, min_confidence=min_confidence, chunk_size=5, job=job, progress=kill)
        return {}

    with pytest.raises(WorkerKilled):
        job_svc.job_execute(job_id=job.pk, handler=attempt)


def test_a_job_killed_mid_run_and_resumed_counts_every_label_once():
    project, _ = make_project(n_pairs=200, n_human=60)
    services.pairwise_train(project=project, mode="pc")
    pooled = Candidate.objects.filter(project=project, state=states.POOLED).count()
    assert pooled == 140
    job = job_svc.job_create(kind="autolabel", project=project, params={"min_confidence": 0.0})

    # blocks of 4 x 5 = 20 candidates: the start and 2 blocks are committed, killed in the 3rd
    _killed_attempt(job, min_confidence=0.0, reports=3)
    labelled_before = Candidate.objects.filter(project=project, state=states.AUTO_LABELED).count()
    assert labelled_before == 40  # the 3rd block rolled back with its progress report
    run = AutolabelRun.objects.get(job=job)
    assert (run.finished, run.considered, run.auto_labeled) == (False, 40, 40)
    assert _h_latest(project) is None  # an unfinished run is not the latest (export provenance)
    job.refresh_from_db()
    assert (job.status, job.done, job.total) == ("running", 40, 140)

    # the worker is gone; its heartbeat goes stale and the next execution resumes the job
    Job.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    done = job_svc.job_execute(job_id=job.pk)
    assert done.status == "succeeded" and done.attempts == 2
    labelled = Candidate.objects.filter(project=project, state=states.AUTO_LABELED).count()
    assert labelled == 140
    assert done.result["auto_labeled"] == 140 and done.result["considered"] == 140
    assert done.result["abstained"] == 0 and done.result["skipped"] == 0
    assert (done.done, done.total) == (140, 140)
    run.refresh_from_db()
    assert run.finished and run.auto_labeled == 140 and done.result["run"] == run.pk
    assert AutolabelRun.objects.filter(project=project).count() == 1  # one run over both attempts
    assert _h_latest(project) == run


def test_a_resumed_run_keeps_its_threshold_and_does_not_count_abstentions_twice():
    """Abstained candidates stay in the pool: without the cursor a resumed attempt would look
    at the first attempt's abstentions again and count them twice."""
    project, _ = make_project(n_pairs=200, n_human=60)
    services.pairwise_train(project=project, mode="pc")
    job = job_svc.job_create(kind="autolabel", project=project, params={"min_confidence": 1.0})

    _killed_attempt(job, min_confidence=1.0, reports=2)
    assert Candidate.objects.filter(project=project, state=states.ABSTAINED).count() == 20
    Job.objects.filter(pk=job.pk).update(params={"min_confidence": 0.0})  # ignored on resume
    Job.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1))
    done = job_svc.job_execute(job_id=job.pk)
    assert done.status == "succeeded"
    assert done.result["abstained"] == 140 and done.result["auto_labeled"] == 0
    assert done.result["considered"] == 140 and done.result["min_confidence"] == 1.0
    assert Candidate.objects.filter(project=project, state=states.ABSTAINED).count() == 140


def test_progress_moves_while_it_runs_not_only_at_the_end():
    """Issue 25: a job of a few hundred candidates showed 0/N until the end (one block of
    4 × CHUNK = 2,000). Blocks are at most ``AUTOLABEL_BLOCK`` candidates, each reported."""
    project, _ = make_project(n_pairs=600, n_human=60)
    services.pairwise_train(project=project, mode="pc")
    reports: list[tuple[int, int]] = []
    services.autolabel(project=project, min_confidence=0.0, progress=lambda d, t: reports.append((d, t)))
    assert reports[0] == (0, 540) and reports[-1] == (540, 540)
    between = [d for d, _ in reports if 0 < d < 540]
    assert len(between) >= 540 // services.AUTOLABEL_BLOCK - 1
    assert all(b - a <= services.AUTOLABEL_BLOCK + 10 for (a, _), (b, _) in itertools.pairwise(reports))
