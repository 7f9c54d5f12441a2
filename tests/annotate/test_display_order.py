"""Which order an annotator sees the choices in (issue 20.10): task labels in the project's fixed
order (key "1" always means the same label), caption order drawn per annotator from (item,
annotator), stored on the lease, and mapped back before aggregation. Runs on SQLite and, with
DATABASE_URL=postgres://…, on PostgreSQL (where the claim statement draws the order in SQL)."""

from __future__ import annotations

import pytest

from annotate.kinds import caption_swapped, kind_named
from annotate.models import Annotation, Assignment, Item
from annotate.services import assignments as svc
from annotate.services.routing import project_route
from projects.models import Label

from .factories import annotator, project_with_candidates

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def test_task_labels_keep_the_project_order_and_unclear_last():
    assert kind_named("task_label").display_order(["b", "a", "c"]) == ["b", "a", "c", "unclear"]
    assert kind_named("task_label").display_order(["b", "a"], swapped=True) == ["b", "a", "unclear"]


def test_caption_order_is_a_stable_function_of_item_and_annotator():
    assert kind_named("caption_choice").display_order([], swapped=False)[:2] == ["caption_a", "caption_b"]
    assert kind_named("caption_choice").display_order([], swapped=True) == [
        "caption_b",
        "caption_a",
        "both",
        "neither",
    ]
    draws = [caption_swapped(item, user) for item in range(1, 41) for user in range(1, 6)]
    assert draws == [caption_swapped(item, user) for item in range(1, 41) for user in range(1, 6)]
    # balanced enough to average position bias out (200 draws: 70..130 expected by far)
    assert 70 <= sum(draws) <= 130
    # the same item, different annotators: both orders occur
    assert len({caption_swapped(7, user) for user in range(1, 11)}) == 2


def _answer_all(project, user):
    out = []
    while (a := svc.assignment_next(project=project, annotator=user)) is not None:
        out.append(a)
        item = Item.objects.get(pk=a.item_id)
        if item.kind == "caption_choice":
            # the caption that belongs to the shown image, wherever this annotator sees it
            want = "caption_a" if item.side == "original" else "caption_b"
            shown = f"caption {a.display_order.index(want) + 1}"
        else:
            shown = a.display_order[0]
        svc.annotation_submit(assignment_id=a.pk, annotator=user, choice=shown, duration_ms=500)
    return out


def test_every_annotator_sees_the_labels_in_the_project_order():
    project = project_with_candidates(task="nli", n=6, k=3)
    project_route(project=project, budget=1.0, seed=0)
    labels = list(Label.objects.filter(project=project).order_by("position").values_list("name", flat=True))
    users = [annotator(project) for _ in range(3)]
    leases = [a for u in users for a in _answer_all(project, u)]
    assert len(leases) == 18
    assert {tuple(a.display_order) for a in leases} == {(*labels, "unclear")}
    # and "1" meant the first label for everyone: all items agree on it
    assert set(Item.objects.filter(project=project).values_list("result", flat=True)) == {labels[0]}


def test_caption_order_is_drawn_per_annotator_stored_and_aggregated_by_caption():
    project = project_with_candidates(task="image-caption", n=6, k=2)
    project_route(project=project, budget=1.0, seed=0)
    users = [annotator(project) for _ in range(2)]
    for u in users:
        _answer_all(project, u)
    leases = list(Assignment.objects.filter(project=project).select_related("item"))
    assert len(leases) == 24  # 6 pairs x 2 images x 2 annotators
    for a in leases:
        swapped = caption_swapped(a.item_id, a.annotator_id)
        assert a.display_order == kind_named("caption_choice").display_order([], swapped=swapped)
        # the answer keeps the order it was given in
        assert Annotation.objects.get(assignment=a).display_order == a.display_order
    by_item: dict[int, set[tuple[str, ...]]] = {}
    for a in leases:
        by_item.setdefault(a.item_id, set()).add(tuple(a.display_order))
    differing = [i for i, orders in by_item.items() if len(orders) == 2]
    assert differing, "two annotators of one item should sometimes see different orders"
    # Different positions pressed, same caption meant: the items agree on that caption.
    for item_id in differing:
        shown = set(Annotation.objects.filter(item_id=item_id).values_list("shown_choice", flat=True))
        assert shown == {"caption 1", "caption 2"}
    for item in Item.objects.filter(project=project):
        assert item.status == "complete"
        assert item.result == ("caption_a" if item.side == "original" else "caption_b")
        assert item.result_agreement == 1.0
