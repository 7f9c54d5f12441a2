"""projects.services.exports.data_export and ``manage.py export``."""

from __future__ import annotations

import csv
import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from projects import states
from projects.models import Candidate, Example, Project
from projects.services.exports import ExportError, data_export
from projects.services.imports import data_import
from projects.services.projects import project_create

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]

CANDIDATE_FIELDS = [
    "external_id",
    "group",
    "fields",
    "image",
    "generator",
    "perturbation",
    "target_label__name",
    "scores",
    "state",
    "label__name",
    "label_source",
    "confidence",
    "gold_label__name",
    "meta",
    "example__external_id",
    "example__fields",
    "example__image",
    "example__label__name",
    "example__source",
    "example__split",
    "example__meta",
]


def rows(project: Project) -> list[tuple]:
    """Every field; ``meta.provenance`` (written by every export, so stored by a re-import) aside."""
    meta = CANDIDATE_FIELDS.index("meta")
    out = []
    for row in Candidate.objects.filter(project=project).order_by("id").values_list(*CANDIDATE_FIELDS):
        row = list(row)
        row[meta] = {k: v for k, v in row[meta].items() if k != "provenance"}
        out.append(tuple(row))
    return out


def rich_file(tmp_path: Path) -> Path:
    from PIL import Image

    img = tmp_path / "img.png"
    Image.new("RGB", (2, 2)).save(img)
    lines = [
        {
            "id": "p1",
            "group": "g1",
            "original": {
                "id": "o1",
                "fields": {"premise": 'A man, "quoted".', "hypothesis": "Ünïcode\nline"},
                "label": "neutral",
                "split": "train",
                "source": "snli",
                "meta": {"row": 1},
            },
            "counterfactual": {
                "fields": {"premise": "A woman.", "hypothesis": "Ünïcode\nline"},
                "label": "entailment",
                "target_label": "entailment",
                "generator": "rules",
                "perturbation": "lexical",
                "label_source": "human",
                "confidence": 0.875,
                "gold_label": "contradiction",
                "scores": {"similarity": 0.93, "fluency": -1.5},
            },
            "meta": {"note": "x", "list": [1, 2]},
        },
        {
            "id": "p2",
            "group": "g1",
            "original": {
                "id": "o1",
                "fields": {"premise": 'A man, "quoted".', "hypothesis": "Ünïcode\nline"},
                "label": "neutral",
            },
            "counterfactual": {
                "fields": {"premise": "No man.", "hypothesis": "Ünïcode\nline"},
                "label": "contradiction",
                "label_source": "auto",
                "confidence": 0.61,
            },
        },
        {
            "id": "p3",
            "original": {
                "fields": {"premise": "Sky.", "hypothesis": "Blue."},
                "label": None,
                "split": "dev",
                "image": str(img),
            },
            "counterfactual": {
                "fields": {"premise": "Sea.", "hypothesis": "Blue."},
                "label": "neutral",
                "label_source": "gold",
                "image": str(img),
            },
        },
        {
            "id": "p4",
            "original": {
                "id": "o4",
                "fields": {"premise": "Cat.", "hypothesis": "Pet."},
                "label": "entailment",
                "split": "dev",
            },
            "counterfactual": {
                "fields": {"premise": "Rock.", "hypothesis": "Pet."},
                "label": "contradiction",
                "label_source": "imported",
            },
        },
        {
            "id": "p5",
            "original": {"id": "o4", "fields": {"premise": "Cat.", "hypothesis": "Pet."}, "label": "entailment"},
            "counterfactual": {"fields": {"premise": "Dog.", "hypothesis": "Pet."}},
        },
    ]
    f = tmp_path / "rich.jsonl"
    f.write_text("".join(json.dumps(x, ensure_ascii=False) + "\n" for x in lines), encoding="utf-8")
    return f


@pytest.fixture
def rich(tmp_path: Path) -> Project:
    project = project_create(name="rich", task="nli")
    report = data_import(project=project, format="pairs-jsonl", paths=[str(rich_file(tmp_path))])
    assert report.problem_count == 0 and report.imported_pairs == 5
    return project


