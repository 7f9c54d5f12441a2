"""The project dashboard: each chart's numbers against the selectors they come from, the
"n/a (why)" cases, the science warnings, and the pages."""

from __future__ import annotations

import random

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from annotate.models import Annotation, Item
from annotate.selectors import project_quality
from annotate.services import assignments as svc
from annotate.services.routing import project_route
from labeling.models import PairwiseModel
from labeling.selectors import flip_rates_for
from projects import states
from projects.aggregates import project_stats_recompute
from projects.models import Candidate, Label
from projects.selectors import project_overview
from projects.services.candidates import candidates_transition
from tests.annotate.factories import annotator, project_with_candidates, researcher
from workspace.dashboard.selectors import (
    agreement_chart,
    caption_charts,
    flip_charts,
    funnel_chart,
    gold_chart,
    h_charts,
    project_dashboard,
    quality_charts,
    science_warnings,
    waiting_items_count,
)
from workspace.ml import dashboard_stats as stats

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def answer_everything(project, users, pick):
    """Each user answers every item they are offered; ``pick(user_index, assignment)`` -> shown choice."""
    for ui, u in enumerate(users):
        while (a := svc.assignment_next(project=project, annotator=u)) is not None:
            svc.annotation_submit(assignment_id=a.pk, annotator=u, choice=pick(ui, a), duration_ms=500)


def labelled_nli_project():
    project = project_with_candidates(n=12, k=2, perturbations=("negation", "insert"))
    project_route(project=project, budget=1.0, seed=0)
    users = [annotator(project), annotator(project)]
    labels = list(Label.objects.filter(project=project).order_by("position").values_list("name", flat=True))

    def pick(ui, a):
        item = Item.objects.select_related("candidate__example__label").get(pk=a.item_id)
        cid = item.candidate_id
        y = labels.index(item.candidate.example.label.name)
        n = y if cid % 2 == 0 else y + 1  # half keep the original's label, half flip
        return labels[(n + (ui if cid % 4 == 0 else 0)) % len(labels)]  # disagree on every fourth

    answer_everything(project, users, pick)
    return project


def test_charts_match_the_selectors():
    project = labelled_nli_project()
    funnel = funnel_chart(project=project)
    by_state = project_overview(project=project)["by_state"]
    assert dict(funnel.rows) == {s: by_state.get(s, 0) for s, _ in funnel.rows}
    assert funnel.svg.startswith("<svg") and not funnel.na

    human, auto = flip_charts(project=project)
    rates = flip_rates_for(project=project)
    assert sum(r[2] for r in human.rows) == rates.overall["human"].n > 0
    assert sum(r[3] for r in human.rows) == rates.overall["human"].flipped
    per_pert = {p: cells["human"].n for p, cells in rates.by_perturbation}
    for p, n in per_pert.items():
        assert sum(r[2] for r in human.rows if r[0] == p) == n
    assert auto.na.startswith("n/a (") and not auto.svg

    agree = agreement_chart(project=project, n_boot=50)
    q = project_quality(project=project)
    whole = agree.rows[0]
    assert whole[0] == "all" and whole[3] == f"{q['agreement']['fleiss_kappa']['value']:.3f}"
    assert whole[1] == q["agreement"]["fleiss_kappa"]["n_items"]
    for g in q["by_perturbation"]:
        row = next(r for r in agree.rows if r[0] == g["perturbation"])
        assert row[1] == g["fleiss_kappa"]["n_items"]
        value = g["fleiss_kappa"]["value"]
        assert row[3] == ("n/a" if value is None else f"{value:.3f}")

    gold = gold_chart(project=project)
    assert gold.na == "n/a (no answers on gold items yet)"


def test_gold_chart_matches_the_quality_selector(settings, monkeypatch):
    # The second annotator answers gold items at random: no accuracy threshold, so nobody is
    # flagged mid-test. Whether a lease is a gold item is drawn from the system's randomness;
    # seeded here, so that both annotators meet gold items on every run (unseeded, the first
    # one sometimes met none and had no row to check)
    monkeypatch.setattr("annotate.services.assignments._rng", random.Random(3))
    settings.COUNTERPART = {**settings.COUNTERPART, "GOLD_RATE": 0.5, "GOLD_MIN_ACCURACY": 0.0}
    project = project_with_candidates(n=8, k=2, gold=8)
    r = project_route(project=project, budget=0.4, strategy="random", seed=0)
    assert r.gold_items > 0
    users = [annotator(project), annotator(project)]

    def pick(ui, a):
        item = Item.objects.get(pk=a.item_id)
        if item.is_gold and ui == 0:
            return item.gold_choice
        return a.display_order[0]

    answer_everything(project, users, pick)
    chart = gold_chart(project=project)
    q = project_quality(project=project)
    expected = {
        a["username"]: [a["username"], a["gold_accuracy"]["n"], f"{a['gold_accuracy']['accuracy']:.3f}"]
        for a in q["annotators"]
        if a["gold_accuracy"]
    }
    assert expected and {r[0]: r[:3] for r in chart.rows} == expected
    assert {r[0]: r[2] for r in chart.rows}[users[0].username] == "1.000" and "<circle" in chart.svg


