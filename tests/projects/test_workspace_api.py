"""The workspace API: import, export, candidates browse/override, members, tokens — and their
place in the OpenAPI schema."""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from projects.models import Candidate, LabelOverride, ProjectMembership
from tests.annotate.factories import UserFactory, annotator, project_with_candidates, researcher
from tests.projects.import_uploads import post_import

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def client_for(user):
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return c


@pytest.fixture
def project():
    return project_with_candidates(n=8, k=2)


def pair(i):
    return json.dumps(
        {
            "id": f"x{i}",
            "original": {"fields": {"premise": f"A cat {i}.", "hypothesis": "An animal."}, "label": "entailment"},
            "counterfactual": {"fields": {"premise": f"A rock {i}.", "hypothesis": "An animal."}},
        }
    )


def test_import_api_same_checks_as_the_page(project):
    """202 with the queued import job; the job's outcome carries what the page shows."""
    c = client_for(researcher())
    url = f"/api/v1/projects/{project.pk}/import/"

    def post(name, body, **extra):
        return post_import(
            c, project, {"format": "pairs-jsonl", "file": SimpleUploadedFile(name, body), **extra}, api=True
        )

    ok = post("p.jsonl", f"{pair(1)}\n{pair(2)}\n".encode())
    assert ok.status_code == 202, ok.response.content
    assert ok.response.json()["kind"] == "import" and ok.response.json()["id"] == ok.job.pk
    assert ok.job.status == "succeeded" and ok.job.result["imported_pairs"] == 2
    assert c.get(f"/api/v1/jobs/{ok.job.pk}/").json()["result"]["imported_pairs"] == 2
    empty = post("e.jsonl", b"")
    assert empty.status_code == 202 and empty.job.status == "failed" and "no rows" in empty.job.error
    bad = post("b.jsonl", b"not json\n")
    assert bad.job.status == "failed" and "skip_bad_rows" in bad.job.error
    assert bad.job.result["problems"][0].startswith("b.jsonl:1: not valid JSON")
    assert "--skip-bad-rows" not in bad.job.error
    fmt = c.post(url, {"format": "xml", "file": SimpleUploadedFile("b.jsonl", b"x")})
    assert fmt.status_code == 400 and "format" in fmt.json()
    mapped = post("m.jsonl", f"{pair(3)}\n".encode(), label_map="nope")
    assert mapped.status_code == 400 and "label_map" in mapped.response.json()
    assert client_for(annotator(project)).post(url, {}).status_code == 403


def test_import_api_refuses_oversized_uploads(project, settings):
    settings.COUNTERPART = {**settings.COUNTERPART, "MAX_UPLOAD_BYTES": 100}
    c = client_for(researcher())
    body = ("\n".join(pair(i) for i in range(50))).encode()
    resp = c.post(
        f"/api/v1/projects/{project.pk}/import/", {"format": "pairs-jsonl", "file": SimpleUploadedFile("p.jsonl", body)}
    )
    assert resp.status_code == 413


def test_export_api_streams_small_and_queues_large(project, settings, tmp_path):
    settings.COUNTERPART = {**settings.COUNTERPART, "EXPORT_DIR": str(tmp_path)}
    c = client_for(researcher())
    url = f"/api/v1/projects/{project.pk}/export/"
    small = c.post(url, {"format": "pairs-jsonl"}, format="json")
    assert small.status_code == 200 and len(b"".join(small.streaming_content).splitlines()) == 8
    job = c.post(url, {"format": "pairs-jsonl", "run_as_job": True}, format="json")
    assert job.status_code == 202 and job.json()["kind"] == "export"
    bad = c.post(url, {"state": ["nonsense"], "min_confidence": 3}, format="json")
    assert bad.status_code == 400 and {"state", "min_confidence"} <= set(bad.json())


def test_candidates_api_pages_and_override(project):
    c = client_for(researcher())
    first = c.get(f"/api/v1/projects/{project.pk}/candidates/?limit=5")
    assert first.status_code == 200
    body = first.json()
    assert len(body["results"]) == 5 and body["next_after"] == body["results"][-1]["id"] and body["prev_before"] is None
    rest = c.get(f"/api/v1/projects/{project.pk}/candidates/?limit=5&after={body['next_after']}").json()
    assert len(rest["results"]) == 3 and rest["next_after"] is None
    assert c.get(f"/api/v1/projects/{project.pk}/candidates/?flip=x&limit=0").status_code == 400
    cid = body["results"][0]["id"]
    assert c.get(f"/api/v1/candidates/{cid}/").json()["external_id"] == body["results"][0]["external_id"]
    ok = c.post(f"/api/v1/candidates/{cid}/override/", {"label": "neutral", "note": "api"}, format="json")
    assert ok.status_code == 200 and ok.json()["label"] == "neutral" and ok.json()["overrides"][0]["note"] == "api"
    assert LabelOverride.objects.filter(candidate_id=cid).count() == 1
    assert c.post(f"/api/v1/candidates/{cid}/override/", {"label": "nope"}, format="json").status_code == 400
    Candidate.objects.filter(pk=body["results"][1]["id"]).update(state="filtered_out")
    conflict = c.post(f"/api/v1/candidates/{body['results'][1]['id']}/override/", {"label": "neutral"}, format="json")
    assert conflict.status_code == 409
    assert client_for(annotator(project)).get(f"/api/v1/projects/{project.pk}/candidates/").status_code == 403


