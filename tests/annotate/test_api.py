"""The annotation API contract (docs/formats.md §4), auth, CSRF and refusals."""

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotate.models import Annotation, Assignment, Item
from annotate.services.assignments import assignments_expire
from annotate.services.routing import project_route

from .factories import annotator, project_with_candidates, researcher

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


@pytest.fixture
def project():
    p = project_with_candidates(n=5, k=2)
    project_route(project=p, budget=1.0, seed=0)
    return p


def token_client(user):
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return c


def test_projects_list_only_memberships_for_annotators(project):
    other = project_with_candidates(name="other", n=1)
    u = annotator(project)
    data = token_client(u).get("/api/v1/projects/").json()
    assert [p["name"] for p in data] == ["p"]
    assert data[0]["labels"] == ["entailment", "neutral", "contradiction"]
    r = token_client(researcher()).get("/api/v1/projects/").json()
    assert {p["name"] for p in r} == {"p", "other"}
    assert other


def test_full_contract_next_submit_repeat_skip_204(project):
    u = annotator(project)
    c = token_client(u)
    r = c.post(f"/api/v1/projects/{project.pk}/next-item/")
    assert r.status_code == 200
    body = r.json()
    assert set(body) == {"assignment", "item", "choices", "expires_at"}
    assert set(body["choices"]) == {"entailment", "neutral", "contradiction", "unclear"}
    assert body["choices"][-1] == "unclear"
    assert body["item"]["kind"] == "task_label" and "premise" in body["item"]["fields"]
    assert "label" not in str(body["item"]).lower().replace("task_label", "")  # blind
    aid = body["assignment"]
    bad = c.post(f"/api/v1/assignments/{aid}/annotation/", {"choice": "maybe", "duration_ms": 5}, format="json")
    assert bad.status_code == 400 and Annotation.objects.count() == 0
    # bad input names its field, as DRF's own validation errors do (docs/api.md, "Errors")
    assert bad.json()["choice"] == [bad.json()["detail"]] and "not one of the offered choices" in bad.json()["detail"]
    missing = c.post(f"/api/v1/assignments/{aid}/annotation/", {"duration_ms": 5}, format="json")
    assert missing.status_code == 400 and "choice" in missing.json()
    ok = c.post(f"/api/v1/assignments/{aid}/annotation/", {"choice": "neutral", "duration_ms": 1234}, format="json")
    assert ok.status_code == 201
    again = c.post(f"/api/v1/assignments/{aid}/annotation/", {"choice": "neutral", "duration_ms": 1234}, format="json")
    assert again.status_code == 200 and again.json()["id"] == ok.json()["id"]
    assert Annotation.objects.get().duration_ms == 1234
    nxt = c.post(f"/api/v1/projects/{project.pk}/next-item/").json()
    s = c.post(f"/api/v1/assignments/{nxt['assignment']}/skip/", {"reason": "garbled"}, format="json")
    assert s.status_code == 200 and s.json()["status"] == "skipped"
    # drain: the remaining 3 items, then 204
    for _ in range(3):
        n = c.post(f"/api/v1/projects/{project.pk}/next-item/").json()
        c.post(f"/api/v1/assignments/{n['assignment']}/annotation/", {"choice": "neutral"}, format="json")
    assert c.post(f"/api/v1/projects/{project.pk}/next-item/").status_code == 204


def test_foreign_and_tampered_assignment_ids_write_nothing(project):
    u, v = annotator(project), annotator(project)
    aid = token_client(u).post(f"/api/v1/projects/{project.pk}/next-item/").json()["assignment"]
    cv = token_client(v)
    assert cv.post(f"/api/v1/assignments/{aid}/annotation/", {"choice": "neutral"}, format="json").status_code == 409
    assert cv.post(f"/api/v1/assignments/{aid}/skip/", {}, format="json").status_code == 409
    assert cv.post(f"/api/v1/assignments/{aid}/undo/").status_code == 409
    assert cv.post(f"/api/v1/assignments/{aid}/heartbeat/").status_code == 409
    assert cv.post("/api/v1/assignments/999999/annotation/", {"choice": "neutral"}, format="json").status_code == 404
    assert Annotation.objects.count() == 0
    assert Assignment.objects.get(pk=aid).status == "leased"


