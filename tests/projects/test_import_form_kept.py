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
