"""``manage.py export`` answers a bad ``--out`` or filter with a CommandError (no traceback,
nothing written), and checks ``--min-confidence`` as the API does (one check, in the service)."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from projects.models import Candidate, Label
from projects.services.exports import ExportError, data_export, export_filters_parse
from tests.annotate.factories import project_with_candidates

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def export(project, out: str, *more: str) -> str:
    stdout = StringIO()
    call_command("export", "--project", project.name, "--format", "pairs-jsonl", "--out", out, *more, stdout=stdout)
    return stdout.getvalue()


def test_out_naming_an_existing_directory_is_a_command_error(tmp_path: Path):
    project = project_with_candidates(n=3)
    with pytest.raises(CommandError, match="is a directory"):
        export(project, str(tmp_path))
    assert list(tmp_path.iterdir()) == []  # no temporary file left behind


def test_out_in_a_folder_that_cannot_be_written_is_a_command_error():
    project = project_with_candidates(n=3)
    with pytest.raises(CommandError, match=r"cannot write /proc/x\.jsonl"):
        export(project, "/proc/x.jsonl")


def test_hf_datasets_out_that_cannot_be_written_is_a_command_error():
    project = project_with_candidates(n=3)
    with pytest.raises(CommandError, match="cannot write /proc/x"):
        call_command("export", "--project", project.name, "--format", "hf-datasets", "--out", "/proc/x/ds")


@pytest.mark.parametrize("value", ["2", "-0.1", "nan"])
def test_min_confidence_outside_0_1_is_refused_as_by_the_api(tmp_path: Path, value: str):
    project = project_with_candidates(n=3)
    out = tmp_path / "x.jsonl"
    with pytest.raises(CommandError, match="min_confidence must be a number between 0 and 1"):
        export(project, str(out), "--min-confidence", value)
    assert not out.exists()
    assert export_filters_parse({"min_confidence": value})[1] == {"min_confidence": "a number between 0 and 1"}
    with pytest.raises(ExportError):
        data_export(project=project, format="csv", out=str(out), min_confidence=float(value))
    assert "exported 3 pairs" in export(project, str(out))


def test_a_directory_export_gets_its_manifest_beside_the_directory(tmp_path: Path):
    project = project_with_candidates(n=3)
    out = tmp_path / "ds"
    call_command("export", "--project", project.name, "--format", "hf-datasets", "--out", str(out), stdout=StringIO())
    doc = json.loads((tmp_path / "ds.manifest.json").read_text())
    assert (doc["format"], doc["rows"], doc["directory"]) == ("hf-datasets", 3, {"name": "ds"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ds", "ds.manifest.json"]


def test_a_repeated_list_flag_adds_to_the_list_not_replaces_it(tmp_path: Path):
    # README's tour exports with "--state human_labeled --state auto_labeled"; argparse kept only
    # the last flag, so the human-labelled pairs were silently left out
    project = project_with_candidates(n=4)
    label = Label.objects.filter(project=project).first()
    human, auto = ["c0", "c1"], ["c2"]
    Candidate.objects.filter(project=project, external_id__in=human).update(
        state="human_labeled", label=label, label_source="human", confidence=1.0
    )
    Candidate.objects.filter(project=project, external_id__in=auto).update(
        state="auto_labeled", label=label, label_source="auto", confidence=0.9
    )
    out = tmp_path / "x.jsonl"
    assert "exported 3 pairs" in export(project, str(out), "--state", "human_labeled", "--state", "auto_labeled")
    sources = sorted(json.loads(line)["counterfactual"]["label_source"] for line in out.read_text().splitlines())
    assert sources == ["auto", "human", "human"]
    assert "exported 3 pairs" in export(project, str(out), "--state", "human_labeled,auto_labeled")
    assert "exported 2 pairs" in export(project, str(out), "--label-source", "none", "--label-source", "auto")


@pytest.mark.parametrize("fmt", ["pairs-jsonl", "csv", "hf-datasets"])
def test_an_empty_selection_says_nothing_to_export_as_the_page_and_api_do(tmp_path: Path, fmt: str):
    project = project_with_candidates(n=2)
    out, err = StringIO(), StringIO()
    target = tmp_path / "x"
    call_command(
        "export",
        "--project",
        project.name,
        "--format",
        fmt,
        "--out",
        str(target),
        "--split",
        "nosuch",
        stdout=out,
        stderr=err,
    )
    assert err.getvalue().strip() == "Nothing to export: no pair matches these filters."
    assert f"exported 0 pairs to {target}" in out.getvalue()
    assert target.exists()  # still written (empty): a script may expect the file


class _ClosedPipe(StringIO):
    """stdout whose reader went away after ``keep`` writes (``export --out - | head``)."""

    def __init__(self, keep: int) -> None:
        super().__init__()
        self.keep = keep

    def write(self, text: str) -> int:
        if self.keep <= 0:
            raise BrokenPipeError(32, "Broken pipe")
        self.keep -= 1
        return super().write(text)


def test_out_dash_into_a_pipe_closed_early_stops_quietly(tmp_path: Path):
    """``export --out - | head -1`` printed a BrokenPipeError traceback; now the command stops
    without one (and no "exported …" line in the data)."""
    project = project_with_candidates(n=3)
    pipe = _ClosedPipe(keep=1)
    call_command("export", "--project", project.name, "--format", "pairs-jsonl", "--out", "-", stdout=pipe)
    assert pipe.getvalue().startswith('{"id"') and "exported" not in pipe.getvalue()
    call_command("export", "--project", project.name, "--format", "csv", "--out", "-", stdout=_ClosedPipe(keep=0))
