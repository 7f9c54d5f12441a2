"""The ``evaluate`` job: the API, the project-page section and the job handler, end to end
with the stand-in encoder and tiny models (Celery runs eagerly in tests)."""

from __future__ import annotations

import json

import pytest
from django.contrib.auth.models import Group, User
from rest_framework.test import APIClient

from labeling import evaluation, services
from labeling.ml.augmentation import VARIANTS
from labeling.selectors import gain_chart
from projects import permissions
from projects.models import Job

from .conftest import FakeEncoder, synthetic_pairs
from .test_services import make_project

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def _fake_encoder(monkeypatch, settings, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    settings.COUNTERPART = {
        **settings.COUNTERPART,
        "MODEL_DIR": str(tmp_path / "models"),
        "SHARED_DATA_DIR": str(shared),
    }
    monkeypatch.setattr(services, "embedder", lambda: FakeEncoder())
    monkeypatch.setattr(evaluation, "embedder", lambda: FakeEncoder())


def researcher(role=permissions.RESEARCHER):
    user = User.objects.create_user(f"{role}-{User.objects.count()}", password="pw-123456")
    user.groups.add(Group.objects.get_or_create(name=role)[0])
    return user


def api(role=permissions.RESEARCHER) -> APIClient:
    c = APIClient()
    c.force_authenticate(researcher(role))
    return c


def write_pairs(path, n=40):
    pairs, ys = synthetic_pairs(n, seed=11)
    with open(path, "w") as fh:
        for i, (p, y2) in enumerate(zip(pairs, ys, strict=True)):
            row = {
                "id": f"x{i}",
                "original": {"fields": p.original, "label": p.y},
                "counterfactual": {"fields": p.counterfactual, "label": y2},
            }
            fh.write(json.dumps(row) + "\n")


def test_api_runs_the_job_and_the_result_is_the_benchmark_shape(settings, django_capture_on_commit_callbacks):
    project, _ = make_project(n_pairs=160, n_human=40)
    path = f"{settings.COUNTERPART['SHARED_DATA_DIR']}/eval.jsonl"
    write_pairs(path)
    spec = f"pairs-jsonl:{path}"
    client = api()
    with django_capture_on_commit_callbacks(execute=True):
        resp = client.post(
            f"/api/v1/projects/{project.pk}/evaluate/",
            {"evals": [spec, "project"], "budget": 0.25, "seeds": 1, "classifier": "tfidf-lr"},
            format="json",
        )
    assert resp.status_code == 202, resp.content
    body = resp.json()
    assert body["kind"] == "evaluate" and body["total"] == len(VARIANTS)
    job = Job.objects.get(pk=body["id"])
    assert job.status == "succeeded", job.error
    r = job.result
    assert {"task", "n_pairs", "budget", "seeds", "classifier", "eval", "seconds"} <= set(r)
    assert r["task"] == "nli" and r["classifier"] == "tfidf-lr" and r["seeds"] == 1
    assert 100 < r["n_pairs"] < 160  # a held-out fifth of the groups left the pool
    names = set(r["eval"])
    assert names == {f"{spec}/original", f"{spec}/counterfactual", "project/original", "project/counterfactual"}
    cf = r["eval"][f"{spec}/counterfactual"]
    # a job's result is stored as JSON (jsonb on PostgreSQL keeps no key order): compare sets
    assert cf["n"] == 40 and set(cf["variants"]) == set(VARIANTS)
    assert cf["variants"]["originals"]["ci95"] is None  # one seed: no interval
    assert "gain" in cf["variants"]["capc"] and "p_vs_originals" in cf["variants"]["capc"]
    detail = client.get(f"/api/v1/jobs/{job.pk}/").json()
    assert detail["result"]["eval"].keys() == r["eval"].keys()


@pytest.mark.parametrize(
    "payload, field",
    [
        ({"evals": ["pairs-jsonl:/etc/passwd"]}, "evals"),
        ({"evals": ["pairs-jsonl:../../../etc/passwd"]}, "evals"),
        ({"evals": ["cad-sentiment:/x:dev"]}, "evals"),  # another task's format
        ({"evals": []}, "evals"),
        ({"evals": ["project"], "budget": 1.5}, "budget"),
        ({"evals": ["project"], "seeds": 0}, "seeds"),
        ({"evals": ["project"], "classifier": "bert"}, "classifier"),
    ],
)
def test_api_refuses_bad_input(payload, field):
    project, _ = make_project(n_pairs=30, n_human=10)
    resp = api().post(f"/api/v1/projects/{project.pk}/evaluate/", payload, format="json")
    assert resp.status_code == 400, resp.content
    assert field in resp.json()
    assert not Job.objects.filter(kind="evaluate").exists()


def test_api_refuses_a_project_without_labels_and_annotators():
    from projects.services.projects import project_create

    empty = project_create(name="empty", task="nli")
    resp = api().post(f"/api/v1/projects/{empty.pk}/evaluate/", {"evals": ["project"]}, format="json")
    assert resp.status_code == 400 and "project" in resp.json()
    resp = api(permissions.ANNOTATOR).post(f"/api/v1/projects/{empty.pk}/evaluate/", {"evals": ["project"]})
    assert resp.status_code == 403


def test_page_section_starts_a_job_and_shows_chart_and_table(client, django_capture_on_commit_callbacks):
    client.force_login(researcher())
    project, _ = make_project(n_pairs=160, n_human=40)
    page = client.get(f"/labeling/projects/{project.pk}/evaluation/")
    assert page.status_code == 200 and b"No evaluation yet" in page.content
    assert b'value="project"' in page.content
    # a free path is not accepted from the page, only the listed choices
    bad = client.post(f"/labeling/projects/{project.pk}/evaluate/", {"evals": "pairs-jsonl:/etc/passwd"})
    assert bad.status_code == 400 and b"from the list" in bad.content
    with django_capture_on_commit_callbacks(execute=True):
        resp = client.post(
            f"/labeling/projects/{project.pk}/evaluate/",
            {"evals": "project", "budget": "0.25", "seeds": "2", "classifier": "tfidf-lr"},
        )
    assert resp.status_code == 200 and b"Evaluation queued" in resp.content
    page = client.get(f"/labeling/projects/{project.pk}/evaluation/")
    html = page.content.decode()
    assert "<svg" in html and "project/counterfactual" in html
    assert "share of gold gain" in html and "<table>" in html
    detail = client.get(f"/projects/{project.pk}/")
    assert f"/labeling/projects/{project.pk}/evaluation/" in detail.content.decode()


def test_gain_chart_geometry():
    chart = gain_chart(
        {
            "originals": {"accuracy": 0.6},
            "gold": {"gain": 0.2, "gain_ci95": [0.15, 0.25]},
            "invariant": {"gain": -0.1, "gain_ci95": None},
            "pc": {"error": "too few labels"},
        }
    )
    rows = {r["name"]: r for r in chart["rows"]}
    assert set(rows) == {"gold", "invariant", "pc"}
    assert rows["pc"]["na"] == "too few labels"
    assert rows["gold"]["bar_x"] == chart["zero"] and rows["gold"]["positive"]
    assert rows["gold"]["ci_x1"] < rows["gold"]["bar_x"] + rows["gold"]["bar_w"] < rows["gold"]["ci_x2"]
    assert rows["invariant"]["bar_x"] + rows["invariant"]["bar_w"] == pytest.approx(chart["zero"], abs=0.2)
    assert "ci_x1" not in rows["invariant"]
