"""One source for every number of a job (issue 32.6): for the same job row, the page, the API
(``/api/v1/jobs/``) and the ``jobs`` command show the same rate (with its unit), ETA, done /
total and step list — they used to disagree (0.95 originals/s on the run page, 0.592 in the
API at the same moment; "succeeded 1 / 2"; "0.148/s")."""

from __future__ import annotations

import json
import types
from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone
from rest_framework.test import APIClient

import projects.job_progress as figures
from generation.services.runs import run_create
from projects.models import Job
from projects.services.jobs import job_create
from tests.generation.run_fixtures import make_project

pytestmark = pytest.mark.postgres_too  # reaches database-specific code (docs/testing.md)

NOW = timezone.now().replace(microsecond=0)


@pytest.fixture
def project(db):
    return make_project(name="figures", n=6)


@pytest.fixture(autouse=True)
def _frozen(monkeypatch):
    """The figures' clock stands still, so three reads of one row see the same moment."""
    monkeypatch.setattr(figures, "timezone", types.SimpleNamespace(now=lambda: NOW))


def _three_views(client, researcher, job: Job, page: str) -> tuple[str, dict, dict, str]:
    client.force_login(researcher)
    html = client.get(page).content.decode()
    api = APIClient()
    api.force_authenticate(researcher)
    body = api.get(f"/api/v1/jobs/{job.pk}/").json()
    out = StringIO()
    call_command("jobs", "--json", stdout=out)
    row = next(r for r in json.loads(out.getvalue().splitlines()[-1]) if r["id"] == job.pk)
    text = StringIO()
    call_command("jobs", stdout=text)
    line = next(ln for ln in text.getvalue().splitlines() if ln.split()[0] == str(job.pk))
    return html, body, row, line


def test_a_generation_run_shows_the_same_rate_eta_and_steps_everywhere(project, client, researcher):
    run = run_create(project=project, generator="rules", options={"filters": ["similarity"]})
    job = run.job
    start = NOW - timedelta(seconds=62)
    # loading took 20 s; then a slow first batch (cold caches, filters included) and steady ones
    points = [(0, 0), (30, 4), (36, 8), (42, 12)]
    job.status, job.started_at, job.total, job.done = "running", start - timedelta(seconds=20), 200, 12
    job.heartbeat_at = NOW
    job.step = {
        "name": "generating",
        "index": 2,
        "count": 2,
        "done": 12,
        "total": 200,
        "unit": "originals",
        "started_at": start.isoformat(),
        "plan": ["loading models", "generating"],
        "recent": [[(start + timedelta(seconds=s)).isoformat(), d] for s, d in points],
    }
    job.save()
    html, body, row, line = _three_views(client, researcher, job, f"/runs/{run.pk}/")
    rate = round(12 / 42, 3)  # the batches' originals over their time: generation and filters
    eta = round((200 - 12) / (12 / 42) - 20, 1)  # from the last batch, 20 s ago
    for view in (body, row):
        assert (view["rate"], view["rate_unit"], view["eta_seconds"]) == (rate, "originals/s", eta)
        assert (view["done_shown"], view["total_shown"], view["unit"]) == (12, 200, "originals")
        assert [(s["name"], s["state"]) for s in view["steps"]] == [
            ("loading models", "done"),
            ("generating", "running"),
        ]
    assert body["summary"] == row["summary"] and body["summary"] in line
    assert f"{rate:g} originals/s, about {eta:.0f} s left" in body["summary"]
    assert f'data-role="rate">{rate}<' in html and "originals/s" in html
    assert f'data-role="eta">{eta:.0f} s<' in html
    assert '<li data-state="done">loading models' in html and '<li data-state="running">generating' in html
    api = APIClient()
    api.force_authenticate(researcher)
    run_api = api.get(f"/api/v1/generation/runs/{run.pk}/").json()["progress"]  # the run's own API
    assert (run_api["rate"], run_api["rate_unit"], run_api["eta_seconds"]) == (rate, "originals/s", eta)
    assert run_api["summary"] == body["summary"] and run_api["steps"] == body["steps"]


def test_a_finished_job_of_several_steps_says_all_of_them_finished(project, client, researcher):
    job = job_create(kind="evaluate", project=project, total=2)
    plan = ["load MiniLM and encode the texts", "fit the classifiers (seeds × variants)"]
    job.status, job.started_at, job.finished_at, job.done = "succeeded", NOW - timedelta(seconds=90), NOW, 1
    job.step = {"name": plan[1], "index": 2, "count": 2, "done": 12, "total": 12, "unit": "fits", "plan": plan}
    job.save()
    html, body, row, line = _three_views(client, researcher, job, f"/jobs/{job.pk}/")
    assert "1 / 2" not in html and "all 2 steps done" in html
    for view in (body, row):
        assert (view["done_shown"], view["total_shown"], view["summary"]) == (2, 2, "succeeded · all 2 steps done")
        assert [s["state"] for s in view["steps"]] == ["done", "done"]
    assert line.endswith("succeeded · all 2 steps done")
    assert '<li data-state="done">load MiniLM and encode the texts' in html


def test_a_task_model_rate_carries_its_unit_and_the_loading_step_is_listed(project, client, researcher):
    job = job_create(kind="task_model", project=project, total=2)
    plan = ["load the base model and the training data", "fine-tune"]
    job.status, job.started_at, job.heartbeat_at = "running", NOW - timedelta(seconds=100), NOW
    job.step = {
        "name": plan[1],
        "index": 2,
        "count": 2,
        "done": 320,
        "total": 3200,
        "unit": "examples",
        "started_at": (NOW - timedelta(seconds=40)).isoformat(),
        "plan": plan,
    }
    job.done = 1
    job.save()
    html, body, row, line = _three_views(client, researcher, job, f"/jobs/{job.pk}/")
    for view in (body, row):
        assert (view["rate"], view["rate_unit"], view["eta_seconds"]) == (8.0, "examples/s", 360.0)
        assert [s["state"] for s in view["steps"]] == ["done", "running"]
    assert body["summary"] == row["summary"] and body["summary"] in line
    assert "8 examples/s, about 360 s left" in body["summary"]
    assert 'data-role="rate">· 8.0 examples/s, about 360 s left' in html
    assert '<li data-state="done">load the base model and the training data' in html


def test_a_fast_rate_reads_as_people_write_it(project, client, researcher):
    """An import at 2749.997 rows/s showed all three decimals in the job box; the box and the
    summary now show three significant figures, the API keeps the figure."""
    job = job_create(kind="import", project=project, total=100_000)
    job.status, job.started_at, job.heartbeat_at, job.done = "running", NOW - timedelta(seconds=10), NOW, 27_499
    job.step = {"name": "import", "index": 1, "count": 1, "done": 27_499, "total": 100_000, "unit": "rows"}
    job.step["started_at"] = job.started_at.isoformat()
    job.save()
    progress = figures.job_progress(job=job)
    assert progress.rate is not None and progress.rate >= 100 and progress.rate != round(progress.rate)
    html, body, row, line = _three_views(client, researcher, job, f"/jobs/{job.pk}/")
    shown = f"{progress.rate:,.0f}"
    assert body["rate"] == row["rate"] == progress.rate  # the API and jobs --json keep the figure
    assert f"{shown} rows/s" in body["summary"] and f"{shown} rows/s" in line
    assert f'data-role="rate">· {shown} rows/s' in html
    assert str(progress.rate) not in html