def test_h_charts_from_the_stored_cross_validated_predictions():
    project = labelled_nli_project()
    charts, info = h_charts(project=project)
    assert info is None and all(c.na.startswith("n/a (no pairwise model") for c in charts)
    conf = [0.35, 0.55, 0.62, 0.71, 0.74, 0.88, 0.93, 0.97]
    ok = [0, 0, 1, 1, 0, 1, 1, 1]
    PairwiseModel.objects.create(
        project=project,
        mode="pc",
        version=1,
        n_train=8,
        cv_accuracy=0.625,
        cv_macro_f1=0.6,
        cv_ece=0.1,
        threshold=0.7,
        path="/nowhere",
        metrics={"oof_confidence": conf, "oof_correct": ok},
    )
    rel, hist, cov = h_charts(project=project)[0]
    assert sum(r[1] for r in rel.rows) == 8 and sum(r[1] for r in hist.rows) == 8
    bins = {r[0]: r for r in rel.rows}
    assert bins["0.7–0.8"][1] == 2 and bins["0.7–0.8"][3] == "0.500" and bins["0.7–0.8"][2] == "0.725"
    at = {r[0]: r for r in cov.rows}
    assert at["0.00"][1:] == [8, "100.0%", "62.5%"]
    assert at["0.70"][1:] == [5, "62.5%", "80.0%"]  # 0.71 0.74 0.88 0.93 0.97: 4 of 5 right
    assert "abstain" in hist.svg and "<polyline" in cov.svg


def test_h_charts_say_why_when_a_model_keeps_no_predictions():
    project = project_with_candidates(n=2)
    PairwiseModel.objects.create(
        project=project,
        mode="pc",
        version=3,
        n_train=50,
        cv_accuracy=0.8,
        cv_macro_f1=0.8,
        cv_ece=0.05,
        threshold=0.7,
        path="/nowhere",
        metrics={"accuracy": 0.8},
    )
    charts, info = h_charts(project=project)
    assert info["version"] == 3
    assert all("stores no cross-validated predictions" in c.na for c in charts)


def test_agreement_is_na_with_one_annotator():
    project = project_with_candidates(n=4, k=1)
    project_route(project=project, budget=1.0, seed=0)
    answer_everything(project, [annotator(project)], lambda ui, a: a.display_order[0])
    chart = agreement_chart(project=project)
    assert chart.na == "n/a (one annotator)" and not chart.svg


def test_caption_outcomes_match_the_quality_selector():
    project = project_with_candidates(name="cap", task="image-caption", n=6, k=1)
    project_route(project=project, budget=1.0, seed=0)
    u = annotator(project)

    def pick(ui, a):
        item = Item.objects.get(pk=a.item_id)
        own = "caption_a" if item.side == "original" else "caption_b"
        if item.candidate_id % 3 == 0:
            own = "both"
        order = list(a.display_order)
        return ["caption 1", "caption 2", "both", "neither"][order.index(own)] if own.startswith("caption") else own

    answer_everything(project, [u], pick)
    per, by_cat = caption_charts(project=project)
    q = project_quality(project=project)
    assert f"{q['caption_pairs']['worked']} of {q['caption_pairs']['complete']} fully judged" in per.note
    img0 = per.rows[0]
    answers_on_originals = Item.objects.filter(project=project, side="original", is_gold=False, done__gt=0).count()
    assert img0[-1] == answers_on_originals and img0[1] + img0[3] == img0[-1]
    assert sum(r[1] for r in by_cat.rows) == q["caption_pairs"]["complete"]
    assert sum(r[2] for r in by_cat.rows) == q["caption_pairs"]["worked"]


