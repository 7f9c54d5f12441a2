"""Who may read the OpenAPI schema and docs, and how the API refuses bad credentials."""

from __future__ import annotations

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotate.services.routing import project_route
from tests.annotate.factories import annotator, project_with_candidates

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]

BAD_TOKEN = "Token 0000000000000000000000000000000000000000"


@pytest.fixture
def project():
    p = project_with_candidates(n=3, k=1)
    project_route(project=p, budget=1.0, seed=0)
    return p


def test_anonymous_gets_neither_schema_nor_docs(client):
    schema = client.get("/api/schema/")
    assert schema.status_code == 401
    docs = client.get("/api/docs/")
    assert docs.status_code == 302 and docs["Location"].startswith("/accounts/login/?next=/api/docs/")


def test_signed_in_users_get_schema_and_docs_from_local_static_files(client):
    user = annotator()
    token = APIClient()
    token.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    assert token.get("/api/schema/").status_code == 200
    client.force_login(user)
    assert client.get("/api/schema/").status_code == 200
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    html = docs.content.decode()
    assert "drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in html
    assert "cdn" not in html.lower() and "https://" not in html


def test_a_script_with_a_token_gets_the_docs_page_and_a_bad_token_no_redirect():
    """/api/docs/ takes the schema's credentials (session or token): a script holding its API
    token reads the page, not the log-in form; a bad token is a 401 as on the rest of the API."""
    token = APIClient()
    token.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=annotator()).key}")
    docs = token.get("/api/docs/")
    assert docs.status_code == 200, docs.get("Location")
    assert "drf_spectacular_sidecar/swagger-ui-dist/swagger-ui-bundle.js" in docs.content.decode()
    script = token.get("/api/docs/?script=")
    assert script.status_code == 200 and "/api/schema/" in script.content.decode()
    bad = APIClient()
    bad.credentials(HTTP_AUTHORIZATION=BAD_TOKEN)
    refused = bad.get("/api/docs/")
    assert refused.status_code == 401 and refused["WWW-Authenticate"] == "Token"


@pytest.mark.parametrize(
    "path", ["/api/v1/projects/", "/api/v1/generation/generators/"]
)  # default authentication classes
def test_bad_token_is_401_with_www_authenticate(path):
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=BAD_TOKEN)
    r = c.get(path)
    assert r.status_code == 401 and r["WWW-Authenticate"] == "Token"
    assert APIClient().get(path).status_code == 401  # no credentials at all: also 401


def test_bad_token_is_401_on_the_fast_token_endpoints(project):
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=BAD_TOKEN)
    r = c.post(f"/api/v1/projects/{project.pk}/next-item/")
    assert r.status_code == 401 and r["WWW-Authenticate"] == "Token"


def test_session_post_without_csrf_is_still_refused(project):
    user = annotator(project)
    c = APIClient(enforce_csrf_checks=True)
    c.force_login(user)
    assert c.get("/api/v1/projects/").status_code == 200  # the session works for reads
    r = c.post(f"/api/v1/projects/{project.pk}/next-item/")
    assert r.status_code == 403 and "CSRF" in r.json()["detail"]
