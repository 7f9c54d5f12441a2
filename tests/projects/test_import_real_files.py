"""Files researchers bring from Excel, Label Studio and Hugging Face ``datasets``: what each
does through the import service — imported the same way, or refused as a whole with a message
that says what the file is and what can be imported instead (never one "not valid JSON" or
"not a text file (binary data)" per line)."""

from __future__ import annotations

import codecs
from pathlib import Path

import pytest

from projects.models import Example, Project
from projects.services.imports import data_import
from projects.services.projects import project_create

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]

ROWS = 'id,text,label\r\ns1,I loved it,positive\r\ns2,"Awful, ""awful""\r\nacting",Negative\r\n'


@pytest.fixture
def project() -> Project:
    return project_create(name="s", task="sentiment")


@pytest.mark.parametrize("tail", ["\r\n", "\n\n", "\r\n\r\n\r\n"])
def test_a_csv_with_trailing_empty_lines_imports(project: Project, tmp_path: Path, tail: str) -> None:
    # csv.reader gives [] for an empty line; it used to be "expected 3 columns, found 0"
    f = tmp_path / "excel.csv"
    f.write_bytes(codecs.BOM_UTF8 + (ROWS + tail).encode())
    report = data_import(project=project, format="csv", paths=[str(f)])
    assert (report.imported_originals, report.problems) == (2, [])
    assert Example.objects.get(external_id="s2").fields["text"] == 'Awful, "awful"\r\nacting'
