"""A ``counterfactual.label`` without a ``label_source`` (docs/formats.md §1 lists human | auto |
gold | imported) used to be stored as a gold answer: the export then called it ``gold`` and h's
evaluation and the annotators' gold checks took it for expert truth. It is ``imported`` now: a
final label the file gives, of unknown provenance, kept and counted as such everywhere (the
overview's label sources, the export and its filters, h's training set, which leaves it out),
and an export re-imports to the same data in every format. The CAD layouts stay gold."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError

from labeling.services import pairwise_training_data
from projects import states
from projects.models import Candidate, Project
from projects.selectors import project_counts
from projects.services.exports import data_export
from projects.services.imports import data_import
from projects.services.projects import project_create
from workspace.overview.selectors import overview_counts, project_state

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]

N = 12  # more than h's minimum of human labels


def pair(i: int, *, source: str | None) -> dict:
    cf: dict = {"fields": {"text": f"a dull film {i}"}, "label": "negative" if i % 2 else "positive"}
    if source is not None:
        cf["label_source"] = source
    return {
        "id": f"{source or 'none'}-{i}",
        "original": {"id": f"o{i}", "fields": {"text": f"a fine film {i}"}, "label": "positive"},
        "counterfactual": cf,
    }


def write(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def state_of(project: Project) -> list[tuple]:
    return list(
        Candidate.objects.filter(project=project)
        .order_by("external_id")
        .values_list("external_id", "state", "label__name", "label_source", "gold_label__name")
    )


@pytest.fixture
def project() -> Project:
    return project_create(name="sources", task="sentiment")


def test_a_label_without_source_is_imported_not_gold(tmp_path: Path, project: Project) -> None:
    f = write(tmp_path / "p.jsonl", [pair(i, source=None) for i in range(N)])
    assert data_import(project=project, format="pairs-jsonl", paths=[str(f)]).imported_pairs == N
    got = state_of(project)
    assert {(s, src, gold) for _, s, _, src, gold in got} == {(states.HUMAN_LABELED, "imported", None)}
    counts = overview_counts(counts=project_counts(project=project))
    assert counts["label_sources"] == {"human": 0, "auto": 0, "imported": N} and counts["with_gold"] == 0
    assert project_state(project=project).human_labels == 0  # not counted as people's labels
    with pytest.raises(ValidationError):  # nor trained on: unknown provenance
        pairwise_training_data(project=project)
    # the CSV reader agrees: an empty counterfactual.label_source cell is the same
    csv = tmp_path / "p.csv"
    csv.write_text(
        "id,original.id,original.text,original.label,counterfactual.text,counterfactual.label,"
        "counterfactual.label_source\nc1,o-csv,good,positive,bad,negative,\n",
        encoding="utf-8",
    )
    data_import(project=project, format="csv", paths=[str(csv)])
    assert Candidate.objects.get(external_id="c1").label_source == "imported"


def test_human_labels_still_train_h_and_gold_stays_gold(tmp_path: Path, project: Project) -> None:
    rows = [pair(i, source="human") for i in range(N)] + [pair(i, source="gold") for i in range(2)]
    data_import(project=project, format="pairs-jsonl", paths=[str(write(tmp_path / "p.jsonl", rows))])
    pairs, ys = pairwise_training_data(project=project)
    assert len(pairs) == N and sorted(set(ys)) == ["negative", "positive"]  # gold answers alone are no labels
    gold = Candidate.objects.filter(external_id__startswith="gold-")
    assert {(c.state, c.label_id, c.label_source) for c in gold} == {(states.POOLED, None, "")}
    assert all(c.gold_label_id is not None for c in gold)


@pytest.mark.parametrize(("fmt", "ext"), [("pairs-jsonl", "jsonl"), ("csv", "csv")])
def test_every_source_round_trips_and_filters(tmp_path: Path, project: Project, fmt: str, ext: str) -> None:
    rows = [pair(i, source=s) for s in (None, "human", "auto", "gold", "imported") for i in range(2)]
    rows[2]["counterfactual"]["confidence"] = 1.0
    rows[4]["counterfactual"]["confidence"] = 0.7
    rows[5]["counterfactual"]["confidence"] = 0.9
    data_import(project=project, format="pairs-jsonl", paths=[str(write(tmp_path / "in.jsonl", rows))])
    first = tmp_path / f"first.{ext}"
    assert data_export(project=project, format=fmt, out=str(first)) == len(rows)
    copy = project_create(name="copy", task="sentiment")
    data_import(project=copy, format=fmt, paths=[str(first)])
    assert state_of(copy) == state_of(project)
    second = tmp_path / f"second.{ext}"
    data_export(project=copy, format=fmt, out=str(second))
    assert first.read_bytes() == second.read_bytes()

    def ids(**filters: object) -> list[str]:
        out = tmp_path / "f.jsonl"
        data_export(project=copy, format="pairs-jsonl", out=str(out), manifest=False, **filters)
        return sorted(json.loads(line)["id"] for line in out.read_text(encoding="utf-8").splitlines())

    assert ids(label_source=["imported"]) == ["imported-0", "imported-1", "none-0", "none-1"]
    assert ids(label_source=["gold"]) == ["gold-0", "gold-1"]
    assert ids(label_source=["human", "auto"]) == ["auto-0", "auto-1", "human-0", "human-1"]
    manifest = json.loads((tmp_path / f"first.{ext}.manifest.json").read_text(encoding="utf-8"))
    # as the file writes them: a known answer alone is "gold" there, and in the manifest
    assert manifest["label_sources"] == {"auto": 2, "gold": 2, "human": 2, "imported": 4}


def test_cad_labels_stay_gold(shared_data: Path, project: Project) -> None:
    cad = project_create(name="cad", task="sentiment")
    data_import(project=cad, format="cad-sentiment", paths=[str(shared_data / "cad")], split="dev")
    assert set(Candidate.objects.filter(project=cad).values_list("state", "label_source")) == {(states.POOLED, "")}
    assert not Candidate.objects.filter(project=cad, gold_label__isnull=True).exists()
