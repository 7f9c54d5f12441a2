"""Qualification (issue 18.11): a minimum number of check answers before any decision, feedback
on the check items an annotator got wrong, a home page consistent with the lock, and a fresh
window when a researcher clears the flag."""

from __future__ import annotations

from html import unescape

import pytest

from annotate.models import Item
from annotate.services import assignments as svc
from projects.models import Candidate, ProjectMembership

from .factories import annotator, login, project_with_candidates, researcher

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


@pytest.fixture
def qual(settings):
    settings.COUNTERPART = {**settings.COUNTERPART, "QUALIFICATION_GOLD": 5, "GOLD_MIN_ACCURACY": 0.6}
    return settings


def _project(n=12, gold=12):
    """``n`` real items and ``gold`` check items (built directly: routing would also route the
    gold-labelled candidates as real items, leaving an unpredictable number of check items)."""
    project = project_with_candidates(n=n, gold=gold)
    Candidate.objects.filter(project=project, gold_label__isnull=False).update(
        meta={"gold_explanation": "the counterfactual says the opposite of the premise"}
    )
    Item.objects.bulk_create(
        Item(
            project=project,
            candidate=c,
            kind="task_label",
            is_gold=c.gold_label_id is not None,
            gold_choice=c.gold_label.name if c.gold_label_id else "",
            k=100000 if c.gold_label_id else 3,
            priority=i,
        )
        for i, c in enumerate(Candidate.objects.filter(project=project).select_related("gold_label"))
    )
    return project


def _answer_check(u, project, *, correct: bool):
    a = svc.assignment_next(project=project, annotator=u)
    item = Item.objects.get(pk=a.item_id)
    assert item.is_gold, "expected a check item"
    choice = item.gold_choice if correct else next(c for c in a.display_order if c != item.gold_choice)
    svc.annotation_submit(assignment_id=a.pk, annotator=u, choice=choice)
    return item


def _answer_checks(u, project, *, correct: bool, n: int = 5):
    for _ in range(n):
        _answer_check(u, project, correct=correct)
    return u.memberships.get()


def test_default_minimum_is_five_check_answers():
    from config.settings import base

    assert base.COUNTERPART["QUALIFICATION_GOLD"] >= 5


def test_no_decision_before_the_minimum_then_pass_or_fail(qual):
    project = _project()
    early, good = annotator(project), annotator(project)
    # two wrong answers first: no lock-out (the reported bug), the third item is still a check
    for _ in range(2):
        _answer_check(early, project, correct=False)
    m = early.memberships.get()
    assert not m.flagged and m.qualified_at is None
    for _ in range(3):
        _answer_check(early, project, correct=True)
    m.refresh_from_db()
    assert m.qualified_at is not None and not m.flagged  # 3 of 5 meets 0.6
    # a real item now
    a = svc.assignment_next(project=project, annotator=early)
    assert not Item.objects.get(pk=a.item_id).is_gold

    for correct in (True, False, True, False, False):
        _answer_check(good, project, correct=correct)
    m = good.memberships.get()
    assert m.flagged and m.flag_reason == "failed qualification: 2 of 5 check items correct"


def test_feedback_and_home_page_follow_the_lock(qual):
    project = _project()
    u = annotator(project)
    wrong_items = []
    for correct in (False, False, True, False, True):
        item = _answer_check(u, project, correct=correct)
        if not correct:
            wrong_items.append(item)
    assert u.memberships.get().flagged
    c = login(u)
    page = unescape(c.get(f"/annotate/projects/{project.pk}/").content.decode())
    assert "Check items you got wrong (3)" in page
    for item in wrong_items:
        assert item.candidate.fields["hypothesis"] in page
        assert f"the expected answer is <strong>{item.gold_choice}</strong>" in page
    assert "Why: the counterfactual says the opposite of the premise" in page
    assert "paused by" not in page
    home = unescape(c.get("/annotate/").content.decode())
    assert "items left for you" not in home  # consistent with the lock
    assert 'data-testid="locked"' in home and "Check items you got wrong (3)" in home