def test_science_warnings():
    project = labelled_nli_project()
    # fewer than 10 human labels (contested items wait for more answers): not enough data to
    # judge; whether contested items are stuck depends on the routing policy, and is said when so
    codes = [w.code for w in science_warnings(project=project)]
    assert codes[0] == "few-human-labels" and set(codes) <= {"few-human-labels", "stuck-items"}
    assert ("stuck-items" in codes) == (waiting_items_count(project=project)[0] > 0)
    ex = Candidate.objects.filter(project=project).first().example
    contradiction = Label.objects.get(project=project, name="contradiction")
    Candidate.objects.create(
        project=project,
        external_id="x1",
        example=ex,
        fields=ex.fields,
        perturbation="swap",
        generator="llm",
        state=states.POOLED,
    )
    Candidate.objects.create(
        project=project,
        external_id="x2",
        example=ex,
        fields=ex.fields,
        perturbation="swap",
        generator="rules",
        state=states.AUTO_LABELED,
        label=contradiction,
        label_source="auto",
        confidence=0.9,
    )
    PairwiseModel.objects.create(
        project=project,
        mode="pc",
        version=1,
        n_train=12,
        cv_accuracy=0.6,
        cv_macro_f1=0.6,
        cv_ece=0.1,
        threshold=0.7,
        path="/nowhere",
    )
    project_stats_recompute(project_id=project.pk)  # rows written around the services: recount
    warnings = {w.code: w.message for w in science_warnings(project=project)}
    assert set(warnings) - {"stuck-items"} == {
        "few-human-labels",
        "unrepresented-perturbation",
        "unrepresented-generator",
        "few-train-labels",
        "extrapolating",
        "h-baseline-unknown",  # a model without the recorded invariant baseline
    }
    assert "swap" in warnings["unrepresented-perturbation"] and "2 candidates" in warnings["unrepresented-perturbation"]
    assert "llm" in warnings["unrepresented-generator"]
    assert "1 auto-labelled" in warnings["extrapolating"]
    assert "12 human labels" in warnings["few-train-labels"]


def test_one_class_warning():
    project = project_with_candidates(n=6, k=1)
    project_route(project=project, budget=0.5, seed=0)
    answer_everything(project, [annotator(project)], lambda ui, a: "neutral")
    codes = {w.code for w in science_warnings(project=project)}
    assert "one-class" in codes


def test_pages():
    project = labelled_nli_project()
    ex = Candidate.objects.filter(project=project).first().example
    Candidate.objects.create(
        project=project, external_id="x1", example=ex, fields=ex.fields, perturbation="swap", state=states.POOLED
    )
    r = researcher()
    c = Client()
    c.force_login(r)
    html = c.get(f"/projects/{project.pk}/dashboard/").content.decode()
    assert html.count("<svg") >= 3 and html.count("<details>") >= 3 and "n/a (" in html
    # the unrepresented "swap" stratum's remedy: a button that routes exactly that stratum (issue 32.2)
    assert f'action="/projects/{project.pk}/route-remedy/"' in html and 'data-route="strata"' in html
    frag = c.get(f"/projects/{project.pk}/warnings/").content.decode()
    assert "science-warnings" in frag and "swap" in frag and 'name="key" value="unrepresented-perturbation"' in frag
    page = c.get(f"/projects/{project.pk}/").content.decode()
    assert f"/projects/{project.pk}/dashboard/" in page and f"/projects/{project.pk}/warnings/" in page
    a = Client()
    a.force_login(annotator(project))
    assert a.get(f"/projects/{project.pk}/dashboard/").status_code == 403
    dash = project_dashboard(project=project)
    assert next(h for h, _ in dash["sections"]) == "Candidates"


def test_pages_read_the_aggregates_not_the_candidate_table():
    """Issue 20.8: the dashboard, its warnings, the project page and its flip rates count
    nothing over the candidate table (they read the project's aggregates); they agree with
    what is in it after writes through the services."""
    project = labelled_nli_project()
    ex = Candidate.objects.filter(project=project).first().example
    Candidate.objects.create(
        project=project, external_id="x1", example=ex, fields=ex.fields, perturbation="swap", state=states.POOLED
    )
    project_stats_recompute(project_id=project.pk)  # the row above went around the services
    candidates_transition(candidates=Candidate.objects.filter(external_id="x1"), to=states.ROUTED)
    c = Client()
    c.force_login(researcher())
    table = f'FROM "{Candidate._meta.db_table}"'
    for url in ("dashboard/", "warnings/", "", "flip-rates/"):
        prefix = "/labeling" if url == "flip-rates/" else ""
        with CaptureQueriesContext(connection) as ctx:
            response = c.get(f"{prefix}/projects/{project.pk}/{url}")
        assert response.status_code == 200, url
        scans = [q["sql"] for q in ctx.captured_queries if table in q["sql"]]
        assert not scans, (url, scans)
    page = c.get(f"/projects/{project.pk}/").content.decode()
    routed = Candidate.objects.filter(project=project, state=states.ROUTED).count()
    assert f'data-state="routed">{routed}<' in page and routed > 0