def test_expired_lease_409(project, settings):
    settings.COUNTERPART = {**settings.COUNTERPART, "LEASE_SECONDS": -1}
    u = annotator(project)
    c = token_client(u)
    aid = c.post(f"/api/v1/projects/{project.pk}/next-item/").json()["assignment"]
    r = c.post(f"/api/v1/assignments/{aid}/annotation/", {"choice": "neutral"}, format="json")
    assert r.status_code == 409 and Annotation.objects.count() == 0


def test_skipping_an_expired_lease_is_409_as_answering_it_is(project, settings):
    """A skip of a lease whose time was up answered 200 and marked it skipped while the expiry
    sweep had not run yet, and 409 once it had: the same request got either answer. It is now
    409 with the answer's message either way, and the slot goes back to the pool once."""
    u = annotator(project)
    c = token_client(u)
    settings.COUNTERPART = {**settings.COUNTERPART, "LEASE_SECONDS": -1}
    first = c.post(f"/api/v1/projects/{project.pk}/next-item/").json()["assignment"]
    r = c.post(f"/api/v1/assignments/{first}/skip/", {"reason": "too late"}, format="json")
    assert (
        r.status_code == 409
        and r.json()["detail"]
        == c.post(f"/api/v1/assignments/{first}/annotation/", {"choice": "neutral"}, format="json").json()["detail"]
    )
    a = Assignment.objects.get(pk=first)
    assert a.status == "leased" and a.skip_reason == ""
    assert assignments_expire() == 1  # the sweep gives the slot back, once
    assert Item.objects.get(pk=a.item_id).taken == 0
    assert c.post(f"/api/v1/assignments/{first}/skip/", {}, format="json").status_code == 409
    assert Assignment.objects.get(pk=first).status == "expired"
    # a live lease skips as before, and a repeat of the skip is answered with the skipped lease
    settings.COUNTERPART = {**settings.COUNTERPART, "LEASE_SECONDS": 300}
    live = c.post(f"/api/v1/projects/{project.pk}/next-item/").json()["assignment"]
    for _ in range(2):
        r = c.post(f"/api/v1/assignments/{live}/skip/", {}, format="json")
        assert r.status_code == 200 and r.json() == {"assignment": live, "status": "skipped"}


def test_unauthenticated_and_non_member_refused(project):
    anon = APIClient()
    assert anon.get("/api/v1/projects/").status_code in (401, 403)
    assert anon.post(f"/api/v1/projects/{project.pk}/next-item/").status_code in (401, 403)
    outsider = annotator()  # annotator of no project
    assert token_client(outsider).post(f"/api/v1/projects/{project.pk}/next-item/").status_code == 403
    assert Assignment.objects.count() == 0


def test_session_auth_enforces_csrf(project):
    u = annotator(project)
    c = APIClient(enforce_csrf_checks=True)
    c.force_login(u)
    r = c.post(f"/api/v1/projects/{project.pk}/next-item/")
    assert r.status_code == 403 and Assignment.objects.count() == 0
    # with the token from the cookie it works
    c.get("/annotate/")
    token = c.cookies["csrftoken"].value
    r = c.post(f"/api/v1/projects/{project.pk}/next-item/", HTTP_X_CSRFTOKEN=token)
    assert r.status_code == 200
    aid = r.json()["assignment"]
    c2 = APIClient(enforce_csrf_checks=True)
    c2.force_login(u)
    r = c2.post(f"/api/v1/assignments/{aid}/annotation/", {"choice": "neutral"}, format="json")
    assert r.status_code == 403 and Annotation.objects.count() == 0


def test_researcher_apis_refuse_annotators(project):
    u = annotator(project)
    c = token_client(u)
    assert c.get(f"/api/v1/projects/{project.pk}/quality/").status_code == 403
    assert c.post(f"/api/v1/projects/{project.pk}/route/", {"budget": 0.5}, format="json").status_code == 403
    rc = token_client(researcher())
    q = rc.get(f"/api/v1/projects/{project.pk}/quality/")
    assert q.status_code == 200 and q.json()["items"]["open"] == Item.objects.filter(is_gold=False).count()
    assert rc.post(f"/api/v1/projects/{project.pk}/route/", {"strategy": "bogus"}, format="json").status_code == 400


def test_undo_api_returns_the_item_again(project):
    u = annotator(project)
    c = token_client(u)
    aid = c.post(f"/api/v1/projects/{project.pk}/next-item/").json()["assignment"]
    c.post(f"/api/v1/assignments/{aid}/annotation/", {"choice": "neutral"}, format="json")
    r = c.post(f"/api/v1/assignments/{aid}/undo/")
    assert r.status_code == 200 and r.json()["assignment"] == aid
    assert Annotation.objects.count() == 0
    assert c.post(f"/api/v1/assignments/{aid}/undo/").status_code == 409


