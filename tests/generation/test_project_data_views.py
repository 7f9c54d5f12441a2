import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from projects import permissions
from projects.models import Candidate, Example
from projects.services.projects import project_create
from tests.generation.conftest import user_with_role
from tests.projects.import_uploads import Imported, post_import

pytestmark = pytest.mark.postgres_too


def pair(i, label="positive", source="gold"):
    return json.dumps(
        {
            "id": f"p{i}",
            "group": f"g{i}",
            "original": {
                "fields": {"text": f"good film {i}"},
                "label": "negative" if label == "positive" else "positive",
            },
            "counterfactual": {"fields": {"text": f"bad film {i}"}, "label": label, "label_source": source},
        }
    )


@pytest.fixture
def researcher_client(client, researcher):
    client.force_login(researcher)
    return client


@pytest.fixture
def project(db):
    return project_create(name="sent", task="sentiment")


def upload(client, project, content: bytes, fmt="pairs-jsonl", name="pairs.jsonl", skip_bad_rows=False) -> Imported:
    """The page queues an import job (run here at once); ``.html`` is the page and its job box."""
    data = {"format": fmt, "file": SimpleUploadedFile(name, content)}
    if skip_bad_rows:
        data["skip_bad_rows"] = "1"
    return post_import(client, project, data)


def test_malformed_upload_is_refused_whole_with_line_numbers(researcher_client, project):
    body = "\n".join([pair(1), pair(2), '{"id": "broken"', pair(3, label="meh")]).encode()
    resp = upload(researcher_client, project, body)
    html = resp.html
    assert resp.status_code == 200 and resp.job.status == "failed"
    assert "nothing was imported" in html
    assert "pairs.jsonl:3:" in html and "pairs.jsonl:4:" in html
    assert Example.objects.filter(project=project).count() == 0


def test_upload_skipping_bad_rows_imports_and_reports(researcher_client, project):
    body = "\n".join([pair(1), pair(2), '{"id": "broken"', pair(3, label="meh")]).encode()
    resp = upload(researcher_client, project, body, skip_bad_rows=True)
    html = resp.html
    assert resp.status_code == 200 and resp.job.status == "succeeded"
    assert "imported 2 originals, 2 pairs" in html
    assert "pairs.jsonl:3:" in html and "pairs.jsonl:4:" in html  # bad rows named with file:line
    assert Candidate.objects.filter(project=project).count() == 2
    # a second upload of the same file adds nothing
    upload(researcher_client, project, body, skip_bad_rows=True)
    assert Candidate.objects.filter(project=project).count() == 2


def test_oversized_upload_is_refused_and_writes_nothing(researcher_client, project, settings):
    settings.COUNTERPART = {**settings.COUNTERPART, "MAX_UPLOAD_BYTES": 200}
    body = ("\n".join(pair(i) for i in range(20))).encode()
    resp = upload(researcher_client, project, body)
    assert resp.status_code == 413
    assert b"over the 200-byte limit" in resp.content
    assert Example.objects.filter(project=project).count() == 0


def test_upload_without_csrf_token_is_refused(db, project):
    from django.test import Client

    u = user_with_role("res2", permissions.RESEARCHER)
    c = Client(enforce_csrf_checks=True)
    c.force_login(u)
    resp = upload(c, project, pair(1).encode())
    assert resp.status_code == 403
    assert Example.objects.filter(project=project).count() == 0


def test_bad_utf8_upload_reports_line(researcher_client, project):
    body = pair(1).encode() + b"\n" + b'{"id": "x\xff\xfe"}\n'
    resp = upload(researcher_client, project, body)
    assert resp.job.status == "failed" and "pairs.jsonl:2:" in resp.html
    assert Candidate.objects.filter(project=project).count() == 0


def test_unknown_format_is_a_clear_400(researcher_client, project):
    resp = upload(researcher_client, project, pair(1).encode(), fmt="xml")
    assert resp.status_code == 400 and b"choose a file format" in resp.content


def test_export_download_roundtrips(researcher_client, project):
    upload(researcher_client, project, "\n".join([pair(1), pair(2)]).encode())
    resp = researcher_client.get(f"/projects/{project.pk}/export/?format=pairs-jsonl")
    assert resp.status_code == 200
    assert resp["Content-Disposition"].startswith('attachment; filename="sent.jsonl"')
    lines = b"".join(resp.streaming_content).decode().splitlines()
    rows = [json.loads(x) for x in lines]
    assert [r["id"] for r in rows] == ["p1", "p2"]
    assert rows[0]["counterfactual"]["label"] == "positive"
    assert rows[0]["counterfactual"]["label_source"] == "gold"


def test_export_bad_filter_is_400(researcher_client, project):
    resp = researcher_client.get(f"/projects/{project.pk}/export/?state=nonsense")
    assert resp.status_code == 400 and b"unknown state" in resp.content


@pytest.mark.parametrize("skip_bad_rows", [False, True])
def test_an_empty_file_is_an_error(researcher_client, project, skip_bad_rows):
    resp = upload(researcher_client, project, b"", skip_bad_rows=skip_bad_rows)
    assert resp.job.status == "failed" and "the file has no rows" in resp.html
    resp = upload(researcher_client, project, b"\n\n", skip_bad_rows=skip_bad_rows)
    assert resp.job.status == "failed" and "the file has no rows" in resp.html


def test_page_refusal_speaks_of_the_checkbox_not_the_command_flag(researcher_client, project):
    resp = upload(researcher_client, project, b"this is not json\n")
    html = resp.html
    assert resp.job.status == "failed"
    assert "--skip-bad-rows" not in html and "Skip bad rows" in html
