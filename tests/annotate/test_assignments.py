from datetime import timedelta

import pytest
from django.db import IntegrityError, transaction
from django.utils import timezone

from annotate.models import Annotation, Assignment, Item
from annotate.services import assignments as svc
from annotate.services.routing import project_route
from projects import states
from projects.models import Candidate

from .factories import annotator, project_with_candidates

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def _routed(n=4, k=3, **kw):
    project = project_with_candidates(n=n, k=k, **kw)
    project_route(project=project, budget=1.0, seed=0)
    return project


def _answer(a, user, choice=None, **kw):
    choice = choice or a.display_order[0]
    return svc.annotation_submit(assignment_id=a.pk, annotator=user, choice=choice, duration_ms=1000, **kw)


def test_next_item_returns_the_live_lease_until_answered():
    project = _routed()
    u = annotator(project)
    a1 = svc.assignment_next(project=project, annotator=u)
    a2 = svc.assignment_next(project=project, annotator=u)
    assert a1.pk == a2.pk
    _answer(a1, u)
    a3 = svc.assignment_next(project=project, annotator=u)
    assert a3.item_id != a1.item_id


def test_breadth_first_other_annotators_get_started_items_first():
    project = _routed(n=10)
    users = [annotator(project) for _ in range(3)]
    first = svc.assignment_next(project=project, annotator=users[0])
    second = svc.assignment_next(project=project, annotator=users[1])
    third = svc.assignment_next(project=project, annotator=users[2])
    assert first.item_id == second.item_id == third.item_id
    fourth = svc.assignment_next(project=project, annotator=annotator(project))
    assert fourth.item_id != first.item_id  # full: k=3 slots taken


def test_never_more_than_k_and_never_twice_then_204():
    project = _routed(n=2, k=2)
    users = [annotator(project) for _ in range(5)]
    got = []
    for _ in range(3):
        for u in users:
            a = svc.assignment_next(project=project, annotator=u)
            if a:
                got.append((a.item_id, u.pk))
                _answer(a, u, choice="entailment")
    assert len(got) == 4  # 2 items x k=2
    assert len(set(got)) == 4
    assert Annotation.objects.count() == 4
    assert svc.assignment_next(project=project, annotator=users[0]) is None


def test_submit_repeat_is_idempotent_different_choice_conflicts_bad_choice_400():
    project = _routed()
    u = annotator(project)
    a = svc.assignment_next(project=project, annotator=u)
    with pytest.raises(svc.InvalidChoice):
        _answer(a, u, choice="not-a-label")
    assert Annotation.objects.count() == 0
    r1 = _answer(a, u, choice=a.display_order[1])
    r2 = _answer(a, u, choice=a.display_order[1])
    assert r1.created and not r2.created and r1.annotation.pk == r2.annotation.pk
    with pytest.raises(svc.Conflict):
        _answer(a, u, choice=a.display_order[0])
    assert Annotation.objects.count() == 1


def test_expired_lease_is_409_and_returns_slot_to_pool():
    project = _routed(n=1, k=1)
    u, v = annotator(project), annotator(project)
    a = svc.assignment_next(project=project, annotator=u)
    assert svc.assignment_next(project=project, annotator=v) is None  # the only slot is leased
    later = timezone.now() + timedelta(seconds=61)
    with pytest.raises(svc.Conflict):
        _answer(a, u, now=later)
    b = svc.assignment_next(project=project, annotator=v, now=later)  # expiry runs first
    assert b is not None and b.item_id == a.item_id
    a.refresh_from_db()
    assert a.status == "expired"
    assert Item.objects.get(pk=a.item_id).taken == 1
    # the first annotator never gets it again
    assert svc.assignment_next(project=project, annotator=u, now=later) is None


def test_heartbeat_extends_lease():
    project = _routed()
    u = annotator(project)
    a = svc.assignment_next(project=project, annotator=u)
    t = timezone.now() + timedelta(seconds=50)
    new = svc.assignment_heartbeat(assignment_id=a.pk, annotator=u, now=t)
    assert new == t + timedelta(seconds=60)
    assert svc.assignment_heartbeat(assignment_id=a.pk, annotator=u, now=t + timedelta(seconds=61)) is None
    other = annotator(project)
    assert svc.assignment_heartbeat(assignment_id=a.pk, annotator=other, now=t) is None


