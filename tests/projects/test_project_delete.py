"""Deleting a project (issue 25, item 4): a confirmation page, refused while a job runs, rows
and files on disk (uploads, exports, generated images, models) gone, another project's kept."""

from __future__ import annotations

from pathlib import Path

import pytest

from annotate.models import Item
from annotate.services.routing import project_route
from generation.models import GenerationRun
from projects.models import Candidate, Example, Job, Project
from projects.services.deletion import ProjectBusy, project_delete
from tests.annotate.factories import annotator, login, project_with_candidates, researcher

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


@pytest.fixture
def disk(settings, tmp_path: Path) -> Path:
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.COUNTERPART = {
        **settings.COUNTERPART,
        "EXPORT_DIR": str(tmp_path / "exports"),
        "MODEL_DIR": str(tmp_path / "models"),
    }
    return tmp_path


def _with_files(name: str, disk: Path) -> tuple[Project, list[Path]]:
    """A routed project with an uploaded import, an export, a generation run's images and a model."""
    project = project_with_candidates(name=name, n=10)
    project_route(project=project, budget=0.5, seed=0)
    upload = disk / "media" / "imports" / f"upload-{name}.jsonl"
    upload.parent.mkdir(parents=True, exist_ok=True)
    upload.write_text("{}\n")
    Job.objects.create(
        kind="import", project=project, status="failed", params={"uploaded": True, "paths": [str(upload)]}
    )
    export = Job.objects.create(kind="export", project=project, status="succeeded", params={"format": "csv"})
    out = disk / "exports" / f"export-{export.pk}.csv"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text("a,b\n")
    gen_job = Job.objects.create(kind="generation", project=project, status="succeeded")
    run = GenerationRun.objects.create(job=gen_job, project=project, generator="coco-cf")
    images = disk / "media" / "generated" / str(run.pk)
    images.mkdir(parents=True)
    (images / "0.png").write_bytes(b"png")
    model = disk / "models" / f"project-{project.pk}" / "pairwise-v1.joblib"
    model.parent.mkdir(parents=True)
    model.write_bytes(b"model")
    return project, [upload, out, images, model.parent]


def test_delete_removes_rows_and_files_and_keeps_other_projects(disk, django_capture_on_commit_callbacks):
    project, files = _with_files("doomed", disk)
    other, other_files = _with_files("kept", disk)
    assert all(p.exists() for p in files + other_files)
    with django_capture_on_commit_callbacks(execute=True):
        deleted = project_delete(project=project)
    assert deleted.name == "doomed" and deleted.paths == 4 and deleted.rows > 20
    assert not Project.objects.filter(name="doomed").exists()
    for model in (Candidate, Example, Item, Job, GenerationRun):
        assert not model.objects.filter(project_id=project.pk).exists(), model
    assert not any(p.exists() for p in files)
    assert all(p.exists() for p in other_files)
    assert Candidate.objects.filter(project=other).count() == 10


def test_delete_is_refused_while_a_job_runs(disk, django_capture_on_commit_callbacks):
    project, files = _with_files("busy", disk)
    job = Job.objects.create(kind="train", project=project, status="running")
    with (
        django_capture_on_commit_callbacks(execute=True),
        pytest.raises(ProjectBusy, match=f"train \\(job {job.pk}\\)"),
    ):
        project_delete(project=project)
    assert Project.objects.filter(pk=project.pk).exists() and all(p.exists() for p in files)

    c = login(researcher())
    page = c.get(f"/projects/{project.pk}/delete/").content.decode()
    assert f"train (job {job.pk})" in page
    r = c.post(f"/projects/{project.pk}/delete/", {"confirm": "busy"})
    assert r.status_code == 409 and "still queued or running" in r.content.decode()
    assert Project.objects.filter(pk=project.pk).exists()

    Job.objects.filter(pk=job.pk).update(status="cancelled")
    with django_capture_on_commit_callbacks(execute=True):
        r = c.post(f"/projects/{project.pk}/delete/", {"confirm": "busy"})
    assert r.status_code == 302 and r["Location"] == "/projects/"
    assert not Project.objects.filter(pk=project.pk).exists() and not any(p.exists() for p in files)
    assert "deleted" in c.get("/projects/").content.decode()


def test_the_delete_page_confirms_by_name_and_is_for_researchers(disk):
    project, files = _with_files("careful", disk)
    c = login(researcher())
    page = c.get(f"/projects/{project.pk}/").content.decode()
    assert f'href="/projects/{project.pk}/delete/"' in page
    page = c.get(f"/projects/{project.pk}/delete/").content.decode()
    assert "10 candidates" in page and "4 files or folders on disk" in page
    for typed in ("", "Careful", "careful2"):
        r = c.post(f"/projects/{project.pk}/delete/", {"confirm": typed})
        assert r.status_code == 400 and "to confirm" in r.content.decode()
    assert login(annotator(project)).post(f"/projects/{project.pk}/delete/", {"confirm": "careful"}).status_code == 403
    assert Project.objects.filter(pk=project.pk).exists() and all(p.exists() for p in files)
    assert c.get("/projects/999999/delete/").status_code == 404
