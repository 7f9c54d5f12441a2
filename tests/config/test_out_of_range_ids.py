"""Ids in URLs outside the database's integer range (and zero) are a 404 / 403 / 409 like
any unknown id, on SQLite and PostgreSQL — never an OverflowError (500). Found by the
schemathesis run (tests/config/test_api_fuzz.py)."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from tests.annotate.factories import annotator, project_with_candidates, researcher

pytestmark = pytest.mark.django_db

POSTS = [
    "/api/v1/projects/{n}/next-item/",
    "/api/v1/assignments/{n}/skip/",
    "/api/v1/assignments/{n}/annotation/",
    "/api/v1/assignments/{n}/heartbeat/",
    "/api/v1/assignments/{n}/undo/",
    "/api/v1/projects/{n}/route/",
    "/api/v1/jobs/{n}/cancel/",
    "/api/v1/generation/runs/{n}/cancel/",
    "/api/v1/generation/projects/{n}/runs/",
]
GETS = [
    "/api/v1/projects/{n}/quality/",
    "/api/v1/jobs/{n}/",
    "/api/v1/generation/runs/{n}/",
    "/api/v1/generation/projects/{n}/runs/",
    "/projects/{n}/",
    "/projects/{n}/export/",
    "/projects/{n}/import/",
    "/projects/{n}/runs/",
    "/runs/{n}/",
    "/jobs/{n}/",
    "/annotate/projects/{n}/",
    "/annotate/projects/{n}/instructions/",
    "/annotate/projects/{n}/dashboard/",
    "/labeling/projects/{n}/flip-rates/",
]
PAGE_POSTS = [
    "/annotate/assignments/{n}/answer/",
    "/annotate/assignments/{n}/skip/",
    "/annotate/assignments/{n}/undo/",
    "/annotate/assignments/{n}/heartbeat/",
    "/annotate/projects/{n}/route/",
    "/annotate/projects/{n}/members/",
    "/labeling/projects/{n}/train/",
    "/labeling/projects/{n}/autolabel/",
    "/runs/{n}/cancel/",
    "/projects/{n}/runs/new/",
]


@pytest.mark.parametrize("n", [0, 2**31, 2**63 - 1, 2**63, 2**64, 10**30])
def test_out_of_range_ids_are_not_a_500(n):
    project = project_with_candidates(n=2, k=1)
    failures = []
    for user in (annotator(project), researcher()):
        api = APIClient()
        api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
        page = Client()
        page.force_login(user)
        for url in POSTS:
            resp = api.post(url.format(n=n), {"choice": "x"}, format="json")
            if resp.status_code >= 500:
                failures.append((url, resp.status_code))
        for url in PAGE_POSTS:
            resp = page.post(url.format(n=n), {"choice": "x"})
            if resp.status_code >= 500:
                failures.append((url, resp.status_code))
        for url in GETS:
            resp = (api if url.startswith("/api/") else page).get(url.format(n=n))
            if resp.status_code >= 500:
                failures.append((url, resp.status_code))
    assert not failures