def test_qualifying_annotator_home_page_says_how_far(qual):
    project = _project()
    u = annotator(project)
    _answer_check(u, project, correct=True)
    home = login(u).get("/annotate/").content.decode()
    assert "First 5 check items decide whether you qualify: 1 of 5 answered." in home


def test_clearing_the_flag_starts_a_fresh_window(qual):
    project = _project()
    u = annotator(project)
    m = _answer_checks(u, project, correct=False)
    assert m.flagged
    # the researcher clears the flag on the dashboard: not qualified, a fresh window
    resp = login(researcher()).post(f"/annotate/projects/{project.pk}/members/", {"unflag": m.pk})
    assert resp.status_code == 302
    m.refresh_from_db()
    assert not m.flagged and m.qualified_at is None and m.gold_window_start is not None
    # earlier wrong answers no longer count: five fresh correct check answers qualify
    for n in range(5):
        assert u.memberships.get().qualified_at is None, n
        _answer_check(u, project, correct=True)
    m.refresh_from_db()
    assert m.qualified_at is not None and not m.flagged
    home = login(u).get("/annotate/").content.decode()
    assert "Qualified: 5 of 5 check items correct." in home
    assert "Check items you got wrong" not in home  # the old window's mistakes are gone


def test_fresh_window_without_unseen_checks_waits_instead_of_qualifying(qual):
    project = _project(n=4, gold=6)  # 6 check items in all
    assert Item.objects.filter(project=project, is_gold=True).count() == 6
    u = annotator(project)
    m = _answer_checks(u, project, correct=False)
    login(researcher()).post(f"/annotate/projects/{project.pk}/members/", {"unflag": m.pk})
    _answer_check(u, project, correct=True)  # the last unseen check item
    with pytest.raises(svc.NotAllowed, match="add check items"):
        svc.assignment_next(project=project, annotator=u)
    m.refresh_from_db()
    assert m.qualified_at is None and not m.flagged  # not "qualified with 1 of 1"


def test_project_with_fewer_checks_than_the_minimum_decides_on_all_of_them(qual):
    project = _project(n=4, gold=3)
    assert Item.objects.filter(project=project, is_gold=True).count() == 3
    u = annotator(project)
    for _ in range(3):
        _answer_check(u, project, correct=True)
    a = svc.assignment_next(project=project, annotator=u)
    assert a is not None and not Item.objects.get(pk=a.item_id).is_gold
    assert ProjectMembership.objects.get(user=u).qualified_at is not None


def test_resume_after_pause_keeps_qualification(qual):
    project = _project()
    u = annotator(project)
    m = _answer_checks(u, project, correct=True)
    r = login(researcher())
    r.post(f"/annotate/projects/{project.pk}/members/", {"action": "pause", "membership": m.pk})
    r.post(f"/annotate/projects/{project.pk}/members/", {"action": "resume", "membership": m.pk})
    m.refresh_from_db()
    assert not m.flagged and m.qualified_at is not None and m.gold_window_start is None


def test_caption_feedback_names_the_captions(qual):
    project = project_with_candidates(task="image-caption", n=1, gold=5)
    Item.objects.bulk_create(
        Item(
            project=project,
            candidate=c,
            kind="caption_choice",
            side="counterfactual",
            is_gold=True,
            gold_choice="caption_b",
            k=100000,
            priority=i,
        )
        for i, c in enumerate(Candidate.objects.filter(project=project, gold_label__isnull=False))
    )
    u = annotator(project)
    for _ in range(5):
        a = svc.assignment_next(project=project, annotator=u)
        shown = a.display_order.index("caption_a")  # press the original's caption: wrong
        svc.annotation_submit(assignment_id=a.pk, annotator=u, choice=f"caption {shown + 1}")
    assert u.memberships.get().flagged
    page = unescape(login(u).get(f"/annotate/projects/{project.pk}/").content.decode())
    assert "Check items you got wrong (5)" in page
    assert "You answered <strong>the caption “orig caption" in page
    assert "the expected answer is <strong>the caption “cf caption" in page
    assert 'src="/media/img/c' in page


# --- a fresh window that ran out of check items (issue 25.3) --------------------------------


