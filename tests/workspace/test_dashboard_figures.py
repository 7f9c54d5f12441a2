"""Dashboard figures on small projects whose right values are known by hand: a warning never
rests on one label nor offers to route nothing; every figure agrees with the one shown beside it."""

from __future__ import annotations

import pytest
from django.test import Client

from annotate.services import assignments as svc
from annotate.services.routing import project_route
from labeling.models import PairwiseModel
from tests.annotate.factories import annotator, project_with_candidates, researcher
from tests.workspace.test_science_warnings import add_model
from workspace.dashboard.selectors import agreement_chart, science_warnings

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def _answer_all(project, choice):
    user = annotator(project)
    while (a := svc.assignment_next(project=project, annotator=user)) is not None:
        svc.annotation_submit(assignment_id=a.pk, annotator=user, choice=choice)


def test_one_human_label_is_not_every_label_of_one_class():
    project = project_with_candidates(n=1, k=1)
    project_route(project=project, budget=1.0, seed=0, gold_rate=0.0)
    _answer_all(project, "neutral")
    codes = {w.code for w in science_warnings(project=project)}
    assert "few-human-labels" in codes and "one-class" not in codes


def test_one_class_with_an_empty_pool_offers_no_button_that_routes_nothing():
    project = project_with_candidates(n=2, k=1)
    project_route(project=project, budget=1.0, seed=0, gold_rate=0.0)  # the whole pool routed
    _answer_all(project, "neutral")
    one = next(w for w in science_warnings(project=project) if w.code == "one-class")
    assert "(2 labels)" in one.message
    assert one.route == "" and one.route_label == ""  # was "… each of these 0 strata … 0 answers"
    c = Client()
    c.force_login(researcher())
    html = c.get(f"/projects/{project.pk}/dashboard/").content.decode()
    assert 'data-code="one-class"' in html and "0 strata" not in html and "0 answers" not in html


def test_the_reliability_note_shows_the_ece_as_the_header_does():
    project = project_with_candidates(n=2, k=1)
    model = add_model(project, cv_accuracy=0.75, oof_correct=[1, 0, 1, 1], n=4)
    PairwiseModel.objects.filter(pk=model.pk).update(cv_ece=0.0775)  # stored with 4 decimals: 0.07749999… in binary
    c = Client()
    c.force_login(researcher())
    html = c.get(f"/projects/{project.pk}/dashboard/").content.decode()
    assert "ECE 0.078 on 4 human labels" in html  # the header (floatformat)
    assert "4 out-of-fold predictions; ECE 0.078 (10 equal-width bins)" in html  # was 0.077


def test_an_undefined_agreement_claims_no_bootstrap():
    project = project_with_candidates(n=2, k=1)
    project_route(project=project, budget=1.0, seed=0, gold_rate=0.0)
    _answer_all(project, "neutral")  # one annotator: κ undefined
    chart = agreement_chart(project=project)
    assert chart.na == "n/a (one annotator)"
    assert chart.note == ""  # was "Bootstrap: 200 resamples of the items." though nothing was resampled


def test_the_agreement_table_says_its_answers_are_those_on_the_items_with_two():
    # two answers, on two items answered once each: 0 items with two answers and 0 answers on
    # them — the column read "answers 0" beside 2 answers given
    project = project_with_candidates(n=2, k=1)
    project_route(project=project, budget=1.0, seed=0, gold_rate=0.0)
    _answer_all(project, "neutral")
    chart = agreement_chart(project=project)
    assert chart.headers[1:3] == ["items (≥2 answers)", "answers on those items"]
    assert chart.rows[0][:3] == ["all", 0, 0]