@pytest.mark.parametrize("fmt,ext", [("pairs-jsonl", "jsonl"), ("csv", "csv")])
def test_import_export_import_round_trips_every_field(tmp_path: Path, rich: Project, fmt: str, ext: str) -> None:
    first = tmp_path / f"first.{ext}"
    assert data_export(project=rich, format=fmt, out=str(first)) == 5
    copy = project_create(name="copy", task="nli")
    report = data_import(project=copy, format=fmt, paths=[str(first)])
    assert (report.imported_originals, report.imported_pairs, report.problem_count) == (3, 5, 0)
    assert rows(copy) == rows(rich)
    second = tmp_path / f"second.{ext}"
    data_export(project=copy, format=fmt, out=str(second))
    assert first.read_bytes() == second.read_bytes()


def test_export_is_formats_md_section_1(tmp_path: Path, rich: Project) -> None:
    out = tmp_path / "o.jsonl"
    data_export(project=rich, format="pairs-jsonl", out=str(out))
    objs = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    p1, p2, p3, p4, p5 = objs
    assert p1["id"] == "p1" and p1["group"] == "g1"
    assert p1["original"]["fields"] == {"premise": 'A man, "quoted".', "hypothesis": "Ünïcode\nline"}
    assert p1["original"]["label"] == "neutral"
    assert p1["counterfactual"] == {
        "fields": {"premise": "A woman.", "hypothesis": "Ünïcode\nline"},
        "label": "entailment",  # the final label, with its source and confidence
        "target_label": "entailment",
        "generator": "rules",
        "perturbation": "lexical",
        "label_source": "human",
        "confidence": 0.875,
        "gold_label": "contradiction",
        "scores": {"similarity": 0.93, "fluency": -1.5},
    }
    assert p1["meta"] == {
        "note": "x",
        "list": [1, 2],
        "provenance": {"confidence": 0.875, "generator": "rules", "label_source": "human", "perturbation": "lexical"},
    }
    assert (p2["counterfactual"]["label"], p2["counterfactual"]["label_source"]) == ("contradiction", "auto")
    # No final label: the known answer with label_source "gold".
    assert (p3["counterfactual"]["label"], p3["counterfactual"]["label_source"]) == ("neutral", "gold")
    assert p3["original"]["label"] is None and p3["original"]["image"].endswith("img.png")
    assert p4["counterfactual"]["label_source"] == "imported"
    assert "label" not in p5["counterfactual"] and "label_source" not in p5["counterfactual"]


def test_filters(tmp_path: Path, rich: Project) -> None:
    def ids(**filters: object) -> list[str]:
        buf = StringIO()
        data_export(project=rich, format="pairs-jsonl", out=buf, **filters)
        return [json.loads(line)["id"] for line in buf.getvalue().splitlines()]

    assert ids() == ["p1", "p2", "p3", "p4", "p5"]
    assert ids(state=[states.HUMAN_LABELED]) == ["p1", "p4"]
    assert ids(state=[states.POOLED, states.AUTO_LABELED]) == ["p2", "p3", "p5"]
    assert ids(label_source=["gold"]) == ["p3"]
    assert ids(label_source=["human", "imported"]) == ["p1", "p4"]
    assert ids(label_source=["none"]) == ["p5"]
    assert ids(min_confidence=0.7) == ["p1"]
    assert ids(split=["dev"]) == ["p3", "p4", "p5"]
    assert ids(split=["dev"], label_source=["imported"]) == ["p4"]
    with pytest.raises(ExportError, match="unknown state"):
        ids(state=["done"])
    with pytest.raises(ExportError, match="unknown label source"):
        ids(label_source=["robot"])


def test_csv_columns(tmp_path: Path, rich: Project) -> None:
    out = tmp_path / "o.csv"
    data_export(project=rich, format="csv", out=str(out))
    with open(out, encoding="utf-8", newline="") as fh:
        table = list(csv.DictReader(fh))
    assert len(table) == 5
    first = table[0]
    assert first["id"] == "p1" and first["original.premise"] == 'A man, "quoted".'
    assert first["original.hypothesis"] == "Ünïcode\nline" and first["counterfactual.label"] == "entailment"
    assert first["counterfactual.label_source"] == "human" and first["counterfactual.confidence"] == "0.875"
    meta = json.loads(first["meta"])
    assert meta["note"] == "x" and meta["list"] == [1, 2] and meta["provenance"]["label_source"] == "human"


