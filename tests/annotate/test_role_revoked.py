"""An annotator whose account is taken out of the ``annotator`` group (the admin's way to take
the role away, docs/security.md) keeps their project memberships as rows, but the memberships no
longer count: before, next-item served them items, their answers counted, the annotation pages
opened and the API listed their projects, as if they still held the role."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group

from annotate.models import Annotation
from annotate.services import assignments as svc
from annotate.services.routing import project_route
from projects import permissions
from projects.services.memberships import membership_add

from .factories import annotator, login, project_with_candidates, researcher
from .test_membership_actions import lease_actions, token_client

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]

NO_ROLE = "no longer has the annotator role"


def _routed():
    p = project_with_candidates(n=4, k=2)
    project_route(project=p, budget=1.0, seed=0)
    return p


def test_without_the_role_a_member_gets_nothing_and_their_answers_do_not_count():
    project = _routed()
    u = annotator(project)
    c = token_client(u)
    answered = c.post(f"/api/v1/projects/{project.pk}/next-item/").json()["assignment"]
    assert (
        c.post(f"/api/v1/assignments/{answered}/annotation/", {"choice": "neutral"}, format="json").status_code == 201
    )
    held = c.post(f"/api/v1/projects/{project.pk}/next-item/").json()["assignment"]

    u.groups.remove(Group.objects.get(name=permissions.ANNOTATOR))

    answers = Annotation.objects.count()
    for url, body in lease_actions(held=held, answered=answered):
        r = c.post(url, body, format="json")
        assert r.status_code == 403 and NO_ROLE in r.json()["detail"], (url, r.status_code, r.content)
    assert Annotation.objects.count() == answers  # nothing counted, nothing undone
    assert c.post(f"/api/v1/projects/{project.pk}/next-item/").status_code == 403
    assert c.get("/api/v1/projects/").json() == []
    page = login(u)
    assert page.get(f"/annotate/projects/{project.pk}/").status_code == 404  # as any project not theirs
    home = page.get("/annotate/").content.decode()
    assert f"/annotate/projects/{project.pk}/" not in home
    assert "does not hold the annotator role" in home and "not been added to a project" not in home

    u.groups.add(Group.objects.get(name=permissions.ANNOTATOR))  # given back: as before
    assert c.post(f"/api/v1/projects/{project.pk}/next-item/").status_code == 200


def test_the_submit_statement_itself_needs_the_role():
    """The statement that stores an answer carries the condition too (a role taken away
    between the check and the statement)."""
    project = _routed()
    u = annotator(project)
    lease = svc.assignment_next(project=project, annotator=u)
    u.groups.clear()
    with pytest.raises(svc.AnnotationError):
        svc.annotation_submit(assignment_id=lease.pk, annotator=u, choice="neutral")
    assert not Annotation.objects.filter(annotator=u).exists()


def test_researchers_and_admins_added_as_annotators_still_answer():
    project = _routed()
    admin = researcher(is_superuser=True)
    admin.groups.clear()  # an admin holds no group
    for user in (researcher(), admin):
        membership_add(project=project, username=user.username, role=permissions.ANNOTATOR)
        lease = svc.assignment_next(project=project, annotator=user)
        svc.annotation_submit(assignment_id=lease.pk, annotator=user, choice="neutral")
    assert Annotation.objects.count() == 2


def test_a_member_without_the_role_is_not_counted_as_someone_who_can_still_answer():
    """The waiting-items figures (quality page, dashboard, warnings) counted a member taken out
    of the annotator group as able to answer, while next-item serves them nothing: items that
    can no longer get their answers were not shown as waiting."""
    from annotate.selectors import eligible_annotators, items_waiting_for_annotators

    project = _routed()  # k = 2
    first, second = annotator(project), annotator(project)
    assert eligible_annotators(project_id=project.pk, qualified=False).count() == 2
    assert not items_waiting_for_annotators(project=project).exists()

    second.groups.remove(Group.objects.get(name=permissions.ANNOTATOR))

    assert list(eligible_annotators(project_id=project.pk, qualified=False).values_list("user_id", flat=True)) == [
        first.pk
    ]
    assert items_waiting_for_annotators(project=project).exists()  # k = 2, one who can answer
    admin_member = researcher()
    admin_member.groups.clear()
    admin_member.is_superuser = True
    admin_member.save()
    membership_add(project=project, username=admin_member.username, role=permissions.ANNOTATOR)
    assert eligible_annotators(project_id=project.pk, qualified=False).count() == 2  # an admin holds a role


def test_the_open_item_page_says_once_why_and_offers_no_undo_that_would_be_refused(settings):
    """The annotator's page was open when the role was taken away: the next key press got the
    stage with the refusal, then "not a project you annotate" below it (the service's word for a
    stranger) and the Undo of their last answer, which is refused too. Now the refusal is said
    once, in the card, and no Undo is offered."""
    settings.COUNTERPART = {**settings.COUNTERPART, "GOLD_RATE": 0.0, "QUALIFICATION_GOLD": 0, "UNDO_SECONDS": 300}
    project = _routed()
    u = annotator(project)
    first = svc.assignment_next(project=project, annotator=u)
    svc.annotation_submit(assignment_id=first.pk, annotator=u, choice="neutral", duration_ms=900)
    held = svc.assignment_next(project=project, annotator=u)

    u.groups.remove(Group.objects.get(name=permissions.ANNOTATOR))

    stage = (
        login(u)
        .post(f"/annotate/assignments/{held.pk}/answer/", {"choice": "neutral"}, HTTP_HX_REQUEST="true")
        .content.decode()
    )
    assert stage.count(NO_ROLE) == 1, stage
    assert "not a project you annotate" not in stage
    assert 'id="undo"' not in stage and "/undo/" not in stage
