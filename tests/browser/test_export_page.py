"""A real browser on the export page (issue 20.9): the Split list shows each split once, the
"No state chosen" note follows the state select (static/js/export.js, no inline script), and
an hf-datasets export started from the form lands on the job's URL, which a reload shows again
without starting another job."""

from __future__ import annotations

import os

import pytest

from projects.models import Example, Job
from tests.annotate.factories import project_with_candidates, researcher

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_export_page_in_a_browser(page, live_server, settings, tmp_path):
    settings.COUNTERPART = {**settings.COUNTERPART, "EXPORT_DIR": str(tmp_path / "exports")}
    project = project_with_candidates(n=12, k=2)
    Example.objects.filter(project=project).update(split="dev")
    researcher(username="res")
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "res")
    page.fill("#id_password", "pw-123456")
    page.click("button[type=submit]")

    page.goto(f"{live_server.url}/projects/{project.pk}/export/")
    assert page.locator("#x-split option").all_inner_texts() == ["dev"]
    help_note = page.locator("#x-state-help")
    assert help_note.is_visible()
    page.select_option("#x-state", ["pooled"])
    assert help_note.is_hidden()
    page.select_option("#x-state", [])
    assert help_note.is_visible()

    page.select_option("#x-format", "hf-datasets")
    page.click("form button[type=submit]:has-text('Export')")
    page.wait_for_url("**/export/?job=*")
    job = Job.objects.get(kind="export", project=project)
    assert "hf-datasets is a directory" in page.inner_text("main")
    page.reload()
    page.wait_for_selector(f"#job-{job.pk}")
    assert Job.objects.filter(kind="export").count() == 1