def test_skip_releases_slot_and_is_not_served_again():
    project = _routed(n=1, k=1)
    u, v = annotator(project), annotator(project)
    a = svc.assignment_next(project=project, annotator=u)
    svc.assignment_skip(assignment_id=a.pk, annotator=u, reason="typo in text")
    assert Assignment.objects.get(pk=a.pk).skip_reason == "typo in text"
    assert svc.assignment_next(project=project, annotator=u) is None
    assert svc.assignment_next(project=project, annotator=v).item_id == a.item_id


def test_undo_reopens_the_lease_and_respects_the_window():
    project = _routed(n=3)
    u = annotator(project)
    a = svc.assignment_next(project=project, annotator=u)
    _answer(a, u)
    b = svc.assignment_next(project=project, annotator=u)
    svc.annotation_undo(assignment_id=a.pk, annotator=u)
    assert not Annotation.objects.filter(assignment=a).exists()
    assert Item.objects.get(pk=a.item_id).done == 0
    assert Item.objects.get(pk=a.item_id).taken == 1  # same slot kept
    # the undone item comes back first, then the one already leased
    assert svc.assignment_next(project=project, annotator=u).pk == a.pk
    _answer(a, u, choice=a.display_order[1])
    assert svc.assignment_next(project=project, annotator=u).pk == b.pk
    with pytest.raises(svc.Conflict):
        svc.annotation_undo(assignment_id=a.pk, annotator=u, now=timezone.now() + timedelta(seconds=121))
    with pytest.raises(svc.Conflict):
        svc.annotation_undo(assignment_id=a.pk, annotator=annotator(project))


def test_completion_sets_human_label_and_disagreement_extends_k():
    project = _routed(n=1, k=3)
    item = Item.objects.get()
    users = [annotator(project) for _ in range(5)]
    labels = ["entailment", "entailment", "neutral"]
    for u, lab in zip(users, labels, strict=False):  # three of the five annotators answer
        a = svc.assignment_next(project=project, annotator=u)
        _answer(a, u, choice=lab)
    item.refresh_from_db()
    assert item.status == "complete" and item.result == "entailment"
    cand = Candidate.objects.get(pk=item.candidate_id)
    assert cand.state == states.HUMAN_LABELED and cand.label.name == "entailment" and cand.label_source == "human"
    assert cand.confidence == pytest.approx(2 / 3)
    # undo is refused once aggregated
    with pytest.raises(svc.Conflict):
        svc.annotation_undo(assignment_id=Annotation.objects.first().assignment_id, annotator=users[0])

    p2 = project_with_candidates(name="p2", n=1, k=3)
    project_route(project=p2, budget=1.0, seed=0)
    it2 = Item.objects.get(project=p2)
    us = [annotator(p2) for _ in range(6)]
    for u, lab in zip(us, ["entailment", "neutral", "contradiction"], strict=False):  # the first three of six
        _answer(svc.assignment_next(project=p2, annotator=u), u, choice=lab)
    it2.refresh_from_db()
    assert it2.status == "open" and it2.k == 4  # plurality policy: one more
    for u, lab in zip(us[3:], ["neutral", "entailment"], strict=False):  # two of the other three
        _answer(svc.assignment_next(project=p2, annotator=u), u, choice=lab)
    it2.refresh_from_db()
    assert it2.k == 5 and it2.status == "complete" and it2.result == ""  # k_max reached, tie → contested
    assert Candidate.objects.get(pk=it2.candidate_id).state == states.ROUTED
    assert svc.assignment_next(project=p2, annotator=us[5]) is None


def test_caption_items_map_shown_choice_back_and_label_the_pair():
    project = project_with_candidates(task="image-caption", n=1, k=1)
    project_route(project=project, budget=1.0, seed=0)
    u = annotator(project)
    seen = {}
    for _ in range(2):
        a = svc.assignment_next(project=project, annotator=u)
        item = Item.objects.get(pk=a.item_id)
        # the annotator picks the caption that belongs to the shown image
        want = "caption_a" if item.side == "original" else "caption_b"
        shown = f"caption {a.display_order.index(want) + 1}"
        r = _answer(a, u, choice=shown)
        assert r.annotation.choice == want and r.annotation.shown_choice == shown
        seen[item.side] = r.annotation
    cand = Candidate.objects.get()
    assert cand.state == states.HUMAN_LABELED and cand.label.name == "caption_b"


