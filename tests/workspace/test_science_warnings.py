"""The dashboard's "Where the science is at risk" (issue 19.4): it never reassures falsely.
Each warning is raised by the data that should raise it and not by data that should not, the
empty / no-h states say "not enough data to judge", and every warning links to its remedy."""

from __future__ import annotations

import pytest
from django.test import Client

from annotate.services import assignments as svc
from annotate.services.routing import project_route
from labeling.models import PairwiseModel
from projects import states
from projects.models import Candidate, Example, Label
from projects.services.projects import project_create
from tests.annotate.factories import annotator, project_with_candidates, researcher
from workspace.dashboard.selectors import (
    FLIP_SHARE_DIFFERENCE,
    INVALID_MIN_ANSWERS,
    science_warnings,
    waiting_items_count,
)
from workspace.ml import dashboard_stats as stats

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def labelled_project(n_human=30, human_flips=15, n_auto=0, auto_flips=0, n_pooled=0, name="w"):
    """Candidates written directly: ``n_human`` human labels of which ``human_flips`` flip the
    original's label, ``n_auto`` auto labels of which ``auto_flips`` flip, ``n_pooled`` pooled;
    one generator and code throughout (so the coverage checks pass)."""
    project = project_create(name=name, task="nli", annotators_per_item=1)
    labels = list(Label.objects.filter(project=project).order_by("position"))
    rows = (
        [(states.HUMAN_LABELED, "human", i < human_flips) for i in range(n_human)]
        + [(states.AUTO_LABELED, "auto", i < auto_flips) for i in range(n_auto)]
        + [(states.POOLED, "", False) for _ in range(n_pooled)]
    )
    examples = Example.objects.bulk_create(
        [
            Example(
                project=project,
                external_id=f"e{i}",
                fields={"premise": f"p {i}", "hypothesis": f"h {i}"},
                label=labels[i % 3],
            )
            for i in range(len(rows))
        ]
    )
    Candidate.objects.bulk_create(
        [
            Candidate(
                project=project,
                external_id=f"c{i}",
                example=ex,
                fields={"premise": f"p {i}", "hypothesis": f"cf {i}"},
                generator="rules",
                perturbation="negation",
                state=state,
                label=None if not source else labels[(i % 3 + (1 if flip else 0)) % 3],
                label_source=source,
                confidence=0.9 if source == "auto" else None,
            )
            for i, ((state, source, flip), ex) in enumerate(zip(rows, examples, strict=True))
        ]
    )
    return project


def add_model(project, *, cv_accuracy, invariant_accuracy=None, oof_correct=None, invariant_correct=None, n=200):
    metrics = {}
    if invariant_accuracy is not None:
        metrics["invariant_accuracy"] = invariant_accuracy
    if oof_correct is not None:
        metrics["oof_correct"] = oof_correct
        metrics["oof_confidence"] = [0.8] * len(oof_correct)
    if invariant_correct is not None:
        metrics["invariant_correct"] = invariant_correct
    return PairwiseModel.objects.create(
        project=project,
        mode="capc",
        version=1,
        n_train=n,
        cv_accuracy=cv_accuracy,
        cv_macro_f1=cv_accuracy,
        cv_ece=0.03,
        threshold=0.7,
        metrics=metrics,
        path="/nowhere",
    )


def good_model(project):
    # h right on 180 of 200, invariant on 100: far better, and significantly so
    h = [1] * 180 + [0] * 20
    inv = [1, 0] * 100
    return add_model(project, cv_accuracy=0.9, invariant_accuracy=0.5, oof_correct=h, invariant_correct=inv)


def codes(project):
    return [w.code for w in science_warnings(project=project)]


def fragment(project):
    c = Client()
    c.force_login(researcher())
    return c.get(f"/projects/{project.pk}/warnings/").content.decode()


