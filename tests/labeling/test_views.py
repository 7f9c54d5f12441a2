"""The project page's train / auto-label buttons (htmx POSTs that queue Celery tasks)."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User

from labeling import services
from labeling.models import PairwiseModel
from projects import permissions, states
from projects.models import Candidate
from projects.services.projects import project_create

from .conftest import FakeEncoder
from .test_services import make_project

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fake_encoder(monkeypatch, settings, tmp_path):
    settings.COUNTERPART = {**settings.COUNTERPART, "MODEL_DIR": str(tmp_path / "models")}
    monkeypatch.setattr(services, "embedder", lambda: FakeEncoder())


def login(client, role):
    user = User.objects.create_user(role, password="pw-123456")
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    client.force_login(user)
    return user


def test_train_with_too_few_labels_is_refused_at_once(client):
    login(client, permissions.RESEARCHER)
    project = project_create(name="empty", task="nli")
    resp = client.post(f"/labeling/projects/{project.pk}/train/", {"mode": "capc"})
    assert resp.status_code == 400
    assert b"cannot train yet" in resp.content and b"need at least" in resp.content
    assert not PairwiseModel.objects.exists()


def test_train_then_autolabel_through_the_page(client, django_capture_on_commit_callbacks):
    login(client, permissions.RESEARCHER)
    project, _ = make_project()
    with django_capture_on_commit_callbacks(execute=True):
        resp = client.post(f"/labeling/projects/{project.pk}/train/", {"mode": "pc"})
    assert resp.status_code == 200 and b"Training PC queued" in resp.content
    assert PairwiseModel.objects.filter(project=project, mode="pc").count() == 1  # eager in tests
    with django_capture_on_commit_callbacks(execute=True):
        resp = client.post(f"/labeling/projects/{project.pk}/autolabel/", {"min_confidence": "0.5"})
    assert resp.status_code == 200
    assert Candidate.objects.filter(project=project, state=states.AUTO_LABELED).exists()


def test_autolabel_without_a_model_and_bad_threshold(client):
    login(client, permissions.RESEARCHER)
    project, _ = make_project()
    resp = client.post(f"/labeling/projects/{project.pk}/autolabel/")
    assert resp.status_code == 400 and b"no pairwise model yet" in resp.content
    services.pairwise_train(project=project, mode="pc")
    resp = client.post(f"/labeling/projects/{project.pk}/autolabel/", {"min_confidence": "2"})
    assert resp.status_code == 400 and b"between 0 and 1" in resp.content
    assert not Candidate.objects.filter(project=project, state=states.AUTO_LABELED).exists()


def test_annotators_cannot_train_or_autolabel(client):
    login(client, permissions.ANNOTATOR)
    project, _ = make_project()
    assert client.post(f"/labeling/projects/{project.pk}/train/").status_code == 403
    assert client.post(f"/labeling/projects/{project.pk}/autolabel/").status_code == 403
    assert client.get(f"/labeling/projects/{project.pk}/flip-rates/").status_code == 403
    assert not PairwiseModel.objects.exists()


def test_get_is_not_allowed(client):
    login(client, permissions.RESEARCHER)
    project = project_create(name="p2", task="nli")
    assert client.get(f"/labeling/projects/{project.pk}/train/").status_code == 405
