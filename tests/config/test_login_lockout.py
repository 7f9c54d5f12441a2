"""Log-in throttling: django-axes on the log-in page (username + address), the unlock paths,
and the bad-token counter of the API."""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt
from django.conf import settings
from django.core.cache import cache
from django.core.management import call_command
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from projects.lockout import client_ip
from tests.annotate.factories import UserFactory, annotator, researcher

pytestmark = pytest.mark.django_db

LOGIN = "/accounts/login/"
PASSWORD = "pw-123456"  # tests.annotate.factories.UserFactory


def _fail(client: Client, username: str, times: int) -> list[int]:
    return [client.post(LOGIN, {"username": username, "password": "wrong-guess"}).status_code for _ in range(times)]


def test_defaults_come_from_settings():
    assert settings.AXES_ENABLED is True
    assert settings.AXES_FAILURE_LIMIT == 10
    assert settings.AXES_COOLOFF_TIME.total_seconds() == 15 * 60
    assert settings.AXES_LOCKOUT_PARAMETERS == [["username", "ip_address"]]


def test_lockout_after_the_limit_refuses_even_the_right_password(client):
    user = UserFactory()
    limit = settings.AXES_FAILURE_LIMIT
    codes = _fail(client, user.username, limit)
    assert codes[:-1] == [200] * (limit - 1)  # the form again, with its error
    assert codes[-1] == 429  # the limit-th failure already gets the lockout page
    right = client.post(LOGIN, {"username": user.username, "password": PASSWORD})
    assert right.status_code == 429
    text = right.content.decode()
    assert "Log-in locked" in text and user.username in text and "15 minutes" in text
    assert "researcher or an administrator can unlock" in text
    assert "_auth_user_id" not in client.session


def test_lockout_is_per_username_and_address(client):
    user, other = UserFactory(), UserFactory()
    _fail(client, user.username, settings.AXES_FAILURE_LIMIT)
    # the same user from another address, and another user from the same address, still log in
    elsewhere = Client(REMOTE_ADDR="198.51.100.7")
    assert elsewhere.post(LOGIN, {"username": user.username, "password": PASSWORD}).status_code == 302
    assert client.post(LOGIN, {"username": other.username, "password": PASSWORD}).status_code == 302


def test_success_before_the_limit_clears_the_count(client):
    user = UserFactory()
    _fail(client, user.username, settings.AXES_FAILURE_LIMIT - 1)
    assert client.post(LOGIN, {"username": user.username, "password": PASSWORD}).status_code == 302
    assert not AccessAttempt.objects.filter(username=user.username).exists()


def test_axes_reset_username_command_unlocks(client):
    user = UserFactory()
    _fail(client, user.username, settings.AXES_FAILURE_LIMIT)
    call_command("axes_reset_username", user.username)
    assert client.post(LOGIN, {"username": user.username, "password": PASSWORD}).status_code == 302


def test_researcher_unlocks_from_the_lockouts_page(client):
    user = UserFactory()
    _fail(client, user.username, settings.AXES_FAILURE_LIMIT)
    boss = Client()
    boss.force_login(researcher())
    page = boss.get("/accounts/lockouts/")
    assert page.status_code == 200 and user.username in page.content.decode()
    attempt = AccessAttempt.objects.get(username=user.username)
    assert boss.post("/accounts/lockouts/", {"attempt": attempt.pk}).status_code == 302
    after = boss.get("/accounts/lockouts/").content.decode()
    assert f"Unlocked {user.username} from 127.0.0.1." in after and "No log-in is locked." in after
    assert client.post(LOGIN, {"username": user.username, "password": PASSWORD}).status_code == 302


def test_annotators_cannot_see_or_unlock(client):
    client.force_login(annotator())
    assert client.get("/accounts/lockouts/").status_code == 403
    assert client.post("/accounts/lockouts/", {"attempt": 1}).status_code == 403
    assert Client().get("/accounts/lockouts/").status_code == 302  # anonymous: to the log-in page


