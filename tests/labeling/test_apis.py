"""Train h and auto-label through the API: jobs (202), refusals (400), roles (403)."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from labeling import services
from labeling.models import PairwiseModel
from projects import states
from projects.models import Candidate, Job
from projects.services.projects import project_create
from tests.annotate.factories import annotator, researcher

from .conftest import FakeEncoder
from .test_services import make_project

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


@pytest.fixture(autouse=True)
def _fake_encoder(monkeypatch, settings, tmp_path):
    settings.COUNTERPART = {**settings.COUNTERPART, "MODEL_DIR": str(tmp_path / "models")}
    monkeypatch.setattr(services, "embedder", lambda: FakeEncoder())


@pytest.fixture
def api():
    c = APIClient()
    c.force_authenticate(researcher())
    return c


def test_train_then_autolabel_as_jobs(api, django_capture_on_commit_callbacks):
    project, _ = make_project()
    with django_capture_on_commit_callbacks(execute=True):
        r = api.post(f"/api/v1/projects/{project.pk}/train/", {"mode": "pc"}, format="json")
    assert r.status_code == 202 and r.json()["kind"] == "train"
    job = Job.objects.get(pk=r.json()["id"])
    steps = len(services.train_steps(mode="pc", warm_start=""))  # reading, encoding, fitting
    assert job.status == "succeeded" and job.result["version"] == 1 and job.done == job.total == steps == 3
    assert PairwiseModel.objects.filter(project=project, mode="pc").count() == 1
    with django_capture_on_commit_callbacks(execute=True):
        r = api.post(f"/api/v1/projects/{project.pk}/autolabel/", {"min_confidence": 0.5}, format="json")
    assert r.status_code == 202
    assert Job.objects.get(pk=r.json()["id"]).status == "succeeded"
    assert Candidate.objects.filter(project=project, state=states.AUTO_LABELED).exists()


def test_refusals_are_400_with_the_reason(api):
    empty = project_create(name="empty", task="nli")
    r = api.post(f"/api/v1/projects/{empty.pk}/train/", {"mode": "pc"}, format="json")
    assert r.status_code == 400 and "need at least" in " ".join(r.json()["detail"])
    assert api.post(f"/api/v1/projects/{empty.pk}/train/", {"mode": "xx"}, format="json").status_code == 400
    r = api.post(f"/api/v1/projects/{empty.pk}/train/", {"warm_start": "/etc/passwd"}, format="json")
    assert r.status_code == 400 and "warm_start" in r.json()
    r = api.post(f"/api/v1/projects/{empty.pk}/autolabel/", {}, format="json")
    assert r.status_code == 400 and "no pairwise model yet" in " ".join(r.json()["detail"])
    r = api.post(f"/api/v1/projects/{empty.pk}/autolabel/", {"min_confidence": 2}, format="json")
    assert r.status_code == 400
    assert api.post("/api/v1/projects/999999/train/", {}, format="json").status_code == 404
    assert not Job.objects.exists()


def test_annotators_cannot_start_them():
    project = project_create(name="p", task="nli")
    c = APIClient()
    c.force_authenticate(annotator(project))
    assert c.post(f"/api/v1/projects/{project.pk}/train/", {}, format="json").status_code == 403
    assert c.post(f"/api/v1/projects/{project.pk}/autolabel/", {}, format="json").status_code == 403
