"""Run pages: start a run, the run page with its htmx progress fragment (polled every
second, stopped with HTTP 286 once finished), cancel, metrics and skip reasons."""

from __future__ import annotations

import pytest

from generation.ml import registry
from generation.models import GenerationRun
from generation.services.runs import run_create, run_execute
from tests.generation.run_fixtures import make_project, register_test_generators

pytestmark = pytest.mark.postgres_too


@pytest.fixture(autouse=True)
def _generators():
    register_test_generators()
    yield
    registry.unregister("test-echo")


@pytest.fixture
def project(db):
    return make_project(name="views", n=5)


@pytest.fixture
def rclient(client, researcher):
    client.force_login(researcher)
    return client


def test_pages_are_for_researchers_only(client, annotator, project):
    run = run_create(project=project, generator="test-echo", options={})
    assert client.get(f"/runs/{run.pk}/").status_code == 302  # login first
    client.force_login(annotator)
    assert client.get(f"/runs/{run.pk}/").status_code == 403
    assert client.get(f"/projects/{project.pk}/runs/new/").status_code == 403
    assert client.post(f"/runs/{run.pk}/cancel/").status_code == 403


def test_start_page_lists_generators_and_starts_a_run(rclient, project, django_capture_on_commit_callbacks):
    html = rclient.get(f"/projects/{project.pk}/runs/new/").content.decode()
    for name in ("rules", "rationale-infill", "test-echo"):
        assert f'value="{name}"' in html
    # without a language model configured these are listed as unavailable, with the reason
    for name in ("llm-prompt", "concept-constrained"):
        assert f'value="{name}"' not in html and f"<strong>{name}</strong>: no language model" in html
    with django_capture_on_commit_callbacks(execute=True):
        resp = rclient.post(
            f"/projects/{project.pk}/runs/new/",
            {
                "generator": "test-echo",
                "limit": "3",
                "seed": "1",
                "filters": ["dedup", "artifacts"],
                "generator_options": '{"per_original": 2}',
            },
        )
    run = GenerationRun.objects.get()
    assert resp.status_code == 302 and resp["Location"] == f"/runs/{run.pk}/"
    run.refresh_from_db()  # eager Celery ran the task once the run committed
    assert run.status == "succeeded" and run.done == 3
    assert run.options["generator_options"] == {"per_original": 2}
    assert run.options["filters"] == ["dedup", "artifacts"]


@pytest.mark.parametrize(
    "data, message",
    [
        ({"generator": "test-echo", "similarity_band": "0.9,0.2"}, "LO &lt; HI"),
        ({"generator": "test-echo", "generator_options": "[1]"}, "must be a JSON object"),
        ({"generator": "nope"}, "Select a valid choice"),
    ],
)
def test_start_page_shows_errors(rclient, project, data, message):
    resp = rclient.post(f"/projects/{project.pk}/runs/new/", data)
    assert resp.status_code == 400
    assert message in resp.content.decode()
    assert not GenerationRun.objects.exists()


def test_running_run_page_polls_every_second_with_a_cancel_button(rclient, project):
    run = run_create(project=project, generator="test-echo", options={})
    html = rclient.get(f"/runs/{run.pk}/").content.decode()
    assert 'hx-trigger="every 1s"' in html and f'hx-get="/runs/{run.pk}/"' in html
    assert "Cancel run" in html and f'hx-post="/runs/{run.pk}/cancel/"' in html
    frag = rclient.get(f"/runs/{run.pk}/", HTTP_HX_REQUEST="true")
    assert frag.status_code == 200
    body = frag.content.decode()
    assert body.lstrip().startswith('<section class="card" id="run-progress"') and "<html" not in body
    assert 'hx-trigger="every 1s"' in body


def test_finished_run_stops_polling_and_shows_metrics_and_skips(rclient, project):
    ex = project.examples.order_by("pk").first()
    ex.fields = {"premise": "only"}
    ex.save()
    run = run_execute(
        run_id=run_create(project=project, generator="test-echo", options={"filters": "dedup,artifacts"}).pk
    )
    frag = rclient.get(f"/runs/{run.pk}/", HTTP_HX_REQUEST="true")
    assert frag.status_code == 286  # HttpResponseStopPolling
    body = frag.content.decode()
    assert "every 1s" not in body and "Cancel run" not in body
    assert 'data-status="succeeded"' in body
    assert 'id="run-metrics"' in body
    for label in (
        "candidates per original",
        "acceptance by filter: dedup",
        "distinct-1",
        "distinct-2",
        "self-BLEU",
        "mean token edit distance",
        "mean similarity",
        "share of code negation",
    ):
        assert label in body
    assert "missing field &#x27;hypothesis&#x27;" in body
    page = rclient.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="run-metrics"' in page and "every 1s" not in page