def test_schema_lists_the_endpoints(project):
    r = token_client(researcher()).get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert r.status_code == 200
    text = r.content.decode()
    for path in ["/api/v1/projects/{project_id}/next-item/", "/api/v1/assignments/{assignment_id}/annotation/"]:
        assert path in text


def test_token_auth_refuses_bad_and_inactive_tokens(project):
    u = annotator(project)
    c = token_client(u)
    assert c.post(f"/api/v1/projects/{project.pk}/next-item/").status_code == 200
    bad = APIClient()
    bad.credentials(HTTP_AUTHORIZATION="Token 0000000000000000000000000000000000000000")
    assert bad.post(f"/api/v1/projects/{project.pk}/next-item/").status_code in (401, 403)
    u.is_active = False
    u.save()
    assert c.post(f"/api/v1/projects/{project.pk}/next-item/").status_code in (401, 403)
    assert Assignment.objects.count() == 1


def test_answer_with_next_carries_the_next_lease_in_one_round_trip(project):
    """``?next=1`` (issue 33): the 201 is the answer as before plus ``next``, the lease next-item
    would have given; a repeat of the answer gives the same next lease (renewed, not a second
    one); at the end ``next`` is null, and the items were each answered once."""
    u = annotator(project)
    c = token_client(u)
    lease = c.post(f"/api/v1/projects/{project.pk}/next-item/").json()
    seen = [lease["item"]["id"]]
    while True:
        url = f"/api/v1/assignments/{lease['assignment']}/annotation/?next=1"
        r = c.post(url, {"choice": "neutral", "duration_ms": 10}, format="json")
        assert r.status_code == 201
        body = r.json()
        assert set(body) == {
            "id",
            "assignment",
            "item",
            "choice",
            "canonical_choice",
            "duration_ms",
            "created_at",
            "next",
        }
        again = c.post(url, {"choice": "neutral", "duration_ms": 10}, format="json")
        assert again.status_code == 200 and again.json()["id"] == body["id"]
        assert again.json()["next"] == body["next"] or again.json()["next"]["assignment"] == body["next"]["assignment"]
        if body["next"] is None:
            break
        lease = body["next"]
        assert set(lease) == {"assignment", "item", "choices", "expires_at"}
        seen.append(lease["item"]["id"])
    assert len(seen) == len(set(seen)) == 5
    assert Annotation.objects.filter(annotator=u).count() == 5
    assert Assignment.objects.filter(annotator=u, status="leased").count() == 0
    assert c.post(f"/api/v1/projects/{project.pk}/next-item/").status_code == 204


def test_answer_without_next_keeps_the_old_shape_and_bad_next_is_400(project):
    c = token_client(annotator(project))
    aid = c.post(f"/api/v1/projects/{project.pk}/next-item/").json()["assignment"]
    bad = c.post(f"/api/v1/assignments/{aid}/annotation/?next=perhaps", {"choice": "neutral"}, format="json")
    assert bad.status_code == 400 and "next" in bad.json() and Annotation.objects.count() == 0
    r = c.post(f"/api/v1/assignments/{aid}/annotation/?next=0", {"choice": "neutral"}, format="json")
    assert r.status_code == 201 and "next" not in r.json()
    assert Assignment.objects.filter(status="leased").count() == 0  # nothing leased behind the caller's back


def test_answer_with_next_when_paused_says_why_and_leases_nothing(project):
    from projects.models import ProjectMembership
    from projects.services.memberships import membership_pause

    u, other = annotator(project), annotator(project)
    c = token_client(u)
    aid = c.post(f"/api/v1/projects/{project.pk}/next-item/").json()["assignment"]
    # k = 2: two members share the items; the other member's answer on the last slot does not matter here
    r = c.post(f"/api/v1/assignments/{aid}/annotation/?next=1", {"choice": "neutral"}, format="json")
    assert r.status_code == 201 and r.json()["next"] is not None
    membership_pause(membership=ProjectMembership.objects.get(project=project, user=u), by=None)
    nxt = r.json()["next"]["assignment"]
    refused = c.post(f"/api/v1/assignments/{nxt}/annotation/?next=1", {"choice": "neutral"}, format="json")
    assert refused.status_code == 403  # the pause released the lease; the answer is refused as before
    assert not Assignment.objects.filter(annotator=u, status="leased").exists()
    assert other
