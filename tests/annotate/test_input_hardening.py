"""Input that used to answer 500: deeply nested JSON bodies (RecursionError in the JSON
parser), NUL characters and non-integers in plain forms and query strings. Each is a 400
with a message now, and nothing is written."""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotate.models import Annotation, Assignment
from annotate.services.routing import project_route
from projects.models import ProjectMembership

from .factories import annotator, project_with_candidates, researcher

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def project():
    p = project_with_candidates(n=4, k=1)
    project_route(project=p, budget=1.0, seed=0)
    return p


def token_client(user) -> APIClient:
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return c


def test_deeply_nested_json_bodies_are_a_400_for_annotators_and_researchers(project):
    u = annotator(project)
    c = token_client(u)
    aid = c.post(f"/api/v1/projects/{project.pk}/next-item/").json()["assignment"]
    for url in (f"/api/v1/assignments/{aid}/skip/", f"/api/v1/assignments/{aid}/annotation/"):
        resp = c.post(url, DEEP, content_type="application/json")
        assert resp.status_code == 400, url
        assert "nested too deeply" in resp.json()["detail"]
    assert Assignment.objects.get(pk=aid).status == "leased" and Annotation.objects.count() == 0
    r = token_client(researcher())
    resp = r.post(f"/api/v1/projects/{project.pk}/route/", DEEP, content_type="application/json")
    assert resp.status_code == 400 and "nested too deeply" in resp.json()["detail"]
    resp = r.post(f"/api/v1/generation/projects/{project.pk}/runs/", DEEP, content_type="application/json")
    assert resp.status_code == 400


def test_api_text_with_a_nul_is_a_field_error(project):
    c = token_client(annotator(project))
    aid = c.post(f"/api/v1/projects/{project.pk}/next-item/").json()["assignment"]
    resp = c.post(f"/api/v1/assignments/{aid}/skip/", {"reason": "a\x00b"}, format="json")
    assert resp.status_code == 400 and "reason" in resp.json()
    assert Assignment.objects.get(pk=aid).status == "leased"


def test_skip_form_with_a_nul_in_the_reason_is_a_400(project):
    u = annotator(project)
    c = Client()
    c.force_login(u)
    c.get(f"/annotate/projects/{project.pk}/")
    a = Assignment.objects.get(annotator=u)
    resp = c.post(
        f"/annotate/assignments/{a.pk}/skip/", "reason=a%00b", content_type="application/x-www-form-urlencoded"
    )
    assert resp.status_code == 400 and b"reason contains a NUL character" in resp.content
    a.refresh_from_db()
    assert a.status == "leased"
    ok = c.post(f"/annotate/assignments/{a.pk}/skip/", {"reason": "garbled"})
    assert ok.status_code == 302
    a.refresh_from_db()
    assert a.status == "skipped" and a.skip_reason == "garbled"


@pytest.mark.parametrize(
    "body, message",
    [
        ({"unflag": "abc"}, b"unflag must be a whole number"),
        ({"unflag": "1\x00"}, b"unflag contains a NUL character"),  # projects.middleware
        ({"unflag": "99999999999999999999999"}, b"unflag must be a whole number"),
        ({"user": ["abc"]}, b"user must be a whole number"),
        ({"user": ["1", "-2"]}, b"user must be a whole number"),
    ],
)
def test_members_form_with_non_integer_ids_is_a_400(project, body, message):
    c = Client()
    c.force_login(researcher())
    before = ProjectMembership.objects.count()
    resp = c.post(f"/annotate/projects/{project.pk}/members/", body)
    assert resp.status_code == 400 and message in resp.content
    assert ProjectMembership.objects.count() == before
    assert c.post(f"/annotate/projects/{project.pk}/members/", {"unflag": "987654"}).status_code == 404


@pytest.mark.parametrize("query", ["split=%00", "state=a%00b", "label_source=%00", "format=%00"])
def test_export_query_with_a_nul_is_a_400(project, query):
    c = Client()
    c.force_login(researcher())
    resp = c.get(f"/projects/{project.pk}/export/?{query}")
    assert resp.status_code == 400 and b"contains a NUL character" in resp.content


def test_unlock_form_with_a_non_integer_attempt_is_a_400():
    c = Client()
    c.force_login(researcher())
    for value, message in (("abc", b"must be a whole number"), ("1\x00", b"contains a NUL"), ("", b"must be a whole")):
        resp = c.post("/accounts/lockouts/", {"attempt": value})
        assert resp.status_code == 400 and b"attempt " + message in resp.content
    assert AccessAttempt.objects.count() == 0
