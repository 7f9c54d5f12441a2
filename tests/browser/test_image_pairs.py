"""A real browser on the demo's image project (``manage.py demo``, issue 20.7): the data
browser's rows and the pair page show the original photo and the counterfactual's side by
side with their captions, and every image shown really loads; a photo that has gone missing
is a placeholder that says so, not a broken image."""

from __future__ import annotations

import os
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

from projects.models import Candidate, Project
from tests.browser.conftest import log_in

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LOADED = "img => img.complete && img.naturalWidth > 0"


def test_demo_image_pairs_in_the_data_browser_and_on_the_pair_page(page, live_server):
    call_command("demo", "--password", "pw-demo-123456", "--no-route", stdout=StringIO(), stderr=StringIO())
    project = Project.objects.get(name="demo-image-caption")
    # The counterfactual photo of one pair goes missing (camera.png is used by that pair only).
    (Path(settings.MEDIA_ROOT) / "demo" / "captions" / "camera.png").unlink()
    lost = Candidate.objects.get(project=project, image__endswith="camera.png")
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    log_in(page, live_server, "researcher", "pw-demo-123456", f"/projects/{project.pk}/candidates/")
    page.wait_for_selector("#results tbody tr")

    rows = page.locator("#results tbody tr")
    assert rows.count() == Candidate.objects.filter(project=project).count() == 4
    assert page.locator("#results .image-pair").count() == 4
    imgs = page.locator("#results .image-pair img")
    assert imgs.count() == 7  # 4 originals + 3 counterfactuals; the missing one is a placeholder
    for i in range(imgs.count()):
        imgs.nth(i).scroll_into_view_if_needed()
        page.wait_for_function(LOADED, arg=imgs.nth(i).element_handle())
    row = page.locator(f"#results tbody tr:has(a[href='/candidates/{lost.pk}/'])")
    assert row.locator("[data-side=counterfactual] .image-missing").inner_text() == "image file missing"
    assert row.locator("[data-side=counterfactual] img").count() == 0
    assert lost.fields["caption"] in row.locator("[data-side=counterfactual] figcaption").inner_text()
    assert lost.example.fields["caption"] in row.locator("[data-side=original] figcaption").inner_text()

    other = Candidate.objects.filter(project=project).exclude(pk=lost.pk).order_by("id").first()
    page.goto(f"{live_server.url}/candidates/{other.pk}/")
    pair = page.locator("section:has(#h-images) .image-pair")
    left, right = pair.locator("[data-side=original]"), pair.locator("[data-side=counterfactual]")
    for side in (left, right):
        page.wait_for_function(LOADED, arg=side.locator("img").element_handle())
    lb, rb = left.bounding_box(), right.bounding_box()
    assert lb["x"] + lb["width"] <= rb["x"] and abs(lb["y"] - rb["y"]) < 2  # side by side
    assert other.fields["caption"] in right.inner_text() and other.example.fields["caption"] in left.inner_text()
    assert not errors