def _free_gold(project, n):
    """``n`` more pairs with a known answer that are not items yet (as an import would add)."""
    from projects.models import Example, Label

    label = Label.objects.filter(project=project).order_by("position").first()
    for i in range(n):
        ex = Example.objects.create(project=project, external_id=f"ge{i}", fields={"premise": "p", "hypothesis": "h"})
        Candidate.objects.create(
            project=project,
            external_id=f"gc{i}",
            example=ex,
            fields={"premise": f"gp{i}", "hypothesis": f"gh{i}"},
            gold_label=label,
        )


def test_fresh_window_out_of_check_items_tells_the_researcher_and_one_click_adds_them(qual):
    from annotate import selectors

    project = _project(n=4, gold=6)
    u = annotator(project)
    m = _answer_checks(u, project, correct=False)
    login(researcher()).post(f"/annotate/projects/{project.pk}/members/", {"unflag": m.pk})
    left = selectors.items_left_for(project=project, user=u)
    _answer_check(u, project, correct=True)  # the last check item never seen
    assert selectors.items_left_for(project=project, user=u) == left == 4  # check items do not count down
    with pytest.raises(svc.NotAllowed, match="add check items"):
        svc.assignment_next(project=project, annotator=u)
    short = selectors.check_items_shortfall(project=project)
    assert (short.needed, short.members, short.free_gold, short.to_import) == (4, [(u.username, 4)], 0, 4)
    boss = login(researcher())
    page = unescape(boss.get(f"/annotate/projects/{project.pk}/dashboard/").content.decode())
    assert f"{u.username}</strong> needs 4 more check items" in page
    assert "import 4 more pairs with a gold label" in page and 'data-testid="add-checks"' not in page

    _free_gold(project, 6)
    page = unescape(boss.get(f"/annotate/projects/{project.pk}/dashboard/").content.decode())
    assert "Add 4 check items" in page and "import" not in page.split('id="h-checks"')[1].split("</section>")[0]
    resp = boss.post(f"/annotate/projects/{project.pk}/check-items/")
    assert resp.status_code == 302
    assert Item.objects.filter(project=project, is_gold=True).count() == 10
    assert selectors.check_items_shortfall(project=project).needed == 0
    for _ in range(4):
        _answer_check(u, project, correct=True)
    m.refresh_from_db()
    assert m.qualified_at is not None and not m.flagged
    a = svc.assignment_next(project=project, annotator=u)
    assert a is not None and not Item.objects.get(pk=a.item_id).is_gold
    assert 'id="h-checks"' not in boss.get(f"/annotate/projects/{project.pk}/dashboard/").content.decode()


def test_rerouting_at_the_same_budget_adds_the_check_items_a_window_needs(qual):
    from annotate.services.routing import project_route

    qual.COUNTERPART = {**qual.COUNTERPART, "GOLD_RATE": 0.05}
    project = project_with_candidates(n=40, gold=20)
    first = project_route(project=project, budget=0.25, seed=1)
    assert first.gold_items == 5  # max(ceil(0.05 · 15), the qualification size)
    u = annotator(project)
    m = _answer_checks(u, project, correct=False)
    assert m.flagged
    login(researcher()).post(f"/annotate/projects/{project.pk}/members/", {"unflag": m.pk})
    with pytest.raises(svc.NotAllowed, match="add check items"):
        svc.assignment_next(project=project, annotator=u)
    again = project_route(project=project, budget=0.25, seed=2)  # the same budget
    assert (again.routed, again.gold_items) == (0, 5)
    _answer_checks(u, project, correct=True)
    assert u.memberships.get().qualified_at is not None
    # the gold share is topped up at the same budget too (before: only when new items were routed)
    assert project_route(project=project, budget=0.25, gold_rate=1.0, seed=3).gold_items > 0


