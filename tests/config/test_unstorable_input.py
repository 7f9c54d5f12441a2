"""Input that answered 500 on PostgreSQL (issue 18, point 4): a NUL in query parameters and
form fields, a lone surrogate echoed back in a DRF choice error, a non-numeric user id on the
tokens page, and text longer than the column it goes to. Each is a 4xx now, nothing is
written, and the answer never carries the bad character back.

These run on SQLite and, with ``DATABASE_URL=postgres://…``, on PostgreSQL (which refuses NUL
in text and lone surrogates in UTF-8, and checks ``varchar`` lengths) — scripts/test.sh does both.
"""

from __future__ import annotations

import json
from urllib.parse import urlencode

import pytest
from axes.models import AccessAttempt
from django.test import Client
from rest_framework.authtoken.models import Token

from annotate.services.routing import project_route
from projects.models import Candidate, Label, Project, ProjectMembership
from tests.annotate.factories import annotator, project_with_candidates, researcher

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]

SURROGATE = "\ud800"


@pytest.fixture
def project():
    p = project_with_candidates(n=4, k=1)
    project_route(project=p, budget=1.0, seed=0)
    return p


@pytest.fixture
def web(project):
    c = Client()
    c.force_login(researcher())
    return c


@pytest.fixture
def api():
    return Client(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=researcher()).key}")


def _json_post(client: Client, url: str, body: dict) -> object:
    # json.dumps writes a lone surrogate as the escape \ud800, as a client would send it
    return client.post(url, json.dumps(body), content_type="application/json")


def _no_echo(resp) -> None:
    assert b"\x00" not in resp.content and b"\\u0000" not in resp.content
    assert b"\\ud800" not in resp.content.lower() and b"\xed\xa0\x80" not in resp.content


@pytest.mark.parametrize("param", ["generator", "perturbation", "label", "state", "label_source", "after", "x\x00"])
def test_a_nul_in_a_data_browser_filter_is_a_400_page(web, project, param):
    resp = web.get(f"/projects/{project.pk}/candidates/", {param: "a\x00b"})
    assert resp.status_code == 400
    assert resp["Content-Type"].startswith("text/html")
    assert b"NUL" in resp.content
    _no_echo(resp)


@pytest.mark.parametrize("param", ["generator", "label", "state", "split"])
def test_a_nul_in_an_api_candidate_filter_is_a_400_json(api, project, param):
    resp = api.get(f"/api/v1/projects/{project.pk}/candidates/", {param: "a\x00b"})
    assert resp.status_code == 400
    assert "NUL" in resp.json()["detail"]
    _no_echo(resp)


@pytest.mark.parametrize("param", ["generator", "state", "split", "format"])
def test_a_nul_in_an_export_manifest_filter_is_a_400(web, project, param):
    resp = web.get(f"/projects/{project.pk}/export/manifest/", {param: "a\x00b"})
    assert resp.status_code == 400
    _no_echo(resp)


@pytest.mark.parametrize(
    ("url", "field"),
    [
        ("/api/v1/projects/{p}/route/", "strategy"),
        ("/api/v1/projects/{p}/train/", "mode"),
        ("/api/v1/projects/{p}/evaluate/", "classifier"),
        ("/api/v1/projects/{p}/export/", "format"),
        ("/api/v1/projects/{p}/export/", "state"),
        ("/api/v1/projects/{p}/export/", "label_source"),
        ("/api/v1/projects/{p}/members/add/", "role"),
    ],
)
def test_a_lone_surrogate_in_an_api_choice_is_a_400_that_does_not_echo_it(api, project, url, field):
    value = [SURROGATE] if field in ("state", "label_source") else SURROGATE
    resp = _json_post(api, url.format(p=project.pk), {field: value, "username": "nobody"})
    assert resp.status_code == 400
    assert "surrogate" in resp.json()["detail"]
    _no_echo(resp)


def test_a_lone_surrogate_in_a_json_key_is_a_400(api, project):
    resp = _json_post(api, f"/api/v1/projects/{project.pk}/route/", {SURROGATE: 1})
    assert resp.status_code == 400
    _no_echo(resp)


def test_revoking_a_token_of_a_non_numeric_user_is_a_400(web):
    resp = web.post("/accounts/tokens/", {"action": "revoke", "user": "abc"})
    assert resp.status_code == 400
    assert b"user must be a whole number" in resp.content


