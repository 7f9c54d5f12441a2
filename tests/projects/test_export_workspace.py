"""The export page (filters, field errors, sync vs job), the job's download, provenance and
the manifest."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.test import Client

from annotate.services import assignments as svc
from annotate.services.routing import project_route
from projects.models import Candidate, Job
from projects.services.exports import data_export, export_file_for, manifest_path
from tests.annotate.factories import annotator, login, project_with_candidates, researcher

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


@pytest.fixture
def project():
    return project_with_candidates(n=12, k=2)


@pytest.fixture
def export_dir(settings, tmp_path):
    settings.COUNTERPART = {**settings.COUNTERPART, "EXPORT_DIR": str(tmp_path / "exports")}
    return tmp_path / "exports"


def ids_of(resp) -> list[str]:
    return [json.loads(line)["id"] for line in b"".join(resp.streaming_content).decode().splitlines()]


def test_export_page_by_role(project):
    url = f"/projects/{project.pk}/export/"
    resp = login(researcher()).get(url)
    assert resp.status_code == 200 and 'name="min_confidence"' in resp.content.decode()
    assert login(annotator(project)).get(url).status_code == 403
    assert Client().get(url).status_code == 302


def test_filtered_out_are_left_out_unless_asked(project):
    first = Candidate.objects.filter(project=project).order_by("id").first()
    Candidate.objects.filter(pk=first.pk).update(state="filtered_out")
    c = login(researcher())
    got = ids_of(c.get(f"/projects/{project.pk}/export/?format=pairs-jsonl"))
    assert first.external_id not in got and len(got) == 11
    got = ids_of(c.get(f"/projects/{project.pk}/export/?format=pairs-jsonl&state=filtered_out"))
    assert got == [first.external_id]


def test_export_form_errors_next_to_each_field(project):
    resp = login(researcher()).get(f"/projects/{project.pk}/export/?state=nonsense&min_confidence=7&label_source=robot")
    html = resp.content.decode()
    assert resp.status_code == 400 and "unknown state" in html
    for fid in ("x-state-error", "x-min-error", "x-source-error"):
        assert f'id="{fid}"' in html


def test_a_large_export_runs_as_a_job_and_downloads(project, settings, export_dir):
    settings.COUNTERPART = {**settings.COUNTERPART, "EXPORT_SYNC_MAX": 5}
    c = login(researcher())
    resp = c.post(f"/projects/{project.pk}/export/", {"format": "pairs-jsonl"})
    job = Job.objects.get(kind="export")
    assert resp.status_code == 302 and resp["Location"].endswith(f"?job={job.pk}")
    assert "More than 5 pairs matched" in c.get(resp["Location"]).content.decode()
    # eager in unit tests: on_commit runs at once under the test client's autocommit
    job.refresh_from_db()
    if job.status != "succeeded":
        from projects.services.jobs import job_enqueue

        job_enqueue(job_id=job.pk)
        job.refresh_from_db()
    assert job.status == "succeeded", job.error
    dl = c.get(f"/exports/{job.pk}/download/")
    assert dl.status_code == 200 and len(ids_of(dl)) == 12
    man = c.get(f"/exports/{job.pk}/download/?part=manifest")
    doc = json.loads(b"".join(man.streaming_content))
    assert doc["rows"] == 12 and doc["file"]["sha256"] and doc["project"] == project.name
    # annotators may not download
    assert login(annotator(project)).get(f"/exports/{job.pk}/download/").status_code == 403


def test_download_refuses_unfinished_and_paths_outside_the_export_dir(project, export_dir):
    job = Job.objects.create(kind="export", project=project, status="running", params={"format": "pairs-jsonl"})
    assert login(researcher()).get(f"/exports/{job.pk}/download/").status_code == 409
    job.status = "succeeded"
    job.params = {"format": "../../etc/passwd"}
    job.save()
    assert export_file_for(job=job) is None
    assert login(researcher()).get(f"/exports/{job.pk}/download/").status_code == 404


def test_provenance_and_manifest(project, tmp_path: Path):
    project_route(project=project, budget=0.2, seed=0)
    u1, u2 = annotator(project), annotator(project)
    a1 = svc.assignment_next(project=project, annotator=u1)
    svc.annotation_submit(assignment_id=a1.pk, annotator=u1, choice="neutral")
    a2 = svc.assignment_next(project=project, annotator=u2)
    svc.annotation_submit(assignment_id=a2.pk, annotator=u2, choice="neutral")
    out = tmp_path / "o.jsonl"
    data_export(project=project, format="pairs-jsonl", out=str(out))
    rows = {json.loads(line)["id"]: json.loads(line) for line in out.read_text().splitlines()}
    done = rows[a1.item.candidate.external_id]["meta"]["provenance"]
    assert done["annotators"] == 2 and done["agreement"] == 1.0 and done["label_source"] == "human"
    assert {"generator", "perturbation", "confidence"} <= set(done)
    doc = json.loads(manifest_path(out).read_text())
    assert doc["rows"] == 12 and doc["label_sources"]["human"] == 1 and doc["h"] is None
    assert doc["annotators_per_item"] == 2 and doc["excluded_by_default"] == ["filtered_out", "generated", "invalid"]
    # a stream export writes no manifest
    data_export(project=project, format="pairs-jsonl", out=StringIO())


def test_the_api_download_serves_an_export_job_file_to_a_token(project, export_dir, django_capture_on_commit_callbacks):
    from rest_framework.authtoken.models import Token
    from rest_framework.test import APIClient

    def api(user):
        c = APIClient()
        c.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
        return c

    c = api(researcher())
    with django_capture_on_commit_callbacks(execute=True):  # the job runs (eagerly) on commit
        resp = c.post(f"/api/v1/projects/{project.pk}/export/", {"run_as_job": True}, format="json")
    assert resp.status_code == 202, resp.content
    job = Job.objects.get(pk=resp.json()["id"])
    assert job.status == "succeeded", job.error
    dl = c.get(f"/api/v1/exports/{job.pk}/download/")
    assert dl.status_code == 200 and len(ids_of(dl)) == 12
    assert dl["Content-Disposition"] == f'attachment; filename="{project.name}-{job.pk}.jsonl"'
    man = c.get(f"/api/v1/exports/{job.pk}/download/?part=manifest")
    assert json.loads(b"".join(man.streaming_content))["rows"] == 12
    assert api(annotator(project)).get(f"/api/v1/exports/{job.pk}/download/").status_code == 403
    running = Job.objects.create(kind="export", project=project, status="running", params={"format": "pairs-jsonl"})
    refused = c.get(f"/api/v1/exports/{running.pk}/download/")
    assert refused.status_code == 409 and refused.json()["detail"].endswith("is running; nothing to download yet")
    assert c.get(f"/api/v1/exports/{running.pk + 1}/download/").status_code == 404
    # a failed export will never have a file: not "yet" (QA), but what to do
    failed = Job.objects.create(kind="export", project=project, status="failed", params={"format": "pairs-jsonl"})
    for answer in (
        c.get(f"/api/v1/exports/{failed.pk}/download/"),
        login(researcher()).get(f"/exports/{failed.pk}/download/"),
    ):
        assert answer.status_code == 409
        text = answer.json()["detail"] if answer["Content-Type"] == "application/json" else answer.content.decode()
        assert text == f"export job {failed.pk} failed; it wrote no file to download (start the export again)"