def test_quality_charts_are_cached_until_the_answers_change():
    project = labelled_nli_project()
    first = quality_charts(project=project)
    with CaptureQueriesContext(connection) as ctx:
        again = quality_charts(project=project)
    assert len(ctx.captured_queries) == 1  # the key: how many answers, the newest one's id
    assert [c.rows for c in again] == [c.rows for c in first]
    answers = first[0].rows[0][2]  # the "all" row's answer count
    Annotation.objects.filter(project=project, is_gold=False).order_by("-id").first().delete()
    assert quality_charts(project=project)[0].rows[0][2] < answers  # recomputed, not the cached chart


def test_noun_category_reads_no_loaded_wordnet(monkeypatch):
    """The caption charts' noun categories come from two lines of WordNet's files: building
    NLTK's reader took seconds in the first dashboard request of an image–caption project."""
    from projects.ml import wordnet

    def refuse(*args, **kwargs):
        raise AssertionError("the whole WordNet was loaded for one noun's category")

    monkeypatch.setattr(wordnet, "english_wordnet", refuse)
    assert stats.noun_category("cat") == "animal" and stats.noun_category("Mice") == "animal"
    assert stats.noun_category("hot dog") == "person" and stats.noun_category("cups") == "artifact"
    assert stats.noun_category("qwzx") == "unknown"


def test_stats_units():
    assert stats.swapped_nouns("a cat on a mat", "a dog on a mat") == ("cat", "dog")
    assert stats.swapped_nouns("an apple on a mat", "a pear on a mat") == ("apple", "pear")
    assert stats.swapped_nouns("a cat", "two dogs here") is None
    assert stats.noun_category("cat") == "animal" and stats.noun_category("cups") == "artifact"
    assert stats.noun_category("qwzx") == "unknown"
    bins = stats.reliability_bins([0.05, 0.95, 1.0], [1, 0, 1])
    assert bins[0].n == 1 and bins[9].n == 2 and bins[9].accuracy == 0.5 and bins[5].accuracy is None
    out = stats.caption_outcomes(
        [("original", "caption_a"), ("counterfactual", "caption_a"), ("counterfactual", "neither")],
        {
            1: {"original": "caption_a", "counterfactual": "caption_b"},
            2: {"original": "both", "counterfactual": "caption_b"},
            3: {"original": "caption_a"},
        },
    )
    assert out.image_0["own"] == 1 and out.image_1["other"] == 1 and out.image_1["neither"] == 1
    assert (out.pairs, out.valid) == (2, 1)
    ci = stats.bootstrap_agreement(
        [(i, a, "x" if (i + a) % 3 else "y") for i in range(20) for a in range(3)], labels=["x", "y"], n_boot=50
    )
    assert ci.n_items == 20 and ci.kappa_ci is not None and ci.kappa_ci[0] <= ci.kappa <= ci.kappa_ci[1]


def test_without_h_the_dashboard_names_the_page_whose_button_trains_it():
    """The h charts and autolabel used to send the researcher to "Train h" on the project page,
    which has no such button: it is on the Task model and h page."""
    project = labelled_nli_project()
    charts, _ = h_charts(project=project)
    assert all(c.na == "n/a (no pairwise model yet: press “Train h” on the Task model and h page)" for c in charts)
    client = Client()
    client.force_login(researcher())
    models_page = client.get(f"/projects/{project.pk}/models/").content.decode()
    overview = client.get(f"/projects/{project.pk}/").content.decode()
    # the button is in the flip-rates section, which the Task model and h page loads (htmx)
    assert (
        "<title>Task model and h" in models_page
        and f'hx-get="/labeling/projects/{project.pk}/flip-rates/"' in models_page
    )
    section = client.get(f"/labeling/projects/{project.pk}/flip-rates/").content.decode()
    assert section.count(">Train h</button>") == 1
    assert "/flip-rates/" not in overview and ">Train h</button>" not in overview