@pytest.mark.parametrize("url", ["/accounts/login/", "/admin/login/"])
def test_a_log_in_username_over_the_column_size_is_refused_without_a_500(url):
    resp = Client().post(url, {"username": "u" * 300, "password": "whatever-123"})
    assert resp.status_code == 200  # the form again, with its error
    assert "at most 150 characters" in str(resp.context["form"].errors["username"])
    assert not AccessAttempt.objects.filter(username__startswith="uuu").exists()


def test_a_new_project_label_over_64_characters_is_a_form_error(web):
    resp = web.post("/projects/new/", {"name": "long labels", "task": "sentiment", "labels": f"ok,{'x' * 65}"})
    assert resp.status_code == 400
    assert b"64 characters" in resp.content
    assert not Project.objects.filter(name="long labels").exists()


@pytest.mark.parametrize("field", ["label", "note"])
def test_a_nul_in_an_override_label_or_note_is_a_400(web, project, field):
    candidate = Candidate.objects.filter(project=project).first()
    label = Label.objects.filter(project=project).first().name
    data = {"label": label, "note": "why", field: "a\x00b"}
    resp = web.post(f"/candidates/{candidate.pk}/override/", data)
    assert resp.status_code == 400
    _no_echo(resp)
    assert not candidate.overrides.exists()


def test_a_nul_in_a_members_page_username_is_a_400(web, project):
    before = ProjectMembership.objects.filter(project=project).count()
    resp = web.post(f"/annotate/projects/{project.pk}/members/", {"action": "add", "username": "a\x00b"})
    assert resp.status_code == 400
    assert ProjectMembership.objects.filter(project=project).count() == before


def test_a_nul_in_a_url_path_is_a_400(web):
    resp = web.get("/images/a\x00b.png")
    assert resp.status_code in (400, 404)


def test_a_nul_in_a_form_field_name_is_a_400(web, project):
    resp = web.post(f"/annotate/projects/{project.pk}/members/", {"action": "add", "user\x00": "1"})
    assert resp.status_code == 400


def test_an_annotator_page_post_with_a_nul_is_a_400_and_writes_nothing(project):
    u = annotator(project)
    c = Client()
    c.force_login(u)
    resp = c.get(f"/annotate/projects/{project.pk}/")
    assert resp.status_code == 200
    resp = c.post(f"/annotate/projects/{project.pk}/", {"choice": "a\x00b"})
    assert resp.status_code == 400


def test_a_urlencoded_form_is_checked_before_the_view(web, project):
    body = urlencode({"action": "add", "username": "a\x00b"})
    resp = web.post(f"/annotate/projects/{project.pk}/members/", body, content_type="application/x-www-form-urlencoded")
    assert resp.status_code == 400 and b"username contains a NUL character" in resp.content


def test_an_htmx_request_gets_the_message_as_a_fragment(web, project):
    resp = web.get(f"/projects/{project.pk}/candidates/", {"generator": "a\x00b"}, HTTP_HX_REQUEST="true")
    assert resp.status_code == 400
    assert b"<html" not in resp.content and b"generator contains a NUL character" in resp.content


def test_the_api_names_the_field_as_drf_does(api, project):
    resp = _json_post(api, f"/api/v1/projects/{project.pk}/route/", {"strategy": SURROGATE})
    assert resp.status_code == 400
    assert resp.json()["strategy"] == [resp.json()["detail"]]
    assert "strategy contains a lone surrogate" not in resp.json()["detail"]  # JSON: "the JSON body … (in strategy)"
    assert "(in strategy)" in resp.json()["detail"]


def test_a_json_body_over_the_memory_limit_is_a_413(api, project, settings):
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 1000
    resp = _json_post(api, f"/api/v1/projects/{project.pk}/route/", {"strategy": "x" * 2000})
    assert resp.status_code == 413 and "larger than 1000 bytes" in resp.json()["detail"]


def test_clean_requests_pass_untouched(web, api, project):
    assert web.get(f"/projects/{project.pk}/candidates/", {"generator": "rules ünïcödé"}).status_code == 200
    resp = api.get(f"/api/v1/projects/{project.pk}/candidates/", {"label": "entailment", "generator": "rülés"})
    assert resp.status_code == 200
