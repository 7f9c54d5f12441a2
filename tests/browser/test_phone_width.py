"""A real browser at a phone's width (390 × 844 px): the researcher's list pages never scroll the
whole page sideways. A table wider than the screen scrolls inside its own box (``.table-wrap``);
the project list and the jobs list were bare tables and widened the page to 648 and 674 px."""

from __future__ import annotations

import os

import pytest

from projects.services.jobs import job_create
from projects.services.projects import project_create
from tests.annotate.factories import researcher
from tests.browser.conftest import log_in

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PAGE_WIDTH = """() => ({page: document.scrollingElement.scrollWidth, view: window.innerWidth,
  tables: [...document.querySelectorAll('main table')].map(t => {
    const box = t.parentElement;
    return box.scrollWidth > box.clientWidth ? getComputedStyle(box).overflowX : 'fits'; })})"""


@pytest.mark.parametrize("path", ["/projects/", "/jobs/"])
def test_list_pages_fit_a_phone(page, live_server, path):
    user = researcher(username="res")
    project = project_create(name="demo-nli", task="nli", created_by=user)
    job = job_create(kind="route", project=project, created_by=user)
    job.status, job.error = "failed", "nothing to route: the budget is already routed"
    job.save()
    page.set_viewport_size({"width": 390, "height": 844})
    log_in(page, live_server, "res", next_path=path)
    page.wait_for_url(f"**{path}")
    widths = page.evaluate(PAGE_WIDTH)
    assert widths["page"] <= widths["view"], widths
    # a table too wide for the screen scrolls inside its box
    assert all(t in ("fits", "auto", "scroll") for t in widths["tables"]), widths