# -- not enough data to judge --------------------------------------------------------------
def test_an_empty_project_is_not_enough_data():
    project = project_create(name="empty", task="nli")
    (w,) = science_warnings(project=project)
    assert w.code == "no-data" and w.message.startswith("Not enough data to judge")
    assert w.url == f"/projects/{project.pk}/runs/new/"
    html = fragment(project)
    assert "Not enough data to judge" in html and "No warnings" not in html
    assert f'href="/projects/{project.pk}/runs/new/"' in html


def test_candidates_without_human_labels_are_not_enough_data():
    project = labelled_project(n_human=0, human_flips=0, n_pooled=5)
    (w,) = science_warnings(project=project)
    assert w.code == "no-human-labels" and "Not enough data to judge" in w.message
    assert w.url == f"/annotate/projects/{project.pk}/route/"


def test_few_human_labels_are_not_enough_data():
    project = labelled_project(n_human=6, human_flips=3)
    assert codes(project) == ["few-human-labels"]
    assert "6 human labels" in science_warnings(project=project)[0].message


def test_enough_labels_but_no_h_is_not_enough_data_to_judge_h():
    project = labelled_project()
    (w,) = science_warnings(project=project)
    assert w.code == "no-model" and "Not enough data to judge h" in w.message
    assert w.url == f"/projects/{project.pk}/models/#flip-rates"  # the task-model and h page (issue 32.1)
    assert "No warnings" not in fragment(project)


def test_an_h_without_its_recorded_baseline_is_not_judged_good():
    project = labelled_project()
    add_model(project, cv_accuracy=0.95)
    assert codes(project) == ["h-baseline-unknown"]


def test_all_checks_pass_only_with_data_and_a_good_h():
    project = labelled_project(n_auto=40, auto_flips=22)
    good_model(project)
    assert codes(project) == []
    html = fragment(project)
    assert "No warnings: every check below could run and passed." in html
    assert "What is checked" in html and "McNemar" in html


# -- h against "nothing flips" ---------------------------------------------------------------
@pytest.mark.parametrize(
    "cv, inv, h_right, inv_right, warn",
    [
        (0.73, 0.75, None, None, True),  # worse than the baseline
        (0.76, 0.75, None, None, True),  # better by less than the margin
        # 0.80 vs 0.75 on 20 pairs: h wins 2, loses 1 -> McNemar p = 0.5, not measurably better
        (0.80, 0.75, [1] * 16 + [0] * 4, [1] * 14 + [0, 1, 0, 0, 0, 0], True),
        (0.90, 0.50, [1] * 180 + [0] * 20, [1, 0] * 100, False),
    ],
)
def test_h_no_better_than_invariant(cv, inv, h_right, inv_right, warn):
    project = labelled_project()
    add_model(project, cv_accuracy=cv, invariant_accuracy=inv, oof_correct=h_right, invariant_correct=inv_right)
    found = [w for w in science_warnings(project=project) if w.code == "h-not-better-than-invariant"]
    assert bool(found) == warn
    if warn:
        assert f"{cv:.3f} against {inv:.3f}" in found[0].message
        assert found[0].url == f"/annotate/projects/{project.pk}/route/" and found[0].remedy


def test_mcnemar_and_two_proportion_tests():
    assert stats.mcnemar_one_sided([1, 1, 1, 0], [0, 0, 0, 0]) == pytest.approx(0.125)
    assert stats.mcnemar_one_sided([1, 0], [1, 0]) == 1.0 and stats.mcnemar_one_sided([], []) is None
    t = stats.two_proportion_test(310, 310, 70, 100)
    assert t.difference == pytest.approx(0.3) and t.p_value < 1e-10
    same = stats.two_proportion_test(5, 10, 5, 10)
    assert same.difference == 0 and same.p_value == pytest.approx(1.0)
    assert stats.two_proportion_test(0, 0, 1, 2).p_value is None


