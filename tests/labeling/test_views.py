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

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


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


def test_an_image_caption_project_is_told_h_is_not_for_it(client):
    """Its originals are captions without a class label: "Train h" came back "0 human-labelled
    pairs, need at least 10 … (4 more have an original without a label)" however many caption
    choices people gave, as if more labels would help. The section now says h is not for such a
    project instead of offering Train h / Auto-label, and a post is refused with that reason."""
    from html import unescape

    login(client, permissions.RESEARCHER)
    project = project_create(name="captions", task="image-caption")
    html = unescape(client.get(f"/labeling/projects/{project.pk}/flip-rates/").content.decode())
    assert "No pairwise classifier here: an image-caption project's originals are captions" in html
    assert "Train h</button>" not in html and "Auto-label the rest</button>" not in html
    resp = client.post(f"/labeling/projects/{project.pk}/train/", {"mode": "capc"})
    assert resp.status_code == 400 and "need at least" not in resp.content.decode()
    assert "h and auto-labelling are for text-classification projects" in unescape(resp.content.decode())
    assert not PairwiseModel.objects.exists()


def test_train_then_autolabel_through_the_page(client, django_capture_on_commit_callbacks):
    login(client, permissions.RESEARCHER)
    project, _ = make_project()
    with django_capture_on_commit_callbacks(execute=True):
        resp = client.post(f"/labeling/projects/{project.pk}/train/", {"mode": "pc"}, HTTP_HX_REQUEST="true")
    assert resp.status_code == 200 and b"Training PC queued" in resp.content
    assert PairwiseModel.objects.filter(project=project, mode="pc").count() == 1  # eager in tests
    with django_capture_on_commit_callbacks(execute=True):
        resp = client.post(f"/labeling/projects/{project.pk}/autolabel/", {"min_confidence": "0.5"})
    # a plain POST (no htmx) is redirected to the page, so a reload starts nothing (issue 32.8)
    assert resp.status_code == 302 and resp["Location"] == f"/projects/{project.pk}/models/#flip-rates"
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


def test_warm_start_is_a_select_of_known_data_sets_checked_by_the_server(client, settings, tmp_path, monkeypatch):
    login(client, permissions.RESEARCHER)
    cad = tmp_path / "cad" / "NLI"
    for part in ("original", "revised_premise", "revised_hypothesis"):
        (cad / part).mkdir(parents=True)
        (cad / part / "train.tsv").write_text("sentence1\tsentence2\tgold_label\n")
    settings.COUNTERPART = {**settings.COUNTERPART, "SHARED_DATA_DIR": str(tmp_path)}
    project = project_create(name="warm", task="nli")
    html = client.get(f"/labeling/projects/{project.pk}/flip-rates/").content.decode()
    assert '<select name="warm_start"' in html and 'value="cad-nli:train"' in html
    assert 'value="cad-nli:dev"' not in html  # no dev files here
    assert 'value="cad-sentiment' not in html  # not this project's task
    # anything else, a typed path above all, is refused next to the field
    resp = client.post(f"/labeling/projects/{project.pk}/train/", {"mode": "capc", "warm_start": "/etc/passwd"})
    assert resp.status_code == 400 and 'id="warm-error-' in resp.content.decode()
    seen = {}

    def fake_start(**kw):
        seen.update(kw)
        raise services.ValidationError("stop here")

    monkeypatch.setattr(services, "pairwise_train_start", fake_start)
    client.post(f"/labeling/projects/{project.pk}/train/", {"mode": "capc", "warm_start": "cad-nli:train"})
    assert seen["warm_start"] == f"cad-nli:{tmp_path / 'cad'}:train"


def test_the_sections_forms_post_without_javascript(django_capture_on_commit_callbacks):
    """The forms of the task-model, h and evaluation sections had only ``hx-post``: without
    JavaScript they were GET forms that reloaded the page with the fields in its URL and
    started nothing. Each is now a POST form to the same URL with its CSRF token, and a plain
    post lands on the page that holds the section (the task-model page, not the overview)."""
    import re

    from django.test import Client

    client = Client(enforce_csrf_checks=True)
    login(client, permissions.RESEARCHER)
    project, _ = make_project()
    for section in ("flip-rates", "task-model", "evaluation"):
        html = client.get(f"/labeling/projects/{project.pk}/{section}/").content.decode()
        forms = re.findall(r"<form\b([^>]*)>(.*?)</form>", html, re.S)
        hx_forms = [(tag, body) for tag, body in forms if "hx-post" in tag]
        assert hx_forms, section
        for tag, body in hx_forms:
            action = re.search(r'\baction="([^"]+)"', tag)
            assert 'method="post"' in tag and action, tag
            assert f'hx-post="{action.group(1)}"' in tag and 'name="csrfmiddlewaretoken"' in body, tag
    html = client.get(f"/labeling/projects/{project.pk}/flip-rates/").content.decode()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', html).group(1)
    with django_capture_on_commit_callbacks(execute=True):
        resp = client.post(f"/labeling/projects/{project.pk}/train/", {"csrfmiddlewaretoken": token, "mode": "pc"})
    assert resp.status_code == 302 and resp["Location"] == f"/projects/{project.pk}/models/#flip-rates"
    assert PairwiseModel.objects.filter(project=project, mode="pc").count() == 1
    models_page = client.get(resp["Location"]).content.decode()  # its sections' own pages, for no script
    assert f'href="/labeling/projects/{project.pk}/flip-rates/"' in models_page
