"""An id repeated within one import: different content is a ``file:line`` problem (refused
unless skip-bad-rows), the same content a warning naming its line; an id already in the
project from an earlier import is skipped quietly when it names the same thing; when it names
something else a strict import refuses the file before writing anything (it used to warn only
while writing, so the default all-or-nothing import left those rows out), and with
skip-bad-rows it is skipped with a warning (the project keeps its own)."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command

from projects.models import Candidate, Example
from projects.services.imports import ImportRefused, data_import
from projects.services.projects import project_create

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def row(pid: str, text: str, *, orig: str = "good", oid: str = "", label: str = "positive") -> dict[str, Any]:
    original: dict[str, Any] = {"fields": {"text": orig}, "label": label}
    if oid:
        original["id"] = oid
    return {"id": pid, "original": original, "counterfactual": {"fields": {"text": text}}}


def write(tmp_path: Path, rows: list[dict[str, Any]], name: str = "pairs.jsonl") -> str:
    path = tmp_path / name
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


@pytest.fixture
def project():
    return project_create(name="dup", task="sentiment")


def test_a_pair_id_repeated_with_other_text_is_a_problem_naming_both_lines(project, tmp_path):
    path = write(tmp_path, [row("d1", "bad one"), row("d2", "bad two"), row("d1", "bad three")])
    with pytest.raises(ImportRefused) as exc:
        data_import(project=project, format="pairs-jsonl", paths=[path])
    assert exc.value.problems == [f"{path}:3: id 'd1' was given a different pair at {path}:1 (an id names one pair)"]
    assert not Candidate.objects.filter(project=project).exists()
    report = data_import(project=project, format="pairs-jsonl", paths=[path], strict=False)
    assert (report.imported_pairs, report.problem_count) == (2, 1)
    assert Candidate.objects.get(project=project, external_id="d1").fields == {"text": "bad one"}


def test_an_original_id_given_two_different_originals_is_a_problem(project, tmp_path):
    rows = [row("p1", "cf one", orig="first", oid="g1"), row("p2", "cf two", orig="second", oid="g1")]
    path = write(tmp_path, rows)
    with pytest.raises(ImportRefused) as exc:
        data_import(project=project, format="pairs-jsonl", paths=[path])
    assert exc.value.problems == [
        f"{path}:2: original.id 'g1' was given a different original at {path}:1 (an id names one original)"
    ]
    report = data_import(project=project, format="pairs-jsonl", paths=[path], strict=False)
    assert (report.imported_originals, report.imported_pairs, report.problem_count) == (1, 1, 1)
    assert not Candidate.objects.filter(external_id="p2").exists()  # not attached to "first"


def test_an_identical_repeat_is_a_counted_warning_with_its_line(project, tmp_path):
    path = write(tmp_path, [row("d1", "bad"), row("d1", "bad")])
    report = data_import(project=project, format="pairs-jsonl", paths=[path])
    assert (report.imported_pairs, report.skipped, report.problem_count) == (1, 1, 0)
    assert report.warning_count == 1
    assert report.warnings == [f"{path}:2: id 'd1' repeats the pair at {path}:1; skipped"]


def test_repeats_across_two_files_of_one_import_and_in_csv(project, tmp_path):
    a = write(tmp_path, [row("d1", "bad")], "a.jsonl")
    b = write(tmp_path, [row("d1", "other")], "b.jsonl")
    with pytest.raises(ImportRefused, match="1 problem"):
        data_import(project=project, format="pairs-jsonl", paths=[a, b])
    csv = tmp_path / "p.csv"
    csv.write_text("id,original.text,original.label,counterfactual.text\nc1,good,positive,x\nc1,good,positive,y\n")
    with pytest.raises(ImportRefused) as exc:
        data_import(project=project, format="csv", paths=[str(csv)])
    assert exc.value.problems == [f"{csv}:3: id 'c1' was given a different pair at {csv}:2 (an id names one pair)"]


def test_reimporting_the_same_file_still_skips_quietly(project, tmp_path):
    path = write(tmp_path, [row("d1", "bad", oid="g1"), row("d2", "worse", oid="g1")])
    first = data_import(project=project, format="pairs-jsonl", paths=[path])
    again = data_import(project=project, format="pairs-jsonl", paths=[path])
    assert (first.imported_originals, first.imported_pairs, first.warning_count) == (1, 2, 0)
    assert (again.imported_pairs, again.skipped, again.problem_count, again.warning_count) == (0, 2, 0, 0)
    assert Example.objects.filter(project=project).count() == 1


def test_the_command_refuses_a_conflicting_repeat(project, tmp_path):
    path = write(tmp_path, [row("d1", "bad"), row("d1", "other")])
    err = StringIO()
    with pytest.raises(CommandError):
        call_command(
            "import_data", "--project", "dup", "--task", "sentiment", "--format", "pairs-jsonl", path, stderr=err
        )
    assert f"{path}:2: id 'd1'" in err.getvalue()


def reused_ids(project, tmp_path) -> str:
    """A first import, then a second file reusing its ids: d1 for another counterfactual, g2 for
    another original."""
    first = write(tmp_path, [row("d1", "bad", oid="g1"), row("d2", "worse", oid="g2")], name="a.jsonl")
    data_import(project=project, format="pairs-jsonl", paths=[first])
    # a second file reusing the ids: d1 for another counterfactual, g2 for another original
    second = write(
        tmp_path,
        [row("d1", "other text", oid="g1"), row("d3", "fine", orig="a different review", oid="g2")],
        name="b.jsonl",
    )
    return second


def test_an_id_an_earlier_import_gave_to_something_else_refuses_a_strict_import(project, tmp_path):
    second = reused_ids(project, tmp_path)
    before = (Example.objects.count(), Candidate.objects.count())
    with pytest.raises(ImportRefused) as exc:
        data_import(project=project, format="pairs-jsonl", paths=[second])
    assert str(exc.value).startswith(
        "2 id(s) of this file name something else in the project (from an earlier import): original 'g2', pair 'd1'; "
        "nothing was imported"
    )
    assert "--skip-bad-rows" in str(exc.value)
    assert len(exc.value.problems) == 2 and "pair id 'd1' is in the project already" in exc.value.problems[1]
    assert (Example.objects.count(), Candidate.objects.count()) == before  # d3, a good row, not written either
    err = StringIO()
    with pytest.raises(CommandError, match="name something else in the project"):
        call_command(
            "import_data", "--project", "dup", "--format", "pairs-jsonl", second, stdout=StringIO(), stderr=err
        )
    assert "original id 'g2' is in the project already" in err.getvalue()
    # nothing was written, so the problems do not say the row was skipped or its pairs attached
    assert exc.value.problems == [
        "original id 'g2' is in the project already with other text, label or image (from an earlier import)",
        "pair id 'd1' is in the project already with another counterfactual or original (from an earlier import) "
        "(an id names one pair)",
    ]


def test_many_reused_ids_are_named_five_and_counted(project, tmp_path):
    first = write(tmp_path, [row(f"d{i}", "bad") for i in range(8)], name="a.jsonl")
    data_import(project=project, format="pairs-jsonl", paths=[first])
    second = write(tmp_path, [row(f"d{i}", "other") for i in range(8)], name="b.jsonl")
    with pytest.raises(ImportRefused) as exc:
        data_import(project=project, format="pairs-jsonl", paths=[second], batch_size=3)  # across batches
    assert "pair 'd0', pair 'd1', pair 'd2', pair 'd3', pair 'd4' and 3 more;" in str(exc.value)


def test_with_skip_bad_rows_an_id_an_earlier_import_gave_to_something_else_is_skipped_with_a_warning(project, tmp_path):
    second = reused_ids(project, tmp_path)
    report = data_import(project=project, format="pairs-jsonl", paths=[second], strict=False)
    assert (report.imported_pairs, report.skipped, report.problem_count, report.warning_count) == (1, 1, 0, 2)
    assert any("pair id 'd1' is in the project already with another counterfactual" in w for w in report.warnings)
    assert any("original id 'g2' is in the project already with other text" in w for w in report.warnings)
    # the project keeps its own
    assert Candidate.objects.get(external_id="d1").fields == {"text": "bad"}
    assert Example.objects.get(external_id="g2").fields == {"text": "good"}
    err, out = StringIO(), StringIO()
    call_command(
        "import_data", "--project", "dup", "--format", "pairs-jsonl", "--skip-bad-rows", second, stdout=out, stderr=err
    )
    assert "warning: pair id 'd1' is in the project already" in err.getvalue()
    assert out.getvalue().strip().endswith("skipped 2; problems 0; warnings 2")


def test_pairs_naming_a_stored_original_without_its_label_import_quietly(project, tmp_path):
    # originals first (id, text, label), then pairs that name them with the label unknown
    originals = tmp_path / "o.csv"
    originals.write_text("id,text,label\ng1,good,positive\n")
    data_import(project=project, format="csv", paths=[str(originals)])
    pairs = write(tmp_path, [row("d1", "bad", oid="g1", label="")])
    report = data_import(project=project, format="pairs-jsonl", paths=[pairs])
    assert (report.imported_pairs, report.warning_count) == (1, 0)
    assert Candidate.objects.get(external_id="d1").example.label.name == "positive"
