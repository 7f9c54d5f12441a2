"""Files researchers bring from Excel, Label Studio and Hugging Face ``datasets``: what each
does through the import service — imported the same way, or refused as a whole with a message
that says what the file is and what can be imported instead (never one "not valid JSON" or
"not a text file (binary data)" per line)."""

from __future__ import annotations

import codecs
import json
from pathlib import Path

import pytest

from projects.models import Example, Project
from projects.services.imports import ImportRefused, data_import
from projects.services.projects import project_create

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]

ROWS = 'id,text,label\r\ns1,I loved it,positive\r\ns2,"Awful, ""awful""\r\nacting",Negative\r\n'


@pytest.fixture
def project() -> Project:
    return project_create(name="s", task="sentiment")


def refusal(project: Project, path: Path, format: str) -> str:
    with pytest.raises(ImportRefused) as exc:
        data_import(project=project, format=format, paths=[str(path)])
    assert not Example.objects.exists()
    return " ".join([str(exc.value), *exc.value.problems])


@pytest.mark.parametrize("tail", ["\r\n", "\n\n", "\r\n\r\n\r\n"])
def test_a_csv_with_trailing_empty_lines_imports(project: Project, tmp_path: Path, tail: str) -> None:
    # csv.reader gives [] for an empty line; it used to be "expected 3 columns, found 0"
    f = tmp_path / "excel.csv"
    f.write_bytes(codecs.BOM_UTF8 + (ROWS + tail).encode())
    report = data_import(project=project, format="csv", paths=[str(f)])
    assert (report.imported_originals, report.problems) == (2, [])
    assert Example.objects.get(external_id="s2").fields["text"] == 'Awful, "awful"\r\nacting'


def test_a_utf16_csv_is_refused_as_utf16_not_as_binary(project: Project, tmp_path: Path) -> None:
    f = tmp_path / "unicode.csv"
    f.write_bytes(ROWS.encode("utf-16"))
    msg = refusal(project, f, "csv")
    assert "UTF-16 (little-endian) text" in msg and "save it as UTF-8" in msg
    assert "binary" not in msg


@pytest.mark.parametrize("indent", [None, 2])
def test_a_label_studio_json_array_is_refused_once_saying_what_is_read(
    project: Project, tmp_path: Path, indent: int | None
) -> None:
    tasks = [{"id": 1, "data": {"text": "great"}, "annotations": [{"result": [{"value": {"choices": ["Positive"]}}]}]}]
    f = tmp_path / "project-1.json"
    f.write_text(json.dumps(tasks, indent=indent))
    for format in ("pairs-jsonl", "labelled-jsonl"):
        msg = refusal(project, f, format)
        assert "one JSON array (as Label Studio's JSON export writes), not JSON lines" in msg
        assert "not valid JSON" not in msg and "labelled-jsonl" in msg


def test_a_hugging_face_folder_and_its_files_are_refused_saying_what_is_read(project: Project, tmp_path: Path) -> None:
    folder = tmp_path / "ds"
    folder.mkdir()
    (folder / "dataset_info.json").write_text("{}")
    (folder / "data-00000-of-00001.arrow").write_bytes(b"\xff\xff\xff\xff" + bytes(200))
    (tmp_path / "train.parquet").write_bytes(b"PAR1" + bytes(200))
    msg = refusal(project, folder, "labelled-jsonl")
    assert "Hugging Face datasets folder" in msg and "file not found" not in msg
    assert "ds.to_json" in msg
    assert "Apache Arrow file" in refusal(project, folder / "data-00000-of-00001.arrow", "labelled-jsonl")
    msg = refusal(project, tmp_path / "train.parquet", "csv")
    assert "Parquet file" in msg and "JSON lines (pairs-jsonl, labelled-jsonl), csv/tsv" in msg


def test_this_apps_own_hf_datasets_export_given_as_another_format_is_pointed_to_hf_datasets(
    project: Project, tmp_path: Path
) -> None:
    from projects.services.exports import data_export
    from tests.annotate.factories import project_with_candidates

    assert data_export(project=project_with_candidates(n=1), format="hf-datasets", out=str(tmp_path / "hf")) == 1
    Example.objects.all().delete()
    msg = refusal(project, tmp_path / "hf", "pairs-jsonl")
    # ds.to_json would give flat rows that neither JSON-lines format reads: say what does
    assert "as Counterpart's hf-datasets export writes it" in msg and "ds.to_json" not in msg
    assert "import it with the hf-datasets format (import_data --format hf-datasets PATH)" in msg