def test_database_refuses_over_assignment_even_without_the_service():
    project = _routed(n=1, k=1)
    item = Item.objects.get()
    Item.objects.filter(pk=item.pk).update(taken=1)
    with pytest.raises(IntegrityError), transaction.atomic():
        Item.objects.filter(pk=item.pk).update(taken=2)
    u = annotator(project)
    Assignment.objects.create(project=project, item=item, annotator=u, display_order=[], expires_at=timezone.now())
    with pytest.raises(IntegrityError), transaction.atomic():
        Assignment.objects.create(project=project, item=item, annotator=u, display_order=[], expires_at=timezone.now())


def test_qualification_gold_first_then_real_items_and_failure_flags(settings):
    settings.COUNTERPART = {**settings.COUNTERPART, "QUALIFICATION_GOLD": 2, "GOLD_MIN_ACCURACY": 1.0}
    project = project_with_candidates(n=4, gold=4)
    project_route(project=project, budget=0.5, seed=0, gold_rate=0.5)
    good, bad = annotator(project), annotator(project)
    for _ in range(2):
        a = svc.assignment_next(project=project, annotator=good)
        item = Item.objects.get(pk=a.item_id)
        assert item.is_gold
        _answer(a, good, choice=item.gold_choice)
    a = svc.assignment_next(project=project, annotator=good)
    assert not Item.objects.get(pk=a.item_id).is_gold
    assert good.memberships.get().qualified_at is not None

    for n in range(2):
        # no decision before the required number of check answers (issue 18.11)
        assert not bad.memberships.get().flagged
        a = svc.assignment_next(project=project, annotator=bad)
        item = Item.objects.get(pk=a.item_id)
        assert item.is_gold, n
        wrong = next(c for c in a.display_order if c != item.gold_choice)
        _answer(a, bad, choice=wrong)
    m = bad.memberships.get()
    assert m.flagged and "qualification" in m.flag_reason and "0 of 2" in m.flag_reason
    with pytest.raises(svc.NotAllowed):
        svc.assignment_next(project=project, annotator=bad)


def test_gold_injection_rate_and_flagging_after_qualification(settings):
    settings.COUNTERPART = {**settings.COUNTERPART, "QUALIFICATION_GOLD": 1, "GOLD_MIN_ACCURACY": 0.9, "GOLD_RATE": 1.0}
    project = project_with_candidates(n=4, gold=6)
    project_route(project=project, budget=0.4, seed=0, gold_rate=1.0)
    assert Item.objects.filter(is_gold=True).count() >= 4
    u = annotator(project)
    # qualification: one gold item answered correctly
    a = svc.assignment_next(project=project, annotator=u)
    item = Item.objects.get(pk=a.item_id)
    assert item.is_gold
    _answer(a, u, choice=item.gold_choice)
    assert u.memberships.get().qualified_at is not None
    # GOLD_RATE=1: every further item is a check item while unseen ones remain; answer them wrong
    wrong = 0
    while True:
        a = svc.assignment_next(project=project, annotator=u)
        item = Item.objects.get(pk=a.item_id)
        if not item.is_gold:
            break
        _answer(a, u, choice=next(c for c in a.display_order if c != item.gold_choice))
        wrong += 1
        if u.memberships.get().flagged:
            break
    m = u.memberships.get()
    assert m.flagged and "gold accuracy" in m.flag_reason  # Wilson upper bound below 0.9
    assert m.gold_answered == wrong + 1 and m.gold_correct == 1
    with pytest.raises(svc.NotAllowed):
        svc.assignment_next(project=project, annotator=u)


def test_qualification_with_no_gold_in_project_passes(settings):
    project = _routed(n=2)
    u = annotator(project)
    settings.COUNTERPART = {**settings.COUNTERPART, "QUALIFICATION_GOLD": 2}
    a = svc.assignment_next(project=project, annotator=u)
    assert a is not None and not Item.objects.get(pk=a.item_id).is_gold
    assert u.memberships.get().qualified_at is not None


def test_expire_task_returns_slots():
    from annotate.tasks import assignments_expire_task

    project = _routed(n=2, k=1)
    u = annotator(project)
    a = svc.assignment_next(project=project, annotator=u)
    Assignment.objects.filter(pk=a.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    assert assignments_expire_task() == 1
    assert Item.objects.get(pk=a.item_id).taken == 0
