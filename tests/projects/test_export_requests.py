"""Issue 20.9: the export page and API as a researcher and a script meet them — the split list,
the job's message, Post/Redirect/Get, the state help, an export of nothing, hf-datasets through
the API, and downloading a finished export with an API token."""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import pytest
from django.test import Client

from projects.models import Candidate, Example, Job
from projects.services.exports import NOTHING_TO_EXPORT, export_splits, export_start
from projects.services.jobs import job_enqueue
from tests.annotate.factories import annotator, project_with_candidates, researcher
from tests.projects.test_export_workspace import login
from tests.projects.test_workspace_api import client_for as token_client

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


@pytest.fixture
def project():
    p = project_with_candidates(n=12, k=2)
    Example.objects.filter(project=p).update(split="dev")
    Example.objects.filter(project=p, external_id__in=["e0", "e1"]).update(split="train")
    return p


@pytest.fixture
def export_dir(settings, tmp_path: Path) -> Path:
    settings.COUNTERPART = {**settings.COUNTERPART, "EXPORT_DIR": str(tmp_path / "exports")}
    return tmp_path / "exports"


def test_each_split_is_listed_once(project):
    assert export_splits(project=project) == ["dev", "train"]
    html = login(researcher()).get(f"/projects/{project.pk}/export/").content.decode()
    assert html.count("<option>dev</option>") == 1 and html.count("<option>train</option>") == 1


def test_posting_a_directory_export_starts_one_job_and_redirects(
    project, export_dir, django_capture_on_commit_callbacks
):
    c = login(researcher())
    url = f"/projects/{project.pk}/export/"
    with django_capture_on_commit_callbacks(execute=True):
        resp = c.post(url, {"format": "hf-datasets"})
    job = Job.objects.get(kind="export", project=project)
    assert resp.status_code == 302 and resp["Location"] == f"{url}?job={job.pk}"
    for _ in range(2):  # the result URL, reloaded: the same job, no new one
        page = c.get(resp["Location"])
        assert page.status_code == 200
        html = page.content.decode()
        assert f"job-{job.pk}" in html and "hf-datasets is a directory" in html
        assert "More than" not in html  # 12 pairs match, not "more than EXPORT_SYNC_MAX"
    assert Job.objects.filter(kind="export").count() == 1
    # a GET with the filters (a bookmarked link) starts nothing either
    again = c.get(url, {"format": "hf-datasets"})
    assert again.status_code == 200 and "press Export to start it" in again.content.decode()
    assert Job.objects.filter(kind="export").count() == 1


def test_the_job_url_shows_only_this_projects_export_jobs(project):
    other = project_with_candidates(name="other", n=2, k=2)
    job = Job.objects.create(kind="export", project=other, params={"format": "csv"})
    c = login(researcher())
    assert c.get(f"/projects/{project.pk}/export/?job={job.pk}").status_code == 404
    assert c.get(f"/projects/{project.pk}/export/?job=abc").status_code == 400


def test_a_large_file_export_says_more_than_the_sync_limit(project, export_dir, settings):
    settings.COUNTERPART = {**settings.COUNTERPART, "EXPORT_SYNC_MAX": 5}
    c = login(researcher())
    resp = c.post(f"/projects/{project.pk}/export/", {"format": "pairs-jsonl"})
    job = Job.objects.get(kind="export")
    assert "More than 5 pairs matched" in c.get(resp["Location"]).content.decode()
    assert job.params["format"] == "pairs-jsonl"


def test_state_help_is_hidden_once_a_state_is_chosen(project):
    c = login(researcher())
    blank = c.get(f"/projects/{project.pk}/export/").content.decode()
    assert '<p class="muted" id="x-state-help">No state chosen' in blank
    assert "js/export.js" in blank  # keeps it in step while the user picks states
    chosen = c.post(f"/projects/{project.pk}/export/", {"format": "hf-datasets", "state": ["pooled"], "split": ["zz"]})
    html = chosen.content.decode()
    assert chosen.status_code == 200 and NOTHING_TO_EXPORT in html
    assert 'id="x-state-help" hidden' in html
    js = (Path(__file__).resolve().parents[2] / "static" / "js" / "export.js").read_text()
    assert "x-state-help" in js and "selectedOptions" in js


