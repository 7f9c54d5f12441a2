"""Imports as background jobs (issue 18.1): the upload is streamed to a file under the media
root and the request answers at once (the page with the job box, the API with 202); the job
checks the whole file, then writes all or nothing: a refused file, a cancel or a failure
leaves the project exactly as before, a killed worker's job resumes (the stale-job sweep
re-enqueues it) and ends with every row exactly once. The uploaded file is removed when the
job ends, never before a resume needs it. ``import_data --async`` queues the same job.

A "killed worker" is simulated by raising a ``BaseException`` inside a batch: it escapes
``job_execute`` like a SIGKILL does (the job stays ``running``, nothing records an outcome)."""

from __future__ import annotations

import json
import os
import threading
from datetime import timedelta
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.db import connection
from django.test import TestCase
from django.utils import timezone
from rest_framework.test import APIClient

from projects.models import Candidate, Example, Job
from projects.services import import_jobs, import_uploads, imports
from projects.services.import_jobs import import_start, import_upload_dir
from projects.services.imports import data_import
from projects.services.jobs import job_cancel, job_execute, jobs_sweep
from projects.services.projects import project_create
from tests.annotate.factories import researcher
from tests.projects.import_uploads import post_import

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def pair(i: int) -> str:
    return json.dumps(
        {
            "id": f"p{i}",
            "group": f"o{i // 2}",  # two pairs per original: originals span batches
            "original": {"fields": {"text": f"good film {i // 2}"}, "label": "positive"},
            "counterfactual": {"fields": {"text": f"bad film {i}"}, "label": "negative", "label_source": "human"},
        }
    )


def body(ids: range) -> bytes:
    return ("\n".join(pair(i) for i in ids) + "\n").encode()


class WorkerKilled(BaseException):
    """Escapes job_execute as a killed process would: no outcome is recorded."""


@pytest.fixture
def project():
    return project_create(name="films", task="sentiment")


@pytest.fixture
def small_batches(settings, monkeypatch):
    settings.COUNTERPART = {**settings.COUNTERPART, "IMPORT_BATCH_SIZE": 4}
    monkeypatch.setattr(import_jobs, "PROGRESS_SECONDS", 0.0)  # report (and check cancel) every batch


def db_rows(project) -> tuple[list[tuple[str, Any]], list[tuple[str, Any]]]:
    """Every original and pair of the project with its content, to compare before/after."""
    return (
        sorted(Example.objects.filter(project=project).values_list("external_id", "fields")),
        sorted(Candidate.objects.filter(project=project).values_list("external_id", "fields")),
    )


def kill_after(monkeypatch, batches: int) -> list[int]:
    """Make the worker die while writing batch ``batches + 1`` (its earlier batches committed)."""
    real = imports._write_batch
    seen: list[int] = []

    def dying(*args: Any, **kwargs: Any) -> None:
        seen.append(1)
        if len(seen) > batches:
            raise WorkerKilled()
        real(*args, **kwargs)

    monkeypatch.setattr(imports, "_write_batch", dying)
    return seen


def stale(job: Job) -> None:
    Job.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1), enqueued_at=None)


def uploaded_job(project, content: bytes, **kwargs: Any) -> tuple[Job, Path]:
    """An import job for an upload stored as the page stores it (queued, not run yet)."""
    path = import_jobs.import_upload_path("films.jsonl")
    path.write_bytes(content)
    with TestCase.captureOnCommitCallbacks(execute=False):
        job = import_uploads.import_upload_start(
            project=project, path=str(path), name="films.jsonl", format="pairs-jsonl", skip_hint="x", **kwargs
        )
    return job, path


def seed(project, tmp_path: Path) -> None:
    """Rows that were there before: p0..p3 (an import of p2 again must not remove them)."""
    f = tmp_path / "before.jsonl"
    f.write_bytes(body(range(4)))
    data_import(project=project, format="pairs-jsonl", paths=[str(f)])


# --- the request answers at once --------------------------------------------------------------


