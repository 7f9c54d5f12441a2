"""A real browser (Debian's chromium via Playwright) drives the annotator page with the keyboard:
log in, label five items, undo one, skip one; then the database holds exactly those answers."""

from __future__ import annotations

import os

import pytest

from annotate.models import Annotation, Assignment
from annotate.services.routing import project_route
from projects.models import ProjectMembership
from projects.services.memberships import membership_pause
from tests.annotate.factories import annotator, project_with_candidates
from tests.browser.conftest import log_in

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API runs an event loop

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _current_assignment(page) -> int:
    return int(page.locator("#stage").get_attribute("data-assignment"))


def _wait_for_assignment_change(page, old: int) -> None:
    page.wait_for_function(
        "old => { const s = document.getElementById('stage'); "
        "return s && s.dataset.assignment && s.dataset.assignment !== String(old); }",
        arg=old,
    )
    page.wait_for_selector("#stage[data-ready]")  # annotate.js has prepared the new item


def test_keyboard_flow(page, live_server, annotation_settings):
    project = project_with_candidates(n=8, k=2)  # k=2: answers stay undoable (item not aggregated)
    project_route(project=project, budget=1.0, seed=0)
    user = annotator(project, username="ann")

    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    page.set_viewport_size({"width": 390, "height": 844})  # a phone screen
    page.goto(f"{live_server.url}/accounts/login/?next=/annotate/")
    page.fill("#id_username", "ann")
    page.fill("#id_password", "pw-123456")
    page.click("button[type=submit]")
    page.get_by_role("link", name=f"Start annotating {project.name}").click()
    page.click("#start")
    page.wait_for_selector("#stage[data-ready] #answer-form")

    expected: dict[int, str] = {}
    for i in range(5):
        aid = _current_assignment(page)
        key = str(i % 3 + 1)
        expected[aid] = page.locator(f'#answer-form button[data-key="{key}"]').get_attribute("value")
        page.wait_for_timeout(50)  # some active time on the item
        page.keyboard.press(key)
        _wait_for_assignment_change(page, aid)
    assert page.locator("[data-testid=answered]").inner_text() == "5"

    # undo the fifth answer: that item comes back on screen
    last = list(expected)[-1]
    current = _current_assignment(page)
    page.keyboard.press("u")
    _wait_for_assignment_change(page, current)
    assert _current_assignment(page) == last
    del expected[last]

    # skip it with a reason: s opens the reason field, Enter confirms
    page.keyboard.press("s")
    page.wait_for_selector("#skip-reason", state="visible")
    page.keyboard.type("ambiguous")
    page.keyboard.press("Enter")
    _wait_for_assignment_change(page, last)

    got = {a.assignment_id: a.shown_choice for a in Annotation.objects.filter(annotator=user)}
    assert got == expected
    assert all(a.duration_ms and a.duration_ms > 0 for a in Annotation.objects.all())
    skipped = Assignment.objects.get(pk=last)
    assert skipped.status == "skipped" and skipped.skip_reason == "ambiguous"
    assert not Annotation.objects.filter(assignment_id=last).exists()
    # the choice buttons are labelled for assistive technology and reachable on a phone
    assert page.locator("#answer-form [role=group][aria-label=Choices]").count() == 1

    # a researcher pauses the annotator: the answer on the item they hold is refused (it does
    # not count) and the page says why (issue 18.2)
    held = _current_assignment(page)
    membership_pause(membership=ProjectMembership.objects.get(user=user), by=None)
    page.keyboard.press("1")
    page.wait_for_selector("text=paused by the project's researchers")
    assert not Annotation.objects.filter(assignment_id=held).exists()
    assert errors == []


def test_an_answer_that_cannot_be_sent_says_so_and_a_retry_stores_it_once(page, live_server, annotation_settings):
    """Network loss: the key press used to do nothing visible (htmx:sendError only unlocked the
    keys). Now the stage says the answer was not sent; pressing again once back online stores
    it, once."""
    project = project_with_candidates(n=4, k=2)
    project_route(project=project, budget=1.0, seed=0)
    user = annotator(project, username="net")
    page.goto(f"{live_server.url}/accounts/login/?next=/annotate/projects/{project.pk}/")
    page.fill("#id_username", "net")
    page.fill("#id_password", "pw-123456")
    page.click("button[type=submit]")
    page.wait_for_selector("#stage[data-ready] #answer-form")
    aid = _current_assignment(page)
    page.route("**/answer/", lambda route: route.abort("internetdisconnected"))
    page.keyboard.press("1")
    page.wait_for_selector("#not-sent")
    assert "Not sent" in page.locator("#not-sent").inner_text()
    assert not Annotation.objects.filter(annotator=user).exists()
    page.unroute("**/answer/")
    page.keyboard.press("1")
    _wait_for_assignment_change(page, aid)
    assert page.locator("#not-sent").count() == 0
    assert list(Annotation.objects.filter(annotator=user).values_list("assignment_id", flat=True)) == [aid]


def test_a_held_number_key_answers_one_item_only(page, live_server, annotation_settings):
    """A number key held down (auto-repeat) answered the item and then, as the next item arrived
    with the key still down, that one too: one press, two answers. Repeats are now ignored."""
    project = project_with_candidates(n=4, k=1)
    project_route(project=project, budget=1.0, seed=0)
    annotator(project, username="held")
    log_in(page, live_server, "held", next_path=f"/annotate/projects/{project.pk}/")
    page.wait_for_selector("#stage[data-ready] #answer-form")
    first = _current_assignment(page)
    page.keyboard.down("1")  # pressed …
    _wait_for_assignment_change(page, first)
    second = _current_assignment(page)
    for _ in range(3):  # … and held: the keyboard repeats it on the next item
        page.keyboard.down("1")
    page.keyboard.up("1")
    page.wait_for_timeout(500)
    assert Annotation.objects.count() == 1 and _current_assignment(page) == second
    page.keyboard.press("1")  # a new press answers the next item as usual
    _wait_for_assignment_change(page, second)
    assert Annotation.objects.count() == 2


def test_a_server_error_on_an_answer_keeps_the_item_and_a_retry_stores_it_once(page, live_server, annotation_settings):
    """A 500 / 503 answer to an answer swapped the error card over the whole stage: the item and
    its keys were gone, the annotator could only go back to the project list. The item now
    stays, the stage says the answer was not saved, and pressing again stores it once."""
    project = project_with_candidates(n=4, k=2)
    project_route(project=project, budget=1.0, seed=0)
    user = annotator(project, username="err")
    log_in(page, live_server, "err", next_path=f"/annotate/projects/{project.pk}/")
    page.wait_for_selector("#stage[data-ready] #answer-form")
    aid = _current_assignment(page)
    page.route(
        "**/answer/",
        lambda route: route.fulfill(
            status=503, content_type="text/html", body="<section><h2>Unavailable</h2></section>"
        ),
    )
    page.keyboard.press("2")
    page.wait_for_selector("#not-sent")
    assert "NOT saved" in page.locator("#not-sent").inner_text() and "503" in page.locator("#not-sent").inner_text()
    assert _current_assignment(page) == aid and page.locator("#answer-form").count() == 1
    assert page.get_by_text("Unavailable").count() == 0
    page.unroute("**/answer/")
    page.keyboard.press("2")
    _wait_for_assignment_change(page, aid)
    assert list(Annotation.objects.filter(annotator=user).values_list("assignment_id", flat=True)) == [aid]
