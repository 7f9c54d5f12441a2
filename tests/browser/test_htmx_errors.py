"""Another researcher deletes the project whose overview is open: its counts, polled every
10 s, came back as the whole 404 page, which htmx swapped into the overview (a second page
inside the page). Now the 404 card takes the counts' place and the polling stops; no console
error, no CSP violation (the conftest fails the test on one). Server side:
tests/workspace/test_htmx_errors.py."""

from __future__ import annotations

import os

import pytest

from projects.services.deletion import project_delete
from projects.services.projects import project_create
from tests.annotate.factories import researcher

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API runs an event loop

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_overview_of_a_deleted_project_says_so_in_place_of_its_counts(page, live_server):
    project = project_create(name="deleted while open", task="nli")
    researcher(username="res")
    page.goto(f"{live_server.url}/accounts/login/?next=/projects/{project.pk}/")
    page.fill("#id_username", "res")
    page.fill("#id_password", "pw-123456")
    page.click("button[type=submit]")
    page.wait_for_selector("#state-counts")
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    polls: list[str] = []
    page.on("request", lambda r: polls.append(r.url) if r.headers.get("hx-request") else None)

    project_delete(project=project)
    page.wait_for_selector("#error-heading:has-text('Not found (404)')", timeout=15_000)
    assert page.locator("#state-counts").count() == 0
    assert page.locator("header.topbar").count() == 1 and page.locator("h1").count() == 1
    n = len(polls)
    page.wait_for_timeout(11_000)
    assert len(polls) == n  # no more polling
    assert not errors, errors
