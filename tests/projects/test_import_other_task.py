"""A file of another task (an NLI pairs-jsonl imported into a sentiment project, nli-public's
labelled lines into a sentiment project) gave one identical "missing field(s) text; unexpected
field(s) hypothesis, premise" per row — 5,000 times for a real file. When the first rows all
have the same wrong text fields, the file is refused once, naming the fields expected and found
and the task they belong to; a row with wrong fields among good ones stays a problem of its row."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from projects.models import Example, Project
from projects.services.imports import ImportRefused, data_import
from projects.services.projects import project_create

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def nli_pair(i: int) -> dict:
    fields = {"premise": f"A dog runs {i}.", "hypothesis": "An animal moves."}
    return {
        "id": f"p{i}",
        "original": {"fields": fields, "label": "entailment"},
        "counterfactual": {"fields": {**fields, "hypothesis": "A cat sleeps."}},
    }


def sentiment_pair(i: int) -> dict:
    return {
        "id": f"s{i}",
        "original": {"fields": {"text": f"good {i}"}, "label": "positive"},
        "counterfactual": {"fields": {"text": f"bad {i}"}},
    }


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def project() -> Project:
    return project_create(name="senti", task="sentiment")


def refused(project: Project, path: Path, fmt: str, **kw) -> ImportRefused:
    with pytest.raises(ImportRefused) as exc:
        data_import(project=project, format=fmt, paths=[str(path)], **kw)
    assert not Example.objects.exists()
    return exc.value


@pytest.mark.parametrize("strict", [True, False])
def test_an_nli_pair_file_in_a_sentiment_project_is_refused_once(tmp_path: Path, project: Project, strict) -> None:
    f = write(tmp_path / "nli.jsonl", [nli_pair(i) for i in range(30)])
    exc = refused(project, f, "pairs-jsonl", strict=strict)
    assert exc.problems == []
    msg = str(exc)
    assert msg.startswith(f"{f}: the first 20 rows all have the text field(s) premise, hypothesis, not the project's")
    assert "These are the text fields of the nli task" in msg and "import_data --task nli" in msg


def test_the_message_names_the_fields_and_the_task(tmp_path: Path, project: Project) -> None:
    f = write(tmp_path / "nli.jsonl", [nli_pair(i) for i in range(3)])
    msg = str(refused(project, f, "pairs-jsonl"))
    assert msg.startswith(
        f"{f}: the first 3 rows all have the text field(s) premise, hypothesis, not the project's text"
    )
    assert "import_data --task nli" in msg and "nothing was imported" in msg


def test_nli_public_lines_as_labelled_jsonl_and_the_command(tmp_path: Path, shared_data: Path) -> None:
    lines = (shared_data / "nli-public" / "train.jsonl").read_text(encoding="utf-8").splitlines()[:25]
    f = tmp_path / "train.jsonl"
    f.write_text("\n".join(lines) + "\n", encoding="utf-8")
    err = StringIO()
    with pytest.raises(CommandError) as exc:
        call_command(
            "import_data", "--project", "s", "--task", "sentiment", "--format", "labelled-jsonl", str(f),
            stdout=StringIO(), stderr=err,
        )  # fmt: skip
    msg = str(exc.value)
    assert "the first 20 rows all have the text field(s) premise, hypothesis, not the project's text" in msg
    assert "import_data --task nli" in msg
    assert "unexpected field(s)" not in err.getvalue()  # no per-row messages
    assert not Project.objects.filter(name="s").exists()


def test_a_csv_of_the_other_task_names_the_task(tmp_path: Path, project: Project) -> None:
    f = tmp_path / "nli.csv"
    f.write_text("id,premise,hypothesis,label\na,x,y,neutral\n", encoding="utf-8")
    msg = str(refused(project, f, "csv"))
    assert "found id, premise, hypothesis, label" in msg and "import_data --task nli" in msg


def test_wrong_fields_among_good_rows_stay_problems_of_their_rows(tmp_path: Path, project: Project) -> None:
    one = write(tmp_path / "one.jsonl", [nli_pair(9)])  # one row alone: a problem of its row
    assert len(refused(project, one, "pairs-jsonl").problems) == 1
    f = write(tmp_path / "mixed.jsonl", [nli_pair(0), sentiment_pair(1), nli_pair(2), sentiment_pair(3)])
    exc = refused(project, f, "pairs-jsonl")
    assert [p.split(": ", 1)[0] for p in exc.problems] == [f"{f}:1", f"{f}:3"]
    assert all("missing field(s) text" in p for p in exc.problems)
    report = data_import(project=project, format="pairs-jsonl", paths=[str(f)], strict=False)
    assert (report.imported_pairs, report.problem_count) == (2, 2)
