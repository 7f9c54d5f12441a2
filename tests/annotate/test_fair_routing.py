"""No annotator starved (issue 25.1): an annotator who may still answer an unfinished item is
always served one, however far the others raced ahead; "items left" and the quality page's
"annotators left" agree with what next-item serves. Runs on SQLite and (``-m postgres``) on
PostgreSQL, where the claim is the one-statement ``FOR UPDATE SKIP LOCKED`` path."""

from __future__ import annotations

import pytest
from django.db import connection

from annotate import selectors
from annotate.models import Annotation, Assignment, Item
from annotate.services import assignments as svc
from annotate.services.routing import project_route
from projects.models import ProjectMembership

from .factories import annotator, project_with_candidates

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]

BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]


def on(backend: str) -> None:
    if connection.vendor != backend:
        pytest.skip(f"the {backend} pass runs this")


def drain(project, user, choice="entailment") -> int:
    """Answer items until next-item has nothing left for ``user``; how many were answered."""
    n = 0
    while (a := svc.assignment_next(project=project, annotator=user)) is not None:
        svc.annotation_submit(assignment_id=a.pk, annotator=user, choice=choice)
        n += 1
        assert n <= 10_000
    return n


def unseen_open(project, user) -> int:
    """The oracle, written independently of the selectors: open real items with a free slot
    that ``user`` never had."""
    seen = set(Assignment.objects.filter(project=project, annotator=user).values_list("item_id", flat=True))
    return sum(
        1
        for pk, taken, k in Item.objects.filter(project=project, is_gold=False, status="open").values_list(
            "pk", "taken", "k"
        )
        if taken < k and pk not in seen
    )


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_fast_annotator_does_not_starve_the_next_one(backend):
    """The issue's scenario: 3 annotators, overlap 3, 102 items. ``a1`` answers everything
    first; ``a2`` must then get all 102 (before the fix: 64, then "Nothing left" with 38 left);
    after 21 more items are routed, ``a2`` gets those 21 too."""
    on(backend)
    project = project_with_candidates(n=123, k=3)
    project_route(project=project, budget=102 / 123, seed=1)
    a1, a2, a3 = (annotator(project) for _ in range(3))
    assert drain(project, a1) == 102
    assert selectors.items_left_for(project=project, user=a2) == 102
    assert drain(project, a2) == 102
    assert selectors.items_left_for(project=project, user=a2) == 0
    assert project_route(project=project, budget=1.0, seed=2).routed == 21
    assert selectors.items_left_for(project=project, user=a2) == 21
    assert drain(project, a2) == 21
    # a1 never saw the 21 new ones either; a3 has everything still to do
    assert drain(project, a1) == 21
    assert selectors.items_left_for(project=project, user=a3) == 123
    assert drain(project, a3) == 123
    assert not Item.objects.filter(project=project, is_gold=False, status="open").exists()
    assert Annotation.objects.filter(project=project).count() == 3 * 123


@pytest.mark.parametrize("backend", BACKENDS)
def test_items_left_and_annotators_left_agree_with_next_item(backend):
    """After every answer of an annotator who raced ahead: each member's "items left" is the
    number of items next-item will still serve them, and an item's "annotators left" counts
    exactly the members next-item would serve it to."""
    on(backend)
    project = project_with_candidates(n=90, k=3)
    project_route(project=project, budget=1.0, seed=3)
    users = [annotator(project) for _ in range(4)]
    drain(project, users[0])
    for _ in range(70):  # users[1] goes part of the way
        a = svc.assignment_next(project=project, annotator=users[1])
        svc.annotation_submit(assignment_id=a.pk, annotator=users[1], choice="neutral")
    for u in users:
        left = selectors.items_left_for(project=project, user=u)
        assert left == unseen_open(project, u)
        assert (selectors.next_item_for(project_id=project.pk, user_id=u.pk) is None) == (left == 0)
    members = list(ProjectMembership.objects.filter(project=project))
    for item in Item.objects.filter(project=project, is_gold=False, status="open"):
        served_to = sum(
            1 for m in members if not item.assignments.filter(annotator_id=m.user_id).exists() and item.taken < item.k
        )
        assert selectors.annotators_available_for(item_id=item.pk, project_id=project.pk, qualified=False) == served_to
    assert drain(project, users[1]) == 20
    assert drain(project, users[2]) == 90