def test_the_page_streams_the_upload_under_the_media_root_and_shows_the_job_box(project, client, settings):
    client.force_login(researcher())
    with TestCase.captureOnCommitCallbacks(execute=False) as queued:
        resp = client.post(
            f"/projects/{project.pk}/import/",
            {"format": "pairs-jsonl", "file": SimpleUploadedFile("films.jsonl", body(range(10)))},
        )
    job = Job.objects.get(kind="import")
    # POST-redirect-GET (issue 32.8): a reload of the page shows the job, it does not upload again
    assert resp.status_code == 302 and resp["Location"] == f"/projects/{project.pk}/import/?job={job.pk}"
    html = client.get(resp["Location"]).content.decode()
    assert client.get(resp["Location"]).status_code == 200 and Job.objects.filter(kind="import").count() == 1
    assert f'id="job-{job.pk}"' in html and f'hx-get="/jobs/{job.pk}/"' in html  # the polling job box
    assert job.status == "queued" and not Candidate.objects.exists()  # nothing imported in the request
    (stored,) = job.params["paths"]
    assert Path(stored).parent == Path(settings.MEDIA_ROOT) / "imports"
    assert Path(stored).read_bytes() == body(range(10)) and job.params["names"] == {stored: "films.jsonl"}
    assert Path(stored).stat().st_mode & 0o777 == 0o600  # the app's user only
    for callback in queued:  # the worker runs it
        callback()
    job.refresh_from_db()
    assert job.status == "succeeded" and job.result["imported_pairs"] == 10 and job.done == job.total == 10
    assert not Path(stored).exists()  # removed when the job ended
    box = client.get(f"/jobs/{job.pk}/").content.decode()
    assert "imported 5 originals, 10 pairs; skipped 0; problems 0" in box


def test_the_upload_is_never_held_in_memory(project, client, settings):
    """Django's handlers would keep a small upload in memory (and a large one in /tmp): the
    import page and API use only the size limit and the handler that writes under MEDIA_ROOT."""
    from projects.uploads import ImportFileUploadHandler, MaxSizeUploadHandler

    seen: list[list[type]] = []
    real = ImportFileUploadHandler.file_complete

    def spy(self: Any, size: int) -> Any:
        seen.append([type(h) for h in self.request.upload_handlers])
        return real(self, size)

    client.force_login(researcher())
    api = APIClient()
    api.force_authenticate(researcher())
    ImportFileUploadHandler.file_complete = spy  # type: ignore[method-assign]
    try:
        post_import(client, project, {"format": "pairs-jsonl", "file": SimpleUploadedFile("a.jsonl", body(range(2)))})
        post_import(
            api, project, {"format": "pairs-jsonl", "file": SimpleUploadedFile("b.jsonl", body(range(2)))}, api=True
        )
    finally:
        ImportFileUploadHandler.file_complete = real  # type: ignore[method-assign]
    assert seen == [[MaxSizeUploadHandler, ImportFileUploadHandler]] * 2
    assert list((Path(settings.MEDIA_ROOT) / "imports").iterdir()) == []  # both removed when their jobs ended


def test_the_api_answers_202_with_the_job(project):
    api = APIClient()
    api.force_authenticate(researcher())
    with TestCase.captureOnCommitCallbacks(execute=False):
        resp = api.post(
            f"/api/v1/projects/{project.pk}/import/",
            {"format": "pairs-jsonl", "file": SimpleUploadedFile("films.jsonl", body(range(3)))},
        )
    assert resp.status_code == 202
    job = resp.json()
    assert (job["kind"], job["status"], job["project_id"]) == ("import", "queued", project.pk)
    assert Path(job["params"]["paths"][0]).is_file() and not Candidate.objects.exists()


def test_refused_requests_leave_no_file_behind(project, client, settings):
    client.force_login(researcher())
    settings.COUNTERPART = {**settings.COUNTERPART, "MAX_UPLOAD_BYTES": 300}
    big = client.post(
        f"/projects/{project.pk}/import/", {"format": "pairs-jsonl", "file": SimpleUploadedFile("a", body(range(9)))}
    )
    wrong = client.post(
        f"/projects/{project.pk}/import/", {"format": "xml", "file": SimpleUploadedFile("a", body(range(1)))}
    )
    split = client.post(
        f"/projects/{project.pk}/import/",
        {"format": "pairs-jsonl", "split": "s" * 40, "file": SimpleUploadedFile("a", body(range(1)))},
    )
    assert (big.status_code, wrong.status_code, split.status_code) == (413, 400, 400)
    assert not Job.objects.exists()
    folder = Path(settings.MEDIA_ROOT) / "imports"
    assert not folder.exists() or list(folder.iterdir()) == []


def test_import_data_async_queues_the_job_and_keeps_the_users_file(project, tmp_path):
    f = tmp_path / "films.jsonl"
    f.write_bytes(body(range(6)))
    out = StringIO()
    with TestCase.captureOnCommitCallbacks(execute=True):
        call_command("import_data", str(f), project="films", data_format="pairs-jsonl", run_async=True, stdout=out)
    job = Job.objects.get(kind="import")
    assert f"queued import job {job.pk} into project 'films'" in out.getvalue()
    job.refresh_from_db()
    assert job.status == "succeeded" and job.result["imported_pairs"] == 6
    assert f.exists()  # a file named on the command line is the user's


# --- all or nothing ----------------------------------------------------------------------------


