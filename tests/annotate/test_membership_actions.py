"""Every lease action checks the current membership (issue 18.2): a removed or paused member
gets a 403 on next-item, heartbeat, annotation, undo and skip (API and pages), their answers do
not count, and removing or pausing releases the items they hold at once."""

from __future__ import annotations

from html import unescape

import pytest
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotate.models import Annotation, Assignment, Item
from annotate.services import assignments as svc
from annotate.services.routing import project_route
from projects.models import ProjectMembership
from projects.services.memberships import membership_pause, membership_remove, membership_resume

from .factories import annotator, login, project_with_candidates, researcher

pytestmark = pytest.mark.postgres_too

PAUSED = "paused by the project's researchers"


def token_client(user):
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    return c


def _routed(n=4, k=2):
    p = project_with_candidates(n=n, k=k)
    project_route(project=p, budget=1.0, seed=0)
    return p


def _end(how: str, user, project) -> None:
    """Remove or pause ``user`` the way a researcher does (the members page)."""
    m = ProjectMembership.objects.get(project=project, user=user)
    resp = login(researcher()).post(f"/annotate/projects/{project.pk}/members/", {"action": how, "membership": m.pk})
    assert resp.status_code == 302


def lease_actions(*, held: int, answered: int) -> list[tuple[str, dict | None]]:
    """Every API action on a lease held (``held``) or answered (``answered``), with a body."""
    return [
        (f"/api/v1/assignments/{held}/heartbeat/", None),
        (f"/api/v1/assignments/{held}/annotation/", {"choice": "neutral"}),
        (f"/api/v1/assignments/{held}/skip/", {"reason": "x"}),
        (f"/api/v1/assignments/{answered}/undo/", None),
    ]


def _lease_and_answer(c, project):
    """Answer one item (for undo) and hold a lease on a second one. Returns both ids."""
    first = c.post(f"/api/v1/projects/{project.pk}/next-item/").json()["assignment"]
    ok = c.post(f"/api/v1/assignments/{first}/annotation/", {"choice": "neutral"}, format="json")
    assert ok.status_code == 201
    held = c.post(f"/api/v1/projects/{project.pk}/next-item/").json()["assignment"]
    return first, held


@pytest.mark.django_db
@pytest.mark.parametrize("how", ["remove", "pause"])
def test_removed_or_paused_member_is_refused_on_every_api_action(how):
    project = _routed()
    u = annotator(project)
    c = token_client(u)
    answered, held = _lease_and_answer(c, project)
    held_item = Assignment.objects.get(pk=held).item_id
    assert Item.objects.get(pk=held_item).taken == 1

    _end(how, u, project)

    # the held item went back to the pool at once, not when its lease runs out
    assert Assignment.objects.get(pk=held).status == "expired"
    assert Item.objects.get(pk=held_item).taken == 0
    answers_before = Annotation.objects.count()
    for url, body in lease_actions(held=held, answered=answered):
        r = c.post(url, body, format="json")
        assert r.status_code == 403, (url, r.status_code, r.content)
        expected = PAUSED if how == "pause" else "no longer a member"
        assert expected in r.json()["detail"], r.json()
    assert Annotation.objects.count() == answers_before  # nothing counted, nothing undone
    nxt = c.post(f"/api/v1/projects/{project.pk}/next-item/")
    assert nxt.status_code == 403
    if how == "pause":
        assert PAUSED in nxt.json()["detail"] and "check items" not in nxt.json()["detail"]


@pytest.mark.django_db
def test_paused_member_is_not_renewed_the_item_they_held_and_resumes_cleanly():
    project = _routed()
    u = annotator(project)
    first = svc.assignment_next(project=project, annotator=u)
    m = ProjectMembership.objects.get(user=u)
    membership_pause(membership=m, by=researcher())
    with pytest.raises(svc.NotAllowed, match="paused by the project's researchers"):
        svc.assignment_next(project=project, annotator=u)
    assert Assignment.objects.get(pk=first.pk).status == "expired"
    membership_resume(membership=m)
    m.refresh_from_db()
    assert not m.flagged and m.gold_window_start is None  # a pause is not a quality flag
    again = svc.assignment_next(project=project, annotator=u)
    assert again is not None and again.item_id != first.item_id
    svc.annotation_submit(assignment_id=again.pk, annotator=u, choice="neutral")


@pytest.mark.django_db
def test_the_submit_statement_itself_refuses_a_member_flagged_underneath():
    """Even without the release (a pause written straight to the row), the statement that
    closes the lease carries the membership condition: the answer is not stored."""
    project = _routed()
    u = annotator(project)
    a = svc.assignment_next(project=project, annotator=u)
    ProjectMembership.objects.filter(user=u).update(flagged=True, flag_reason="paused by someone")
    with pytest.raises(svc.NotAllowed, match="paused"):
        svc.annotation_submit(assignment_id=a.pk, annotator=u, choice="neutral")
    assert not Annotation.objects.exists()
    assert Assignment.objects.get(pk=a.pk).status == "leased"
    ProjectMembership.objects.filter(user=u).update(flagged=True, flag_reason="gold accuracy 1/5")
    with pytest.raises(svc.NotAllowed, match="check items"):
        svc.assignment_heartbeat(assignment_id=a.pk, annotator=u)


