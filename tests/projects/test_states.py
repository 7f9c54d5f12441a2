"""The candidate life cycle (projects/states.py), pinned: every pair of states is either an
allowed edge or not, in the table and in the database UPDATE; and a racing auto-label
never overwrites a human label (PostgreSQL, two connections)."""

from __future__ import annotations

import threading

import pytest
from django.db import connection, transaction

from projects import states
from projects.models import Candidate, Example
from projects.services.candidates import candidates_transition
from projects.services.projects import project_create

pytestmark = pytest.mark.postgres_too

S = states
# The whole table: (source, target) pairs that are allowed. Anything else is not.
ALLOWED = {
    (S.GENERATED, S.FILTERED_OUT),
    (S.GENERATED, S.POOLED),
    (S.POOLED, S.ROUTED),
    (S.POOLED, S.AUTO_LABELED),
    (S.POOLED, S.ABSTAINED),
    (S.POOLED, S.HUMAN_LABELED),
    (S.ROUTED, S.HUMAN_LABELED),
    (S.ROUTED, S.POOLED),
    (S.ABSTAINED, S.ROUTED),
    (S.ABSTAINED, S.AUTO_LABELED),
    (S.ABSTAINED, S.HUMAN_LABELED),
    (S.AUTO_LABELED, S.ROUTED),
    (S.AUTO_LABELED, S.HUMAN_LABELED),
    (S.AUTO_LABELED, S.AUTO_LABELED),
}
PAIRS = [(a, b) for a in S.STATES for b in S.STATES]


def test_the_states_are_the_seven_known_ones():
    assert (
        set(S.STATES)
        == set(S.TRANSITIONS)
        == {
            "generated",
            "filtered_out",
            "pooled",
            "routed",
            "human_labeled",
            "auto_labeled",
            "abstained",
        }
    )


@pytest.mark.parametrize("source, target", PAIRS)
def test_every_pair_of_states_is_allowed_or_not_as_pinned(source, target):
    allowed = (source, target) in ALLOWED
    assert (target in S.TRANSITIONS[source]) is allowed
    assert (source in S.sources_for(target)) is allowed
    if allowed:
        S.check(source, target)
    else:
        with pytest.raises(S.InvalidTransition):
            S.check(source, target)


def test_final_states_have_no_way_out():
    assert S.TRANSITIONS[S.HUMAN_LABELED] == frozenset()
    assert S.TRANSITIONS[S.FILTERED_OUT] == frozenset()


LABELED = (S.HUMAN_LABELED, S.AUTO_LABELED)


def _fields_for(target: str, label) -> dict:
    if target == S.HUMAN_LABELED:
        return {"label": label, "label_source": "human"}
    if target == S.AUTO_LABELED:
        return {"label": label, "label_source": "auto", "confidence": 0.9}
    return {}


@pytest.mark.django_db
def test_the_database_update_follows_the_table_for_every_pair():
    project = project_create(name="p", task="nli")
    label = project.labels.get(name="neutral")
    ex = Example.objects.create(project=project, external_id="e", fields={"premise": "a", "hypothesis": "b"})
    for i, (source, target) in enumerate(PAIRS):
        c = Candidate.objects.create(
            project=project,
            example=ex,
            external_id=f"c{i}",
            fields={"premise": "a", "hypothesis": f"b{i}"},
            state=source,
            **({"label": label, "label_source": "human"} if source in LABELED else {}),
        )
        moved = candidates_transition(candidates=[c.pk], to=target, **_fields_for(target, label))
        c.refresh_from_db()
        allowed = (source, target) in ALLOWED
        assert moved == (1 if allowed else 0), (source, target)
        assert c.state == (target if allowed else source), (source, target)


# --- a racing auto-label against a human submit ---------------------------------------------------


def _in_thread(fn, errors: list) -> threading.Thread:
    def run():
        try:
            fn()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            errors.append(exc)
        finally:
            connection.close()

    t = threading.Thread(target=run)
    t.start()
    return t


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("first", ["auto", "human"])
def test_a_racing_autolabel_never_overwrites_the_human_label(require_postgres, first):
    """Two connections update the same candidate; whichever takes the row lock first, the
    human label wins: auto first -> the human UPDATE (waiting on the lock) re-checks the
    state, finds ``auto_labeled`` and moves it on; human first -> the auto UPDATE re-checks,
    finds ``human_labeled`` (no way out) and moves nothing."""
    project = project_create(name=f"race-{first}", task="nli")
    human, auto = project.labels.get(name="entailment"), project.labels.get(name="contradiction")
    ex = Example.objects.create(project=project, external_id="e", fields={"premise": "a", "hypothesis": "b"})
    c = Candidate.objects.create(
        project=project, example=ex, external_id="c", fields={"premise": "a", "hypothesis": "b2"}, state=S.POOLED
    )

    locked, release = threading.Event(), threading.Event()
    moved: dict[str, int] = {}
    errors: list = []

    def do(who: str, holds_lock: bool) -> None:
        fields = _fields_for(S.HUMAN_LABELED if who == "human" else S.AUTO_LABELED, human if who == "human" else auto)
        to = S.HUMAN_LABELED if who == "human" else S.AUTO_LABELED
        with transaction.atomic():
            moved[who] = candidates_transition(candidates=[c.pk], to=to, **fields)
            if holds_lock:
                locked.set()
                assert release.wait(10)

    second = "human" if first == "auto" else "auto"
    t1 = _in_thread(lambda: do(first, True), errors)
    assert locked.wait(10)
    t2 = _in_thread(lambda: do(second, False), errors)
    t2.join(0.5)
    assert t2.is_alive()  # blocked on the row lock held by the first
    release.set()
    t1.join(10)
    t2.join(10)
    assert not errors, errors
    c.refresh_from_db()
    assert c.state == S.HUMAN_LABELED and c.label_id == human.pk and c.label_source == "human"
    assert moved == ({"auto": 1, "human": 1} if first == "auto" else {"human": 1, "auto": 0})
