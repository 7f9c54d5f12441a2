"""The run form's language-model choice (issue 21): it names the model that will answer, says
why concept-constrained stays local, and a run sent to a model server that cannot be reached
fails on its page in words. The key is on no page."""

from __future__ import annotations

import os
import threading

import pytest
from django.db import connection

from projects import tasks
from projects.models import Example
from projects.services.jobs import job_execute
from projects.services.projects import project_create
from tests.annotate.factories import researcher
from tests.generation.llm_server import free_port

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API runs an event loop

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
SECRET = "sk-browser-never-shown-42"


@pytest.fixture
def worker(monkeypatch, settings):
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    settings.COUNTERPART = {**settings.COUNTERPART, "LLM_BASE_URL": url, "LLM_MODEL": "served-model"}
    settings.LLM_API_KEY = SECRET
    threads: list[threading.Thread] = []

    def run_later(job_id: int) -> None:
        try:
            job_execute(job_id=job_id)
        finally:
            connection.close()

    def send(args, **options):
        t = threading.Timer(0.3, run_later, args)
        threads.append(t)
        t.start()

    monkeypatch.setattr(tasks.job_execute_task, "apply_async", send)
    yield url
    for t in threads:
        t.join(timeout=60)


def test_the_run_form_names_the_served_model_and_an_unreachable_server_fails_in_words(page, live_server, worker):
    researcher(username="res")
    p = project_create(name="served", task="sentiment")
    pos = p.labels.get(name="positive")
    Example.objects.create(
        project=p, external_id="r1", label=pos, fields={"text": "A warm, funny film with a great cast."}
    )
    page.goto(f"{live_server.url}/accounts/login/?next=/projects/{p.pk}/runs/new/")
    page.fill("#id_username", "res")
    page.fill("#id_password", "pw-123456")
    page.click("button[type=submit]")
    options = page.locator("#id_backend option").all_inner_texts()
    assert f"automatic: endpoint: served-model at {worker}" in options
    assert any(o.startswith("bundled:") for o in options) and any(o.startswith("local path:") for o in options)
    assert "so it runs on a local model" in page.inner_text("#backend-note")
    page.select_option("#id_generator", "llm-prompt")
    page.select_option("#id_backend", "endpoint")
    page.uncheck("input[name=filters][value=similarity]")
    page.uncheck("input[name=filters][value=perplexity]")
    page.click("text=Start run")
    page.wait_for_selector("#run-progress[data-status=failed]", timeout=60_000)
    text = page.inner_text("body")
    assert f"the model server at {worker} cannot be reached" in text and "Traceback" not in text
    assert SECRET not in page.content()