# -- auto labels that flip far more (or less) often than the human ones ------------------------
@pytest.mark.parametrize("auto_flips, warn", [(40, True), (0, True), (22, False)])
def test_auto_flip_share_far_from_the_human_one(auto_flips, warn):
    project = labelled_project(n_human=30, human_flips=15, n_auto=40, auto_flips=auto_flips)
    good_model(project)
    found = [w for w in science_warnings(project=project) if w.code == "auto-flip-share"]
    assert bool(found) == warn
    if warn:
        assert "of 40 pairs; humans flipped 50% of 30" in found[0].message
        assert found[0].url == f"/projects/{project.pk}/candidates/?label_source=auto"
    assert FLIP_SHARE_DIFFERENCE == 0.15


def test_auto_flip_share_needs_enough_auto_labels():
    project = labelled_project(n_human=30, human_flips=15, n_auto=5, auto_flips=5)
    good_model(project)
    assert "auto-flip-share" not in codes(project)


# -- invalid answers per generator and code --------------------------------------------------------
def test_high_share_of_invalid_answers_per_generator_and_code():
    project = project_with_candidates(name="inv", n=24, k=1, perturbations=("negation", "shuffle"))
    project_route(project=project, budget=1.0, seed=0)
    u = annotator(project)
    labels = list(Label.objects.filter(project=project).values_list("name", flat=True))
    negation_answers = 0
    while (a := svc.assignment_next(project=project, annotator=u)) is not None:
        shuffle = a.item.candidate.perturbation == "shuffle"
        if not shuffle:
            negation_answers += 1
        # every shuffle answer unclear; every 6th negation answer (2 of 12), whatever the ids
        choice = "unclear" if shuffle or negation_answers % 6 == 0 else labels[0]
        svc.annotation_submit(assignment_id=a.pk, annotator=u, choice=choice, duration_ms=400)
    found = [w for w in science_warnings(project=project) if w.code == "invalid-share"]
    assert len(found) == 1  # negation: 2 of 12 unclear, under the threshold
    assert "100% of 12 human answers on rules / shuffle" in found[0].message
    assert found[0].url == f"/projects/{project.pk}/candidates/?generator=rules&perturbation=shuffle"
    assert INVALID_MIN_ANSWERS == 10


def test_invalid_share_needs_enough_answers():
    project = project_with_candidates(name="inv2", n=8, k=1, perturbations=("shuffle",))
    project_route(project=project, budget=1.0, seed=0)
    u = annotator(project)
    while (a := svc.assignment_next(project=project, annotator=u)) is not None:
        svc.annotation_submit(assignment_id=a.pk, annotator=u, choice="unclear", duration_ms=400)
    assert "invalid-share" not in codes(project)  # 8 answers, all unclear: too few to judge


# -- items stuck for lack of annotators --------------------------------------------------------------
def test_items_stuck_for_lack_of_annotators():
    project = project_with_candidates(name="stuck", n=6, k=2)
    project_route(project=project, budget=1.0, seed=0)
    u = annotator(project)
    while (a := svc.assignment_next(project=project, annotator=u)) is not None:
        svc.annotation_submit(assignment_id=a.pk, annotator=u, choice="neutral", duration_ms=400)
    # each item needs 2 different people; the only annotator answered them all
    assert waiting_items_count(project=project) == (6, 1)
    (w,) = [w for w in science_warnings(project=project) if w.code == "stuck-items"]
    assert "6 items" in w.message and w.url == f"/annotate/projects/{project.pk}/dashboard/#waiting"
    annotator(project)  # a second annotator can give the missing answers
    assert waiting_items_count(project=project) == (0, 2)
    assert "stuck-items" not in codes(project)


def test_every_warning_links_to_its_remedy():
    project = project_with_candidates(name="links", n=12, k=2, perturbations=("negation", "insert"))
    project_route(project=project, budget=0.5, seed=0)
    add_model(project, cv_accuracy=0.5, invariant_accuracy=0.6, n=12)
    warnings = science_warnings(project=project)
    assert warnings and all(w.url and w.remedy for w in warnings)
    html = fragment(project)
    assert html.count('class="remedy"') == len(warnings)
