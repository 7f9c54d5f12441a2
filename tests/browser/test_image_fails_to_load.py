"""A caption item whose image file is on the server but cannot be shown by the browser (a broken
file, a network error): the page showed a broken-image icon and nothing to say what to do, so
the annotator guessed from the captions. It now says that the image did not load, not to guess,
and to skip it, with the skip reason filled in for the researchers."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from annotate.models import Assignment
from annotate.services import assignments as svc
from annotate.services.routing import project_route
from tests.annotate.factories import annotator, project_with_candidates
from tests.browser.conftest import log_in

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API runs an event loop

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_an_image_that_does_not_load_says_so_and_the_skip_names_it(page, live_server, annotation_settings, tmp_path):
    annotation_settings.MEDIA_ROOT = str(tmp_path)
    project = project_with_candidates(name="caps", task="image-caption", n=2, k=1)
    project_route(project=project, budget=1.0, seed=0)
    user = annotator(project, username="eyes", qualified_at="2026-01-01T00:00:00Z")
    prefix = "/" + annotation_settings.MEDIA_URL.strip("/") + "/"
    for name in ("o0", "o1", "c0", "c1"):  # every file is there, none is an image a browser can show
        target = Path(tmp_path) / "img" / f"{name}.jpg"
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"not a picture")
    log_in(page, live_server, "eyes", next_path=f"/annotate/projects/{project.pk}/")
    page.wait_for_selector("#stage[data-ready] #answer-form")
    aid = int(page.locator("#stage").get_attribute("data-assignment"))
    assert svc.item_view(assignment=Assignment.objects.get(pk=aid)).image.startswith(prefix)

    note = page.locator("[data-testid=image-failed]")
    note.wait_for()
    assert "did not load" in note.inner_text() and "do not guess" in note.inner_text()
    assert page.locator(".item-image img").is_hidden()
    page.keyboard.press("s")
    assert page.locator("#skip-reason").input_value() == "image did not load"
    page.keyboard.press("Enter")
    page.wait_for_function("old => document.getElementById('stage').dataset.assignment !== String(old)", arg=aid)
    skipped = Assignment.objects.get(pk=aid, annotator=user)
    assert (skipped.status, skipped.skip_reason) == ("skipped", "image did not load")
    page.locator("[data-testid=image-failed]").wait_for()  # the next item's broken image says so too
