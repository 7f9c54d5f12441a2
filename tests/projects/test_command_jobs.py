"""`route`, `import_data`, `export`, `train_pairwise`, `autolabel` and `train_task_model` run
in the foreground from the command line created no Job row, so `jobs` / `jobs --json` and the
Jobs page never showed them (FORMATS.md §3 lists their kinds). Each now records a job as the
page-started ones do — running, then succeeded with done/total, or failed with the error —
and prints what it printed before."""

from __future__ import annotations

import json
from datetime import timedelta
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from projects.models import Job
from projects.services import jobs as job_service
from tests.annotate.factories import project_with_candidates, researcher

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command(*args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def listed() -> list[dict]:
    out, _ = run("jobs", "--json")
    return json.loads(out.strip().splitlines()[-1])


def test_route_export_and_import_from_the_command_line_are_jobs(tmp_path: Path, client):
    project = project_with_candidates(n=10)
    out, _ = run("route", "--project", project.name, "--budget", "0.5", "--seed", "0")
    assert out.startswith("strategy: random; requested 5, routed 5 candidates")  # the printed contract stays
    route = Job.objects.get(kind="route")
    assert (route.status, route.done, route.total, route.error) == ("succeeded", 5, 5, "")
    assert route.result["routed"] == 5 and route.finished_at is not None and route.project == project

    path = tmp_path / "pairs.jsonl"
    out, _ = run("export", "--project", project.name, "--format", "pairs-jsonl", "--out", str(path))
    assert out.startswith(f"exported 10 pairs to {path}")
    export = Job.objects.get(kind="export")
    assert (export.status, export.done, export.total) == ("succeeded", 10, 10)
    assert export.result == {"pairs": 10, "format": "pairs-jsonl", "out": str(path)}

    out, _ = run("import_data", "--project", "copy", "--task", "nli", "--format", "pairs-jsonl", str(path))
    assert out.strip().endswith("imported 10 originals, 10 pairs; skipped 0; problems 0")
    imported = Job.objects.get(kind="import")
    assert (imported.status, imported.done, imported.total) == ("succeeded", 10, 10)
    assert imported.project.name == "copy" and imported.result["imported_pairs"] == 10

    shown = {(j["kind"], j["project"], j["status"]) for j in listed()}
    assert shown == {("route", "p", "succeeded"), ("export", "p", "succeeded"), ("import", "copy", "succeeded")}
    # the Jobs page lists them, started by the command line (no user started them)
    client.force_login(researcher())
    page = client.get("/jobs/").content.decode()
    assert page.count(">command line</span>") == 3 and ">route<" in page and ">import<" in page


def test_a_refused_command_is_a_failed_job_with_its_error(tmp_path: Path):
    project = project_with_candidates(n=4)
    with pytest.raises(CommandError) as autolabel:
        run("autolabel", "--project", project.name)
    with pytest.raises(CommandError) as train:
        run("train_pairwise", "--project", project.name)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": "x"}\n')
    with pytest.raises(CommandError, match="import refused"):
        run("import_data", "--project", project.name, "--format", "pairs-jsonl", str(bad))
    jobs = {j.kind: j for j in Job.objects.all()}
    assert {k: j.status for k, j in jobs.items()} == {"autolabel": "failed", "train": "failed", "import": "failed"}
    assert jobs["autolabel"].error == str(autolabel.value) and jobs["train"].error == str(train.value)
    assert "problem" in jobs["import"].error and all(j.finished_at for j in jobs.values())


def test_a_refused_command_prints_its_error_once(tmp_path: Path, caplog):
    """The command prints its refusal (CommandError); the job's failure is not logged as a
    warning too, which showed the same error twice on the console."""
    project = project_with_candidates(n=4)
    caplog.set_level("INFO")
    with pytest.raises(CommandError, match="between 0 and 1"):
        run(
            "export",
            "--project",
            project.name,
            "--format",
            "csv",
            "--out",
            str(tmp_path / "x.csv"),
            "--min-confidence",
            "2",
        )
    with pytest.raises(CommandError, match="no pairwise model"):
        run("autolabel", "--project", project.name)
    assert Job.objects.filter(status="failed").count() == 2
    assert [r.getMessage() for r in caplog.records if r.levelno >= 30] == []


def test_the_sweep_fails_a_foreground_job_whose_command_died_instead_of_handing_it_to_a_worker(monkeypatch):
    project = project_with_candidates(n=4)
    run("route", "--project", project.name, "--budget", "0.5")
    stale = timezone.now() - timedelta(hours=1)
    Job.objects.update(status="running", heartbeat_at=stale, finished_at=None, enqueued_at=None)
    sent: list[int] = []
    monkeypatch.setattr(job_service, "job_enqueue", lambda *, job_id, countdown=None: sent.append(job_id))
    assert job_service.jobs_sweep() == [] and sent == []
    job = Job.objects.get()
    assert job.status == "failed" and job.error == job_service.FOREGROUND_DIED


def test_the_sweep_fails_a_command_job_left_waiting_behind_another_when_its_command_died(monkeypatch):
    """A command killed while it waited behind another job of the project left its job queued
    for ever: no heartbeat, and no worker may run it. Its wait loop now touches the job, and the
    sweep fails a waiting foreground job the loop stopped touching; a live one stays queued."""
    project = project_with_candidates(n=4)
    fresh, dead = (
        job_service.job_create(kind="route", project=project, params={job_service.FOREGROUND: True}) for _ in range(2)
    )
    now = timezone.now()
    Job.objects.filter(pk=fresh.pk).update(result={"waiting_behind": 1}, enqueued_at=now)
    Job.objects.filter(pk=dead.pk).update(result={"waiting_behind": 1}, enqueued_at=now - timedelta(hours=1))
    sent: list[int] = []
    monkeypatch.setattr(job_service, "job_enqueue", lambda *, job_id, countdown=None: sent.append(job_id))
    assert job_service.jobs_sweep() == [] and sent == []
    dead.refresh_from_db()
    fresh.refresh_from_db()
    assert (dead.status, dead.error) == ("failed", job_service.FOREGROUND_DIED_WAITING) and dead.finished_at
    assert fresh.status == "queued"


def test_a_waiting_command_keeps_its_job_alive_while_it_waits(monkeypatch):
    project = project_with_candidates(n=4)
    blocker = job_service.job_create(kind="generation", project=project)
    Job.objects.filter(pk=blocker.pk).update(status="running", heartbeat_at=timezone.now())
    touched: list[object] = []

    def sleep(_seconds: float) -> None:  # the wait: see what the command left, then let it run
        waiting = Job.objects.get(kind="route")
        touched.append(waiting.enqueued_at)
        Job.objects.filter(pk=blocker.pk).update(status="succeeded", finished_at=timezone.now())

    monkeypatch.setattr(job_service.time, "sleep", sleep)
    _out, err = run("route", "--project", project.name, "--budget", "0.5")
    assert touched and touched[0] is not None
    assert f"waiting behind job {blocker.pk}" in err
    assert Job.objects.get(kind="route").status == "succeeded"


def test_the_export_commands_job_says_where_its_file_is_instead_of_gone(tmp_path: Path, client):
    """A foreground export job is listed with the others, but its file is the command's --out:
    asking for its download says so, not that the file is gone."""
    project = project_with_candidates(n=3)
    path = tmp_path / "pairs.jsonl"
    run("export", "--project", project.name, "--format", "pairs-jsonl", "--out", str(path))
    job = Job.objects.get(kind="export", status="succeeded")
    client.force_login(researcher())
    answer = client.get(f"/api/v1/exports/{job.pk}/download/")
    assert answer.status_code == 404
    assert answer.json()["detail"] == (
        f"export job {job.pk} was run by the export command, which wrote its file to its --out ({path}); "
        "it has no download"
    )
    assert client.get(f"/exports/{job.pk}/download/").status_code == 404
