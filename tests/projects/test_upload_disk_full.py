"""An import upload that the server cannot store (QA probe: ``MEDIA_ROOT`` on a full tmpfs).
The write's ``OSError`` (No space left on device) went up as a 500 from the import page and the
API, and the API left the partial file under ``MEDIA_ROOT/imports`` (filling the disk further).
Now: 507 with a clear message, the choices kept on the page, no file left, no job, and the next
upload works. The disk is really full here: the stored file is opened on ``/dev/full``, which
refuses every write with ENOSPC; a folder that cannot be created is the other case."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from projects.models import Job
from projects.services.projects import project_create
from tests.annotate.factories import login, researcher

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]

BODY = b"".join(
    b'{"id": "p%d", "original": {"fields": {"premise": "A man sleeps.", "hypothesis": "A man rests."}, '
    b'"label": "entailment"}, "counterfactual": {"fields": {"premise": "A man sleeps.", '
    b'"hypothesis": "A man runs %d."}}}\n' % (i, i)
    for i in range(2000)
)  # about 300 KB: several chunks of the upload


@pytest.fixture
def media(settings, tmp_path) -> Path:
    settings.MEDIA_ROOT = str(tmp_path)
    return tmp_path


@pytest.fixture
def disk_full(media, monkeypatch):
    """Every upload stored under ``MEDIA_ROOT/imports`` lands on ``/dev/full`` (the file itself
    is created, so it must be removed again)."""
    real_open = os.open
    imports = str(media / "imports")

    def open_on_full_disk(path, flags, *args, **kwargs):  # type: ignore[no-untyped-def]
        if str(path).startswith(imports):
            real_open(path, flags, *args, **kwargs)  # the upload's own file exists, as it would
            return real_open("/dev/full", os.O_RDWR)
        return real_open(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", open_on_full_disk)
    return media


def _left(media: Path) -> list[Path]:
    return list((media / "imports").glob("*")) if (media / "imports").exists() else []


def _page_upload(project_id: int):  # type: ignore[no-untyped-def]
    return login(researcher()).post(
        f"/projects/{project_id}/import/",
        {"format": "pairs-jsonl", "split": "dev", "file": SimpleUploadedFile("pairs.jsonl", BODY)},
    )


def _api_upload(project_id: int):  # type: ignore[no-untyped-def]
    api = APIClient()
    api.force_authenticate(researcher())
    return api.post(
        f"/api/v1/projects/{project_id}/import/",
        {"format": "pairs-jsonl", "file": SimpleUploadedFile("pairs.jsonl", BODY)},
    )


SAID = "upload refused: the server could not store the file (No space left on device); nothing was imported"


def test_a_full_disk_refuses_the_page_upload_with_507_and_keeps_the_form(disk_full, monkeypatch):
    project = project_create(name="p", task="nli")
    r = _page_upload(project.pk)
    page = r.content.decode()
    assert r.status_code == 507 and SAID in page
    assert '<option value="pairs-jsonl" selected>' in page and 'value="dev"' in page
    assert not _left(disk_full) and not Job.objects.exists()


def test_a_full_disk_refuses_the_api_upload_with_507_and_leaves_no_file(disk_full, monkeypatch):
    project = project_create(name="p", task="nli")
    r = _api_upload(project.pk)
    assert r.status_code == 507 and r.json()["detail"].startswith(SAID)
    assert not _left(disk_full) and not Job.objects.exists()
    monkeypatch.undo()  # space again: the same upload is taken
    r = _api_upload(project.pk)
    assert r.status_code == 202 and Job.objects.get().kind == "import"


def test_an_imports_folder_that_cannot_be_made_refuses_with_507(settings, tmp_path):
    (tmp_path / "media").write_text("a file where the media folder should be")
    settings.MEDIA_ROOT = str(tmp_path / "media")
    project = project_create(name="p", task="nli")
    r = _page_upload(project.pk)
    assert r.status_code == 507 and "could not store the file (Not a directory)" in r.content.decode()
    r = _api_upload(project.pk)
    assert r.status_code == 507 and "could not store the file (Not a directory)" in r.json()["detail"]
    assert not Job.objects.exists()
