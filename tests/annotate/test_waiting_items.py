"""Items that can never finish (issue 18.10): the plurality extension is capped at the eligible
annotators, and items whose answers cannot be reached are shown as waiting for annotators with
a one-click remedy on the annotation dashboard."""

from __future__ import annotations

from html import unescape

import pytest

from annotate import selectors
from annotate.models import Annotation, Item
from annotate.services import assignments as svc
from annotate.services.quality import items_settle_waiting
from annotate.services.routing import project_route
from projects import states
from projects.models import Candidate, ProjectMembership
from projects.services.memberships import membership_pause

from .factories import annotator, login, project_with_candidates, researcher

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def _one_item(k=3):
    project = project_with_candidates(n=1, k=k)
    project_route(project=project, budget=1.0, seed=0)
    return project, Item.objects.get(project=project, is_gold=False)


def _answer(project, user, choice):
    a = svc.assignment_next(project=project, annotator=user)
    assert a is not None
    svc.annotation_submit(assignment_id=a.pk, annotator=user, choice=choice)


def test_disagreement_with_no_one_left_aggregates_instead_of_waiting_forever():
    project, item = _one_item(k=3)
    users = [annotator(project) for _ in range(3)]
    for u, choice in zip(users, ["entailment", "neutral", "contradiction"], strict=True):
        _answer(project, u, choice)
    item.refresh_from_db()
    # before: k raised to 4 with nobody left to answer, "routed" forever
    assert (item.status, item.k, item.result) == ("complete", 3, "")  # contested: no majority
    assert not selectors.items_waiting_for_annotators(project=project).exists()


def test_extension_is_capped_at_the_annotators_who_can_still_answer():
    project, item = _one_item(k=3)
    users = [annotator(project) for _ in range(4)]
    for u, choice in zip(users[:3], ["entailment", "neutral", "contradiction"], strict=True):
        _answer(project, u, choice)
    item.refresh_from_db()
    assert (item.status, item.k) == ("open", 4)  # one more, not up to 5: only one annotator left
    _answer(project, users[3], "neutral")
    item.refresh_from_db()
    # 2 of 4 is below MIN_AGREEMENT, but nobody is left to ask: aggregated by plurality at k=4
    assert (item.status, item.k, item.result) == ("complete", 4, "neutral")


def test_paused_and_unqualified_annotators_do_not_count_for_the_extension(settings):
    settings.COUNTERPART = {**settings.COUNTERPART, "QUALIFICATION_GOLD": 1}
    project, item = _one_item(k=2)
    a, b = annotator(project, qualified_at="2026-01-01T00:00Z"), annotator(project, qualified_at="2026-01-01T00:00Z")
    paused = annotator(project, qualified_at="2026-01-01T00:00Z")
    annotator(project)  # still in qualification: not eligible for the extension
    membership_pause(membership=ProjectMembership.objects.get(user=paused), by=researcher())
    _answer(project, a, "entailment")
    _answer(project, b, "neutral")
    item.refresh_from_db()
    assert item.status == "complete" and item.k == 2


def test_too_few_annotators_for_the_overlap_shows_waiting_and_the_remedy_aggregates():
    project, item = _one_item(k=3)
    u1, u2 = annotator(project), annotator(project)
    _answer(project, u1, "neutral")
    _answer(project, u2, "neutral")
    item.refresh_from_db()
    assert (item.status, item.done, item.k) == ("open", 2, 3)
    waiting = selectors.items_waiting_summary(project=project)
    assert waiting["count"] == 1 and waiting["items"][0]["id"] == item.pk and waiting["items"][0]["available"] == 0
    assert waiting["eligible_annotators"] == 2
    assert selectors.project_quality(project=project)["items"]["waiting_for_annotators"] == 1

    r = login(researcher())
    html = unescape(r.get(f"/annotate/projects/{project.pk}/dashboard/").content.decode())
    assert 'data-testid="waiting-count"><strong>1</strong>' in html
    assert f'action="/annotate/projects/{project.pk}/waiting/"' in html
    # annotators may not use the remedy; GET is not allowed
    assert login(u1).post(f"/annotate/projects/{project.pk}/waiting/").status_code == 403
    assert r.get(f"/annotate/projects/{project.pk}/waiting/").status_code == 405

    resp = r.post(f"/annotate/projects/{project.pk}/waiting/", follow=True)
    assert "Lowered the overlap of 1 item(s); 1 aggregated with the answers there." in unescape(resp.content.decode())
    item.refresh_from_db()
    assert (item.status, item.k, item.result) == ("complete", 2, "neutral")
    cand = Candidate.objects.get(pk=item.candidate_id)
    assert cand.state == states.HUMAN_LABELED and cand.label.name == "neutral"
    assert selectors.items_waiting_summary(project=project)["count"] == 0


def test_pausing_an_annotator_makes_their_items_wait_and_resuming_clears_it():
    project = project_with_candidates(n=3, k=2)
    project_route(project=project, budget=1.0, seed=0)
    u1, u2 = annotator(project), annotator(project)
    _answer(project, u1, "neutral")
    m2 = ProjectMembership.objects.get(user=u2)
    membership_pause(membership=m2, by=researcher())
    # u1 alone can give each open item one more answer at most; every item wants more than that
    assert selectors.items_waiting_for_annotators(project=project).count() == 3
    ProjectMembership.objects.filter(pk=m2.pk).update(flagged=False, flag_reason="")
    assert selectors.items_waiting_for_annotators(project=project).count() == 0


def test_remedy_lowers_overlap_to_what_is_reachable_and_reports_items_nobody_can_answer():
    project = project_with_candidates(n=2, k=3)
    project_route(project=project, budget=1.0, seed=0)
    first, second = Item.objects.filter(project=project, is_gold=False).order_by("priority")
    u = annotator(project)
    _answer(project, u, "neutral")  # breadth-first: u answers one item
    answered = first if Annotation.objects.filter(item=first).exists() else second
    untouched = second if answered == first else first
    res = items_settle_waiting(project=project)
    answered.refresh_from_db()
    untouched.refresh_from_db()
    # the answered item has all it can get: aggregated with its one answer; the other one can
    # still get one answer (u has not had it): its k drops to 1
    assert (answered.status, answered.k, answered.result) == ("complete", 1, "neutral")
    assert (untouched.status, untouched.k) == ("open", 1)
    assert (res.lowered, res.aggregated, res.no_annotator, res.left) == (2, 1, 0, 0)

    # an item without answers and without anybody to answer it is left alone and reported
    ProjectMembership.objects.filter(user=u).delete()
    res = items_settle_waiting(project=project)
    untouched.refresh_from_db()
    assert (res.lowered, res.no_annotator) == (0, 1) and untouched.status == "open"


def test_members_in_qualification_still_count_as_potential_annotators(settings):
    settings.COUNTERPART = {**settings.COUNTERPART, "QUALIFICATION_GOLD": 3}
    project = project_with_candidates(n=2, k=2)
    project_route(project=project, budget=1.0, seed=0, gold_rate=0.0)
    annotator(project), annotator(project)  # neither has started: nothing is waiting yet
    assert selectors.items_waiting_for_annotators(project=project).count() == 0
