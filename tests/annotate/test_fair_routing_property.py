"""Property test of fair routing (issue 25.1): hypothesis drives several annotators at random
speeds (single answers and bursts) against the REAL next-item, answer, skip, undo, expiry,
pause and resume services, with gold (check) items served on top and disagreements that extend
an item's overlap k. After every step it checks, from the database:

* nobody eligible is starved: next-item answers "nothing left" (None / 204) only when no
  unfinished item is left that they may answer, and the read-only pick agrees with the oracle;
* no item is over-answered (``done <= taken <= k``, answers ≤ k), no answer is lost (every
  accepted answer not undone is stored) and nobody answered an item twice;
* ``taken`` and ``done`` equal the lease and answer rows;
* "items left" equals what they will actually be served (the oracle count), and an item's
  "annotators left" (the quality page) counts exactly the members it may still be served to;
* a paused member holds no lease.

At the end everyone is resumed and drains the pool: every real item is then complete, or shown
as waiting for annotators (nobody left who may answer it). The next-item window is shrunk to 3
so that "one annotator raced ahead" happens within a few dozen items (the bug of issue 25
showed with the real window of 64 and 102 items; see test_fair_routing.py).
"""

from __future__ import annotations

import random
import uuid
from datetime import timedelta

import pytest
from django.db import connection
from django.utils import timezone
from hypothesis import HealthCheck
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule, run_state_machine_as_test

from annotate import kinds, open_for, selectors
from annotate.models import Annotation, Assignment, Item
from annotate.services import assignments as svc
from annotate.services.routing import project_route
from projects.models import ProjectMembership
from projects.services.memberships import membership_pause, membership_resume

from .factories import annotator, project_with_candidates

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]

BACKENDS = ["sqlite", pytest.param("postgresql", marks=pytest.mark.postgres)]
LEASE = 60  # seconds (tests/annotate/conftest.py)


