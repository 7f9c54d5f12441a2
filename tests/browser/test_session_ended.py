"""The session ends while a page is open (a log-out in another tab, an expired session): the
next htmx request — an answer, the lease heartbeat, a section's poll — was redirected to the
log-in page inside the request, and htmx swapped that whole page into the item's place: a
second header, a log-in form in the middle of the annotator's page, and a ``next`` that was the
answer's POST URL (a 405 after logging in). Now the browser goes to the log-in page, and
logging in brings the annotator back to the item, where the unsaved answer can be given."""

from __future__ import annotations

import os

import pytest

from annotate.models import Annotation
from annotate.services.routing import project_route
from tests.annotate.factories import annotator, project_with_candidates

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API runs an event loop

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_answer_after_the_session_ended_leads_to_the_log_in_page_and_back(page, live_server, annotation_settings):
    project = project_with_candidates(n=4, k=1)
    project_route(project=project, budget=1.0, seed=0)
    annotator(project, username="ann")
    page.goto(f"{live_server.url}/accounts/login/?next=/annotate/projects/{project.pk}/")
    page.fill("#id_username", "ann")
    page.fill("#id_password", "pw-123456")
    page.click("button[type=submit]")
    page.wait_for_selector("#stage[data-ready] #answer-form")
    item_page = page.url

    page.context.clear_cookies(name="sessionid")  # logged out elsewhere
    page.locator('#answer-form button[data-key="1"]').click()
    page.wait_for_url("**/accounts/login/**")
    assert page.locator("header.topbar").count() == 1 and page.locator("h1").count() == 1
    assert not Annotation.objects.exists()  # nothing was recorded without a session

    page.fill("#id_username", "ann")
    page.fill("#id_password", "pw-123456")
    page.click("button[type=submit]")
    page.wait_for_selector("#stage[data-ready] #answer-form")  # back on the item page, not a 405
    assert page.url.split("?")[0] == item_page.split("?")[0]