# -- skips never dead-end (issue 32.5) -----------------------------------------------------------
def test_skipped_check_items_come_back_so_four_answers_and_six_skips_still_qualify(qual):
    """The reported case: 10 check items, the annotator answered 4 and skipped 6, then read
    "You have answered every check item there is for you" while their home page offered Start.
    Now the skipped ones are served again (oldest skip first) and the home page agrees."""
    project = _project(n=12, gold=10)
    u = annotator(project)
    skipped = []
    for n in range(10):
        a = svc.assignment_next(project=project, annotator=u)
        item = Item.objects.get(pk=a.item_id)
        assert item.is_gold
        if n % 5 < 2:  # answers at 0, 1, 5, 6: four answers, six skips
            svc.annotation_submit(assignment_id=a.pk, annotator=u, choice=item.gold_choice)
        else:
            svc.assignment_skip(assignment_id=a.pk, annotator=u, reason="unsure")
            skipped.append(item.pk)
    m = u.memberships.get()
    assert (m.qualified_at, m.gold_answered) == (None, 4) and len(skipped) == 6
    c = login(u)
    home = unescape(c.get("/annotate/").content.decode())
    assert "Start annotating" in home and 'data-testid="nothing-now"' not in home
    # the first check item skipped comes back, on its own assignment row, in the order shown then
    a = svc.assignment_next(project=project, annotator=u)
    assert a.item_id == skipped[0] and a.status == "leased" and a.skip_reason == ""
    assert Item.objects.get(pk=a.item_id).taken == 1
    # skipping it again moves on to the next oldest skip: no loop on one item
    svc.assignment_skip(assignment_id=a.pk, annotator=u)
    b = svc.assignment_next(project=project, annotator=u)
    assert b.item_id == skipped[1]
    svc.annotation_submit(assignment_id=b.pk, annotator=u, choice=Item.objects.get(pk=b.item_id).gold_choice)
    m.refresh_from_db()
    assert m.qualified_at is not None and m.gold_answered == 5  # 5 of 5: qualified
    nxt = svc.assignment_next(project=project, annotator=u)
    assert nxt is not None and not Item.objects.get(pk=nxt.item_id).is_gold


def test_the_researcher_sees_no_shortfall_while_skipped_check_items_can_come_back(qual):
    from annotate import selectors

    project = _project(n=4, gold=6)
    u = annotator(project)
    m = _answer_checks(u, project, correct=False)
    login(researcher()).post(f"/annotate/projects/{project.pk}/members/", {"unflag": m.pk})
    a = svc.assignment_next(project=project, annotator=u)  # the last unseen check item
    svc.assignment_skip(assignment_id=a.pk, annotator=u)
    # a fresh window: the five answered ones are out (their answers were shown), the skipped one is not
    assert selectors.check_items_shortfall(project=project).members == [(u.username, 4)]
    assert selectors.serving_for(project=project, user=u) == ""
    again = svc.assignment_next(project=project, annotator=u)
    assert again.item_id == a.item_id


def test_home_page_offers_start_only_when_next_item_would_serve_something(qual):
    from annotate import selectors

    project = _project(n=4, gold=6)
    u = annotator(project)
    m = _answer_checks(u, project, correct=False)
    login(researcher()).post(f"/annotate/projects/{project.pk}/members/", {"unflag": m.pk})
    _answer_check(u, project, correct=True)  # the last unseen check item: now waiting
    c = login(u)
    home = unescape(c.get("/annotate/").content.decode())
    assert "items left for you: <strong>4</strong>" in home  # real items exist ...
    assert "Start annotating" not in home  # ... but nothing can be served: no Start
    assert "researchers have to add check items" in home.split('data-testid="nothing-now"')[1]
    with pytest.raises(svc.NotAllowed, match="add check items"):  # the server agrees
        svc.assignment_next(project=project, annotator=u)

    # a qualified annotator who has had every real item: no Start either, and the server serves nothing
    done = annotator(project)
    ProjectMembership.objects.filter(user=done).update(qualified_at=m.created_at)
    while (a := svc.assignment_next(project=project, annotator=done)) is not None:
        svc.annotation_submit(assignment_id=a.pk, annotator=done, choice=a.display_order[0])
    assert selectors.serving_for(project=project, user=done) == selectors.NOTHING_NOW
    home = unescape(login(done).get("/annotate/").content.decode())
    assert "Start annotating" not in home and selectors.NOTHING_NOW in home
    # ... and one who has not: Start, and the server serves
    fresh = annotator(project)
    ProjectMembership.objects.filter(user=fresh).update(qualified_at=m.created_at)
    assert "Start annotating" in login(fresh).get("/annotate/").content.decode()
    assert svc.assignment_next(project=project, annotator=fresh) is not None


