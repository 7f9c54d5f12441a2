"""A real browser at a phone's width (390 × 844 px): no researcher page scrolls the whole page
sideways. A table wider than the screen scrolls inside its own box, and a long unbroken word
wraps. The crawl found the project list and the jobs list widened to 648 and 674 px (bare
tables), the runs list to 471, a pair's annotations table to 479, the flip-rate table to 392,
and a risk naming COUNTERPART_MIN_TRAIN_LABELS_WARNING widened the overview to 453."""

from __future__ import annotations

import os

import pytest

from annotate.services import assignments as svc
from annotate.services.routing import project_route
from generation.services.runs import run_create
from projects.models import Candidate
from projects.services.jobs import job_create
from tests.annotate.factories import annotator, project_with_candidates, researcher
from tests.browser.conftest import log_in

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PAGE_WIDTH = """() => ({page: document.scrollingElement.scrollWidth, view: window.innerWidth,
  tables: [...document.querySelectorAll('main table')].map(t => {
    const box = t.scrollWidth > t.clientWidth ? t : t.parentElement;
    return box.scrollWidth > box.clientWidth ? getComputedStyle(box).overflowX : 'fits'; })})"""
LONG_WORD = "COUNTERPART_MIN_TRAIN_LABELS_WARNING_AND_THEN_SOME_MORE"


@pytest.fixture
def pages(settings):
    """A project with a run, a failed job, a pair with two annotators' answers; the pages."""
    settings.COUNTERPART = {**settings.COUNTERPART, "GOLD_RATE": 0.0, "QUALIFICATION_GOLD": 0}
    user = researcher(username="res")
    project = project_with_candidates(n=10, k=2)
    run_create(project=project, generator="rules", created_by=user)
    job = job_create(kind="route", project=project, created_by=user)
    job.status, job.error = "failed", f"nothing to route: {LONG_WORD}"
    job.save()
    project_route(project=project, budget=0.3, seed=0)
    for name in ("annotator-one", "annotator-two"):
        u = annotator(project, username=name)
        a = svc.assignment_next(project=project, annotator=u)
        svc.annotation_submit(assignment_id=a.pk, annotator=u, choice="neutral", duration_ms=1155)
    pair = Candidate.objects.filter(project=project, items__done=2).first()
    return ["/projects/", "/jobs/", f"/projects/{project.pk}/runs/", f"/candidates/{pair.pk}/"]


def test_researcher_pages_fit_a_phone(page, live_server, pages):
    page.set_viewport_size({"width": 390, "height": 844})
    log_in(page, live_server, "res")
    page.wait_for_url("**/projects/")
    wide = {}
    for path in pages:
        page.goto(f"{live_server.url}{path}")
        widths = page.evaluate(PAGE_WIDTH)
        # a table too wide for the screen scrolls inside its box; the page never does
        if widths["page"] > widths["view"] or any(t not in ("fits", "auto", "scroll") for t in widths["tables"]):
            wide[path] = widths
    assert not wide, wide
