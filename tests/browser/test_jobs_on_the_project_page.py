"""A real browser (Debian's chromium) on the project page: "Train h" and "Auto-label" queue
jobs; the page shows each job's progress, then the result appears by itself (the job fragment
stops polling and fires ``job-finished``, the section reloads) — no page reload.

A stand-in worker: the job task's message runs ``job_execute`` in a background thread a
moment later (the real worker path is covered by tests/integration/)."""

from __future__ import annotations

import os

import pytest
from django.contrib.auth.models import Group, User

from labeling import services
from projects.models import Candidate
from tests.browser.conftest import jobs_run_in_threads, log_in
from tests.labeling.conftest import FakeEncoder
from tests.labeling.test_services import make_project

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API runs an event loop

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def worker(monkeypatch, settings, tmp_path):
    settings.COUNTERPART = {**settings.COUNTERPART, "MODEL_DIR": str(tmp_path / "models")}
    monkeypatch.setattr(services, "embedder", lambda: FakeEncoder())
    with jobs_run_in_threads(monkeypatch, delay=1.5):
        yield


def test_train_and_autolabel_show_progress_then_results_without_a_reload(page, live_server, worker):
    project, _ = make_project(n_pairs=80, n_human=40)
    user = User.objects.create_user("res", password="pw-123456")
    user.groups.add(Group.objects.get_or_create(name="researcher")[0])
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))
    log_in(page, live_server, "res", next_path=f"/projects/{project.pk}/models/")  # the task model and h page
    page.wait_for_selector("section#flip-rates #pairwise-model")
    assert "No pairwise classifier trained yet" in page.inner_text("#pairwise-model")
    page.evaluate("window.__same_page = true")

    page.select_option("select[name=mode]", "pc")
    page.click("button:has-text('Train h')")
    page.wait_for_selector(".job[data-status=queued], .job[data-status=running]")
    assert "Training PC queued" in page.inner_text("#flip-rates")
    page.wait_for_function(
        "() => document.querySelector('#pairwise-model').innerText.includes('Pairwise classifier v1')",
        timeout=60_000,
    )
    assert page.locator(".job[data-status=succeeded]").count() >= 1

    page.click("text=Auto-label the rest")
    page.wait_for_function(
        "() => /Auto labels: [1-9]/.test(document.querySelector('#flip-rates').innerText)", timeout=60_000
    )
    assert page.evaluate("window.__same_page") is True  # everything above happened without a reload
    assert errors == []
    assert Candidate.objects.filter(project=project, label_source="auto").exists()