def test_undoing_the_check_answer_that_qualified_takes_the_qualification_back(qual):
    """An annotator could qualify with their fifth check answer, undo it, and keep the
    qualification on four. Now a qualification decided at or after the undone answer is
    undecided again, and the next check answer settles it as before."""
    project = _project()
    u = annotator(project)
    for _ in range(4):
        _answer_check(u, project, correct=True)
    fifth = svc.assignment_next(project=project, annotator=u)
    item = Item.objects.get(pk=fifth.item_id)
    svc.annotation_submit(assignment_id=fifth.pk, annotator=u, choice=item.gold_choice)
    m = u.memberships.get()
    assert m.qualified_at is not None and (m.gold_answered, m.gold_correct) == (5, 5)
    svc.annotation_undo(assignment_id=fifth.pk, annotator=u)
    m.refresh_from_db()
    assert m.qualified_at is None and (m.gold_answered, m.gold_correct) == (4, 4)
    again = svc.assignment_next(project=project, annotator=u)
    assert again.pk == fifth.pk  # the undone item is the live lease again
    svc.annotation_submit(assignment_id=again.pk, annotator=u, choice=item.gold_choice)
    m.refresh_from_db()
    assert m.qualified_at is not None and not m.flagged


def test_undoing_a_check_answer_given_after_qualifying_keeps_the_qualification(qual):
    qual.COUNTERPART = {**qual.COUNTERPART, "GOLD_RATE": 1.0}  # a check item next, after qualifying
    project = _project()
    u = annotator(project)
    _answer_checks(u, project, correct=True)
    qualified_at = u.memberships.get().qualified_at
    assert qualified_at is not None
    for _ in range(len(Item.objects.filter(project=project))):  # on to a check item given after qualifying
        later = svc.assignment_next(project=project, annotator=u)
        item = Item.objects.get(pk=later.item_id)
        if item.is_gold:
            break
        svc.annotation_submit(assignment_id=later.pk, annotator=u, choice=later.display_order[0])
    assert item.is_gold
    svc.annotation_submit(assignment_id=later.pk, annotator=u, choice=item.gold_choice)
    svc.annotation_undo(assignment_id=later.pk, annotator=u)
    m = u.memberships.get()
    assert m.qualified_at == qualified_at and m.gold_answered == 5


def test_a_check_item_whose_lease_ran_out_comes_back_so_an_idle_page_never_dead_ends(qual):
    """Found on the demo (5 check items, 5 needed): a check item left open past its lease (an
    idle page; or held when the annotator was paused or lost the role, which releases it) went
    back to the pool with the annotator's assignment row marked expired, and was never served to
    them again, so they read "You have answered every check item there is for you, fewer than
    the 5 needed" for ever. An expired check item now comes back as a skipped one does."""
    from datetime import timedelta

    from django.utils import timezone

    project = _project(n=12, gold=5)
    u = annotator(project)
    idle = svc.assignment_next(project=project, annotator=u)
    svc.assignments_expire(now=timezone.now() + timedelta(hours=1))
    idle.refresh_from_db()
    assert idle.status == "expired"
    for _ in range(4):
        a = svc.assignment_next(project=project, annotator=u)
        assert a.item_id != idle.item_id
        svc.annotation_submit(assignment_id=a.pk, annotator=u, choice=Item.objects.get(pk=a.item_id).gold_choice)
    back = svc.assignment_next(project=project, annotator=u)
    assert back is not None and back.item_id == idle.item_id and back.status == "leased"
    svc.annotation_submit(assignment_id=back.pk, annotator=u, choice=Item.objects.get(pk=back.item_id).gold_choice)
    m = u.memberships.get()
    assert m.qualified_at is not None and m.gold_answered == 5
