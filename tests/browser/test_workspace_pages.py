"""A real browser opens the researcher's workspace pages at 1280 px: the data browser, a pair
with its highlighted edit, and the dashboard's annotators table, which must not be cut off."""

from __future__ import annotations

import os

import pytest

from annotate.services import assignments as svc
from annotate.services.routing import project_route
from projects.models import Candidate
from tests.annotate.factories import annotator, project_with_candidates, researcher

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SHOTS = os.environ.get("COUNTERPART_SCREENSHOTS", "")


def _login(page, live_server, username):
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", "pw-123456")
    page.click("button[type=submit]")


def test_workspace_pages_at_1280(page, live_server, settings):
    settings.COUNTERPART = {**settings.COUNTERPART, "GOLD_RATE": 0.0, "QUALIFICATION_GOLD": 0}
    project = project_with_candidates(n=60, k=2)
    project_route(project=project, budget=0.1, seed=0)
    for i in range(4):
        u = annotator(project, username=f"annotator-with-a-long-name-{i}")
        a = svc.assignment_next(project=project, annotator=u)
        if a:
            svc.annotation_submit(assignment_id=a.pk, annotator=u, choice="neutral")
    researcher(username="res")
    page.set_viewport_size({"width": 1280, "height": 900})
    _login(page, live_server, "res")

    page.goto(f"{live_server.url}/projects/{project.pk}/candidates/")
    assert page.locator("#results tbody tr").count() == 50
    n = Candidate.objects.filter(project=project).count()
    assert page.inner_text("#results p.total") == f"{n} candidates match"  # the total (issue 20.6)
    if SHOTS:
        page.screenshot(path=f"{SHOTS}/browser.png", full_page=True)
    page.select_option("#f-source", "human")
    page.click("#filters button[type=submit]")
    page.wait_for_url("**label_source=human**")
    human = Candidate.objects.filter(project=project, label_source="human").count()
    page.wait_for_function(
        "want => document.querySelector('#results p.total').innerText.startsWith(want)", arg=f"{human} candidate"
    )
    page.click("text=more →") if page.locator("text=more →").count() else None

    cand = Candidate.objects.filter(project=project).order_by("id").first()
    page.goto(f"{live_server.url}/candidates/{cand.pk}/")
    assert page.locator("del.diff, ins.diff").count() >= 1
    if SHOTS:
        page.screenshot(path=f"{SHOTS}/pair.png", full_page=True)

    page.goto(f"{live_server.url}/annotate/projects/{project.pk}/dashboard/")
    wrap = page.locator("#h-ann ~ .dash-wrap").first
    table_box, wrap_box = wrap.locator("table").bounding_box(), wrap.bounding_box()
    # the table either fits or scrolls inside its wrapper; the wrapper stays inside the page
    assert wrap_box["x"] + wrap_box["width"] <= 1280
    scroll = page.evaluate("el => el.scrollWidth > el.clientWidth", wrap.element_handle())
    assert table_box["width"] <= wrap_box["width"] + 1 or scroll
    if SHOTS:
        page.screenshot(path=f"{SHOTS}/dashboard.png", full_page=True)
