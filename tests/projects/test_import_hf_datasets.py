"""``import_data --format hf-datasets PATH`` reads the folder the app's own ``hf-datasets``
export writes (``save_to_disk``): export -> import -> export gives the same data, as pairs-jsonl
and csv do. It used to be refused ("hf-datasets is an export format only"). A save_to_disk
folder of another layout is still refused, saying what it is."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from projects import states
from projects.models import Candidate, Example, Label, Project
from projects.services.exports import data_export
from projects.services.imports import ImportRefused, data_import
from projects.services.projects import project_create

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def rich_project(name: str = "hf") -> Project:
    """Every kind of pair an export writes: auto, human, gold-only, unlabelled, judged invalid,
    an original with source and meta, a pair with a group, scores and meta."""
    project = project_create(name=name, task="nli")
    lab = {x.name: x for x in Label.objects.filter(project=project)}
    o1 = Example.objects.create(
        project=project,
        external_id="o1",
        fields={"premise": "A dog runs.", "hypothesis": "An animal moves."},
        label=lab["entailment"],
        split="dev",
        source="snli",
        meta={"row": 7},
    )
    o2 = Example.objects.create(
        project=project, external_id="o2", fields={"premise": "Rain «falls».", "hypothesis": "It is wet."}
    )
    common = {"project": project, "generator": "rules", "perturbation": "negation"}
    Candidate.objects.create(
        **common,
        external_id="c1",
        example=o1,
        group="o1",
        fields={"premise": "A dog runs.", "hypothesis": "A cat sleeps."},
        state=states.AUTO_LABELED,
        label=lab["contradiction"],
        label_source="auto",
        confidence=0.875,
        target_label=lab["contradiction"],
        scores={"similarity": 0.9},
        meta={"rule": "x"},
    )
    Candidate.objects.create(
        **common,
        external_id="c2",
        example=o1,
        fields={"premise": "A dog runs.", "hypothesis": "A dog sits."},
        state=states.HUMAN_LABELED,
        label=lab["neutral"],
        label_source="human",
        gold_label=lab["contradiction"],
    )
    Candidate.objects.create(
        **common, external_id="c3", example=o2, fields={"premise": "Rain.", "hypothesis": "Dry."}, state=states.POOLED
    )
    Candidate.objects.create(
        **common,
        external_id="c4",
        example=o2,
        fields={"premise": "Rain.", "hypothesis": "Wet."},
        state=states.POOLED,
        gold_label=lab["entailment"],
        meta={"valid": False},
    )
    return project


def pairs_bytes(project: Project, out: Path) -> bytes:
    data_export(project=project, format="pairs-jsonl", out=str(out), manifest=False, include_invalid=True)
    return out.read_bytes()


def test_an_hf_datasets_export_re_imports_to_the_same_data(tmp_path: Path) -> None:
    from datasets import load_from_disk

    project = rich_project()
    first = tmp_path / "first"
    assert data_export(project=project, format="hf-datasets", out=str(first), include_invalid=True) == 4
    out = StringIO()
    call_command("import_data", "--project", "copy", "--task", "nli", "--format", "hf-datasets", str(first), stdout=out)
    assert "imported 2 originals, 4 pairs; skipped 0; problems 0" in out.getvalue()
    copy = Project.objects.get(name="copy")
    # the same pairs, originals (ids, split, source, meta), labels, sources and states
    assert pairs_bytes(copy, tmp_path / "b.jsonl") == pairs_bytes(project, tmp_path / "a.jsonl")
    second = tmp_path / "second"
    data_export(project=copy, format="hf-datasets", out=str(second), include_invalid=True)
    a, b = load_from_disk(str(first)), load_from_disk(str(second))
    assert a.features == b.features and a.to_dict() == b.to_dict()
    # importing it again adds nothing
    again = data_import(project=copy, format="hf-datasets", paths=[str(first)])
    assert (again.imported_pairs, again.skipped) == (0, 4)


def test_an_hf_export_written_before_the_original_columns_still_imports(tmp_path: Path) -> None:
    from datasets import load_from_disk

    folder = tmp_path / "old"
    data_export(project=rich_project(), format="hf-datasets", out=str(folder))
    older = tmp_path / "older"
    load_from_disk(str(folder)).remove_columns(["original_id", "original_source", "original_meta"]).save_to_disk(
        str(older)
    )
    copy = project_create(name="copy", task="nli")
    report = data_import(project=copy, format="hf-datasets", paths=[str(older)])
    assert report.imported_pairs == 3  # the invalid pair is not exported by default
    # as in pairs-jsonl without original.id: the group names the original, else the pair's id
    assert dict(Candidate.objects.filter(project=copy).values_list("external_id", "example__external_id")) == {
        "c1": "o1",
        "c2": "c2",
        "c3": "c3",
    }


def test_a_folder_of_another_layout_is_refused_saying_what_it_is(tmp_path: Path) -> None:
    from datasets import Dataset

    folder = tmp_path / "theirs"
    Dataset.from_dict({"premise": ["a"], "hypothesis": ["b"], "label": [0]}).save_to_disk(str(folder))
    project = project_create(name="p", task="nli")
    with pytest.raises(ImportRefused) as exc:
        data_import(project=project, format="hf-datasets", paths=[str(folder)])
    msg = str(exc.value)
    assert "Hugging Face datasets folder (save_to_disk), not one Counterpart's hf-datasets export wrote" in msg
    assert "ds.to_json(PATH)" in msg
    with pytest.raises(ImportRefused, match="folder not found"):
        data_import(project=project, format="hf-datasets", paths=[str(tmp_path / "nowhere")])
    f = tmp_path / "p.jsonl"
    f.write_text("{}\n")
    with pytest.raises(ImportRefused, match="not a file"):
        data_import(project=project, format="hf-datasets", paths=[str(f)])
    assert not Example.objects.exists()


def test_an_export_of_another_task_is_refused_once_naming_the_fields(tmp_path: Path) -> None:
    folder = tmp_path / "nli"
    data_export(project=rich_project(), format="hf-datasets", out=str(folder))
    with pytest.raises(CommandError) as exc:
        call_command(
            "import_data", "--project", "s", "--task", "sentiment", "--format", "hf-datasets", str(folder),
            stdout=StringIO(), stderr=StringIO(),
        )  # fmt: skip
    assert "its columns hold the text fields premise, hypothesis: missing field(s) text" in str(exc.value)
    assert not Project.objects.filter(name="s").exists()


def test_the_same_folder_given_as_another_format_says_to_choose_hf_datasets(tmp_path: Path) -> None:
    folder = tmp_path / "hf"
    data_export(project=rich_project(), format="hf-datasets", out=str(folder))
    copy = project_create(name="copy", task="nli")
    with pytest.raises(ImportRefused) as exc:
        data_import(project=copy, format="pairs-jsonl", paths=[str(folder)])
    assert "import it with the hf-datasets format (import_data --format hf-datasets PATH)" in str(exc.value)


def test_a_bad_row_is_a_problem_of_its_row(tmp_path: Path) -> None:
    from datasets import load_from_disk

    folder = tmp_path / "hf"
    data_export(project=rich_project(), format="hf-datasets", out=str(folder))
    ds = load_from_disk(str(folder))
    bad = tmp_path / "bad"
    ds.map(lambda r, i: {"meta": "[1" if i == 1 else r["meta"]}, with_indices=True).save_to_disk(str(bad))
    copy = project_create(name="copy", task="nli")
    with pytest.raises(ImportRefused) as exc:
        data_import(project=copy, format="hf-datasets", paths=[str(bad)])
    assert exc.value.problems == [f"{bad}:2: meta must be a JSON object (Expecting ',' delimiter)"]
    report = data_import(project=copy, format="hf-datasets", paths=[str(bad)], strict=False)
    assert (report.imported_pairs, report.problem_count) == (2, 1)


def test_uploads_do_not_offer_a_folder_format(client) -> None:
    from projects.services.import_jobs import TASK_DATA_FORMATS, UPLOAD_FORMATS

    assert "hf-datasets" not in UPLOAD_FORMATS and "hf-datasets" not in TASK_DATA_FORMATS
    assert json.dumps(UPLOAD_FORMATS)  # the page and the API offer these


def test_the_command_queues_an_hf_datasets_import_job(tmp_path: Path) -> None:
    from django.test import TestCase

    from projects.models import Job

    folder = tmp_path / "hf"
    data_export(project=rich_project(), format="hf-datasets", out=str(folder))
    out = StringIO()
    with TestCase.captureOnCommitCallbacks(execute=True):
        call_command(
            "import_data", "--project", "copy", "--task", "nli", "--format", "hf-datasets", "--async", str(folder),
            stdout=out,
        )  # fmt: skip
    job = Job.objects.get(kind="import")
    assert job.status == "succeeded", job.error
    assert job.result["imported_pairs"] == 3 and folder.is_dir()  # a folder named on the command line stays
