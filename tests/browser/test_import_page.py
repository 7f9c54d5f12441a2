"""A real browser (Debian's chromium) on the import page (issue 20.1): the CAD layouts are
offered with the files a user has. CAD NLI as its three ``dev.tsv`` files (the page shows the
three file fields only for cad-nli and makes the split required), and CAD sentiment as a zip
of the folder; each runs as an import job whose box polls to its end."""

from __future__ import annotations

import os
import zipfile

import pytest
from playwright.sync_api import expect

from projects.models import Candidate, Example
from projects.services.projects import project_create
from tests.annotate.factories import researcher
from tests.browser.conftest import jobs_run_in_threads, log_in
from tests.projects.test_import_cad_uploads import N, nli_part, sentiment_rows

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API runs an event loop

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def worker(monkeypatch):
    with jobs_run_in_threads(monkeypatch, delay=0.5):
        yield


def _login(page, live_server, path: str) -> None:
    researcher(username="res")
    log_in(page, live_server, "res", next_path=path)


def test_cad_uploads_through_the_import_page(page, live_server, worker, tmp_path, shared_data):
    nli = project_create(name="cad-nli", task="nli")
    sentiment = project_create(name="cad-sent", task="sentiment")
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))

    # -- CAD NLI: the three files of the dev split -------------------------------------------------
    _login(page, live_server, f"/projects/{nli.pk}/import/")
    page.wait_for_selector("#id_format")
    assert "manage.py" not in page.content()
    # import.js (deferred) shows the fieldsets of the chosen format: wait for it, not for the
    # page's first paint (a CI run read the fieldset before the script had run)
    expect(page.locator("#cad-nli-files")).to_be_hidden()  # pairs-jsonl is chosen first
    page.select_option("#id_format", "cad-nli")
    expect(page.locator("#cad-nli-files")).to_be_visible()
    assert page.locator("#id_split").evaluate("el => el.required")
    for part in ("original", "revised_premise", "revised_hypothesis"):
        f = tmp_path / part / "dev.tsv"
        f.parent.mkdir()
        f.write_bytes(nli_part(shared_data, part))
        page.set_input_files(f"#id_{part}", str(f))
    page.fill("#id_split", "dev")
    page.click("form button[type=submit]:has-text('Import')")
    page.wait_for_selector(".job[data-status=succeeded]", timeout=30_000)
    assert "imported 5 originals, 20 pairs" in page.inner_text(".job[data-status=succeeded]")
    assert Candidate.objects.filter(project=nli).count() == 4 * N
    assert set(Example.objects.filter(project=nli).values_list("split", flat=True)) == {"dev"}

    # -- CAD sentiment: a zip of the folder ---------------------------------------------------------
    z = tmp_path / "cad.zip"
    with zipfile.ZipFile(z, "w") as zf:
        zf.writestr("cad/sentiment/combined/paired/dev_paired.tsv", sentiment_rows(shared_data))
        zf.writestr("cad/LICENSE", "MIT\n")
    page.goto(f"{live_server.url}/projects/{sentiment.pk}/import/")
    page.select_option("#id_format", "cad-sentiment")
    expect(page.locator("#cad-nli-files")).to_be_hidden()
    expect(page.locator("[data-help=cad-sentiment]")).to_be_visible()
    page.set_input_files("#id_file", str(z))
    page.fill("#id_split", "dev")
    page.click("form button[type=submit]:has-text('Import')")
    page.wait_for_selector(".job[data-status=succeeded]", timeout=30_000)
    assert Candidate.objects.filter(project=sentiment).count() == N
    assert not errors
