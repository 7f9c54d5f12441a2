"""Generation-run API: detail with progress JSON, start, cancel; researchers only."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User
from rest_framework.test import APIClient

from generation.ml import registry
from generation.models import GenerationRun
from generation.services.runs import run_create, run_execute
from projects import permissions
from tests.generation.run_fixtures import make_project, register_test_generators

pytestmark = pytest.mark.postgres_too


@pytest.fixture(autouse=True)
def _generators():
    register_test_generators()
    yield
    registry.unregister("test-echo")


def _user(name, role):
    u = User.objects.create_user(name, password="pw-123456")
    u.groups.add(Group.objects.get_or_create(name=role)[0])
    return u


@pytest.fixture
def project(db):
    return make_project(name="api", n=4)


@pytest.fixture
def api(db):
    c = APIClient()
    c.force_authenticate(_user("res", permissions.RESEARCHER))
    return c


def test_annotators_and_anonymous_are_refused(project):
    run = run_create(project=project, generator="test-echo", options={})
    anon = APIClient()
    assert anon.get(f"/api/v1/generation/runs/{run.pk}/").status_code in (401, 403)
    c = APIClient()
    c.force_authenticate(_user("ann", permissions.ANNOTATOR))
    assert c.get(f"/api/v1/generation/runs/{run.pk}/").status_code == 403
    assert (
        c.post(f"/api/v1/generation/projects/{project.pk}/runs/", {"generator": "test-echo"}, format="json").status_code
        == 403
    )
    assert c.post(f"/api/v1/generation/runs/{run.pk}/cancel/").status_code == 403


def test_detail_has_progress_json(api, project):
    run = run_execute(run_id=run_create(project=project, generator="test-echo", options={"filters": "none"}).pk)
    data = api.get(f"/api/v1/generation/runs/{run.pk}/").json()
    assert data["id"] == run.pk and data["status"] == "succeeded" and data["finished"] is True
    p = data["progress"]
    assert (p["done"], p["total"], p["percent"], p["candidates"], p["pooled"]) == (4, 4, 100, 12, 12)
    assert set(p) >= {"rate", "eta_seconds", "elapsed_seconds", "skipped", "filtered_out", "fraction"}
    assert data["metrics"]["candidates"] == 12
    assert data["options"]["filters"] == []
    assert api.get("/api/v1/generation/runs/999999/").status_code == 404


def test_a_generator_option_the_generator_does_not_take_is_a_400(api, project):
    """Before: 201, and the run failed in the worker once its models had loaded."""
    resp = api.post(
        f"/api/v1/generation/projects/{project.pk}/runs/",
        {"generator": "rules", "options": {"generator_options": {"x": "type"}}},
        format="json",
    )
    assert resp.status_code == 400
    [message] = resp.json()["generator_options"]
    assert message.startswith("generator 'rules' does not take option(s) x; it takes: ")
    assert not GenerationRun.objects.exists()


def test_the_schema_shows_the_progress_phase(api):
    schema = api.get("/api/schema/", {"format": "json"}).json()
    props = schema["components"]["schemas"]["GenerationRunProgress"]["properties"]
    assert props["phase"]["type"] == props["phase_message"]["type"] == "string"
    assert "phase" in schema["components"]["schemas"]["GenerationRunProgress"]["required"]


def test_start_run(api, project, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        resp = api.post(
            f"/api/v1/generation/projects/{project.pk}/runs/",
            {"generator": "test-echo", "options": {"limit": 2, "filters": ["dedup"]}},
            format="json",
        )
    assert resp.status_code == 201
    run = GenerationRun.objects.get(pk=resp.json()["id"])
    assert run.status == "succeeded" and run.done == 2  # eager task ran on commit
    listed = api.get(f"/api/v1/generation/projects/{project.pk}/runs/").json()
    assert [r["id"] for r in listed] == [run.pk]
    assert listed[0]["progress"]["candidates"] == 6 and listed[0]["progress"]["pooled"] == 6


def test_run_list_has_no_query_per_run(api, project, django_assert_max_num_queries):
    for _ in range(6):
        run_execute(run_id=run_create(project=project, generator="test-echo", options={"filters": "none"}).pk)
    with django_assert_max_num_queries(6):
        data = api.get(f"/api/v1/generation/projects/{project.pk}/runs/").json()
    assert len(data) == 6 and {r["progress"]["candidates"] for r in data} == {12}


@pytest.mark.parametrize(
    "body, field",
    [
        ({"generator": "nope"}, "generator"),
        ({"generator": "test-echo", "options": {"limit": -1}}, "limit"),
        ({"generator": "test-echo", "options": {"similarity_band": "x"}}, "similarity_band"),
        ({}, "generator"),
    ],
)
def test_start_run_bad_input_is_400_with_field_messages(api, project, body, field):
    resp = api.post(f"/api/v1/generation/projects/{project.pk}/runs/", body, format="json")
    assert resp.status_code == 400 and field in resp.json()
    assert not GenerationRun.objects.exists()


def test_cancel(api, project):
    run = run_create(project=project, generator="test-echo", options={})
    resp = api.post(f"/api/v1/generation/runs/{run.pk}/cancel/")
    assert resp.status_code == 200 and resp.json()["status"] == "cancelled"
    again = api.post(f"/api/v1/generation/runs/{run.pk}/cancel/")
    assert again.status_code == 409


def test_generators_listed_and_schema_builds(api):
    assert "rules" in api.get("/api/v1/generation/generators/").json()["generators"]
    schema = api.get("/api/schema/")
    assert schema.status_code == 200
    assert b"/api/v1/generation/runs/{run_id}/" in schema.content


def test_a_project_without_originals_is_refused_with_the_reason(api, db, client):
    """Before: the run was created and "succeeded" on 0 / 0 originals (100 %), its metrics all
    zero, with nothing saying why it found nothing."""
    from projects.services.projects import project_create

    empty = project_create(name="empty", task="nli")
    resp = api.post(f"/api/v1/generation/projects/{empty.pk}/runs/", {"generator": "test-echo"}, format="json")
    assert resp.status_code == 400
    assert resp.json() == {"__all__": ["this project has no originals to generate from: import some first"]}
    client.force_login(_user("res2", permissions.RESEARCHER))
    page = client.post(f"/projects/{empty.pk}/runs/new/", {"generator": "test-echo", "seed": "7"})
    assert page.status_code == 400
    html = page.content.decode()
    assert "this project has no originals to generate from: import some first" in html and 'value="7"' in html
    assert "to fix: see the messages next to them" not in html  # no field has a message (it said "1 field")
    assert not GenerationRun.objects.exists()
