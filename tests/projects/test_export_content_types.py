"""Every export download says what it is: the synchronous exports of the page and the API were
served as ``application/octet-stream`` (Django guesses nothing for ``.jsonl``), so a browser or
``requests`` could not tell JSON lines from CSV. Now each is served with its own Content-Type and
a Content-Disposition filename with the right extension; a job's zip and manifest too."""

from __future__ import annotations

from pathlib import Path

import pytest

from projects.models import Job
from tests.annotate.factories import project_with_candidates, researcher
from tests.projects.test_export_workspace import login
from tests.projects.test_workspace_api import client_for as token_client

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]

TYPES = {"pairs-jsonl": ("application/x-ndjson; charset=utf-8", "jsonl"), "csv": ("text/csv; charset=utf-8", "csv")}


@pytest.fixture
def project():
    return project_with_candidates(name="ct", n=3, k=1)


@pytest.fixture
def export_dir(settings, tmp_path: Path) -> Path:
    settings.COUNTERPART = {**settings.COUNTERPART, "EXPORT_DIR": str(tmp_path / "exports")}
    return tmp_path / "exports"


@pytest.mark.parametrize("fmt", ["pairs-jsonl", "csv"])
def test_the_api_and_the_page_serve_a_file_export_as_its_type(project, fmt: str) -> None:
    ctype, ext = TYPES[fmt]
    user = researcher()
    api = token_client(user).post(f"/api/v1/projects/{project.pk}/export/", {"format": fmt}, format="json")
    page = login(user).post(f"/projects/{project.pk}/export/", {"format": fmt})
    bookmarked = login(user).get(f"/projects/{project.pk}/export/", {"format": fmt})
    for resp in (api, page, bookmarked):
        assert resp.status_code == 200
        assert resp["Content-Type"] == ctype
        assert resp["Content-Disposition"] == f'attachment; filename="ct.{ext}"'
        assert b"".join(resp.streaming_content)


@pytest.mark.parametrize(
    ("fmt", "ctype", "ext"),
    [
        ("pairs-jsonl", "application/x-ndjson; charset=utf-8", "jsonl"),
        ("csv", "text/csv; charset=utf-8", "csv"),
        ("hf-datasets", "application/zip", "hf-datasets.zip"),
    ],
)
def test_an_export_job_downloads_as_its_type_and_its_manifest_as_json(
    project, export_dir, django_capture_on_commit_callbacks, fmt: str, ctype: str, ext: str
) -> None:
    user = researcher()
    api = token_client(user)
    with django_capture_on_commit_callbacks(execute=True):  # the job runs (eagerly) on commit
        resp = api.post(f"/api/v1/projects/{project.pk}/export/", {"format": fmt, "run_as_job": True}, format="json")
    job = Job.objects.get(pk=resp.json()["id"])
    assert job.status == "succeeded", job.error
    for url in (f"/api/v1/exports/{job.pk}/download/", f"/exports/{job.pk}/download/"):
        client = api if url.startswith("/api/") else login(user)
        data = client.get(url)
        assert (data.status_code, data["Content-Type"]) == (200, ctype)
        assert data["Content-Disposition"] == f'attachment; filename="ct-{job.pk}.{ext}"'
        manifest = client.get(url, {"part": "manifest"})
        assert manifest["Content-Type"] == "application/json"
        assert manifest["Content-Disposition"] == f'attachment; filename="ct-{job.pk}.manifest.json"'
