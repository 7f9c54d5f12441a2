"""Uploading an import through the page or the API in a test: the request queues an
``import`` job; its on-commit enqueue is run (Celery is eager in unit tests), so the job has
run when these return."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.test import TestCase

from projects.models import Job, Project


@dataclass
class Imported:
    response: Any
    job: Job | None
    html: str  # the page (or API) answer, then the job box as the page polls it now

    @property
    def status_code(self) -> int:
        return int(self.response.status_code)

    @property
    def content(self) -> bytes:
        return bytes(self.response.content)


def _newest_import(project: Project, before: int) -> Job | None:
    return Job.objects.filter(kind="import", project=project, pk__gt=before).order_by("-pk").first()


def post_import(client: Any, project: Project, data: dict[str, Any], *, api: bool = False) -> Imported:
    """POST ``data`` to the import page (or, with ``api``, to the import API) and run the job."""
    before = Job.objects.order_by("-pk").values_list("pk", flat=True).first() or 0
    url = f"/api/v1/projects/{project.pk}/import/" if api else f"/projects/{project.pk}/import/"
    with TestCase.captureOnCommitCallbacks(execute=True):
        resp = client.post(url, data)
    job = _newest_import(project, before)
    if not api and resp.status_code == 302:  # POST-redirect-GET (issue 32.8): the page shows the job
        assert job is not None and resp["Location"] == f"/projects/{project.pk}/import/?job={job.pk}"
        resp = client.get(resp["Location"])
    html = resp.content.decode()
    if job is not None and not api:
        html += client.get(f"/jobs/{job.pk}/").content.decode()
    return Imported(resp, job, html)


def upload_page(client: Any, project: Project, content: bytes, name: str = "p.jsonl", **extra: Any) -> Imported:
    from django.core.files.uploadedfile import SimpleUploadedFile

    data = {"file": SimpleUploadedFile(name, content), "format": "pairs-jsonl", **extra}
    return post_import(client, project, data)