class Routing(RuleBasedStateMachine):
    @initialize(
        n=st.integers(1, 24),
        k=st.integers(1, 3),
        members=st.integers(2, 4),
        gold=st.integers(0, 3),
        seed=st.integers(0, 2**16),
    )
    def setup(self, n, k, members, gold, seed):
        self.project = project_with_candidates(name=f"p-{uuid.uuid4().hex[:10]}", n=n, k=k, gold=gold)
        project_route(project=self.project, budget=1.0, gold_rate=1.0 if gold else 0.0, seed=seed)
        self.users = [annotator(self.project) for _ in range(members)]
        self.rng = random.Random(seed)
        svc._rng = random.Random(seed)  # the gold draw, made repeatable for hypothesis
        self.now = timezone.now()
        self.accepted: set[tuple[int, int]] = set()  # (item, annotator) answers accepted, not undone

    # --- helpers -------------------------------------------------------------------------

    def _paused(self, u) -> bool:
        return ProjectMembership.objects.get(project=self.project, user=u).flagged

    def _oracle(self, u) -> set[int]:
        """Written without the selectors: open real items with a free slot that ``u`` never had."""
        had = set(Assignment.objects.filter(project=self.project, annotator=u).values_list("item_id", flat=True))
        return {
            pk
            for pk, taken, k in Item.objects.filter(project=self.project, is_gold=False, status="open").values_list(
                "pk", "taken", "k"
            )
            if taken < k and pk not in had
        }

    def _next(self, u):
        """Next-item for ``u``; checks the no-starvation rule on every "nothing left"."""
        if self._paused(u):
            with pytest.raises(svc.NotAllowed):
                svc.assignment_next(project=self.project, annotator=u, now=self.now)
            return None
        a = svc.assignment_next(project=self.project, annotator=u, now=self.now)
        if a is None:
            assert self._oracle(u) == set(), f"{u} starved: next-item said nothing left"
        return a

    def _answer(self, u, a) -> None:
        order = list(a.display_order)
        choice = self.rng.choice(kinds.kind_of_order(order).offered(order))
        svc.annotation_submit(assignment_id=a.pk, annotator=u, choice=choice, now=self.now)
        self.accepted.add((a.item_id, u.pk))
        self.now += timedelta(seconds=self.rng.uniform(0.5, 5))

    # --- rules -----------------------------------------------------------------------------

    @rule(who=st.integers(0, 3), burst=st.sampled_from([1, 1, 1, 3, 10, 40]))
    def work(self, who, burst):
        """An annotator answers ``burst`` items in a row (a fast one races ahead)."""
        u = self.users[who % len(self.users)]
        for _ in range(burst):
            a = self._next(u)
            if a is None:
                return
            self._answer(u, a)

    @rule(who=st.integers(0, 3), burst=st.sampled_from([1, 3, 10, 40]))
    def work_one_trip(self, who, burst):
        """As ``work``, through the answer that carries the next lease (the API's ``?next=1``,
        issue 33): after the first next-item, each answer's response is the next lease."""
        u = self.users[who % len(self.users)]
        a = self._next(u)
        for _ in range(burst):
            if a is None:
                return
            self._answer(u, a)
            body, refused = svc.lease_next_payload(project_id=self.project.pk, annotator=u, now=self.now)
            if refused:
                assert self._paused(u), refused
                return
            if body is None:
                assert self._oracle(u) == set(), f"{u} starved: the answer's next lease said nothing left"
                return
            a = Assignment.objects.get(pk=body["assignment"], annotator=u, status="leased")

    @rule(who=st.integers(0, 3))
    def take_and_leave(self, who):
        """Take an item and walk away (the lease runs out later)."""
        self._next(self.users[who % len(self.users)])

    @rule(who=st.integers(0, 3))
    def skip(self, who):
        u = self.users[who % len(self.users)]
        a = self._next(u)
        if a is not None:
            svc.assignment_skip(assignment_id=a.pk, annotator=u, reason="hard", now=self.now)

    @rule(who=st.integers(0, 3))
    def undo(self, who):
        u = self.users[who % len(self.users)]
        last = Annotation.objects.filter(project=self.project, annotator=u).order_by("-created_at", "-id").first()
        if last is None or self._paused(u):
            return
        try:
            svc.annotation_undo(assignment_id=last.assignment_id, annotator=u, now=self.now)
        except svc.Conflict:
            return  # aggregated already, or the undo window passed
        self.accepted.discard((last.item_id, u.pk))

    @rule(seconds=st.sampled_from([10, LEASE + 1, 5 * LEASE]), sweep=st.booleans())
    def time_passes(self, seconds, sweep):
        self.now += timedelta(seconds=seconds)
        if sweep:
            svc.assignments_expire(now=self.now)

    @rule(who=st.integers(0, 3))
    def pause_or_resume(self, who):
        u = self.users[who % len(self.users)]
        m = ProjectMembership.objects.get(project=self.project, user=u)
        if m.flagged:
            membership_resume(membership=m)
        else:
            membership_pause(membership=m, by=None)

    # --- invariants --------------------------------------------------------------------------

    @invariant()
    def counters_and_answers(self):
        if not hasattr(self, "project"):
            return
        items = {pk: (taken, done, k) for pk, taken, done, k in self._items()}
        held: dict[int, int] = {}
        for item_id, status in Assignment.objects.filter(project=self.project).values_list("item_id", "status"):
            if status in ("leased", "submitted"):
                held[item_id] = held.get(item_id, 0) + 1
        answers = list(Annotation.objects.filter(project=self.project).values_list("item_id", "annotator_id"))
        per_item: dict[int, int] = {}
        for item_id, _ in answers:
            per_item[item_id] = per_item.get(item_id, 0) + 1
        for pk, (taken, done, k) in items.items():
            assert done <= taken <= k, f"item {pk}: done {done}, taken {taken}, k {k}"
            assert taken == held.get(pk, 0), f"item {pk}: taken {taken} but {held.get(pk, 0)} leases/answers"
            assert done == per_item.get(pk, 0) <= k, f"item {pk} over-answered or miscounted"
        assert len(set(answers)) == len(answers), "someone answered an item twice"
        assert set(answers) == self.accepted, "an accepted answer was lost (or an unaccepted one stored)"

    @invariant()
    def everyone_served_what_they_are_told(self):
        if not hasattr(self, "project"):
            return
        for u in self.users:
            paused = self._paused(u)
            if paused:
                assert not Assignment.objects.filter(project=self.project, annotator=u, status="leased").exists()
                continue
            oracle = self._oracle(u)
            assert selectors.items_left_for(project=self.project, user=u) == len(oracle)
            picked = selectors.next_item_for(project_id=self.project.pk, user_id=u.pk)
            assert (picked is None) == (not oracle)
            assert picked is None or picked in oracle
        active = [u.pk for u in self.users if not self._paused(u)]
        for item in Item.objects.filter(project=self.project, is_gold=False, status="open").order_by("?")[:4]:
            had = set(item.assignments.values_list("annotator_id", flat=True))
            left = selectors.annotators_available_for(item_id=item.pk, project_id=self.project.pk, qualified=False)
            assert left == sum(1 for pk in active if pk not in had)

    def _items(self):
        return Item.objects.filter(project=self.project).values_list("pk", "taken", "done", "k")

    def teardown(self):
        if not hasattr(self, "project"):
            return
        for m in ProjectMembership.objects.filter(project=self.project, flagged=True):
            membership_resume(membership=m)
        self.now += timedelta(seconds=5 * LEASE)  # whatever was taken and left has run out
        progress = True
        while progress:
            progress = False
            for u in self.users:
                while (a := self._next(u)) is not None:
                    self._answer(u, a)
                    progress = True
        waiting = set(selectors.items_waiting_for_annotators(project=self.project).values_list("pk", flat=True))
        still_open = set(
            Item.objects.filter(project=self.project, is_gold=False, status="open").values_list("pk", flat=True)
        )
        assert still_open <= waiting, f"items lost: open, wanted, yet nobody is served them: {still_open - waiting}"
        self.counters_and_answers()


@pytest.mark.parametrize("backend", BACKENDS)
def test_fair_routing_properties(backend, monkeypatch, settings):
    if connection.vendor != backend:
        pytest.skip(f"the {backend} pass runs this")
    monkeypatch.setattr(open_for, "WINDOW", 3)
    monkeypatch.setattr(open_for, "FAR_WINDOW", 3)
    monkeypatch.setattr(svc, "_rng", svc._rng)  # restored after the run
    settings.COUNTERPART = {**settings.COUNTERPART, "GOLD_RATE": 0.2}  # check items served on top
    run_state_machine_as_test(
        Routing,
        settings=hsettings(
            max_examples=20,
            stateful_step_count=20,
            deadline=None,
            derandomize=True,
            suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
        ),
    )
