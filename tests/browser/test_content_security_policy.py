"""The pages under the Content-Security-Policy in a real browser (Debian's chromium): every
researcher page, the annotator's page, the API docs and the admin load without a single
violation (tests/browser/conftest.py fails the test on one), htmx still loads the project
page's fragments and submits forms, the dashboard's SVG charts are drawn, and Swagger UI
renders the operations from its script file. The check itself is checked: an inline style
injected at the end is reported. htmx polling and htmx forms under the policy: the other browser
tests (the job box polling until the job ends on the project page, the annotator's keyboard
answers, the researcher's whole journey), which run under the same check."""

from __future__ import annotations

import os

import pytest
from django.contrib.auth import get_user_model

from annotate.services import assignments as svc
from annotate.services.routing import project_route
from projects.models import Candidate
from tests.annotate.factories import annotator, project_with_candidates, researcher

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API runs an event loop

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _login(page, live_server, username: str) -> None:
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", "pw-123456")
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: "/accounts/login/" not in url)


def test_pages_htmx_charts_and_api_docs_work_under_the_policy(page, live_server, settings, csp_violations):
    settings.COUNTERPART = {**settings.COUNTERPART, "GOLD_RATE": 0.0, "QUALIFICATION_GOLD": 0}
    project = project_with_candidates(n=30, k=2)
    project_route(project=project, budget=0.3, seed=0)
    for i in range(3):
        u = annotator(project, username=f"ann{i}")
        for _ in range(4):
            a = svc.assignment_next(project=project, annotator=u)
            if a:
                svc.annotation_submit(assignment_id=a.pk, annotator=u, choice="neutral")
    researcher(username="res")
    base, pk = live_server.url, project.pk
    _login(page, live_server, "res")

    # The overview and its pages: fragments arrive by htmx on load (hx-trigger="load").
    for url, fragments in (
        ("", ("#science-warnings",)),
        ("models/", ("#flip-rates", "#task-model")),
        ("evaluation/", ("#evaluation",)),
    ):
        page.goto(f"{base}/projects/{pk}/{url}")
        for fragment in fragments:
            page.wait_for_function(
                "sel => !document.querySelector(sel).textContent.includes('Loading') "
                "&& !document.querySelector(sel).textContent.includes('Checking the labelled sample')",
                arg=fragment,
            )

    # The dashboard's charts: server-rendered SVG, sized by CSS (no inline style).
    page.goto(f"{base}/projects/{pk}/dashboard/")
    charts = page.locator("svg.chart-svg")
    assert charts.count() >= 1
    box = charts.first.bounding_box()
    assert box is not None and box["width"] > 100 and box["height"] > 20

    # The data browser's filter form, a pair, the annotation dashboard and the other pages.
    page.goto(f"{base}/projects/{pk}/candidates/")
    page.select_option("#f-source", "human")
    page.click("#filters button[type=submit]")
    page.wait_for_url("**label_source=human**")
    cand = Candidate.objects.filter(project=project).order_by("id").first()
    for path in (
        "/",
        "/projects/",
        "/projects/new/",
        f"/candidates/{cand.pk}/",
        f"/annotate/projects/{pk}/dashboard/",
        f"/annotate/projects/{pk}/members/",
        f"/projects/{pk}/export/",
        f"/projects/{pk}/runs/new/",
        f"/projects/{pk}/data/",
        f"/annotate/projects/{pk}/route/",
        "/jobs/",
        "/accounts/tokens/",
        "/accounts/lockouts/",
    ):
        response = page.goto(f"{base}{path}")
        assert response is not None and response.status == 200, path

    # Swagger UI builds the page from its script file and the schema.
    page.goto(f"{base}/api/docs/")
    page.wait_for_selector(".swagger-ui .opblock", timeout=20_000)

    # The admin, as a superuser.
    get_user_model().objects.create_superuser("admin", password="pw-123456")
    page.context.clear_cookies()
    _login(page, live_server, "admin")
    for path in ("/admin/", "/admin/auth/user/", "/admin/axes/accessattempt/"):
        response = page.goto(f"{base}{path}")
        assert response is not None and response.status == 200, path

    assert not csp_violations, csp_violations
    # The check works: markup with an inline style, added now, is refused and reported.
    page.evaluate("document.body.insertAdjacentHTML('beforeend', '<p style=\"color: red\">x</p>')")
    page.wait_for_timeout(300)
    assert any("style-src" in v for v in csp_violations), csp_violations
    csp_violations.clear()
