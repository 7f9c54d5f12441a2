"""Creating a project from the browser: the form, every error next to its field, roles."""

from __future__ import annotations

import pytest
from django.test import Client

from projects.models import Project
from tests.annotate.factories import annotator, researcher

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


@pytest.fixture
def client_r() -> Client:
    c = Client()
    c.force_login(researcher())
    return c


def test_create_a_project_with_the_task_defaults_and_with_its_own_labels(client_r):
    page = client_r.get("/projects/new/")
    assert page.status_code == 200 and b'name="task"' in page.content
    r = client_r.post("/projects/new/", {"name": "mine", "task": "sentiment"})
    p = Project.objects.get(name="mine")
    assert r.status_code == 302 and r["Location"] == f"/projects/{p.pk}/"
    assert list(p.labels.values_list("name", flat=True)) == ["negative", "positive"] and p.text_fields == ["text"]
    r = client_r.post(
        "/projects/new/",
        {"name": "qa", "task": "boolean-qa", "labels": "no, yes", "human_budget": "0.2", "annotators_per_item": "5"},
    )
    qa = Project.objects.get(name="qa")
    assert list(qa.labels.values_list("name", flat=True)) == ["no", "yes"]
    assert (qa.human_budget, qa.annotators_per_item) == (0.2, 5)


def test_every_error_is_shown_next_to_its_field_at_once(client_r):
    Project.objects.create(name="taken", task="nli", text_fields=["premise", "hypothesis"])
    r = client_r.post("/projects/new/", {"name": "taken", "task": "nli"})
    assert r.status_code == 400 and b"already exists" in r.content
    r = client_r.post("/projects/new/", {"name": "", "task": "poetry", "human_budget": "2", "annotators_per_item": "0"})
    html = r.content.decode()
    assert r.status_code == 400
    for field in ("id_name-error", "id_task-error", "id_human_budget-error", "id_annotators_per_item-error"):
        assert field in html, field
    r = client_r.post("/projects/new/", {"name": "a\x00b", "task": "nli"})
    assert r.status_code == 400 and b"name contains a NUL character" in r.content  # projects.middleware
    r = client_r.post("/projects/new/", {"name": "dup-labels", "task": "nli", "labels": "a,a"})
    assert r.status_code == 400 and b"without repeats" in r.content
    r = client_r.post("/projects/new/", {"name": "one-label", "task": "nli", "labels": "abc"})
    assert r.status_code == 400 and "id_labels-error" in r.content.decode()  # nothing could ever flip
    assert b"at least two labels (got only &#x27;abc&#x27;)" in r.content
    r = client_r.post("/projects/new/", {"name": "reserved", "task": "nli", "labels": "a, Unclear ,b"})
    assert r.status_code == 400 and "id_labels-error" in r.content.decode()  # next to its field
    assert b"is reserved for the answer" in r.content
    r = client_r.post("/projects/new/", {"name": "long-label", "task": "nli", "labels": "a," + "b" * 65})
    assert r.status_code == 400 and b"at most 64 characters (65 given)" in r.content  # before the database
    assert not Project.objects.exclude(name="taken").exists()


def test_annotators_cannot_create_projects():
    c = Client()
    c.force_login(annotator(Project.objects.create(name="p", task="nli", text_fields=["premise", "hypothesis"])))
    assert c.get("/projects/new/").status_code == 403
    assert c.post("/projects/new/", {"name": "x", "task": "nli"}).status_code == 403
    assert Client().get("/projects/new/").status_code == 302