def test_a_refused_file_writes_nothing_and_reports_file_line(project, tmp_path, small_batches):
    seed(project, tmp_path)
    before = db_rows(project)
    lines = body(range(2, 12)).decode().splitlines()
    lines[6] = '{"id": "broken"'
    job, path = uploaded_job(project, ("\n".join(lines) + "\n").encode())
    job = job_execute(job_id=job.pk)
    assert job.status == "failed" and "nothing was imported" in job.error
    assert job.result["problems"][0].startswith("films.jsonl:7: not valid JSON")
    assert db_rows(project) == before and not path.exists()


def test_a_cancel_between_batches_leaves_the_project_as_before(project, tmp_path, small_batches, monkeypatch):
    seed(project, tmp_path)
    before = db_rows(project)
    job, path = uploaded_job(project, body(range(2, 30)))  # p2, p3 exist already
    written = kill_after(monkeypatch, 10**6)  # count batches only

    real = imports._write_batch

    def then_cancel(*args: Any, **kwargs: Any) -> None:
        real(*args, **kwargs)
        if len(written) == 3:  # three batches committed: ask to stop
            job_cancel(job=Job.objects.get(pk=job.pk))

    monkeypatch.setattr(imports, "_write_batch", then_cancel)
    job = job_execute(job_id=job.pk)
    assert job.status == "cancelled" and len(written) == 3
    assert db_rows(project) == before  # the earlier rows (p0..p3) are still there, the new ones gone
    assert not path.exists()


def test_a_failure_mid_import_leaves_the_project_as_before(project, tmp_path, small_batches, monkeypatch):
    seed(project, tmp_path)
    before = db_rows(project)
    job, path = uploaded_job(project, body(range(2, 30)))
    real = imports._write_batch
    calls: list[int] = []

    def failing(*args: Any, **kwargs: Any) -> None:
        calls.append(1)
        if len(calls) == 4:
            raise RuntimeError("disk full")
        real(*args, **kwargs)

    monkeypatch.setattr(imports, "_write_batch", failing)
    with pytest.raises(RuntimeError):
        job_execute(job_id=job.pk)
    job.refresh_from_db()
    # an unexpected error shows no exception text (issue 18.3), only where the traceback is logged
    assert job.status == "failed" and "internal error" in job.error and "disk full" not in job.error
    assert db_rows(project) == before and not path.exists()