def test_states_without_a_label_export_and_reimport_as_pooled(tmp_path: Path, rich: Project) -> None:
    Candidate.objects.filter(external_id="p5").update(state=states.ROUTED)  # test set-up only
    out = tmp_path / "o.jsonl"
    data_export(project=rich, format="pairs-jsonl", out=str(out), state=[states.ROUTED])
    copy = project_create(name="copy", task="nli")
    data_import(project=copy, format="pairs-jsonl", paths=[str(out)])
    assert Candidate.objects.get(project=copy).state == states.POOLED


@pytest.mark.slow
def test_cad_round_trip(tmp_path: Path, shared_data: Path) -> None:
    project = project_create(name="cad", task="nli")
    data_import(project=project, format="cad-nli", paths=[str(shared_data / "cad")], split="dev")
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    assert data_export(project=project, format="pairs-jsonl", out=str(first)) == 800
    copy = project_create(name="copy", task="nli")
    report = data_import(project=copy, format="pairs-jsonl", paths=[str(first)])
    assert (report.imported_originals, report.imported_pairs) == (200, 800)
    data_export(project=copy, format="pairs-jsonl", out=str(second))
    assert first.read_bytes() == second.read_bytes()
    assert rows(copy) == rows(project)


def test_command(tmp_path: Path, rich: Project) -> None:
    out = StringIO()
    target = tmp_path / "sub" / "x.jsonl"
    call_command(
        "export",
        "--project",
        "rich",
        "--format",
        "pairs-jsonl",
        "--out",
        str(target),
        "--label-source",
        "human,imported",
        stdout=out,
    )
    assert out.getvalue().strip() == f"exported 2 pairs to {target}"
    assert len(target.read_text(encoding="utf-8").splitlines()) == 2
    assert not [p for p in target.parent.iterdir() if p.name.startswith(".export-")]
    out = StringIO()
    call_command("export", "--project", "rich", "--format", "csv", "--out", "-", "--min-confidence", "0.5", stdout=out)
    assert out.getvalue().splitlines()[0].startswith("id,group,original.id,original.premise,original.hypothesis")
    with pytest.raises(CommandError, match="no project"):
        call_command("export", "--project", "nope", "--format", "csv", "--out", str(tmp_path / "y.csv"))
    with pytest.raises(CommandError, match="unknown state"):
        call_command("export", "--project", "rich", "--format", "csv", "--out", str(tmp_path / "y.csv"), "--state", "x")
    assert Example.objects.filter(project=rich).count() == 3


@pytest.mark.postgres
def test_round_trip_on_postgresql(require_postgres, tmp_path: Path) -> None:
    """The raw executemany insert and JSON adaptation on the real PostgreSQL."""
    project = project_create(name="rich", task="nli")
    report = data_import(project=project, format="pairs-jsonl", paths=[str(rich_file(tmp_path))], batch_size=2)
    assert (report.imported_originals, report.imported_pairs, report.problem_count) == (3, 5, 0)
    again = data_import(project=project, format="pairs-jsonl", paths=[str(rich_file(tmp_path))])
    assert (again.imported_pairs, again.skipped) == (0, 5)
    c = Candidate.objects.get(project=project, external_id="p1")
    assert c.scores == {"similarity": 0.93, "fluency": -1.5} and c.meta == {"note": "x", "list": [1, 2]}
    assert c.created_at is not None and c.updated_at is not None
    for fmt in ("pairs-jsonl", "csv"):
        first, second = tmp_path / f"a.{fmt}", tmp_path / f"b.{fmt}"
        data_export(project=project, format=fmt, out=str(first))
        copy = project_create(name=f"copy-{fmt}", task="nli")
        data_import(project=copy, format=fmt, paths=[str(first)])
        data_export(project=copy, format=fmt, out=str(second))
        assert first.read_bytes() == second.read_bytes()
        assert rows(copy) == rows(project)
