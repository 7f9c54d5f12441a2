"""Hard text on the annotator page, at a phone's width: markup in a text is shown as text (never
run or rendered), a right-to-left text reads right to left, and a long unbroken word (a URL, a
hashtag) wraps instead of widening the page."""

from __future__ import annotations

import os

import pytest

from annotate.services.routing import project_route
from projects.models import Candidate, Example
from tests.annotate.factories import annotator, project_with_candidates
from tests.browser.conftest import log_in

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API runs an event loop

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

MARKUP = '<b>bold</b> <img src=x onerror="window.pwned=1"> &amp; <script>window.pwned=2</script>'
ARABIC = "الفيلم كان رائعا جدا، أنصح به!"
LONG = "https://example.org/" + "a" * 200


@pytest.mark.parametrize("task", ["nli", "sentiment", "image-caption"])
def test_markup_rtl_and_long_words_on_the_item_page(page, live_server, annotation_settings, task):
    project = project_with_candidates(name="hard", task=task, n=1, k=1)
    texts = dict.fromkeys(project.text_fields, f"{ARABIC} {MARKUP} {LONG}")  # a review that quotes markup
    Candidate.objects.filter(project=project).update(fields=texts)
    Example.objects.filter(project=project).update(fields=texts)
    project_route(project=project, budget=1.0, seed=0)
    annotator(project, username="reader", qualified_at="2026-01-01T00:00:00Z")
    page.set_viewport_size({"width": 390, "height": 844})
    log_in(page, live_server, "reader", next_path=f"/annotate/projects/{project.pk}/")
    page.wait_for_selector("#stage[data-ready] #answer-form")

    assert page.evaluate("() => window.pwned") is None
    assert page.locator("#stage .item b, #stage .item script, #stage .item img[src=x]").count() == 0
    body = page.locator("#stage .item").inner_text()
    assert "<b>bold</b>" in body and "&amp;" in body
    rtl = page.locator("#stage .item :is(dd, .caption-text)", has_text=ARABIC).first
    assert rtl.evaluate("e => getComputedStyle(e).direction") == "rtl"
    width = page.evaluate("() => [document.scrollingElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], f"the page scrolls sideways: {width}"


def test_the_changed_words_are_marked_while_the_original_is_open(page, live_server, annotation_settings):
    """The words the counterfactual changed were marked nowhere: the annotator comparing it with
    the original (o) had to find the edit word by word. They are now marked in both texts while
    the original is open, and not before (the counterfactual alone must not point at them)."""
    project = project_with_candidates(name="diff", task="sentiment", n=1, k=1)
    Candidate.objects.filter(project=project).update(fields={"text": "The film was <i>not</i> dull at all."})
    Example.objects.filter(project=project).update(fields={"text": "The film was <i>very</i> dull at all."})
    project_route(project=project, budget=1.0, seed=0)
    annotator(project, username="differ", qualified_at="2026-01-01T00:00:00Z")
    log_in(page, live_server, "differ", next_path=f"/annotate/projects/{project.pk}/")
    page.wait_for_selector("#stage[data-ready] #answer-form")
    shown, original = page.locator(".item > .fields mark.changed"), page.locator("#original dd mark.changed")
    assert shown.all_text_contents() == ["not"] and original.all_text_contents() == ["very"]
    background = "e => getComputedStyle(e).backgroundColor"
    assert shown.first.evaluate(background) == "rgba(0, 0, 0, 0)"  # the counterfactual alone: unmarked
    page.keyboard.press("o")
    assert page.locator("#original").get_attribute("open") is not None
    assert shown.first.evaluate(background) != "rgba(0, 0, 0, 0)"
    assert original.first.evaluate(background) != "rgba(0, 0, 0, 0)"
    assert "<i>not</i>" in page.locator(".item > .fields dd").inner_text()  # markup still shown as text
