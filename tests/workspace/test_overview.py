"""The project overview and its pages (issue 32.1), remedies that do what they say (32.2),
task training data from the page and the API (32.3) and low agreement as a risk (32.7)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import connection
from django.test import TestCase
from django.test.utils import CaptureQueriesContext
from rest_framework.test import APIClient

from annotate.models import Item
from annotate.services import assignments as svc
from annotate.services.routing import project_route, project_route_target
from labeling.models import TaskTrainingExample
from projects import states
from projects.models import Candidate, Job
from projects.services.candidates import candidates_transition
from projects.services.projects import project_create
from tests.annotate.factories import annotator, login, project_with_candidates, researcher
from tests.projects.import_uploads import post_import
from workspace.dashboard.selectors import LOW_KAPPA, LOW_KAPPA_MIN_ITEMS, low_agreement_strata, science_warnings

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]

PAGES = ["", "data/", "models/", "evaluation/"]


@pytest.fixture
def no_gold(settings):
    settings.COUNTERPART = {**settings.COUNTERPART, "GOLD_RATE": 0.0, "QUALIFICATION_GOLD": 0}


# -- 32.1: the overview and a page per part of the work ----------------------------------------
def test_every_page_has_its_url_and_the_tabs(no_gold):
    project = project_with_candidates(n=10, k=1)
    c = login(researcher())
    for page in PAGES:
        r = c.get(f"/projects/{project.pk}/{page}")
        html = r.content.decode()
        assert r.status_code == 200, page
        assert 'aria-label="Project pages"' in html and 'aria-current="page"' in html, page
    # the apps' own pages carry the same tabs
    for url in ("runs/", "dashboard/"):
        assert 'aria-label="Project pages"' in c.get(f"/projects/{project.pk}/{url}").content.decode()
    for url in ("dashboard/", "route/", "members/"):
        assert 'aria-label="Project pages"' in c.get(f"/annotate/projects/{project.pk}/{url}").content.decode()
    caption = project_with_candidates(name="captions", task="image-caption", n=4, k=2)
    assert all(c.get(f"/projects/{caption.pk}/{p}").status_code == 200 for p in PAGES)
    annotator_client = login(annotator(project))
    assert all(annotator_client.get(f"/projects/{project.pk}/{p}").status_code == 403 for p in PAGES)


def test_the_overview_shows_one_next_step_and_moves_the_sections_to_their_pages(no_gold):
    project = project_with_candidates(n=10, k=1)
    c = login(researcher())
    html = c.get(f"/projects/{project.pk}/").content.decode()
    assert html.count('id="next-step"') == 1 and 'data-step="route"' in html
    assert 'name="strategy" value="stratified"' in html  # the step's button routes the budget
    for moved in ("labeling-flip-rates", "/task-model/", '/evaluation/" hx-trigger'):
        assert moved not in html
    models = c.get(f"/projects/{project.pk}/models/").content.decode()
    assert (
        f"/labeling/projects/{project.pk}/flip-rates/" in models
        and f"/labeling/projects/{project.pk}/task-model/" in models
    )
    evaluation = c.get(f"/projects/{project.pk}/evaluation/").content.decode()
    assert f"/labeling/projects/{project.pk}/evaluation/" in evaluation
    data = c.get(f"/projects/{project.pk}/data/").content.decode()
    assert 'data-state="pooled">10<' in data and f"/projects/{project.pk}/import/" in data


def test_the_overview_loads_at_most_four_risks_and_counts_the_rest(no_gold):
    project = project_with_candidates(n=12, k=2, perturbations=("negation", "insert"))
    project_route(project=project, budget=0.5, seed=0)
    c = login(researcher())
    assert [w.code for w in science_warnings(project=project)] == ["no-human-labels", "stuck-items"]
    frag = c.get(f"/projects/{project.pk}/warnings/?limit=1").content.decode()
    assert frag.count('class="warning"') == 1 and 'data-code="no-human-labels"' in frag
    assert "1 more on the" in frag and "What is checked" not in frag
    frag = c.get(f"/projects/{project.pk}/warnings/").content.decode()  # the dashboard's: all of them
    assert frag.count('class="warning"') == 2 and 'id="more-warnings"' not in frag
    assert c.get(f"/projects/{project.pk}/warnings/?limit=x").status_code == 400
    assert c.get(f"/projects/{project.pk}/warnings/?limit=0").status_code == 400


# -- 32.2: remedies that do what they say -------------------------------------------------------
def test_a_route_with_the_budget_already_routed_says_why(no_gold):
    project = project_with_candidates(n=20, k=1)
    project_route(project=project, budget=0.1, seed=0)
    again = project_route(project=project, budget=0.1, strategy="stratified", seed=1)
    assert again.routed == 0
    assert any("nothing to route: the budget (10% of 20 candidates = 2) is already routed" in m for m in again.messages)


def test_unrepresented_strata_get_a_button_that_routes_them(no_gold):
    project = project_with_candidates(n=40, k=1, perturbations=("negation", "insert"))
    u = annotator(project)
    negation = list(Candidate.objects.filter(project=project, perturbation="negation").values_list("id", flat=True))
    result = project_route_target(project=project, target="strata", groups=[{"perturbation": "negation"}], per_group=5)
    assert result.routed == 5 and set(
        Candidate.objects.filter(project=project, state=states.ROUTED).values_list("id", flat=True)
    ) <= set(negation)
    while (a := svc.assignment_next(project=project, annotator=u)) is not None:
        svc.annotation_submit(assignment_id=a.pk, annotator=u, choice="neutral")
    (w,) = [w for w in science_warnings(project=project) if w.code == "unrepresented-perturbation"]
    assert "insert" in w.message and w.route == "strata" and "at k = 1" in w.route_label
    # the budget (10% of 40 = 4) is spent: a plain stratified re-route routes nothing, and says so
    assert project_route(project=project, strategy="stratified", seed=0).routed == 0
    c = login(researcher())
    with TestCase.captureOnCommitCallbacks(execute=True):  # the route job runs (Celery is eager here)
        r = c.post(f"/projects/{project.pk}/route-remedy/", {"remedy": "warning", "key": w.key})
    assert r.status_code == 302 and r["Location"] == f"/annotate/projects/{project.pk}/route/"
    job = Job.objects.filter(project=project, kind="route").latest("pk")
    assert job.status == "succeeded" and job.result["routed"] == 10
    routed_now = Candidate.objects.filter(project=project, state=states.ROUTED)
    assert set(routed_now.values_list("perturbation", flat=True)) == {"insert"}
    page = c.get(f"/annotate/projects/{project.pk}/route/").content.decode()
    assert "Routed 10 candidates (10 items)" in page
    # nothing left to route there: the job says why instead of routing 0 in silence
    Candidate.objects.filter(project=project, perturbation="insert", state=states.POOLED).update(
        state=states.FILTERED_OUT
    )
    empty = project_route_target(project=project, target="strata", groups=[{"perturbation": "insert"}])
    assert empty.routed == 0
    assert any("perturbation insert: nothing to route, its 20 candidates are all routed" in m for m in empty.messages)
    gone = project_route_target(project=project, target="strata", groups=[{"perturbation": "nope"}])
    assert gone.messages[-1] == "perturbation nope: nothing to route, it has no candidate"


def test_the_remedy_button_refuses_bad_input(no_gold):
    project = project_with_candidates(n=4, k=1)
    c = login(researcher())
    assert c.post(f"/projects/{project.pk}/route-remedy/", {"remedy": "bogus"}).status_code == 400
    assert c.post(f"/projects/{project.pk}/route-remedy/", {"remedy": "warning"}).status_code == 400
    r = c.post(f"/projects/{project.pk}/route-remedy/", {"remedy": "warning", "key": "no-such-risk"})
    assert r.status_code == 302 and not Job.objects.filter(kind="route").exists()
    assert c.get(f"/projects/{project.pk}/route-remedy/").status_code == 405


def test_send_the_abstained_pairs_to_people_with_its_cost(no_gold):
    project = project_with_candidates(n=12, k=3)
    annotator(project)
    abstained = list(Candidate.objects.filter(project=project).values_list("id", flat=True)[:7])
    candidates_transition(candidates=abstained, to=states.ABSTAINED)
    (w,) = [w for w in science_warnings(project=project) if w.code == "abstained-waiting"]
    assert w.route_label == "Send the 7 abstained pairs to people (7 items at k = 3: 21 answers)"
    assert w.url == f"/projects/{project.pk}/candidates/?state=abstained"
    c = login(researcher())
    frag = c.get(f"/projects/{project.pk}/warnings/").content.decode()
    assert 'name="remedy" value="abstained"' in frag and "7 items at k = 3: 21 answers" in frag
    with TestCase.captureOnCommitCallbacks(execute=True):
        r = c.post(f"/projects/{project.pk}/route-remedy/", {"remedy": "abstained"})
    assert r.status_code == 302
    assert Candidate.objects.filter(pk__in=abstained, state=states.ROUTED).count() == 7
    assert Item.objects.filter(candidate_id__in=abstained, is_gold=False, k=3).count() == 7
    assert not [w for w in science_warnings(project=project) if w.code == "abstained-waiting"]
    r = c.post(f"/projects/{project.pk}/route-remedy/", {"remedy": "abstained"})  # none left: said, not queued
    assert r.status_code == 302 and Job.objects.filter(kind="route").count() == 1


def test_the_overview_offers_the_abstained_pairs_as_its_next_step(no_gold):
    from labeling.models import PairwiseModel

    project = project_with_candidates(n=30, k=2)
    u = annotator(project)
    project_route(project=project, budget=0.5, seed=0)
    while (a := svc.assignment_next(project=project, annotator=u)) is not None:
        svc.annotation_submit(assignment_id=a.pk, annotator=u, choice="neutral")
    Item.objects.filter(project=project).update(k=1)  # settled with one answer each
    Candidate.objects.filter(project=project, state=states.ROUTED).update(
        state=states.HUMAN_LABELED, label_source="human", label=project.labels.first()
    )
    from projects.aggregates import project_stats_recompute

    pool = list(Candidate.objects.filter(project=project, state=states.POOLED).values_list("id", flat=True))
    candidates_transition(candidates=pool, to=states.ABSTAINED)
    project_stats_recompute(project_id=project.pk)
    humans = Candidate.objects.filter(project=project, label_source="human").count()
    PairwiseModel.objects.create(
        project=project, mode="capc", version=1, n_train=humans, cv_accuracy=0.8, cv_macro_f1=0.8, cv_ece=0.1,
        threshold=0.7, metrics={}, path="/nowhere",
    )  # fmt: skip
    html = login(researcher()).get(f"/projects/{project.pk}/").content.decode()
    assert 'data-step="send-abstained"' in html and 'id="send-abstained"' in html
    assert (
        f"Send the {len(pool)} abstained pairs to people ({len(pool)} items at k = 2: {2 * len(pool)} answers)" in html
    )


def test_label_more_links_filter_to_exactly_those_candidates(no_gold):
    from labeling.models import PairwiseModel

    project = project_with_candidates(n=12, k=1, generators=("rules", "human"))
    Candidate.objects.filter(project=project, external_id="c0").update(state=states.FILTERED_OUT)
    Candidate.objects.filter(project=project, external_id="c2").update(state=states.ABSTAINED)
    strata = [
        {"kind": "code", "value": "rules / negation", "abstain": True, "reason": "code rules / negation: few"},
        {"kind": "source", "value": "human-written", "abstain": True, "reason": "source human-written: few"},
    ]
    PairwiseModel.objects.create(
        project=project, mode="capc", version=1, n_train=10, cv_accuracy=0.8, cv_macro_f1=0.8, cv_ece=0.1,
        threshold=0.7, metrics={"strata": strata}, path="/nowhere",
    )  # fmt: skip
    found = {w.value: w for w in science_warnings(project=project) if w.code == "h-abstains-stratum"}
    c = login(researcher())
    for value, want in (
        ("code:rules / negation", {"generator": "rules", "perturbation": "negation"}),
        ("source:human-written", {"generator": "human"}),
    ):
        w = found[value]
        expected = Candidate.objects.filter(project=project, state__in=[states.POOLED, states.ABSTAINED], **want)
        page = c.get(w.url).content.decode()
        assert f"<strong>{expected.count()}</strong> candidate" in page, value
        assert expected.count() and page.count('class="pair-id"') == expected.count(), value
        assert "filtered_out" not in w.url and "state=pooled&state=abstained" in w.url
        assert w.route == "strata" and dict(w.groups[0])
    assert 'id="f-origin"' in c.get(f"/projects/{project.pk}/candidates/").content.decode()
    assert c.get(f"/projects/{project.pk}/candidates/?source=nope").status_code == 400


def test_uncertainty_is_offered_once_h_has_scored_the_pool(no_gold):
    project = project_with_candidates(n=10, k=1)
    c = login(researcher())
    page = c.get(f"/annotate/projects/{project.pk}/route/").content.decode()
    assert "<option selected>random</option>" in page and 'id="strategy-hint"' not in page
    Candidate.objects.filter(project=project).update(confidence=0.6)
    page = c.get(f"/annotate/projects/{project.pk}/route/").content.decode()
    assert "<option selected>uncertainty</option>" in page and 'id="strategy-hint"' in page


# -- 32.3: task training data from the page and the API -----------------------------------------
ROWS = [
    {"premise": "A man sleeps.", "hypothesis": "A man is awake.", "label": "contradiction"},
    {"premise": "A dog runs.", "hypothesis": "An animal moves.", "label": "entailment"},
    {"premise": "Kids play.", "hypothesis": "Kids play outside.", "label": "neutral"},
]


def _jsonl() -> bytes:
    return "".join(json.dumps(r) + "\n" for r in ROWS).encode()


def test_the_import_page_asks_whether_the_rows_are_for_the_pool_or_the_task_model(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    project = project_create(name="t", task="nli")
    c = login(researcher())
    page = c.get(f"/projects/{project.pk}/import/").content.decode()
    assert 'name="target" value="pool" checked' in page and 'name="target" value="task"' in page
    page = c.get(f"/projects/{project.pk}/import/?format=labelled-jsonl&target=task").content.decode()
    assert 'name="target" value="task" checked' in page
    done = post_import(
        c, project, {"format": "labelled-jsonl", "target": "task", "file": SimpleUploadedFile("t.jsonl", _jsonl())}
    )
    assert done.job is not None and done.job.status == "succeeded", done.html
    assert TaskTrainingExample.objects.filter(project=project).count() == 3
    assert not Candidate.objects.filter(project=project).exists() and not project.examples.exists()
    assert "imported 3 task training examples" in done.html and f"/projects/{project.pk}/models/" in done.html
    assert list((Path(settings.MEDIA_ROOT) / "imports").iterdir()) == []  # the upload is removed
    # the same rows for the pool: originals
    done = post_import(c, project, {"format": "labelled-jsonl", "file": SimpleUploadedFile("t.jsonl", _jsonl())})
    assert done.job.status == "succeeded" and project.examples.count() == 3
    # a format that is not labelled text is refused at once, next to nothing queued
    before = Job.objects.count()
    r = c.post(
        f"/projects/{project.pk}/import/",
        {"format": "coco-captions", "target": "task", "file": SimpleUploadedFile("c.json", b"{}")},
    )
    assert r.status_code == 400 and "task training data is labelled text" in r.content.decode()
    assert Job.objects.count() == before


def test_the_task_model_page_uploads_task_data(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    project = project_create(name="t", task="nli")
    c = login(researcher())
    page = c.get(f"/projects/{project.pk}/models/").content.decode()
    assert 'id="task-data-form"' in page and 'name="target" value="task"' in page
    assert f'action="/projects/{project.pk}/import/"' in page and "coco" not in page.split('id="td-format"')[1][:400]
    done = post_import(
        c, project, {"format": "labelled-jsonl", "target": "task", "file": SimpleUploadedFile("t.jsonl", _jsonl())}
    )
    assert done.job.status == "succeeded"
    page = c.get(f"/projects/{project.pk}/models/").content.decode()
    assert "contradiction 1" in page and "entailment 1" in page


def test_the_api_imports_task_data(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path)
    project = project_create(name="t", task="nli")
    api = APIClient()
    api.force_authenticate(researcher())
    with TestCase.captureOnCommitCallbacks(execute=True):
        resp = api.post(
            f"/api/v1/projects/{project.pk}/import/",
            {"format": "labelled-jsonl", "target": "task", "file": SimpleUploadedFile("t.jsonl", _jsonl())},
        )
    assert resp.status_code == 202 and resp.json()["params"]["target"] == "task"
    job = Job.objects.get(pk=resp.json()["id"])
    assert job.status == "succeeded" and job.result["imported_task_examples"] == 3
    assert TaskTrainingExample.objects.filter(project=project).count() == 3 and not Candidate.objects.exists()
    for bad in ({"target": "nope"}, {"target": "task", "format": "coco-captions"}):
        resp = api.post(
            f"/api/v1/projects/{project.pk}/import/",
            {"format": "labelled-jsonl", "file": SimpleUploadedFile("t.jsonl", _jsonl()), **bad},
        )
        assert resp.status_code == 400, bad


# -- 32.7: low agreement is a risk --------------------------------------------------------------
def test_agreement_below_0_2_per_code_is_a_risk_with_its_remedy(no_gold):
    project = project_with_candidates(n=24, k=2, perturbations=("negation", "insert"))
    project_route(project=project, budget=1.0, seed=0)
    a, b = annotator(project), annotator(project)
    labels = ["entailment", "neutral", "contradiction"]
    for u, offset in ((a, 0), (b, 1)):
        while (asg := svc.assignment_next(project=project, annotator=u)) is not None:
            cand = asg.item.candidate
            i = int(cand.external_id[1:])
            # negation: the two people never agree; insert: they always do (varied labels)
            choice = labels[(i + offset) % 3] if cand.perturbation == "negation" else labels[i % 3]
            svc.annotation_submit(assignment_id=asg.pk, annotator=u, choice=choice)
    found = {w.value: w for w in science_warnings(project=project) if w.code == "low-agreement"}
    assert set(found) == {"code:rules / negation"}, found  # the generator as a whole is above 0.2
    w = found["code:rules / negation"]
    assert "Fleiss' κ -0.50 over 12 items" in w.message and "instructions" in w.message
    assert w.url == f"/projects/{project.pk}/candidates/?generator=rules&perturbation=negation"
    assert w.k == 3 and "at k = 3" in w.route_label
    assert LOW_KAPPA == 0.2 and LOW_KAPPA_MIN_ITEMS == 10
    html = login(researcher()).get(f"/projects/{project.pk}/dashboard/").content.decode()
    assert 'data-code="low-agreement"' in html
    # cached under the state of the answers: the overview asks on every load
    with CaptureQueriesContext(connection) as ctx:
        (found_again,) = low_agreement_strata(project=project)
    assert found_again[:2] == ("code", "rules / negation") and found_again[2] == pytest.approx(-0.5)
    assert len(ctx.captured_queries) == 1 and found_again[3] == 12


def test_low_agreement_needs_enough_items(no_gold):
    project = project_with_candidates(n=8, k=2, perturbations=("negation",))
    project_route(project=project, budget=1.0, seed=0)
    a, b = annotator(project), annotator(project)
    labels = ["entailment", "neutral", "contradiction"]
    for u, offset in ((a, 0), (b, 1)):
        while (asg := svc.assignment_next(project=project, annotator=u)) is not None:
            i = int(asg.item.candidate.external_id[1:])
            svc.annotation_submit(assignment_id=asg.pk, annotator=u, choice=labels[(i + offset) % 3])
    assert not [w for w in science_warnings(project=project) if w.code == "low-agreement"]  # 8 items: too few


def test_an_answered_caption_project_exports_without_an_evaluate_link():
    """Once its caption choices are in, an image-caption project's next step offered "Export the
    labelled set or evaluate it", linking to an evaluation that cannot run on captions (their
    originals carry no class label); the link is left out there."""
    from projects.aggregates import project_stats_recompute
    from projects.models import Example, Label

    client = login(researcher())
    project = project_create(name="answered-captions", task="image-caption")
    ex = Example.objects.create(project=project, external_id="o", fields={"caption": "a dog"})
    c = Candidate.objects.create(project=project, example=ex, external_id="c", fields={"caption": "a cat"})
    candidates_transition(candidates=[c.pk], to=states.POOLED)
    candidates_transition(candidates=[c.pk], to=states.ROUTED)
    lab = Label.objects.get(project=project, name="caption_a")
    candidates_transition(candidates=[c.pk], to=states.HUMAN_LABELED, label=lab, label_source="human")
    project_stats_recompute(project_id=project.pk)
    html = client.get(f"/projects/{project.pk}/").content.decode()
    assert "Export the labelled set" in html
    assert "or evaluate it" not in html and f"/projects/{project.pk}/evaluation/" in html  # the tab stays
