import pytest
from django.db import IntegrityError, transaction

from projects import states
from projects.models import Candidate, Example
from projects.services.candidates import candidate_transition, candidates_transition
from projects.services.projects import project_create

pytestmark = pytest.mark.postgres_too


@pytest.fixture
def project(db):
    return project_create(name="p", task="nli")


@pytest.fixture
def example(project):
    return Example.objects.create(
        project=project,
        external_id="e1",
        fields={"premise": "a", "hypothesis": "b"},
        label=project.labels.get(name="neutral"),
    )


def make(project, example, n, state=states.POOLED):
    return [
        Candidate.objects.create(
            project=project,
            example=example,
            external_id=f"c{i}",
            fields={"premise": "a", "hypothesis": f"b{i}"},
            state=state,
        )
        for i in range(n)
    ]


def test_project_create_makes_ordered_labels(project):
    assert list(project.labels.values_list("name", flat=True)) == ["entailment", "neutral", "contradiction"]
    assert project.text_fields == ["premise", "hypothesis"]
    assert project.human_budget == 0.10 and project.annotators_per_item == 3


def test_transition_moves_only_allowed_sources(project, example):
    c = make(project, example, 3)
    c[2].state = states.HUMAN_LABELED
    Candidate.objects.filter(pk=c[2].pk).update(state=states.FILTERED_OUT)
    moved = candidates_transition(candidates=Candidate.objects.filter(project=project), to=states.ROUTED)
    assert moved == 2
    assert Candidate.objects.get(pk=c[2].pk).state == states.FILTERED_OUT


def test_transition_to_labeled_needs_label(project, example):
    (c,) = make(project, example, 1)
    with pytest.raises(IntegrityError), transaction.atomic():
        candidates_transition(candidates=[c.pk], to=states.HUMAN_LABELED)
    label = project.labels.get(name="entailment")
    assert candidates_transition(candidates=[c.pk], to=states.HUMAN_LABELED, label=label, label_source="human") == 1


def test_single_transition_refuses_forbidden_edge(project, example):
    (c,) = make(project, example, 1, state=states.FILTERED_OUT)
    with pytest.raises(states.InvalidTransition, match="cannot go from 'filtered_out' to 'routed'"):
        candidate_transition(candidate=c, to=states.ROUTED)


def test_unknown_state_is_rejected(project, example):
    with pytest.raises(states.InvalidTransition):
        states.sources_for("nope")
    with pytest.raises(IntegrityError), transaction.atomic():
        make(project, example, 1, state="nope")


def test_ids_unique_per_project(project, example):
    make(project, example, 1)
    with pytest.raises(IntegrityError), transaction.atomic():
        make(project, example, 1)
    other = project_create(name="q", task="nli")
    ex2 = Example.objects.create(project=other, external_id="e1", fields={})
    Candidate.objects.create(project=other, example=ex2, external_id="c0", fields={})


def test_database_rejects_label_without_source_and_bad_confidence(project, example):
    (c,) = make(project, example, 1)
    label = project.labels.first()
    with pytest.raises(IntegrityError), transaction.atomic():
        Candidate.objects.filter(pk=c.pk).update(label=label)
    with pytest.raises(IntegrityError), transaction.atomic():
        Candidate.objects.filter(pk=c.pk).update(label=label, label_source="robot")
    with pytest.raises(IntegrityError), transaction.atomic():
        Candidate.objects.filter(pk=c.pk).update(label=label, label_source="auto", confidence=1.5)


def test_every_state_is_reachable_from_generated():
    seen, frontier = {states.GENERATED}, [states.GENERATED]
    while frontier:
        for nxt in states.TRANSITIONS[frontier.pop()]:
            if nxt not in seen:
                seen.add(nxt)
                frontier.append(nxt)
    assert seen == set(states.STATES)
