"""An htmx request from a browser whose session has ended gets ``HX-Redirect`` to the log-in
page, with ``next`` the page the user is on — not a 302 that htmx follows and swaps the log-in
page into the fragment's place, with the fragment's URL as ``next``
(``projects.middleware.HtmxLoginRedirectMiddleware``). The browser side:
tests/browser/test_session_ended.py."""

from __future__ import annotations

import pytest
from django.test import Client

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]

PAGE = "http://testserver/annotate/projects/7/?a=3"


@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("post", "/annotate/assignments/3/answer/"),
        ("post", "/annotate/assignments/3/heartbeat/"),
        ("get", "/projects/7/"),  # the overview's counts poll (a researcher page)
    ],
)
def test_an_htmx_request_without_a_session_sends_the_browser_to_log_in(method, path) -> None:
    resp = getattr(Client(), method)(path, HTTP_HX_REQUEST="true", HTTP_HX_CURRENT_URL=PAGE)
    assert resp.status_code == 200 and resp.content == b""
    assert resp["HX-Redirect"] == "/accounts/login/?next=/annotate/projects/7/%3Fa%3D3"


def test_another_site_as_the_current_page_is_not_where_log_in_leads() -> None:
    resp = Client().post(
        "/annotate/assignments/3/answer/", HTTP_HX_REQUEST="true", HTTP_HX_CURRENT_URL="https://evil.example/x"
    )
    assert resp["HX-Redirect"] == "/accounts/login/"


def test_a_plain_request_keeps_the_redirect() -> None:
    resp = Client().get("/annotate/projects/7/")
    assert resp.status_code == 302 and resp["Location"] == "/accounts/login/?next=/annotate/projects/7/"
    assert "HX-Redirect" not in resp