def test_integer_label_ids_are_matched_as_their_names_and_mapped_with_the_label_map(
    project: Project, tmp_path: Path
) -> None:
    # what datasets' ds.to_json writes for a ClassLabel column
    f = tmp_path / "hf.jsonl"
    f.write_text('{"text": "great", "label": 1}\n{"text": "awful", "label": 0}\n')
    msg = refusal(project, f, "labelled-jsonl")
    assert "hf.jsonl:1: unknown label '1' (expected one of negative, positive)" in msg  # was "label is missing"
    data_import(project=project, format="labelled-jsonl", paths=[str(f)], label_map={"0": "negative", "1": "positive"})
    assert dict(Example.objects.values_list("fields__text", "label__name")) == {
        "great": "positive",
        "awful": "negative",
    }

    pairs = tmp_path / "pairs.jsonl"
    line = {
        "id": "p1",
        "original": {"fields": {"text": "a"}, "label": 1},
        "counterfactual": {"fields": {"text": "b"}, "label": 0},
    }
    pairs.write_text(json.dumps(line) + "\n")
    with pytest.raises(ImportRefused) as exc:
        data_import(project=project, format="pairs-jsonl", paths=[str(pairs)])
    assert "original.label: unknown label '1' (expected one of negative, positive)" in exc.value.problems[0]


def test_csv_header_names_match_in_any_case(project: Project, tmp_path: Path) -> None:
    # Excel users capitalise headers; "ID" used to be "the header has no id column"
    originals = tmp_path / "originals.csv"
    originals.write_text("ID, Text ,Label\nh1,hello,Positive\n")
    pairs = tmp_path / "pairs.csv"
    pairs.write_text(
        "Id,Original.Text,Original.Label,Counterfactual.Text,Counterfactual.Label\np1,good,positive,bad,NEGATIVE\n"
    )
    report = data_import(project=project, format="csv", paths=[str(originals), str(pairs)])
    assert (report.imported_originals, report.imported_pairs, report.problems) == (2, 1, [])
    assert Example.objects.get(external_id="h1").fields == {"text": "hello"}


def test_a_semicolon_separated_csv_from_a_european_excel_imports(project: Project, tmp_path: Path) -> None:
    # used to be "the header has no id column ... found id;text;label"
    f = tmp_path / "excel-de.csv"
    f.write_bytes(codecs.BOM_UTF8 + ROWS.replace(",", ";").encode())
    report = data_import(project=project, format="csv", paths=[str(f)])
    assert (report.imported_originals, report.problems) == (2, [])
    assert Example.objects.get(external_id="s2").fields["text"] == 'Awful; "awful"\r\nacting'


def test_a_tab_separated_file_named_csv_or_txt_is_read_as_tsv(project: Project, tmp_path: Path, client) -> None:
    # Excel's "Text (Tab delimited)" saved under another name: it was "the header has no id
    # column … found id\ttext\tlabel" (the command) or "reads tabs from a file named .tsv" (the page)
    from django.core.files.uploadedfile import SimpleUploadedFile

    from tests.annotate.factories import researcher
    from tests.projects.import_uploads import post_import

    data = b"id\ttext\tlabel\r\no1\tnice, really\tpositive\r\no2\tbad\tnegative\r\n"
    for name in ("excel.csv", "excel.txt"):
        f = tmp_path / name
        f.write_bytes(data)
        report = data_import(project=project, format="csv", paths=[str(f)])
        assert report.imported_originals + report.skipped == 2 and report.problem_count == 0
    assert Example.objects.get(external_id="o1").fields == {"text": "nice, really"}
    client.force_login(researcher())
    page = post_import(client, project, {"format": "csv", "file": SimpleUploadedFile("x.csv", data)})
    assert page.job is not None and page.job.status == "succeeded", page.html