def test_cancel_from_the_page(rclient, project):
    run = run_create(project=project, generator="test-echo", options={})
    frag = rclient.post(f"/runs/{run.pk}/cancel/", HTTP_HX_REQUEST="true")
    assert frag.status_code == 200 and 'data-status="cancelled"' in frag.content.decode()
    run.refresh_from_db()
    assert run.status == "cancelled" and run.cancel_requested
    assert rclient.get(f"/runs/{run.pk}/cancel/").status_code == 405


def test_failed_run_shows_its_error(rclient, project):
    run = run_execute(
        run_id=run_create(project=project, generator="test-echo", options={"generator_options": {"mode": "broken"}}).pk
    )
    body = rclient.get(f"/runs/{run.pk}/").content.decode()
    assert 'role="alert"' in body and "mode &#x27;broken&#x27; is not supported" in body


def test_a_generator_option_the_generator_does_not_take_is_refused_by_the_page(rclient, project):
    resp = rclient.post(
        f"/projects/{project.pk}/runs/new/", {"generator": "rules", "generator_options": '{"x": "type"}'}
    )
    body = resp.content.decode()
    assert resp.status_code == 400 and "generator &#x27;rules&#x27; does not take option(s) x" in body
    assert not GenerationRun.objects.exists()


def test_run_list(rclient, project):
    run = run_create(project=project, generator="test-echo", options={})
    html = rclient.get(f"/projects/{project.pk}/runs/").content.decode()
    assert f'href="/runs/{run.pk}/"' in html and "test-echo" in html


def test_new_run_form_preselects_the_generator_for_the_task(client, researcher):
    from projects.services.projects import project_create

    client.force_login(researcher)
    text = project_create(name="t-nli", task="nli")
    images = project_create(name="t-img", task="image-caption")
    html = client.get(f"/projects/{text.pk}/runs/new/").content.decode()
    assert '<option value="rules" selected>' in html
    html = client.get(f"/projects/{images.pk}/runs/new/").content.decode()
    assert '<option value="coco-cf" selected>' in html


def test_run_form_offers_only_generators_that_can_run(rclient, project, settings):
    settings.COUNTERPART = {**settings.COUNTERPART, "CAUSAL_LM_PATH": "", "SEQ2SEQ_PATH": ""}
    html = rclient.get(f"/projects/{project.pk}/runs/new/").content.decode()
    select = html.split('name="generator"')[1].split("</select>")[0]
    assert 'value="rules"' in select and 'value="llm-prompt"' not in select and 'value="coco-cf"' not in select
    unavailable = html.split('id="unavailable-generators"')[1].split("</ul>")[0]
    assert "llm-prompt" in unavailable and "no language model" in unavailable
    assert "coco-cf" in unavailable and "not for nli projects" in unavailable
    resp = rclient.post(f"/projects/{project.pk}/runs/new/", {"generator": "llm-prompt", "filters": ["dedup"]})
    assert resp.status_code == 400 and "llm-prompt cannot run for this project" in resp.content.decode()
    # naming a model in the options makes it runnable
    resp = rclient.post(
        f"/projects/{project.pk}/runs/new/",
        {"generator": "llm-prompt", "generator_options": '{"model_path": "/nowhere"}', "similarity_band": "x"},
    )
    assert "cannot run for this project" not in resp.content.decode()


def test_run_form_shows_every_error_at_once(rclient, project):
    resp = rclient.post(
        f"/projects/{project.pk}/runs/new/",
        {"generator": "rules", "limit": "0", "generator_options": "{bad", "similarity_band": "nonsense"},
    )
    html = resp.content.decode()
    assert resp.status_code == 400
    for field in ("limit", "generator_options", "similarity_band"):
        assert f'id="{field}-error"' in html, field


def test_can_run_registry():
    assert registry.can_run("rules", "nli", {}) == (True, "")
    ok, why = registry.can_run("coco-cf", "nli", {})
    assert not ok and "image-caption" in why
    ok, why = registry.can_run("llm-prompt", "sentiment", {"causal_lm_path": ""})
    assert not ok and "COUNTERPART_CAUSAL_LM_PATH" in why
    assert registry.can_run("llm-prompt", "sentiment", {"causal_lm_path": "/m"})[0]
    assert registry.can_run("llm-prompt", "sentiment", {}, {"model_path": "/m"})[0]


