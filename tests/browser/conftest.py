"""Fixtures shared by the browser tests.

Every browser test runs under the Content-Security-Policy (projects.middleware) and fails on
any violation: an init script (injected by the browser, so not subject to the page's policy)
reports each ``securitypolicyviolation`` event on the console, and Chromium's own "Refused to
…" console errors are caught as well."""

from __future__ import annotations

import threading
from contextlib import contextmanager

import pytest

REPORT_VIOLATIONS = """
document.addEventListener("securitypolicyviolation", (e) => {
  console.error(`CSP violation: ${e.violatedDirective} blocked ${e.blockedURI || "inline"} `
    + `at ${e.sourceFile || location.href}:${e.lineNumber}`);
});
"""


def _is_violation(text: str) -> bool:
    return text.startswith("CSP violation") or "Content Security Policy" in text


@pytest.fixture(autouse=True)
def csp_violations(request):
    """The violations seen by the test's ``page`` (a list the test may inspect and clear)."""
    if "page" not in request.fixturenames:
        yield []
        return
    page = request.getfixturevalue("page")
    seen: list[str] = []
    page.add_init_script(REPORT_VIOLATIONS)
    page.on("console", lambda message: seen.append(message.text) if _is_violation(message.text) else None)
    yield seen
    assert not seen, "Content-Security-Policy violations:\n" + "\n".join(seen)


@pytest.fixture
def annotation_settings(settings):
    settings.COUNTERPART = {
        **settings.COUNTERPART,
        "GOLD_RATE": 0.0,
        "QUALIFICATION_GOLD": 0,
        "LEASE_SECONDS": 120,
        "UNDO_SECONDS": 300,
    }
    return settings


@contextmanager
def jobs_run_in_threads(monkeypatch, delay: float):
    """A stand-in worker: each job task's message runs ``job_execute`` in a background thread
    ``delay`` seconds later (queued for a moment, as behind a busy worker); the threads are
    joined on exit. (The real worker path is covered by tests/integration/.)"""
    from django.db import connection

    from projects import tasks
    from projects.services.jobs import job_execute

    threads: list[threading.Thread] = []

    def run_later(job_id: int) -> None:
        try:
            job_execute(job_id=job_id)
        finally:
            connection.close()

    def send(args, **options):
        t = threading.Timer(delay, run_later, args)
        threads.append(t)
        t.start()

    monkeypatch.setattr(tasks.job_execute_task, "apply_async", send)
    try:
        yield
    finally:
        for t in threads:
            t.join(30)


def log_in(page, live_server, username: str, password: str = "pw-123456", next_path: str = "/") -> None:
    """Sign in through the log-in form and land on ``next_path``."""
    page.goto(f"{live_server.url}/accounts/login/?next={next_path}")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
