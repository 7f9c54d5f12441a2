"""Evaluation tells the truth about its sets (issue 32.4): on a project imported from CAD-NLI
dev, "CAD NLI dev" is named as the project's own data and refused, and a set that holds the
project's pairs under another name never reports the held-out fifth's figures as its own."""

from __future__ import annotations

import json

import pytest

from labeling import evaluation
from labeling.evaluation import PROJECT_TITLE
from projects.models import Candidate, Example, Job
from projects.services.imports import data_import
from projects.services.projects import project_create

from .conftest import synthetic_pairs
from .test_evaluation import _fake_encoder, api, researcher, write_cad_nli_dev  # noqa: F401

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


@pytest.fixture
def imported(tmp_path):
    """A project imported from a small CAD-NLI dev split (60 originals, 240 gold-labelled
    counterfactuals) under the shared data dir."""
    shared = tmp_path / "shared"
    pairs, ys = synthetic_pairs(60, seed=5)
    write_cad_nli_dev(shared, pairs, ys)
    project = project_create(name="from dev", task="nli")
    data_import(project=project, format="cad-nli", paths=[str(shared / "cad")], split="dev")
    assert Example.objects.filter(project=project, source="cad-nli", split="dev").count() == 60
    return project, shared


def test_the_set_the_project_was_imported_from_is_named_and_refused(client, imported):
    project, shared = imported
    client.force_login(researcher())
    html = client.get(f"/labeling/projects/{project.pk}/evaluation/").content.decode()
    # named as what it is, and not offered as a choice
    assert "CAD NLI dev: the data this project was imported from (60 of its originals)" in html
    assert 'value="cad-nli:dev" disabled' in html
    resp = client.post(
        f"/labeling/projects/{project.pk}/evaluate/",
        {"evals": ["cad-nli:dev", "project"], "budget": "0.25", "seeds": "1", "classifier": "tfidf-lr"},
    )
    assert resp.status_code == 400
    assert "CAD NLI dev is the data this project was imported from" in resp.content.decode()
    # the API refuses it too, by key and by spec (the path is the caller's own, not shown back otherwise)
    for spec in ("cad-nli:dev", f"cad-nli:{shared / 'cad'}:dev"):
        resp = api().post(f"/api/v1/projects/{project.pk}/evaluate/", {"evals": [spec], "seeds": 1}, format="json")
        assert resp.status_code == 400, resp.content
        assert "imported from" in " ".join(resp.json()["evals"])
    assert not Job.objects.filter(kind="evaluate").exists()


def test_no_row_is_labelled_as_one_set_while_scoring_another(client, imported, django_capture_on_commit_callbacks):
    """The project's pairs written as a pairs-jsonl set (nothing marks it as the import source)
    and evaluated beside the held-out fifth: its examples are the pool's (training data) or the
    held-out fifth's (the project's own), so it scores nothing and says why."""
    project, shared = imported
    path = shared / "mine.jsonl"
    with open(path, "w") as fh:
        for c in Candidate.objects.filter(project=project).select_related("example__label", "gold_label"):
            row = {
                "id": c.external_id,
                "original": {"fields": c.example.fields, "label": c.example.label.name},
                "counterfactual": {"fields": c.fields, "label": c.gold_label.name},
            }
            fh.write(json.dumps(row) + "\n")
    with django_capture_on_commit_callbacks(execute=True):
        resp = api().post(
            f"/api/v1/projects/{project.pk}/evaluate/",
            {"evals": [f"pairs-jsonl:{path}", "project"], "seeds": 1, "budget": 0.25, "classifier": "tfidf-lr"},
            format="json",
        )
    assert resp.status_code == 202, resp.content
    job = Job.objects.get(pk=resp.json()["id"])
    assert job.status == "succeeded", job.error
    r = job.result
    mine = {k: v for k, v in r["eval"].items() if not k.startswith(PROJECT_TITLE)}
    held = {k: v for k, v in r["eval"].items() if k.startswith(PROJECT_TITLE)}
    assert set(mine) == {"pairs-jsonl mine.jsonl/original", "pairs-jsonl mine.jsonl/counterfactual"}
    assert held and all(v["n"] > 0 and v["variants"] for v in held.values())
    rows = Candidate.objects.filter(project=project).count()  # one row per pair in either set
    for v in mine.values():  # nothing left to score: no figures copied from the held-out rows
        assert v["n"] == 0 and v["variants"] == {}
        assert v["excluded_own"] > 0 and v["excluded"] > 0 and v["excluded"] + v["excluded_own"] == rows
    # each held-out original stands in four rows (its four counterfactuals)
    assert mine["pairs-jsonl mine.jsonl/original"]["excluded_own"] == 4 * held[f"{PROJECT_TITLE}/original"]["n"]
    assert r["excluded_own"] == sum(v["excluded_own"] for v in mine.values())
    client.force_login(researcher())
    html = client.get(f"/labeling/projects/{project.pk}/evaluation/").content.decode()
    assert "left out: this project's held-out pairs, scored under “this project”" in html
    assert "every example of this set is also the project's own data" in html


def test_choices_name_an_imported_split_only_for_that_project(imported):
    project, _ = imported
    other = project_create(name="other", task="nli")
    mine = {c.key: c for c in evaluation.evaluation_choices(project=project)}
    theirs = {c.key: c for c in evaluation.evaluation_choices(project=other)}
    assert mine["cad-nli:dev"].imported == 60 and theirs["cad-nli:dev"].imported == 0
    assert "imported from" not in theirs["cad-nli:dev"].description
