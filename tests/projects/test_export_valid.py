"""``counterfactual.valid`` through import, the annotators' "Unclear / invalid" answer and
export: candidates judged invalid are left out of exports unless asked for."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from annotate.services import assignments as svc
from annotate.services.routing import project_route
from projects.models import Candidate
from projects.services.exports import data_export, export_manifest
from projects.services.imports import data_import
from projects.services.projects import project_create
from tests.annotate.factories import annotator, project_with_candidates, researcher

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def _row(i: int, valid: bool | None) -> str:
    cf: dict = {"fields": {"premise": f"P{i} edited", "hypothesis": "H"}, "label": "neutral"}
    if valid is not None:
        cf["valid"] = valid
    return json.dumps(
        {
            "id": f"p{i}",
            "original": {"fields": {"premise": f"P{i}", "hypothesis": "H"}, "label": "neutral"},
            "counterfactual": cf,
        }
    )


def _ids(text: str) -> list[str]:
    return [json.loads(line)["id"] for line in text.splitlines()]


def test_valid_is_imported_exported_and_invalid_left_out_by_default(tmp_path: Path) -> None:
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(_row(i, v) for i, v in enumerate((True, False, None))) + "\n")
    project = project_create(name="v", task="nli")
    data_import(project=project, format="pairs-jsonl", paths=[str(src)])
    assert dict(Candidate.objects.values_list("external_id", "meta__valid")) == {"p0": True, "p1": False, "p2": None}
    out = StringIO()
    data_export(project=project, format="pairs-jsonl", out=out)
    assert _ids(out.getvalue()) == ["p0", "p2"]
    out = StringIO()
    data_export(project=project, format="pairs-jsonl", out=out, include_invalid=True)
    rows = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [r["counterfactual"].get("valid") for r in rows] == [True, False, None]
    assert "valid" not in rows[1]["meta"]  # it lives in counterfactual.valid, not twice
    doc = export_manifest(project=project, format="pairs-jsonl", filters={}, rows=2)
    assert "invalid" in doc["excluded_by_default"]
    # the command and the page take the filter too
    cmd = StringIO()
    call_command("export", project="v", data_format="pairs-jsonl", out="-", include_invalid=True, stdout=cmd)
    assert _ids(cmd.getvalue()) == ["p0", "p1", "p2"]
    c = Client()
    c.force_login(researcher())
    got = b"".join(c.get(f"/projects/{project.pk}/export/?format=pairs-jsonl").streaming_content).decode()
    assert _ids(got) == ["p0", "p2"]
    got = b"".join(
        c.get(f"/projects/{project.pk}/export/?format=pairs-jsonl&include_invalid=1").streaming_content
    ).decode()
    assert _ids(got) == ["p0", "p1", "p2"]
    resp = c.post(f"/api/v1/projects/{project.pk}/export/", {"format": "pairs-jsonl"}, content_type="application/json")
    assert _ids(b"".join(resp.streaming_content).decode()) == ["p0", "p2"]


def test_an_unclear_majority_marks_the_candidate_invalid() -> None:
    project = project_with_candidates(n=10, k=2)
    project_route(project=project, budget=0.2, seed=0)
    u1, u2 = annotator(project), annotator(project)
    a1 = svc.assignment_next(project=project, annotator=u1)
    svc.annotation_submit(assignment_id=a1.pk, annotator=u1, choice="unclear")
    a2 = svc.assignment_next(project=project, annotator=u2)
    assert a2.item_id == a1.item_id
    svc.annotation_submit(assignment_id=a2.pk, annotator=u2, choice="unclear")
    cand = Candidate.objects.get(pk=a1.item.candidate_id)
    assert cand.meta["valid"] is False and cand.meta["valid_source"] == "human"
    assert cand.state == "routed" and cand.label_id is None
    out = StringIO()
    data_export(project=project, format="pairs-jsonl", out=out)
    assert cand.external_id not in _ids(out.getvalue())


def test_valid_round_trips_through_csv(tmp_path: Path) -> None:
    project = project_create(name="vcsv", task="nli")
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join([_row(1, True), _row(2, False), _row(3, None)]) + "\n")
    data_import(project=project, format="pairs-jsonl", paths=[str(src)])
    out = tmp_path / "out.csv"
    data_export(project=project, format="csv", out=str(out), include_invalid=True, manifest=False)
    text = out.read_text()
    assert "counterfactual.valid" in text.splitlines()[0]
    again = project_create(name="vcsv2", task="nli")
    data_import(project=again, format="csv", paths=[str(out)])
    valid = dict(Candidate.objects.filter(project=again).values_list("external_id", "meta__valid"))
    assert valid == {"p1": True, "p2": False, "p3": None}
    back = tmp_path / "back.csv"
    data_export(project=again, format="csv", out=str(back), include_invalid=True, manifest=False)
    assert back.read_text() == text


@pytest.mark.parametrize("cell,valid", [("FALSE", False), ("True", True), ("", None)])
def test_csv_valid_cells_are_case_insensitive(tmp_path: Path, cell: str, valid: bool | None) -> None:
    project = project_create(name="vcell", task="nli")
    src = tmp_path / "in.csv"
    src.write_text(
        "id,original.premise,original.hypothesis,original.label,counterfactual.premise,counterfactual.hypothesis,"
        f"counterfactual.valid\np1,P,H,neutral,Q,H,{cell}\n"
    )
    data_import(project=project, format="csv", paths=[str(src)])
    assert Candidate.objects.get(project=project).meta.get("valid") is valid


def test_a_csv_valid_cell_that_is_not_a_boolean_is_a_problem(tmp_path: Path) -> None:
    project = project_create(name="vbad", task="nli")
    src = tmp_path / "in.csv"
    src.write_text(
        "id,original.premise,original.hypothesis,original.label,counterfactual.premise,counterfactual.hypothesis,"
        "counterfactual.valid\np1,P,H,neutral,Q,H,maybe\n"
    )
    report = data_import(project=project, format="csv", paths=[str(src)], strict=False)
    assert report.problems == [f"{src}:2: counterfactual.valid must be true, false or empty, not 'maybe'"]
