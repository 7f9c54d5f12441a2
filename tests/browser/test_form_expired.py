"""Two tabs on the item page; the annotator logs out and back in in one of them, which gives the
session a new CSRF token. An answer (or skip, undo, heartbeat) sent from the other tab carries
the old token: it was refused with the bare "Form expired (403)" card swapped over the item, and
the answer was lost without a word. Now the stage comes back with the same item, a fresh token
and a plain message that the answer was NOT saved; answering again records it once."""

from __future__ import annotations

import os

import pytest

from annotate.models import Annotation, Assignment
from annotate.services.routing import project_route
from tests.annotate.factories import annotator, project_with_candidates
from tests.browser.conftest import log_in

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API runs an event loop

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _relogin_in_other_tab(page, live_server) -> None:
    other = page.context.new_page()
    other.goto(f"{live_server.url}/annotate/")
    other.get_by_role("button", name="Log out").click()
    other.wait_for_load_state()
    log_in(other, live_server, "ann", next_path="/annotate/")
    other.wait_for_selector("text=Log out")
    other.close()


def _item_open_before_a_new_log_in(page, live_server) -> int:
    """The item page open in ``page``, then a log-out and log-in in another tab: its lease id."""
    project = project_with_candidates(n=4, k=1)
    project_route(project=project, budget=1.0, seed=0)
    annotator(project, username="ann")
    log_in(page, live_server, "ann", next_path=f"/annotate/projects/{project.pk}/")
    page.wait_for_selector("#stage[data-ready] #answer-form")
    aid = int(page.locator("#stage").get_attribute("data-assignment"))
    _relogin_in_other_tab(page, live_server)
    return aid


def _said_not_saved_on_the_same_item(page, aid: int) -> None:
    alert = page.locator("#stage [role=alert]").first
    alert.wait_for()
    assert "not saved" in alert.inner_text().lower()
    assert page.get_by_text("Form expired (403)").count() == 0
    page.wait_for_selector("#stage[data-ready] #answer-form")
    assert int(page.locator("#stage").get_attribute("data-assignment")) == aid  # the same item, not lost


def test_an_answer_with_an_expired_form_is_said_not_saved_and_can_be_given_again(
    page, live_server, annotation_settings
):
    aid = _item_open_before_a_new_log_in(page, live_server)

    page.keyboard.press("1")
    _said_not_saved_on_the_same_item(page, aid)
    assert not Annotation.objects.exists()

    page.keyboard.press("1")  # the fresh token is in the new stage: this one is saved, once
    page.wait_for_function("old => document.getElementById('stage').dataset.assignment !== String(old)", arg=aid)
    assert Annotation.objects.filter(assignment_id=aid).count() == 1
    assert Annotation.objects.count() == 1
    assert page.locator("[data-testid=answered]").inner_text() == "1"


def test_a_skip_with_an_expired_form_is_said_not_done(page, live_server, annotation_settings):
    aid = _item_open_before_a_new_log_in(page, live_server)

    page.keyboard.press("s")
    page.keyboard.press("Enter")
    _said_not_saved_on_the_same_item(page, aid)
    assert Assignment.objects.get(pk=aid).status == "leased"
