"""The import page keeps what was chosen after an error (issue 25, item 5): the format, the
split, the label map and "skip bad rows" come back as sent, next to the error."""

from __future__ import annotations

import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from projects.models import Job
from projects.services.projects import project_create
from tests.annotate.factories import login, researcher

pytestmark = pytest.mark.django_db


def _selected(page: str) -> list[str]:
    return re.findall(r'<option value="([^"]+)" selected>', page)


def test_the_chosen_format_and_split_survive_an_error(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    project = project_create(name="p", task="nli")
    c = login(researcher())
    assert _selected(c.get(f"/projects/{project.pk}/import/").content.decode()) == []

    # no file chosen
    r = c.post(
        f"/projects/{project.pk}/import/",
        {"format": "cad-nli", "split": "dev", "label_map": "yes=entailment", "skip_bad_rows": "1"},
    )
    page = r.content.decode()
    assert r.status_code == 400 and "choose a file to upload" in page
    assert _selected(page) == ["cad-nli"]
    assert 'id="id_split"' in page and 'value="dev"' in page
    assert 'value="yes=entailment"' in page
    assert re.search(r'name="skip_bad_rows" value="1" checked', page)

    # a bad split for a CAD format (the service refuses it): still as chosen
    r = c.post(
        f"/projects/{project.pk}/import/",
        {"format": "cad-nli", "split": "nope", "file": SimpleUploadedFile("dev.zip", b"PK")},
    )
    page = r.content.decode()
    assert r.status_code == 400 and _selected(page) == ["cad-nli"] and 'value="nope"' in page
    assert not Job.objects.filter(kind="import").exists()

    # an unknown format is not echoed (nothing to select), the split still is
    r = c.post(f"/projects/{project.pk}/import/", {"format": "<b>x</b>", "split": "train"})
    page = r.content.decode()
    assert r.status_code == 400 and _selected(page) == [] and 'value="train"' in page and "<b>x</b>" not in page


def test_an_oversized_upload_says_the_limit_alike_on_the_page_and_the_api_and_keeps_the_form(settings, tmp_path):
    from rest_framework.test import APIClient

    from projects.formats import check_inputs
    from projects.formats.reading import FormatError

    settings.MEDIA_ROOT = str(tmp_path)
    settings.COUNTERPART = {**settings.COUNTERPART, "MAX_UPLOAD_BYTES": 2000}
    project = project_create(name="p", task="nli")
    body = b'{"id": "p1"}\n' * 400  # 5,200 bytes
    said = "over the 2000-byte limit (2.0 KiB, COUNTERPART_MAX_UPLOAD_BYTES); nothing was imported"
    r = login(researcher()).post(
        f"/projects/{project.pk}/import/",
        {"format": "csv", "split": "dev", "file": SimpleUploadedFile("big.csv", body)},
    )
    page = r.content.decode()
    assert r.status_code == 413 and "upload refused: " + said in page
    assert _selected(page) == ["csv"] and 'value="dev"' in page  # nothing the user chose is lost
    # the form states the limit in the refusal's units (it said "2.0 KB" beside "2.0 KiB")
    assert "Data file (at most 2.0 KiB)" in page and " KB" not in page
    api = APIClient()
    api.force_authenticate(researcher())
    resp = api.post(f"/api/v1/projects/{project.pk}/import/", {"format": "csv", "file": SimpleUploadedFile("b", body)})
    assert resp.status_code == 413 and resp.json()["detail"].endswith(said)
    assert not Job.objects.exists() and not list((tmp_path / "imports").glob("*"))
    big = tmp_path / "big.csv"
    big.write_bytes(body)
    with pytest.raises(FormatError, match=r"larger than the limit of 2.0 KiB \(COUNTERPART_MAX_UPLOAD_BYTES\)"):
        check_inputs("csv", [str(big)], max_file_bytes=2000, max_line_bytes=None)  # the command's check