def test_run_metrics_read_accepted_over_all_with_percentages(project):
    from generation.selectors import run_metrics_rows

    run = run_create(project=project, generator="test-echo", options={})
    run.metrics = {
        "candidates": 10,
        "accepted": 4,
        "originals_with_accepted": 1.0,
        "accepted_all_filters": 0.4,
        "acceptance_by_filter": {"dedup": 1.0, "artifacts": 0.4567},
        "share_per_code": {"negation": 0.5},
        "accepted_share_per_code": {"negation": 1.0},
        "introduced_max_share": 0.25,
        "all_candidates": {"introduced_max_share": 0.5},
    }
    rows = dict(run_metrics_rows(run=run))
    assert rows["candidates (accepted / all)"] == "4 / 10"
    # shares of originals / candidates, not a bare 1 (issue 20.14)
    assert rows["originals with an accepted candidate"] == "100%"
    assert rows["accepted by all filters"] == "40%"
    assert rows["acceptance by filter: dedup"] == "100%" and rows["acceptance by filter: artifacts"] == "45.7%"
    assert rows["share of code negation (accepted / all)"] == "100% / 50%"
    assert rows["share of the most frequent introduced token (accepted / all)"] == "25% / 50%"
    assert all("all / accepted" not in name for name in rows)


def test_start_page_limit_samples_across_labels(rclient, db, django_capture_on_commit_callbacks):
    sorted_project = make_project(name="sorted", n=30, sorted_by_label=True)  # ids sorted by label
    html = rclient.get(f"/projects/{sorted_project.pk}/runs/new/").content.decode()
    assert "spread evenly over the labels" in html and "sample of originals" in html
    with django_capture_on_commit_callbacks(execute=True):
        rclient.post(
            f"/projects/{sorted_project.pk}/runs/new/",
            {"generator": "test-echo", "limit": "6", "seed": "2", "filters": ["dedup"]},
        )
    run = GenerationRun.objects.get()
    run.refresh_from_db()
    assert run.status == "succeeded" and run.done == 6
    assert run.metrics["sample_labels"] == {"entailment": 2, "neutral": 2, "contradiction": 2}
    page = rclient.get(f"/runs/{run.pk}/").content.decode()
    assert "originals sampled (stratified by label, seeded)" in page


def test_a_start_sent_twice_at_once_is_one_run(rclient, project, monkeypatch, django_capture_on_commit_callbacks):
    """Before: a double click on "Start run" (or a client that sent its request twice) created
    two runs, which generated the same candidates twice (the second all filtered out as dups)."""
    from projects.services import jobs

    sent = []
    monkeypatch.setattr(jobs, "job_enqueue", lambda *, job_id: sent.append(job_id))
    data = {"generator": "test-echo", "limit": "3", "seed": "1", "filters": ["dedup"]}
    with django_capture_on_commit_callbacks(execute=True):
        first = rclient.post(f"/projects/{project.pk}/runs/new/", data)
        second = rclient.post(f"/projects/{project.pk}/runs/new/", data)
    run = GenerationRun.objects.get()
    assert first.status_code == second.status_code == 302
    assert first["Location"] == second["Location"] == f"/runs/{run.pk}/"
    assert len(sent) == 1
    # other options, or the same once the first run has ended, are a new run
    with django_capture_on_commit_callbacks(execute=True):
        rclient.post(f"/projects/{project.pk}/runs/new/", {**data, "seed": "2"})
    assert GenerationRun.objects.count() == 2
    run_execute(run_id=run.pk)
    with django_capture_on_commit_callbacks(execute=True):
        rclient.post(f"/projects/{project.pk}/runs/new/", data)
    assert GenerationRun.objects.count() == 3 and len(sent) == 3


def test_a_generator_option_of_the_wrong_kind_is_refused_by_the_page(rclient, project):
    """Before: the run started, and the worker failed it with "invalid literal for int() with base
    10: 'abc'", which named no option; the options had to be typed again."""
    typed = '{"max_per_code": "abc", "min_words": 2.5, "seed": 1}'
    resp = rclient.post(f"/projects/{project.pk}/runs/new/", {"generator": "rules", "generator_options": typed})
    assert resp.status_code == 400
    html = resp.content.decode()
    assert (
        "generator &#x27;rules&#x27;: max_per_code must be a whole number, got &#x27;abc&#x27;; "
        "min_words must be a whole number, got 2.5" in html
    )
    assert "{&quot;max_per_code&quot;: &quot;abc&quot;, &quot;min_words&quot;: 2.5, &quot;seed&quot;: 1}" in html
    assert not GenerationRun.objects.exists()
    # the same kinds of value as text, or a whole float, still start
    ok = '{"max_per_code": "3", "min_words": 2.0}'
    resp = rclient.post(f"/projects/{project.pk}/runs/new/", {"generator": "rules", "generator_options": ok})
    assert resp.status_code == 302 and GenerationRun.objects.count() == 1