def test_a_killed_import_resumes_and_writes_every_row_exactly_once(project, tmp_path, small_batches, monkeypatch):
    seed(project, tmp_path)
    job, path = uploaded_job(project, body(range(2, 30)))
    seen = kill_after(monkeypatch, 3)
    with pytest.raises(WorkerKilled):
        job_execute(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "running" and len(seen) == 4
    partial = Candidate.objects.filter(job=job).count()
    assert 0 < partial < 26 and path.exists()  # kept for the resume
    monkeypatch.undo()
    monkeypatch.setattr(import_jobs, "PROGRESS_SECONDS", 0.0)
    stale(job)
    assert jobs_sweep() == [job.pk]  # re-enqueued; Celery is eager here, so it has run
    job.refresh_from_db()
    assert (job.status, job.attempts) == ("succeeded", 2)
    ids = list(Candidate.objects.filter(project=project).values_list("external_id", flat=True))
    assert sorted(ids) == sorted(f"p{i}" for i in range(30)) and len(ids) == len(set(ids))
    # Counts are the truth: 26 new pairs (p2, p3 were there before), 13 new originals (o1 was).
    assert (job.result["imported_pairs"], job.result["imported_originals"], job.result["skipped"]) == (26, 13, 2)
    assert Candidate.objects.filter(job=job).count() == 26 and not path.exists()


def test_a_job_cancelled_while_its_worker_was_dead_is_cleaned_up(project, tmp_path, small_batches, monkeypatch):
    seed(project, tmp_path)
    before = db_rows(project)
    job, path = uploaded_job(project, body(range(2, 30)))
    kill_after(monkeypatch, 2)
    with pytest.raises(WorkerKilled):
        job_execute(job_id=job.pk)
    assert Candidate.objects.filter(job=job).exists()
    job_cancel(job=Job.objects.get(pk=job.pk))  # running: only asks
    stale(job)
    jobs_sweep()
    job.refresh_from_db()
    assert job.status == "cancelled" and db_rows(project) == before and not path.exists()


def test_a_job_cancelled_while_queued_removes_its_upload(project):
    job, path = uploaded_job(project, body(range(3)))
    assert path.exists()
    job_cancel(job=job)
    assert Job.objects.get(pk=job.pk).status == "cancelled" and not path.exists()


def test_leftovers_of_an_interrupted_clean_up_are_removed_by_the_next_import(project, tmp_path, small_batches):
    """A worker killed between a failed job's outcome and its clean-up leaves marked rows;
    the next import of the project removes them first."""
    job, _ = uploaded_job(project, body(range(8)))
    assert job_execute(job_id=job.pk).status == "succeeded"
    Job.objects.filter(pk=job.pk).update(status="failed")  # as if its end hook never ran
    other, _ = uploaded_job(project, body(range(100, 102)))
    assert job_execute(job_id=other.pk).status == "succeeded"
    assert sorted(Candidate.objects.values_list("external_id", flat=True)) == ["p100", "p101"]


def test_an_import_sweeps_old_orphaned_uploads_but_not_what_a_job_needs(project):
    """A web process killed mid-upload leaves a file no job knows; the next import removes it
    once it is old, and never a file a queued job still needs, nor a fresh one."""
    old = import_jobs.import_upload_path("orphan.jsonl")
    old.write_bytes(b"x")
    fresh = import_jobs.import_upload_path("arriving.jsonl")
    fresh.write_bytes(b"x")
    waiting, waiting_path = uploaded_job(project, body(range(2)))
    long_ago = timezone.now().timestamp() - import_jobs.ORPHAN_SECONDS - 60
    for path in (old, waiting_path):
        os.utime(path, (long_ago, long_ago))
    job, path = uploaded_job(project, body(range(10, 12)))
    assert job_execute(job_id=job.pk).status == "succeeded"
    assert not old.exists() and fresh.exists() and waiting_path.exists() and not path.exists()
    assert Job.objects.get(pk=waiting.pk).status == "queued"


def test_progress_is_reported_in_both_phases(project, small_batches, monkeypatch):
    job, _ = uploaded_job(project, body(range(10)))
    reports: list[tuple[str, int, int]] = []
    real = import_jobs.JobContext.progress

    def spy(self: Any, done: int, total: int | None = None) -> None:
        real(self, done, total)
        phase = Job.objects.get(pk=self.job_id).result.get("phase", "")
        reports.append((phase, done, int(total or 0)))

    monkeypatch.setattr(import_jobs.JobContext, "progress", spy)
    job_execute(job_id=job.pk)
    assert reports == [
        ("checking", 4, 10),  # the total before rows are counted: the file's lines
        ("checking", 8, 10),
        ("checking", 10, 10),
        ("writing", 4, 10),  # after each batch of 4
        ("writing", 8, 10),
        ("writing", 10, 10),
    ]


# --- on the real services -------------------------------------------------------------------------


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_on_postgresql_progress_is_visible_while_importing_and_a_killed_import_resumes(
    require_postgres, settings, monkeypatch
):
    """Batches commit as they go, so another connection sees the job's progress and rows
    while it runs (one big transaction would hide both until the end); the heartbeat thread
    runs beside it; a kill mid-import then a resume gives every row exactly once."""
    settings.COUNTERPART = {
        **settings.COUNTERPART,
        "IMPORT_BATCH_SIZE": 5,
        "JOB_HEARTBEAT_THREAD": True,
        "JOB_HEARTBEAT_SECONDS": 0.05,
    }
    monkeypatch.setattr(import_jobs, "PROGRESS_SECONDS", 0.0)
    project = project_create(name="pg-films", task="sentiment")
    path = import_jobs.import_upload_path("films.jsonl")
    path.write_bytes(body(range(40)))
    with monkeypatch.context() as m:  # autocommit: on_commit enqueues at once; run it by hand below
        m.setattr("projects.tasks.job_execute_task.apply_async", lambda *a, **k: None)
        job = import_start(project=project, format="pairs-jsonl", paths=[str(path)], uploaded=True)
    seen_elsewhere: list[tuple[int, int]] = []
    real = imports._write_batch
    calls: list[int] = []

    def watched(*args: Any, **kwargs: Any) -> None:
        calls.append(1)
        if len(calls) == 5:

            def look() -> None:  # a connection of its own, as the job page has
                try:
                    seen_elsewhere.append(
                        (Job.objects.get(pk=job.pk).done, Candidate.objects.filter(job_id=job.pk).count())
                    )
                finally:
                    connection.close()

            t = threading.Thread(target=look)
            t.start()
            t.join()
            raise WorkerKilled()
        real(*args, **kwargs)

    monkeypatch.setattr(imports, "_write_batch", watched)
    with pytest.raises(WorkerKilled):
        job_execute(job_id=job.pk)
    assert seen_elsewhere == [(20, 20)]  # 4 batches of 5 pairs committed, and their progress
    monkeypatch.setattr(imports, "_write_batch", real)
    stale(job)
    jobs_sweep()
    job.refresh_from_db()
    assert job.status == "succeeded" and job.result["imported_pairs"] == 40
    ids = list(Candidate.objects.filter(project=project).values_list("external_id", flat=True))
    assert len(ids) == len(set(ids)) == 40 and not os.path.exists(path)
    assert import_upload_dir().is_dir()
