"""What an uncaught exception answers (QA probe: the web process with a wrong DATABASE_URL
port). It was Django's bare "Server Error (500)" page, for the API too, whatever failed. Now:
the app's own error page (JSON under /api/), and 503 with Retry-After when the database cannot
be reached — never the exception's text."""

from __future__ import annotations

import pytest
from django import db
from django.test import Client
from rest_framework.authentication import TokenAuthentication
from rest_framework.authtoken.models import Token

from projects import views
from tests.annotate.factories import researcher

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]

DB_DOWN = 'connection failed: connection to server at "10.0.0.7", port 5499 failed: Connection refused'


def _raise(exc: BaseException):
    def fail(*args, **kwargs):
        raise exc

    return fail


@pytest.fixture
def token_client():
    user = researcher()
    token = Token.objects.create(user=user)
    return Client(raise_request_exception=False, HTTP_AUTHORIZATION=f"Token {token.key}")


def test_the_api_answers_503_json_when_the_database_is_unreachable(token_client, monkeypatch):
    monkeypatch.setattr(TokenAuthentication, "authenticate_credentials", _raise(db.OperationalError(DB_DOWN)))
    r = token_client.post("/api/v1/projects/1/route/", {}, content_type="application/json")
    assert r.status_code == 503
    assert r["Content-Type"] == "application/json"
    assert r["Retry-After"] == "30"
    assert "database cannot be reached" in r.json()["detail"]
    assert "5499" not in r.content.decode() and "10.0.0.7" not in r.content.decode()


def test_a_page_answers_the_apps_503_page_when_the_database_is_unreachable(monkeypatch):
    client = Client(raise_request_exception=False)
    client.force_login(researcher())
    monkeypatch.setattr(views, "jobs_list", _raise(db.InterfaceError("connection already closed")))
    r = client.get("/jobs/")
    body = r.content.decode()
    assert r.status_code == 503 and r["Retry-After"] == "30"
    assert 'class="card error-page"' in body and "Database unavailable (503)" in body
    assert "nothing was started or saved" in body
    assert "connection already closed" not in body


def test_a_bug_answers_the_apps_500_page_and_leaks_nothing(token_client, monkeypatch):
    monkeypatch.setattr(views, "jobs_list", _raise(RuntimeError("secret detail: /srv/app/settings.py")))
    client = Client(raise_request_exception=False)
    client.force_login(researcher())
    r = client.get("/jobs/")
    body = r.content.decode()
    assert r.status_code == 500 and not r.has_header("Retry-After")
    assert 'class="card error-page"' in body and "Server error (500)" in body
    assert "secret detail" not in body

    from projects import apis

    monkeypatch.setattr(apis, "jobs_list", _raise(RuntimeError("secret detail")))
    r = token_client.get("/api/v1/jobs/")
    assert r.status_code == 500 and r["Content-Type"] == "application/json"
    assert "secret detail" not in r.content.decode() and r.json()["detail"]


def test_an_api_address_nothing_matches_answers_json_404(token_client):
    """A script that mistypes an API path (or calls one of a newer version) read an HTML page
    it could not parse; it gets DRF's shape now. Pages keep the app's 404 page."""
    r = token_client.get("/api/v1/no-such-endpoint/")
    assert r.status_code == 404
    assert r["Content-Type"] == "application/json"
    assert r.json() == {"detail": "Not found.", "docs": "/api/docs/"}
    page = token_client.get("/no-such-page/")
    assert page.status_code == 404
    assert page["Content-Type"].startswith("text/html")
    assert "Not found (404)" in page.content.decode()


@pytest.mark.parametrize("debug", [True, False])
def test_the_api_404_is_json_with_debug_on_too(token_client, settings, debug):
    """`make run` serves with DEBUG on, where Django answered an unmatched /api/ address with
    its HTML debug page (QA: POST /api/v1/memberships//pause/). The last /api/ pattern answers
    the JSON 404 either way, and a GET without its trailing slash is still sent to the slash."""
    settings.DEBUG = debug
    for method, url in (("post", "/api/v1/memberships//pause/"), ("get", "/api/v1/nothing/here/"), ("get", "/api/")):
        r = getattr(token_client, method)(url)
        assert r.status_code == 404, url
        assert r["Content-Type"] == "application/json", url
        assert r.json() == {"detail": "Not found.", "docs": "/api/docs/"}
    moved = token_client.get("/api/v1/projects?x=1")
    assert moved.status_code == 301
    assert moved["Location"] == "/api/v1/projects/?x=1"
    assert token_client.post("/api/v1/projects").status_code == 404  # never a redirect that drops a body
    assert token_client.get("/api/v1/projects/").status_code == 200
    # the catch-all comes after every app's API, wherever the app's urls.py mounts it
    from django.urls import get_resolver

    last = get_resolver().url_patterns[-1]
    assert last.callback.__name__ == "api_not_found"
    assert token_client.get("/api/v1/generation/generators/").status_code != 404
