"""Inputs on the import page and API (issue 32.8): a file that looks like another format is
refused at once saying which ("this looks like TSV; choose csv") instead of 201 "not valid JSON"
lines; errors are shown next to their field; the POST redirects (a reload does not upload again)."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.test import APIClient

from projects.formats.sniff import format_hint
from projects.models import Job
from projects.services.projects import project_create
from tests.projects.import_uploads import post_import

from .test_import_validation import user_with_role

pytestmark = [pytest.mark.django_db]

TSV = b"".join(f"premise {i}\thypothesis {i}\tentailment\n".encode() for i in range(201))
PAIR = (
    b'{"id": "p1", "original": {"fields": {"text": "good"}, "label": "positive"}, '
    b'"counterfactual": {"fields": {"text": "bad"}, "label": "negative"}}\n'
)


@pytest.fixture
def project(db):
    return project_create(name="hints", task="sentiment")


@pytest.fixture
def rclient(client):
    client.force_login(user_with_role("res", "researcher"))
    return client


def test_a_tsv_uploaded_as_pairs_jsonl_is_refused_with_the_format_it_looks_like(rclient, project):
    resp = post_import(rclient, project, {"format": "pairs-jsonl", "file": SimpleUploadedFile("snli.tsv", TSV)})
    assert resp.status_code == 400 and resp.job is None and not Job.objects.exists()
    html = resp.content.decode()
    hint = "snli.tsv looks like TSV (tab-separated columns), not JSON lines; choose csv"
    # next to the file field, not at the top of the form
    assert f'<p class="error field-error" id="file-error" role="alert">{hint}' in html
    assert 'aria-describedby="file-error"' in html and 'section class="card" role="alert"' not in html
    api = APIClient()
    api.force_authenticate(user_with_role("res2", "researcher"))
    r = api.post(
        f"/api/v1/projects/{project.pk}/import/", {"format": "pairs-jsonl", "file": SimpleUploadedFile("snli.tsv", TSV)}
    )
    assert r.status_code == 400 and hint in r.json()["detail"]


def test_no_file_is_said_next_to_the_file_field(rclient, project):
    resp = post_import(rclient, project, {"format": "pairs-jsonl"})
    assert resp.status_code == 400
    assert (
        '<p class="error field-error" id="file-error" role="alert">choose a file to upload</p>' in resp.content.decode()
    )


def test_a_good_upload_redirects_and_a_reload_shows_the_job_without_importing_again(rclient, project):
    resp = post_import(rclient, project, {"format": "pairs-jsonl", "file": SimpleUploadedFile("p.jsonl", PAIR)})
    assert resp.response.status_code == 200 and resp.job is not None and resp.job.status == "succeeded"
    again = rclient.get(f"/projects/{project.pk}/import/?job={resp.job.pk}")  # the reload
    assert again.status_code == 200 and f'id="job-{resp.job.pk}"' in again.content.decode()
    assert Job.objects.filter(kind="import").count() == 1
    assert rclient.get(f"/projects/{project.pk}/import/?job=abc").status_code == 400
    assert rclient.get(f"/projects/{project.pk}/import/?job=99999").status_code == 404


def test_a_file_nested_deeper_than_python_recurses_is_read_line_by_line_not_a_500(rclient, project):
    deep = b"[" * 100_000 + b"]" * 100_000 + b"\n"
    resp = post_import(
        rclient, project, {"format": "pairs-jsonl", "file": SimpleUploadedFile("deep.jsonl", deep + PAIR)}
    )
    assert resp.response.status_code == 200 and resp.job is not None
    # refused as a whole, naming the line, as any malformed line is; nothing half-imported
    assert resp.job.status == "failed" and "nothing was imported" in resp.job.error
    assert "nested more than" in str(resp.job.result) and not project.examples.exists()
    api = APIClient()
    api.force_authenticate(user_with_role("res2", "researcher"))
    r = api.post(
        f"/api/v1/projects/{project.pk}/import/",
        {"format": "labelled-jsonl", "file": SimpleUploadedFile("d.jsonl", deep)},
    )
    assert r.status_code in (201, 202), r.content


@pytest.mark.parametrize(
    "content, name, chosen, says",
    [
        (TSV, "x.tsv", "pairs-jsonl", "choose csv"),
        (b"a,b,label\n1,2,x\n3,4,y\n", "x.csv", "labelled-jsonl", "looks like CSV"),
        (PAIR, "x.jsonl", "csv", "choose pairs-jsonl"),
        (PAIR, "x.jsonl", "labelled-jsonl", "looks like pairs-jsonl"),
        (b'{"text": "good", "label": "positive"}\n', "x.jsonl", "pairs-jsonl", "looks like labelled-jsonl"),
        (TSV, "x.txt", "csv", ""),  # fits: tabs in the header and no comma are read as TSV
        (b"PK\x03\x04rest", "x.zip", "pairs-jsonl", "zip archive"),
        (TSV, "x.tsv", "csv", ""),  # fits
        (PAIR, "x.jsonl", "pairs-jsonl", ""),  # fits
        (b"not much\n", "x.jsonl", "pairs-jsonl", ""),  # unclear: the reader says what is wrong, line by line
        (b"[" * 5_000 + b"]" * 5_000 + b"\n" + PAIR, "x.jsonl", "labelled-jsonl", "looks like pairs-jsonl"),
        (b"{" * 100_000 + b"\n", "x.jsonl", "pairs-jsonl", ""),  # nested too deep to decode: the reader says so
    ],
)
def test_the_sniff(tmp_path, content, name, chosen, says):
    path = tmp_path / name
    path.write_bytes(content)
    hint = format_hint(str(path), name, chosen)
    assert (says in hint) if says else hint == ""
