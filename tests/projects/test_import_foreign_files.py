"""Files as other tools and editors write them, refused once for the whole file with what the
file is and how to fix it, the same through the service, ``import_data``, the import page and
the import API: a CSV or JSON-lines file saved in Windows-1252 / Latin-1 (Excel's "CSV"), and a
Prodigy annotation file given as pairs-jsonl or labelled-jsonl. A UTF-8 byte-order mark stays
fine."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from projects.formats import FormatError, check_inputs, read
from projects.formats.whole_input import binary_kind
from projects.models import Candidate, Example, Job, Project
from projects.services.imports import ImportRefused, data_import
from projects.services.projects import project_create
from tests.generation.conftest import user_with_role
from tests.projects.import_uploads import post_import

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]

# "café" with é as the single byte 0xE9, and a curly apostrophe as 0x92: Excel's "CSV" on Windows
LATIN_CSV = "id,text,label\no1,A plain film.,positive\no2,Un café très bon,positive\no3,It’s dull,negative\n"
LATIN_BYTES = LATIN_CSV.encode("cp1252")


@pytest.fixture
def project(db) -> Project:
    return project_create(name="s", task="sentiment")


def nothing_written() -> bool:
    return not Example.objects.exists() and not Candidate.objects.exists()


def assert_encoding_message(text: str, name: str) -> None:
    assert f"{name}:3: this file is not UTF-8: byte 0xE9 at byte 10 of the line after 'o2,Un caf'" in text
    assert "in Windows-1252 / Latin-1 that byte is 'é'" in text and "(2 lines have such bytes)" in text
    assert 'Save the file as UTF-8 (Excel: Save As, "CSV UTF-8"' in text and "nothing was imported" in text
    assert "codec" not in text


@pytest.mark.parametrize("strict", [True, False])
def test_a_windows_1252_csv_is_refused_once_in_both_modes(tmp_path: Path, project: Project, strict: bool) -> None:
    f = tmp_path / "excel.csv"
    f.write_bytes(LATIN_BYTES)
    # --skip-bad-rows too: skipping would drop exactly the rows with accents
    with pytest.raises(ImportRefused) as err:
        data_import(project=project, format="csv", paths=[str(f)], strict=strict)
    assert_encoding_message(str(err.value), str(f))
    assert err.value.problems == []  # one message for the file, not one per line
    assert nothing_written()


def test_a_latin1_jsonl_is_refused_once(tmp_path: Path, project: Project) -> None:
    lines = [
        {
            "id": f"p{i}",
            "original": {"fields": {"text": f"café {i}"}, "label": "positive"},
            "counterfactual": {"fields": {"text": f"naïve {i}"}},
        }
        for i in range(3)
    ]
    f = tmp_path / "p.jsonl"
    f.write_bytes("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines).encode("latin-1"))
    with pytest.raises(ImportRefused, match=r"p.jsonl:1: this file is not UTF-8: byte 0xE9 .*\(3 lines have"):
        data_import(project=project, format="pairs-jsonl", paths=[str(f)], strict=False)
    assert nothing_written()


def test_text_dense_with_accents_is_refused_as_not_utf8_not_called_binary(tmp_path: Path) -> None:
    text = "id,text,label\n" + "".join(f"o{i},éèàçêôûëïü,positive\n" for i in range(40))
    f = tmp_path / "accents.csv"
    f.write_bytes(text.encode("cp1252"))
    assert binary_kind(f.read_bytes()[:4096]) is None
    with pytest.raises(FormatError, match="this file is not UTF-8"):
        check_inputs("csv", [str(f)], max_file_bytes=None, max_line_bytes=1 << 20)
    assert binary_kind(bytes(range(256)) * 16) == "binary data"  # real binary data still is


def test_a_utf8_bom_still_imports(tmp_path: Path, project: Project) -> None:
    f = tmp_path / "bom.csv"
    f.write_bytes(b"\xef\xbb\xbf" + LATIN_CSV.encode("utf-8"))
    report = data_import(project=project, format="csv", paths=[str(f)])
    assert report.imported_originals == 3 and report.problem_count == 0
    assert Example.objects.get(external_id="o2").fields == {"text": "Un café très bon"}
    assert Example.objects.get(external_id="o3").fields == {"text": "It’s dull"}


def test_the_command_page_and_api_refuse_the_encoding_alike(tmp_path: Path, project: Project, client) -> None:
    f = tmp_path / "excel.csv"
    f.write_bytes(LATIN_BYTES)
    err = StringIO()
    with pytest.raises(CommandError) as exc:
        call_command("import_data", str(f), project="s", data_format="csv", stdout=StringIO(), stderr=err)
    assert_encoding_message(str(exc.value) + err.getvalue(), str(f))
    client.force_login(user_with_role("res", "researcher"))
    page = post_import(client, project, {"format": "csv", "file": SimpleUploadedFile("excel.csv", LATIN_BYTES)})
    assert page.job is not None and page.job.status == "failed"
    assert_encoding_message(page.job.error, "excel.csv")
    assert "this file is not UTF-8" in page.html and "not valid UTF-8 (byte" not in page.html
    api = APIClient()
    api.force_authenticate(user_with_role("res2", "researcher"))
    resp = post_import(api, project, {"format": "csv", "file": SimpleUploadedFile("excel.csv", LATIN_BYTES)}, api=True)
    assert resp.status_code == 202 and resp.job is not None and resp.job.status == "failed", resp.content
    job = resp.job
    assert_encoding_message(job.error, "excel.csv")
    assert nothing_written()


PRODIGY_LINES = [
    {
        "text": "A great film.",
        "label": "positive",
        "answer": "accept",
        "_input_hash": 11,
        "_task_hash": 12,
        "_view_id": "classification",
    },
    {
        "text": "Dull.",
        "label": "positive",
        "answer": "reject",
        "_input_hash": 13,
        "_task_hash": 14,
        "_view_id": "classification",
    },
]
PRODIGY_CHOICE = [
    {"text": "A great film.", "options": [{"id": "positive"}, {"id": "negative"}], "accept": ["positive"]}
]


def jsonl(rows: list[dict]) -> bytes:
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


@pytest.mark.parametrize("fmt", ["pairs-jsonl", "labelled-jsonl"])
@pytest.mark.parametrize(("rows", "keys"), [(PRODIGY_LINES, '"answer", "_input_hash"'), (PRODIGY_CHOICE, '"accept"')])
def test_a_prodigy_file_is_named_once(tmp_path: Path, project: Project, fmt: str, rows: list, keys: str) -> None:
    f = tmp_path / "prodigy.jsonl"
    f.write_bytes(jsonl(rows))
    for strict in (True, False):
        with pytest.raises(ImportRefused) as err:
            data_import(project=project, format=fmt, paths=[str(f)], strict=strict)
        msg = str(err.value)
        assert msg.startswith(f"{f}: this is a Prodigy annotation file (JSON lines with {keys}")
        assert f"not {fmt}." in msg and "labelled-jsonl" in msg and "jq -c" in msg and "nothing was imported" in msg
        assert err.value.problems == []
    with pytest.raises(FormatError, match="Prodigy"):  # the reader itself (benchmarks, task data)
        list(read(fmt, [str(f)], task="sentiment"))
    assert nothing_written()


def test_the_command_page_and_api_name_prodigy_alike(tmp_path: Path, project: Project, client) -> None:
    data = jsonl(PRODIGY_LINES)
    f = tmp_path / "prodigy.jsonl"
    f.write_bytes(data)
    with pytest.raises(CommandError, match="this is a Prodigy annotation file"):
        call_command(
            "import_data", str(f), project="s", data_format="pairs-jsonl", stdout=StringIO(), stderr=StringIO()
        )
    client.force_login(user_with_role("res", "researcher"))
    for fmt in ("pairs-jsonl", "labelled-jsonl", "csv"):
        page = post_import(client, project, {"format": fmt, "file": SimpleUploadedFile("prodigy.jsonl", data)})
        assert page.status_code == 400 and page.job is None, fmt
        # said once, where the file field is; not "looks like labelled-jsonl" (which cannot read it either)
        assert "prodigy.jsonl: this is a Prodigy annotation file (JSON lines with" in page.html
        assert f"not {fmt}." in page.html and "looks like" not in page.html
    api = APIClient()
    api.force_authenticate(user_with_role("res2", "researcher"))
    resp = api.post(
        f"/api/v1/projects/{project.pk}/import/",
        {"format": "labelled-jsonl", "file": SimpleUploadedFile("prodigy.jsonl", data)},
    )
    assert resp.status_code == 400 and "this is a Prodigy annotation file" in resp.json()["detail"]
    # the page and the API refuse before any job; the command's refused import is its failed job
    assert nothing_written() and list(Job.objects.values_list("kind", "status")) == [("import", "failed")]
    assert "this is a Prodigy annotation file" in Job.objects.get().error


@pytest.mark.parametrize("fmt", ["pairs-jsonl", "labelled-jsonl"])
def test_a_prodigy_file_whose_first_line_has_no_answer_is_still_named_once(
    tmp_path: Path, project: Project, client, fmt: str
) -> None:
    # a Prodigy file may start with a task not answered yet; only its first line was looked at,
    # so every later line was a problem of its own ("unexpected field(s) _input_hash, …")
    rows = [{"text": "Not answered yet.", "label": "positive"}, *(PRODIGY_LINES * 5)]
    f = tmp_path / "prodigy.jsonl"
    f.write_bytes(b"\n" + jsonl(rows))
    with pytest.raises(ImportRefused) as err:
        data_import(project=project, format=fmt, paths=[str(f)])
    assert str(err.value).startswith(f'{f}: this is a Prodigy annotation file (JSON lines with "answer", "_input_hash"')
    assert err.value.problems == []
    client.force_login(user_with_role("res", "researcher"))
    page = post_import(client, project, {"format": fmt, "file": SimpleUploadedFile("p.jsonl", f.read_bytes())})
    assert page.status_code == 400 and "p.jsonl: this is a Prodigy annotation file" in page.html
    assert nothing_written()


def test_a_labelled_file_with_one_prodigy_like_row_is_read_row_by_row(tmp_path: Path, project: Project) -> None:
    rows = [{"text": f"film {i}", "label": "positive"} for i in range(19)] + [PRODIGY_LINES[0]]
    f = tmp_path / "l.jsonl"
    f.write_bytes(jsonl(rows[::-1]))  # the Prodigy-like row first
    with pytest.raises(ImportRefused) as err:
        data_import(project=project, format="labelled-jsonl", paths=[str(f)])
    assert "Prodigy" not in str(err.value) and len(err.value.problems) == 1
    assert err.value.problems[0].startswith(f"{f}:1: text fields: unexpected field(s)")


def test_a_pair_file_with_prodigy_like_meta_is_still_a_pair_file(tmp_path: Path, project: Project) -> None:
    row = {
        "id": "p1",
        "original": {"fields": {"text": "good"}, "label": "positive"},
        "counterfactual": {"fields": {"text": "bad"}},
        "meta": {"_input_hash": 1, "answer": "accept"},
    }
    f = tmp_path / "p.jsonl"
    f.write_bytes(jsonl([row]))
    assert data_import(project=project, format="pairs-jsonl", paths=[str(f)]).imported_pairs == 1