@pytest.mark.django_db
def test_researcher_annotates_only_as_an_annotator_member():
    """Only annotators' answers count toward k and agreement (tests/annotate/test_researcher_answers.py):
    without an annotator membership next-item refuses; once added as one, every lease action works."""
    project = _routed()
    r = researcher()
    c = token_client(r)
    assert c.post(f"/api/v1/projects/{project.pk}/next-item/").status_code == 403
    added = c.post(f"/api/v1/projects/{project.pk}/members/add/", {"username": r.username}, format="json")
    assert added.status_code == 201, added.content
    aid = c.post(f"/api/v1/projects/{project.pk}/next-item/").json()["assignment"]
    assert c.post(f"/api/v1/assignments/{aid}/heartbeat/").status_code == 200
    assert c.post(f"/api/v1/assignments/{aid}/annotation/", {"choice": "neutral"}, format="json").status_code == 201
    assert c.post(f"/api/v1/assignments/{aid}/undo/").status_code == 200


@pytest.mark.django_db
@pytest.mark.parametrize("how", ["remove", "pause"])
def test_pages_refuse_and_say_why(how):
    project = _routed()
    u = annotator(project)
    c = login(u)
    c.get(f"/annotate/projects/{project.pk}/")
    held = Assignment.objects.get(annotator=u, status="leased")
    _end(how, u, project)
    # a plain form post (no JavaScript): redirect with the reason; nothing stored
    c.post(f"/annotate/assignments/{held.pk}/answer/", {"choice": "neutral"})
    assert not Annotation.objects.exists()
    hb = c.post(f"/annotate/assignments/{held.pk}/heartbeat/", HTTP_HX_REQUEST="true")
    assert hb.status_code == 286  # htmx: stop polling
    assert (PAUSED if how == "pause" else "no longer a member") in unescape(hb.content.decode())
    home = unescape(c.get("/annotate/").content.decode())
    if how == "pause":
        page = unescape(c.get(f"/annotate/projects/{project.pk}/").content.decode())
        assert PAUSED in page and "check items" not in page
        assert PAUSED in home and "items left for you" not in home
    else:
        assert c.get(f"/annotate/projects/{project.pk}/").status_code == 404
        assert f"/annotate/projects/{project.pk}/instructions/" not in home


@pytest.mark.django_db
def test_remove_service_reports_released_leases():
    project = _routed()
    u = annotator(project)
    svc.assignment_next(project=project, annotator=u)
    assert membership_remove(membership=ProjectMembership.objects.get(user=u)) == 1
    assert not Assignment.objects.filter(status="leased").exists()
    assert Item.objects.filter(taken__gt=0).count() == 0


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_lease_path_on_postgres_refuses_removed_and_paused_members(require_postgres):
    """The PostgreSQL statements (one-statement submit with the membership condition, the
    release under row locks) on the real database."""
    project = _routed(n=6, k=2)
    keep, paused, gone = annotator(project), annotator(project), annotator(project)
    clients = {u.pk: token_client(u) for u in (keep, paused, gone)}
    held = {}
    for u in (keep, paused, gone):
        held[u.pk] = clients[u.pk].post(f"/api/v1/projects/{project.pk}/next-item/").json()["assignment"]
    membership_pause(membership=ProjectMembership.objects.get(user=paused), by=researcher())
    membership_remove(membership=ProjectMembership.objects.get(user=gone))
    for u in (paused, gone):
        r = clients[u.pk].post(f"/api/v1/assignments/{held[u.pk]}/annotation/", {"choice": "neutral"}, format="json")
        assert r.status_code == 403
        assert clients[u.pk].post(f"/api/v1/assignments/{held[u.pk]}/heartbeat/").status_code == 403
        assert Assignment.objects.get(pk=held[u.pk]).status == "expired"
    ok = clients[keep.pk].post(f"/api/v1/assignments/{held[keep.pk]}/annotation/", {"choice": "neutral"}, format="json")
    assert ok.status_code == 201
    assert list(Annotation.objects.values_list("annotator_id", flat=True)) == [keep.pk]
    # the statement-level guard, without the release
    a = clients[keep.pk].post(f"/api/v1/projects/{project.pk}/next-item/").json()["assignment"]
    ProjectMembership.objects.filter(user=keep).update(flagged=True, flag_reason="paused by x")
    r = clients[keep.pk].post(f"/api/v1/assignments/{a}/annotation/", {"choice": "neutral"}, format="json")
    assert r.status_code == 403 and Annotation.objects.count() == 1
    # counters agree with the rows
    for item in Item.objects.filter(project=project):
        live = Assignment.objects.filter(item=item, status__in=["leased", "submitted"]).count()
        assert item.taken == live and item.done == Annotation.objects.filter(item=item).count()
