"""The overview's one "next step" (issue 32.1): a pure function of the project's state, one
test per state of the journey, and the state gathered from a real project."""

from __future__ import annotations

from dataclasses import replace

import pytest

from workspace.overview import next_step as ns
from workspace.overview.next_step import ProjectState, next_step

pytestmark = pytest.mark.postgres_too  # the last test gathers the state from a database

EMPTY = ProjectState()
IMPORTED = ProjectState(originals=100)
POOL = replace(IMPORTED, candidates=300, pooled=280)
ROUTED = replace(POOL, pooled=250, routed=30, routed_items=30, answers_wanted=90, annotators=3, k=3)
ANSWERED = replace(ROUTED, routed=0, answers_wanted=0, human_labels=30)
H = replace(ANSWERED, h_trained_on=30)


def test_an_empty_project_imports():
    step = next_step(EMPTY)
    assert step.code == ns.IMPORT and "empty" in step.why


def test_originals_without_candidates_generate():
    step = next_step(IMPORTED)
    assert step.code == ns.GENERATE and step.n == 100 and "100 originals" in step.why


def test_everything_filtered_out_generates_again():
    step = next_step(replace(IMPORTED, candidates=50, pooled=0))
    assert step.code == ns.GENERATE and "filtered out" in step.why


def test_a_pool_nobody_was_asked_about_routes():
    step = next_step(POOL)
    assert step.code == ns.ROUTE and step.n == 280


def test_routed_items_without_annotators_add_annotators():
    step = next_step(replace(ROUTED, annotators=0))
    assert step.code == ns.ADD_ANNOTATORS and step.n == 90


def test_open_answers_wait():
    step = next_step(ROUTED)
    assert step.code == ns.WAIT and step.n == 90 and step.title == "Wait for 90 answers"


def test_too_few_labels_and_nothing_waiting_route_more():
    step = next_step(replace(ANSWERED, human_labels=4))
    assert step.code == ns.ROUTE and step.n == 6 and "fewer than the 10" in step.why


def test_too_few_labels_and_an_empty_pool_generate_more():
    step = next_step(replace(ANSWERED, human_labels=4, pooled=0))
    assert step.code == ns.GENERATE and "pool is empty" in step.why


def test_task_data_without_a_task_model_trains_f():
    step = next_step(replace(ANSWERED, task_data=5000))
    assert step.code == ns.TRAIN_F and step.n == 5000


def test_enough_labels_train_h():
    assert next_step(ANSWERED).code == ns.TRAIN_H
    # with a task model (or once h exists) f is not asked for again
    assert next_step(replace(ANSWERED, task_data=5000, task_model=True)).code == ns.TRAIN_H


def test_many_new_labels_retrain_h():
    step = next_step(replace(H, human_labels=60))
    assert step.code == ns.TRAIN_H and step.title == "Retrain h" and "30 new" in step.why
    assert next_step(replace(H, human_labels=35)).code == ns.AUTOLABEL  # 5 new: not yet


def test_a_trained_h_and_a_pool_autolabel():
    step = next_step(H)
    assert step.code == ns.AUTOLABEL and step.n == 250


def test_abstained_pairs_go_to_people_with_their_cost():
    step = next_step(replace(H, pooled=0, abstained=1382, k=3))
    assert step.code == ns.SEND_ABSTAINED and step.n == 1382
    assert (step.cost_items, step.cost_answers) == (1382, 4146)
    assert "1,382 items at k = 3, 4,146 answers" in step.why
    image = next_step(replace(H, pooled=0, abstained=10, k=2, sides=2))  # an image pair is two items
    assert (image.cost_items, image.cost_answers) == (20, 40)


def test_nothing_left_exports():
    step = next_step(replace(H, pooled=0, auto_labels=200))
    assert step.code == ns.EXPORT and step.n == 230


def test_caption_projects_export_once_answered():
    step = next_step(replace(ANSWERED, labels_task=False))
    assert step.code == ns.EXPORT


def test_a_running_job_is_named():
    step = next_step(replace(IMPORTED, active_job="generation"))
    assert step.code == ns.GENERATE and "generation job is under way" in step.why


# -- the state, gathered from a project ------------------------------------------------------
@pytest.mark.django_db
def test_project_state_follows_the_journey():
    from annotate.services import assignments as svc
    from annotate.services.routing import project_route
    from projects.services.projects import project_create
    from tests.annotate.factories import annotator, project_with_candidates
    from workspace.overview.selectors import project_next_step, project_state

    assert project_next_step(project=project_create(name="empty", task="nli")).code == ns.IMPORT
    project = project_with_candidates(n=20, k=2)
    assert project_next_step(project=project).code == ns.ROUTE
    project_route(project=project, budget=0.5, gold_rate=0.0, seed=0)
    state = project_state(project=project)
    assert (state.routed_items, state.answers_wanted, state.annotators) == (10, 20, 0)
    assert project_next_step(project=project).code == ns.ADD_ANNOTATORS
    u = annotator(project)
    a = svc.assignment_next(project=project, annotator=u)
    svc.annotation_submit(assignment_id=a.pk, annotator=u, choice="neutral")
    step = project_next_step(project=project)
    assert step.code == ns.WAIT and step.n == 19
