"""A new API token asked for twice (QA fault probe: POST /api/v1/tokens/ sent twice at once).
Both requests answered 201 with different keys and only the second key worked, so the client
that kept the first answer was locked out. Now the same request again within
TOKEN_DOUBLE_SUBMIT_SECONDS returns the key the first one made; a later one replaces it."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from projects.services.tokens import TOKEN_DOUBLE_SUBMIT_SECONDS, token_create
from tests.annotate.factories import researcher
from tests.concurrency import at_once

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def _api(user) -> APIClient:  # type: ignore[no-untyped-def]
    api = APIClient()
    api.force_authenticate(user)
    return api


def test_a_double_submit_gets_the_same_key_and_a_later_request_a_new_one():
    user = researcher()
    api = _api(user)
    first = api.post("/api/v1/tokens/")
    again = api.post("/api/v1/tokens/")
    assert first.status_code == again.status_code == 201
    assert first.json()["key"] == again.json()["key"] == Token.objects.get(user=user).key
    # a rotation after the window replaces the key, and the old one stops working
    Token.objects.filter(user=user).update(created=timezone.now() - timedelta(seconds=TOKEN_DOUBLE_SUBMIT_SECONDS + 1))
    rotated = token_create(user=user)
    assert rotated.key != first.json()["key"]
    assert Token.objects.filter(user=user).count() == 1
    old = APIClient(HTTP_AUTHORIZATION=f"Token {first.json()['key']}")
    assert old.get("/api/v1/projects/").status_code == 401
    assert APIClient(HTTP_AUTHORIZATION=f"Token {rotated.key}").get("/api/v1/projects/").status_code == 200


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_requests_at_once_on_postgresql_get_one_working_key(require_postgres):
    user = researcher()

    def post() -> tuple[int, str]:
        r = _api(user).post("/api/v1/tokens/")
        return r.status_code, r.json().get("key", "")

    answers = at_once(post)
    assert [status for status, _ in answers] == [201, 201]
    keys = {key for _, key in answers}
    assert keys == {Token.objects.get(user=user).key}
