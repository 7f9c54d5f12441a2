"""A real browser (Debian's chromium via Playwright) on the annotator page, issue 20.10 and 20.11:

* the label buttons come in the project's label order on every item and for every annotator
  (key "1" always means the same label); caption items show the captions in the order stored
  for that annotator, and "1" is saved as the caption shown first;
* browser Back / Forward come back to an answered item as answered (its answer, Undo), never as
  a stale copy of the page with "answered 0".
"""

from __future__ import annotations

import os
import re

import pytest

from annotate.kinds import caption_swapped, kind_named
from annotate.models import Annotation, Assignment
from annotate.services.routing import project_route
from projects.models import Label
from tests.annotate.factories import annotator, project_with_candidates

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API runs an event loop

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _login(page, live_server, username: str) -> None:
    page.goto(f"{live_server.url}/accounts/login/?next=/annotate/")
    page.fill("#id_username", username)
    page.fill("#id_password", "pw-123456")
    page.click("button[type=submit]")
    page.wait_for_url(re.compile(r".*/annotate/$"))


def _assignment(page) -> int:
    return int(page.locator("#stage").get_attribute("data-assignment"))


def _answer_key(page, key: str) -> None:
    old = _assignment(page)
    page.keyboard.press(key)
    page.wait_for_function(
        "old => { const s = document.getElementById('stage'); return s && s.dataset.assignment !== String(old); }",
        arg=old,
    )
    page.wait_for_selector("#stage[data-ready]")


def test_label_order_is_fixed_and_caption_order_is_per_annotator(browser, live_server, annotation_settings):
    nli = project_with_candidates(name="nli", n=3, k=2)
    project_route(project=nli, budget=1.0, seed=0)
    labels = list(Label.objects.filter(project=nli).order_by("position").values_list("name", flat=True))
    cap = project_with_candidates(name="cap", task="image-caption", n=3, k=2)
    project_route(project=cap, budget=1.0, seed=0)
    users = []
    for name in ("ann1", "ann2"):
        u = annotator(nli, username=name)
        cap.memberships.create(user=u)
        users.append(u)

    for u in users:
        ctx = browser.new_context()
        page = ctx.new_page()
        _login(page, live_server, u.username)
        page.goto(f"{live_server.url}/annotate/projects/{nli.pk}/")
        page.wait_for_selector("#stage[data-ready] #answer-form")
        for _ in range(3):
            values = page.locator("#answer-form button[name=choice]").evaluate_all("bs => bs.map(b => b.value)")
            assert values == [*labels, "unclear"]
            _answer_key(page, "1")
        # key 1 meant the first label on every item, for both annotators
        assert set(Annotation.objects.filter(annotator=u, project=nli).values_list("choice", flat=True)) == {labels[0]}

        page.goto(f"{live_server.url}/annotate/projects/{cap.pk}/")
        for _ in range(6):  # 3 pairs x 2 images
            page.wait_for_selector("#stage[data-ready] #answer-form")
            a = Assignment.objects.select_related("item__candidate__example").get(pk=_assignment(page))
            order = kind_named("caption_choice").display_order([], swapped=caption_swapped(a.item_id, u.pk))
            assert a.display_order == order
            shown = page.locator("ol.captions li").evaluate_all(
                "lis => lis.map(li => li.childNodes[li.childNodes.length - 1].textContent.trim())"
            )
            texts = {
                "caption_a": a.item.candidate.example.fields["caption"],
                "caption_b": a.item.candidate.fields["caption"],
            }
            assert shown == [texts[c] for c in order[:2]]
            _answer_key(page, "1")
            assert Annotation.objects.get(assignment=a).choice == order[0]
        ctx.close()
    # the two annotators did not see every caption item in the same order
    orders = {}
    for a in Assignment.objects.filter(project=cap):
        orders.setdefault(a.item_id, set()).add(tuple(a.display_order))
    assert any(len(o) == 2 for o in orders.values())


def test_back_and_forward_show_an_answered_item_as_answered(page, live_server, annotation_settings):
    project = project_with_candidates(n=6, k=2)  # k=2: answers stay undoable
    project_route(project=project, budget=1.0, seed=0)
    annotator(project, username="ann")
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    _login(page, live_server, "ann")
    page.get_by_role("link", name=f"Start annotating {project.name}").click()
    page.click("#start")
    page.wait_for_selector("#stage[data-ready] #answer-form")
    first = _assignment(page)
    page.wait_for_url(re.compile(rf".*\?a={first}$"))
    choice = page.locator('#answer-form button[data-key="2"]').get_attribute("value")
    _answer_key(page, "2")
    second = _assignment(page)
    page.wait_for_url(re.compile(rf".*\?a={second}$"))
    assert page.locator("[data-testid=answered]").inner_text() == "1"

    # Back: the answered item, with its answer and Undo
    page.go_back()
    page.wait_for_selector("[data-testid=your-answer]")
    assert page.url.endswith(f"?a={first}")
    assert choice in page.locator("[data-testid=your-answer]").inner_text()
    assert page.locator("button.chosen[aria-pressed=true]").inner_text().endswith(choice)
    assert page.locator("#undo").is_visible()
    assert page.locator("[data-testid=answered]").inner_text() == "1"

    # Back again leaves the page (the instructions); Forward comes back to the answered item,
    # not to a stale copy showing "answered 0"
    page.go_back()
    page.wait_for_selector("#start")
    page.go_forward()
    page.wait_for_selector("[data-testid=your-answer]")
    assert page.locator("[data-testid=answered]").inner_text() == "1"
    assert choice in page.locator("[data-testid=your-answer]").inner_text()

    # Forward: the item being answered now
    page.go_forward()
    page.wait_for_selector("#stage[data-ready] #answer-form")
    assert _assignment(page) == second
    assert page.locator("[data-testid=answered]").inner_text() == "1"

    # Back and undo with the keyboard: the first item comes back to be answered again
    page.go_back()
    page.wait_for_selector("[data-testid=your-answer]")
    page.wait_for_selector("#stage[data-ready]")
    page.keyboard.press("u")
    page.wait_for_selector(f'#stage[data-assignment="{first}"] #answer-form')
    assert not Annotation.objects.filter(assignment_id=first).exists()
    assert page.locator("[data-testid=answered]").inner_text() == "0"
    assert errors == []
