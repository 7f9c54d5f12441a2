"""Only annotator members answer items. A researcher's or admin's answer counted toward an
item's overlap k and the agreement figures like an annotator's (a researcher "trying the
annotator page" took one of the k slots and voted in the aggregate): now next-item refuses
anyone without an annotator membership with a 403 that says how to annotate (add yourself as
an annotator), a lease such an account still holds cannot be answered, and the pages say the
same instead of offering Start."""

from __future__ import annotations

from datetime import timedelta
from html import unescape

import pytest
from django.contrib.auth.models import Group
from django.utils import timezone
from rest_framework.test import APIClient

from annotate.models import Annotation, Assignment, Item
from annotate.selectors import NOT_ANNOTATOR_MESSAGE
from annotate.services import assignments as svc
from annotate.services.routing import project_route
from projects import permissions
from projects.models import ProjectMembership

from .factories import annotator, login, project_with_candidates, researcher

pytestmark = pytest.mark.postgres_too


def _routed():
    p = project_with_candidates(n=3, k=2)
    project_route(project=p, budget=1.0, seed=0)
    return p


def _api(user):
    c = APIClient()
    c.force_authenticate(user)
    return c


@pytest.mark.django_db
@pytest.mark.parametrize("membership", [None, "researcher"])
def test_a_researcher_takes_no_slot_on_next_item(membership):
    p = _routed()
    r = researcher()
    if membership:
        ProjectMembership.objects.create(project=p, user=r, role=membership)
    resp = _api(r).post(f"/api/v1/projects/{p.pk}/next-item/")
    assert resp.status_code == 403, resp.content
    assert resp.json()["detail"] == NOT_ANNOTATOR_MESSAGE
    assert not Assignment.objects.exists()
    assert set(Item.objects.values_list("taken", flat=True)) == {0}


@pytest.mark.django_db
def test_an_admin_without_membership_is_refused_too():
    from .factories import UserFactory

    p = _routed()
    admin = UserFactory(is_superuser=True)
    resp = _api(admin).post(f"/api/v1/projects/{p.pk}/next-item/")
    assert resp.status_code == 403 and "members page" in resp.json()["detail"]


@pytest.mark.django_db
def test_a_lease_a_researcher_still_holds_cannot_be_answered():
    """A lease taken before the rule (the researcher tried the annotator page) does not count."""
    p = _routed()
    r = researcher()
    item = Item.objects.filter(project=p).first()
    Item.objects.filter(pk=item.pk).update(taken=1)
    order = [*p.labels.values_list("name", flat=True), "unclear"]
    a = Assignment.objects.create(
        project=p, item=item, annotator=r, display_order=order, expires_at=timezone.now() + timedelta(minutes=5)
    )
    resp = _api(r).post(f"/api/v1/assignments/{a.pk}/annotation/", {"choice": order[0]}, format="json")
    assert resp.status_code == 403 and resp.json()["detail"] == NOT_ANNOTATOR_MESSAGE
    assert not Annotation.objects.exists()
    item.refresh_from_db()
    assert item.done == 0
    with pytest.raises(svc.NotAllowed):
        svc.annotation_submit(assignment_id=a.pk, annotator=r, choice=order[0])


@pytest.mark.django_db
def test_the_pages_tell_a_researcher_how_to_annotate_instead_of_serving_an_item():
    p = _routed()
    c = login(researcher())
    home = unescape(c.get("/annotate/").content.decode())
    assert NOT_ANNOTATOR_MESSAGE in home
    assert f'href="/annotate/projects/{p.pk}/instructions/"' not in home  # no Start button
    work = c.get(f"/annotate/projects/{p.pk}/")
    assert work.status_code == 200 and NOT_ANNOTATOR_MESSAGE in unescape(work.content.decode())
    assert not Assignment.objects.exists()


@pytest.mark.django_db
def test_a_researcher_added_as_annotator_annotates_and_counts_as_one():
    p = _routed()
    r = researcher()
    r.groups.add(Group.objects.get_or_create(name=permissions.ANNOTATOR)[0])
    ProjectMembership.objects.create(project=p, user=r, role=permissions.ANNOTATOR)
    a = svc.assignment_next(project=p, annotator=r)
    assert a is not None
    svc.annotation_submit(assignment_id=a.pk, annotator=r, choice=a.display_order[0])
    assert Annotation.objects.filter(annotator=r).count() == 1
    # an annotator of the same item still gets the second slot
    other = annotator(p)
    assert svc.assignment_next(project=p, annotator=other) is not None


@pytest.mark.django_db
def test_a_researcher_joins_as_annotator_through_the_api_and_starts_qualified():
    """As the API walk-through does (scripts/api_walkthrough.sh, step 5)."""
    p = project_with_candidates(n=6, k=1, gold=6)
    project_route(project=p, budget=1.0, seed=0)
    r = researcher()
    c = _api(r)
    resp = c.post(f"/api/v1/projects/{p.pk}/members/add/", {"username": r.username, "role": "annotator"}, format="json")
    assert resp.status_code == 201, resp.content
    assert resp.json()["qualified_at"] is not None
    served = c.post(f"/api/v1/projects/{p.pk}/next-item/")
    assert served.status_code == 200, served.content
    answer = c.post(
        f"/api/v1/assignments/{served.json()['assignment']}/annotation/", {"choice": served.json()["choices"][0]}
    )
    assert answer.status_code == 201, answer.content
    # an annotator account still starts unqualified
    a = annotator()
    resp = c.post(f"/api/v1/projects/{p.pk}/members/add/", {"username": a.username}, format="json")
    assert resp.status_code == 201 and resp.json()["qualified_at"] is None


@pytest.mark.django_db
def test_answers_stored_before_the_rule_are_listed_read_only():
    """Answers a researcher gave before the rule still count. They cannot be told apart from a
    removed annotator's (a removed membership leaves no row), so nothing leaves them out
    automatically; `researcher_answers` lists them, and where they went, without changing anything."""
    import json
    from io import StringIO

    from django.core.management import call_command

    p = _routed()
    res = researcher(username="rita")
    member = ProjectMembership.objects.create(project=p, user=res, role="annotator", qualified_at=timezone.now())
    mate = annotator(p, qualified_at=timezone.now())
    for user in (res, mate):  # both answer the same item: k = 2, so it is aggregated
        a = svc.assignment_next(project=p, annotator=user)
        svc.annotation_submit(assignment_id=a.pk, annotator=user, choice=a.display_order[0])
    member.delete()  # the state before the rule: an answer stored without an annotator membership
    out = StringIO()
    call_command("researcher_answers", "--json", stdout=out)
    (found,) = json.loads(out.getvalue().strip().splitlines()[-1])
    item = Annotation.objects.get(annotator=res).item
    closed = Item.objects.get(pk=item.pk).status != "open"
    assert found["project"] == p.name and found["by_user"] == {"rita": 1}
    assert closed  # both of its k answers are in: aggregated with the researcher's vote
    assert (found["on_open_items"], found["on_closed_items"], found["candidates"]) == (0, 1, [item.candidate_id])
    assert Annotation.objects.filter(annotator=res).count() == 1  # nothing changed
    out = StringIO()
    call_command("researcher_answers", "--project", p.name, stdout=out)
    assert out.getvalue().startswith(f"{p.name}: 1 answers by non-annotators (rita 1); ")