def test_members_api(project):
    c = client_for(researcher())
    UserFactory(username="ann9", role="annotator")
    added = c.post(f"/api/v1/projects/{project.pk}/members/add/", {"username": "ann9"}, format="json")
    assert added.status_code == 201 and added.json()["role"] == "annotator"
    assert c.post(f"/api/v1/projects/{project.pk}/members/add/", {"username": "ann9"}, format="json").status_code == 409
    no = c.post(f"/api/v1/projects/{project.pk}/members/add/", {"username": "ghost"}, format="json")
    assert no.status_code == 400 and "username" in no.json()
    mid = added.json()["id"]
    assert c.post(f"/api/v1/memberships/{mid}/pause/").json()["paused"] is True
    assert c.post(f"/api/v1/memberships/{mid}/resume/").json()["flagged"] is False
    assert [m["username"] for m in c.get(f"/api/v1/projects/{project.pk}/members/").json()] == ["ann9"]
    assert c.post(f"/api/v1/memberships/{mid}/remove/").status_code == 204
    assert not ProjectMembership.objects.filter(pk=mid).exists()
    assert client_for(annotator(project)).get(f"/api/v1/projects/{project.pk}/members/").status_code == 403


def test_tokens_api_and_page(project):
    ann = annotator(project)
    c = APIClient()
    c.force_authenticate(ann)
    made = c.post("/api/v1/tokens/")
    assert made.status_code == 201 and Token.objects.get(user=ann).key == made.json()["key"]
    # annotators may not revoke others' tokens; researchers may
    other = researcher(username="r-other")
    Token.objects.create(user=other)
    assert c.post("/api/v1/tokens/revoke/", {"username": "r-other"}, format="json").status_code == 403
    r = APIClient()
    r.force_authenticate(researcher())
    assert r.post("/api/v1/tokens/revoke/", {"username": ann.username}, format="json").status_code == 204
    assert not Token.objects.filter(user=ann).exists()
    assert c.post("/api/v1/tokens/revoke/").status_code == 404
    # the page: your own token for everyone signed in; others' tokens for researchers
    from django.test import Client

    page = Client()
    page.force_login(ann)
    assert page.get("/accounts/tokens/").status_code == 200
    page.post("/accounts/tokens/", {"action": "create"})
    html = page.get("/accounts/tokens/").content.decode()
    assert Token.objects.get(user=ann).key in html  # shown once, right after creation
    assert Token.objects.get(user=ann).key not in page.get("/accounts/tokens/").content.decode()
    assert page.post("/accounts/tokens/", {"action": "revoke", "user": other.pk}).status_code == 403
    assert Client().get("/accounts/tokens/").status_code == 302


def test_schema_lists_the_workspace_endpoints():
    c = APIClient()
    c.force_authenticate(researcher())
    schema = c.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    paths = set(schema["paths"])
    for p in (
        "/api/v1/projects/{project_id}/import/",
        "/api/v1/projects/{project_id}/export/",
        "/api/v1/projects/{project_id}/candidates/",
        "/api/v1/candidates/{candidate_id}/override/",
        "/api/v1/projects/{project_id}/members/",
        "/api/v1/projects/{project_id}/members/add/",
        "/api/v1/memberships/{membership_id}/pause/",
        "/api/v1/tokens/",
        "/api/v1/tokens/revoke/",
    ):
        assert p in paths, p


def test_a_relabelled_invalid_pair_is_exported_as_it_is_counted(project, tmp_path):
    """QA (researcher's figures): annotators judged a pair "Unclear / invalid"; a researcher then
    gave it a label. Every page counted it as a human label, but the export (invalid pairs left
    out by default) did not write it. A researcher's label now makes the pair valid."""
    from projects.services.candidates import candidate_judge_validity, candidate_override
    from projects.services.exports import data_export

    cand = Candidate.objects.filter(project=project).order_by("pk").first()
    candidate_judge_validity(candidate_id=cand.pk, valid=False)
    out = tmp_path / "before.jsonl"
    data_export(project=project, format="pairs-jsonl", out=str(out), label_source=["human"])
    assert out.read_text() == ""
    candidate_override(candidate=cand, label="neutral", by=researcher())
    cand.refresh_from_db()
    assert cand.meta["valid"] is True and cand.meta["valid_source"] == "override"
    data_export(project=project, format="pairs-jsonl", out=str(out), label_source=["human"])
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == [cand.external_id]
    assert rows[0]["counterfactual"]["label"] == "neutral"


def test_min_confidence_keeps_labelled_pairs_only(project, tmp_path):
    """QA (researcher's figures): --min-confidence 0.9 also wrote pairs with no label at all, those
    h held back (abstained) although its score was high. The filter is on the confidence of the
    label a row carries: a pair without one is left out; a known answer (gold) is kept."""
    from projects import states
    from projects.models import Label
    from projects.services.exports import candidates_for_export

    neutral = Label.objects.get(project=project, name="neutral")
    a, b, c, d = Candidate.objects.filter(project=project).order_by("pk")[:4]
    Candidate.objects.filter(pk=a.pk).update(
        state=states.AUTO_LABELED, label=neutral, label_source="auto", confidence=0.95
    )
    Candidate.objects.filter(pk=b.pk).update(state=states.ABSTAINED, confidence=0.95)  # no label
    Candidate.objects.filter(pk=c.pk).update(state=states.ABSTAINED, gold_label=neutral, confidence=0.95)
    Candidate.objects.filter(pk=d.pk).update(
        state=states.AUTO_LABELED, label=neutral, label_source="auto", confidence=0.5
    )
    kept = set(candidates_for_export(project=project, min_confidence=0.9).values_list("pk", flat=True))
    assert kept == {a.pk, c.pk}