def test_an_export_of_nothing_says_so_and_starts_no_job(project, export_dir):
    c = login(researcher())
    url = f"/projects/{project.pk}/export/"
    for data in ({"format": "pairs-jsonl", "split": ["nope"]}, {"format": "hf-datasets", "label_source": ["human"]}):
        resp = c.post(url, data)
        assert resp.status_code == 200 and NOTHING_TO_EXPORT in resp.content.decode()  # empty, not bad input
    resp = c.get(url, {"format": "csv", "split": "nope"})
    assert resp.status_code == 200 and NOTHING_TO_EXPORT in resp.content.decode()
    api = token_client(researcher()).post(f"/api/v1/projects/{project.pk}/export/", {"split": ["nope"]}, format="json")
    assert api.status_code == 400 and api.json()["detail"] == NOTHING_TO_EXPORT
    assert not Job.objects.filter(kind="export").exists()


def test_a_job_whose_pairs_are_gone_fails_with_nothing_to_export(project, export_dir):
    job = export_start(project=project, format="pairs-jsonl", filters={"split": ["train"]})
    Candidate.objects.filter(project=project, example__split="train").delete()
    job_enqueue(job_id=job.pk)
    job.refresh_from_db()
    assert job.status == "failed" and job.error == NOTHING_TO_EXPORT
    assert not list(export_dir.glob(f"export-{job.pk}.*"))


def test_hf_datasets_through_the_api_runs_twice_and_downloads_with_the_token(
    project, export_dir, django_capture_on_commit_callbacks
):
    user = researcher()
    c = token_client(user)
    url = f"/api/v1/projects/{project.pk}/export/"
    jobs = []
    for _ in range(2):  # each job writes into its own fresh directory: no "exists" error
        with django_capture_on_commit_callbacks(execute=True):
            resp = c.post(url, {"format": "hf-datasets"}, format="json")
        assert resp.status_code == 202, resp.content
        job = Job.objects.get(pk=resp.json()["id"])
        assert job.status == "succeeded", job.error
        jobs.append(job)
    # the download accepts the API token (no redirect to the login page)
    dl = c.get(f"/exports/{jobs[1].pk}/download/")
    assert dl.status_code == 200
    names = zipfile.ZipFile(io.BytesIO(b"".join(dl.streaming_content))).namelist()
    assert any(n.endswith("dataset_info.json") for n in names)
    # the job's manifest describes the zip, as a file export's describes its file
    part = c.get(f"/api/v1/exports/{jobs[1].pk}/download/?part=manifest")
    assert part.status_code == 200, part.content
    doc = json.loads(b"".join(part.streaming_content))
    zipped = export_dir / f"export-{jobs[1].pk}.hf-datasets.zip"
    assert doc["format"] == "hf-datasets" and doc["rows"] == jobs[1].result["pairs"]
    assert doc["file"]["name"] == zipped.name and doc["file"]["bytes"] == zipped.stat().st_size
    # only the zips and their manifests remain in EXPORT_DIR: the working directories were removed
    assert sorted(p.name for p in export_dir.iterdir()) == sorted(
        name
        for j in jobs
        for name in (f"export-{j.pk}.hf-datasets.zip", f"export-{j.pk}.hf-datasets.zip.manifest.json")
    )


def test_the_download_checks_the_token_as_the_api_does(project, export_dir):
    job = Job.objects.create(kind="export", project=project, status="succeeded", params={"format": "pairs-jsonl"})
    export_dir.mkdir(parents=True)
    (export_dir / f"export-{job.pk}.jsonl").write_text("{}\n")
    url = f"/exports/{job.pk}/download/"
    bad = Client().get(url, HTTP_AUTHORIZATION="Token nope")
    assert bad.status_code == 401 and bad["WWW-Authenticate"] == "Token"
    assert token_client(annotator(project)).get(url).status_code == 403
    assert token_client(researcher()).get(url).status_code == 200
    assert Client().get(url).status_code == 302  # a browser without a session still goes to the login page