def test_admin_site_lists_the_attempts(client, admin_user):
    user = UserFactory()
    _fail(client, user.username, settings.AXES_FAILURE_LIMIT)
    admin = Client()
    admin.force_login(admin_user)
    page = admin.get("/admin/axes/accessattempt/")
    assert page.status_code == 200 and user.username in page.content.decode()


def test_test_client_login_still_works():
    """``Client.login`` calls authenticate() without a request; the lockout backend steps aside."""
    UserFactory(username="plain")
    assert Client().login(username="plain", password=PASSWORD)
    assert not Client().login(username="plain", password="wrong")


@pytest.mark.parametrize(
    ("count", "meta", "expected"),
    [
        (0, {"REMOTE_ADDR": "10.0.0.1", "HTTP_X_FORWARDED_FOR": "203.0.113.9"}, "10.0.0.1"),
        (1, {"REMOTE_ADDR": "10.0.0.1", "HTTP_X_FORWARDED_FOR": "1.2.3.4, 203.0.113.9"}, "203.0.113.9"),
        (2, {"REMOTE_ADDR": "10.0.0.1", "HTTP_X_FORWARDED_FOR": "1.2.3.4, 203.0.113.9, 10.0.0.2"}, "203.0.113.9"),
        (1, {"REMOTE_ADDR": "10.0.0.1"}, "10.0.0.1"),
    ],
)
def test_client_ip_trusts_only_the_configured_proxies(rf, settings, count, meta, expected):
    settings.COUNTERPART = {**settings.COUNTERPART, "TRUSTED_PROXY_COUNT": count}
    assert client_ip(rf.get("/", **meta)) == expected


@pytest.fixture
def token_limit(settings):
    settings.COUNTERPART = {**settings.COUNTERPART, "API_TOKEN_FAILURE_LIMIT": 3}
    cache.clear()
    yield 3
    cache.clear()


def test_bad_tokens_from_one_address_get_429(token_limit):
    good = APIClient()
    good.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=annotator()).key}")
    bad = APIClient()
    bad.credentials(HTTP_AUTHORIZATION="Token 0000000000000000000000000000000000000000")
    assert [bad.get("/api/v1/projects/").status_code for _ in range(token_limit)] == [401] * token_limit
    blocked = bad.get("/api/v1/projects/")
    assert blocked.status_code == 429 and "invalid API token" in blocked.json()["detail"]
    assert int(blocked["Retry-After"]) == settings.COUNTERPART["API_TOKEN_FAILURE_WINDOW_SECONDS"]
    assert good.get("/api/v1/projects/").status_code == 429  # the address is blocked for token requests
    other = APIClient(REMOTE_ADDR="198.51.100.7")
    other.credentials(HTTP_AUTHORIZATION="Token 0000000000000000000000000000000000000000")
    assert other.get("/api/v1/projects/").status_code == 401  # another address is not
    cache.clear()  # the window ends
    assert good.get("/api/v1/projects/").status_code == 200


def test_valid_tokens_and_sessions_are_not_counted(token_limit, client):
    user = annotator()
    good = APIClient()
    good.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    for _ in range(token_limit + 2):
        assert good.get("/api/v1/projects/").status_code == 200
        assert client.get("/api/v1/projects/").status_code == 401  # no token: not a token failure
    assert good.get("/api/v1/projects/").status_code == 200


def test_unlock_with_a_non_integer_attempt_is_400_not_500(client):
    from django.contrib.auth.models import Group, User

    user = User.objects.create_user("res-bad", password="pw-123456-long")
    user.groups.add(Group.objects.get_or_create(name="researcher")[0])
    client.force_login(user)
    assert client.post("/accounts/lockouts/", {"attempt": "abc"}).status_code == 400
    assert client.post("/accounts/lockouts/", {"attempt": "99999"}).status_code == 404
