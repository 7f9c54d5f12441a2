"""Cancelling a running train, autolabel, route or export job (QA probe, issue "cancel each job
kind while running"). Their handlers never looked at the cancel: an auto-label job cancelled at
0/720 labelled all 720 candidates and then ended "cancelled"; a cancelled training saved a new
model that became the current one; a cancelled routing routed its items. Now each stops at its
next check and keeps nothing it had not committed, and a cancel that comes after a handler's
last check leaves the job ``succeeded`` (its work is done), not ``cancelled``."""

from __future__ import annotations

import pytest

from annotate.models import Item
from annotate.services import routing
from labeling import services
from labeling.models import AutolabelRun, PairwiseModel
from projects import states
from projects.models import Candidate, Job
from projects.services import exports
from projects.services import jobs as job_svc

from .conftest import FakeEncoder
from .synthetic_project import make_project

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


@pytest.fixture(autouse=True)
def _fake_encoder(monkeypatch, settings, tmp_path):
    settings.COUNTERPART = {
        **settings.COUNTERPART,
        "MODEL_DIR": str(tmp_path / "models"),
        "EXPORT_DIR": str(tmp_path / "exports"),
    }
    monkeypatch.setattr(services, "embedder", lambda: FakeEncoder())


def _cancel(job_id: int) -> None:
    """What the cancel button does, from another request, while the job runs."""
    job_svc.job_cancel(job=Job.objects.get(pk=job_id))


def test_a_cancelled_autolabel_stops_after_the_block_it_is_in(monkeypatch):
    project, _ = make_project(n_pairs=200, n_human=60)
    services.pairwise_train(project=project, mode="pc")
    job = job_svc.job_create(kind="autolabel", project=project, params={"min_confidence": 0.0})
    real = services._autolabel_block
    blocks = []

    def block_then_cancel(*args, **kwargs):
        blocks.append(1)
        if len(blocks) == 1:
            _cancel(job.pk)
        return real(*args, **kwargs)

    monkeypatch.setattr(services, "_autolabel_block", block_then_cancel)
    monkeypatch.setattr(services, "AUTOLABEL_BLOCK", 20)
    job = job_svc.job_execute(job_id=job.pk)

    assert job.status == "cancelled"
    assert len(blocks) == 1  # 140 pooled candidates in blocks of 20: it stopped after the first
    labelled = Candidate.objects.filter(project=project, state__in=[states.AUTO_LABELED, states.ABSTAINED]).count()
    assert labelled == 20
    assert Candidate.objects.filter(project=project, state=states.POOLED).count() == 120
    run = AutolabelRun.objects.get(job=job)
    assert (run.finished, run.considered) == (True, 20)  # the run says what it wrote
    assert job.result["considered"] == 20 and (job.done, job.total) == (20, 140)


def test_a_cancelled_training_saves_no_model(monkeypatch):
    project, _ = make_project()
    services.pairwise_train(project=project, mode="pc")
    current = PairwiseModel.objects.get(project=project)
    job = job_svc.job_start(kind="train", project=project, params={"mode": "pc", "task_model": ""})
    real_step = job_svc.JobContext.step

    def step(self, name, **kwargs):
        if kwargs["index"] == 2:
            _cancel(self.job_id)
        return real_step(self, name, **kwargs)

    monkeypatch.setattr(job_svc.JobContext, "step", step)
    job = job_svc.job_execute(job_id=job.pk)

    assert job.status == "cancelled" and job.error == ""
    assert list(PairwiseModel.objects.filter(project=project)) == [current]
    assert services.latest_model(project) == current


def test_a_training_cancelled_while_fitting_saves_no_model(monkeypatch):
    """The last step fits and saves: a cancel that arrives while h is fitted is seen under the
    project's lock, before the model is recorded."""
    project, _ = make_project()
    job = job_svc.job_start(kind="train", project=project, params={"mode": "pc", "task_model": ""})
    real = services.invariant_baseline  # computed after h is fitted, before the save

    def fitted_then_cancel(pairs, ys):
        _cancel(job.pk)
        return real(pairs, ys)

    monkeypatch.setattr(services, "invariant_baseline", fitted_then_cancel)
    job = job_svc.job_execute(job_id=job.pk)

    assert job.status == "cancelled"
    assert not PairwiseModel.objects.filter(project=project).exists()
    assert not services.model_path(project, 1).exists()


def test_a_cancelled_routing_routes_nothing(monkeypatch):
    project, _ = make_project(n_pairs=100, n_human=0)
    job = job_svc.job_start(kind="route", project=project, params={"budget": 0.2, "seed": 1})
    real = routing._route_ids

    def route_then_cancel(*args, **kwargs):
        result = real(*args, **kwargs)
        _cancel(job.pk)
        return result

    monkeypatch.setattr(routing, "_route_ids", route_then_cancel)
    job = job_svc.job_execute(job_id=job.pk)

    assert job.status == "cancelled"
    assert not Item.objects.filter(project=project).exists()
    assert not Candidate.objects.filter(project=project, state=states.ROUTED).exists()


def test_a_cancelled_export_offers_no_file(monkeypatch):
    project, _ = make_project(n_pairs=40, n_human=40)
    job = exports.export_start(project=project, format="pairs-jsonl", filters={})
    real = exports._relative_images

    def cancel_while_writing(records):
        _cancel(job.pk)
        return real(records)

    monkeypatch.setattr(exports, "_relative_images", cancel_while_writing)
    job = job_svc.job_execute(job_id=job.pk)

    assert job.status == "cancelled"
    assert exports.export_file_for(job=job) is None or not exports.export_file_for(job=job).exists()
    out = exports.export_path(job_id=job.pk, format="pairs-jsonl").parent
    assert not any(out.iterdir())  # neither the file, its manifest nor the temporary file


def test_a_cancel_after_the_work_is_done_leaves_the_job_succeeded(monkeypatch):
    """A routing that committed before the cancel arrived: its items exist, so the job says so."""
    project, _ = make_project(n_pairs=100, n_human=0)
    job = job_svc.job_start(kind="route", project=project, params={"budget": 0.2, "seed": 1})
    real = routing.project_route

    def route_then_cancel(**kwargs):
        result = real(**kwargs)
        _cancel(job.pk)
        return result

    monkeypatch.setattr(routing, "project_route", route_then_cancel)
    job = job_svc.job_execute(job_id=job.pk)

    assert job.status == "succeeded" and job.result["routed"] == 20
    assert Candidate.objects.filter(project=project, state=states.ROUTED).count() == 20


def test_an_autolabel_cancelled_while_its_worker_was_dead_closes_its_run():
    """Killed after its first block, then cancelled before any worker took it up again: the
    resumed execution ends the job cancelled without running it, and the end hook closes the
    run with what its committed block wrote (it was left unfinished, under no latest run)."""
    project, _ = make_project(n_pairs=60, n_human=20)
    model = services.pairwise_train(project=project, mode="pc")
    job = job_svc.job_create(kind="autolabel", project=project, params={"min_confidence": 0.0})
    run = AutolabelRun.objects.create(
        project=project, model=model, min_confidence=0.0, job=job, finished=False,
        considered=20, auto_labeled=15, abstained=3, cursor=1,
    )  # fmt: skip
    Job.objects.filter(pk=job.pk).update(status="running", token="dead", cancel_requested=True)
    job = job_svc.job_execute(job_id=job.pk, take_over=True)

    assert job.status == "cancelled"
    run.refresh_from_db()
    assert (run.finished, run.considered, run.auto_labeled, run.abstained, run.skipped) == (True, 20, 15, 3, 2)
