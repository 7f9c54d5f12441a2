"""The 400 / 403 / 404 pages use the site's layout and offer a way back (issue 20.14)."""

from __future__ import annotations

import pytest
from django.test import Client

from tests.annotate.factories import annotator, project_with_candidates

pytestmark = pytest.mark.django_db


def _laid_out(html: str) -> None:
    assert '<header class="topbar">' in html and "css/app.css" in html
    assert 'id="way-back" href="/"' in html or 'href="/" id="way-back"' in html


def test_403_page_has_the_layout_the_reason_and_a_way_back():
    project = project_with_candidates(n=1)
    c = Client()
    c.force_login(annotator(project, username="ann"))
    r = c.get(f"/annotate/projects/{project.pk}/dashboard/")
    assert r.status_code == 403
    html = r.content.decode()
    _laid_out(html)
    assert "Not allowed (403)" in html and "researchers only" in html
    assert "ann" in html  # signed in: the navigation shows who


def test_404_and_400_pages_have_the_layout_and_a_way_back():
    c = Client()
    c.force_login(annotator(username="ann2"))
    r = c.get("/no/such/page/")
    assert r.status_code == 404
    _laid_out(r.content.decode())
    assert "Not found (404)" in r.content.decode()
    r = Client().get("/", HTTP_HOST="not-an-allowed-host.invalid")
    assert r.status_code == 400
    _laid_out(r.content.decode())
    assert "Bad request (400)" in r.content.decode()


def test_csrf_failure_page_says_to_reload():
    c = Client(enforce_csrf_checks=True)
    c.force_login(annotator(username="ann3"))
    r = c.post("/accounts/logout/")
    assert r.status_code == 403
    html = r.content.decode()
    _laid_out(html)
    assert "Form expired (403)" in html
