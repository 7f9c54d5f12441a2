"""Truthful progress and cancel for generation runs (issue 27): model loading is a phase of its
own with a message, the rate and ETA come from the recent batches (never the loading time), and
a cancel that arrives while a batch is filtered or written keeps nothing of that batch."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from generation.ml import registry
from generation.models import GenerationRun
from generation.selectors import run_progress
from generation.services.runs import run_create, run_execute
from projects.models import Candidate, Job
from tests.generation.run_fixtures import EchoGenerator, make_project

pytestmark = pytest.mark.postgres_too  # reaches database-specific code (docs/testing.md)


@pytest.fixture
def project(db):
    return make_project(name="phases", n=6)


def test_model_loading_is_a_visible_phase_with_its_message(project, client, researcher):
    """While the generator is being built (the models loading), the run's progress says so and
    has no rate or ETA; the run page shows the message instead of a bare 0/6."""
    client.force_login(researcher)
    seen: dict[str, object] = {}

    def slow_loading_generator(**opts: object) -> EchoGenerator:
        run = GenerationRun.objects.select_related("job").get()
        p = run_progress(run=run)
        seen.update(phase=p.phase, message=p.phase_message, rate=p.rate, eta=p.eta_seconds, done=p.done)
        seen["page"] = client.get(f"/runs/{run.pk}/").content.decode()
        seen["api"] = client.get(f"/api/v1/generation/runs/{run.pk}/").json()["progress"]
        return EchoGenerator(per_original=1)

    registry.register("test-slow-load", factory=slow_loading_generator)
    try:
        run = run_create(project=project, generator="test-slow-load", options={"filters": ["dedup"], "batch_size": 2})
        run = run_execute(run_id=run.pk)
    finally:
        registry.unregister("test-slow-load")
    assert seen["phase"] == "loading models" and seen["done"] == 0
    assert "loading the test-slow-load generator" in str(seen["message"])
    assert seen["rate"] is None and seen["eta"] is None
    assert 'data-role="phase"' in str(seen["page"]) and "Step 1 of 2: loading the test-slow-load" in str(seen["page"])
    # the API's progress says the same (it left phase and phase_message out)
    assert seen["api"]["phase"] == "loading models" and seen["api"]["phase_message"] == seen["message"]
    assert run.status == "succeeded" and run.done == 6
    step = run.job.step
    assert step["name"] == "generating" and step["done"] == 6 and step["total"] == 6
    assert [d for _, d in step["recent"]] == [0, 2, 4, 6]  # the step's start, then each batch
    assert set(run.metrics["stages"]) >= {"model loading", "generation", "dedup", "db writes"}
    assert run_progress(run=run).phase == ""  # finished: no phase
    assert client.get(f"/api/v1/generation/runs/{run.pk}/").json()["progress"]["phase"] == ""


def test_the_generators_warm_up_runs_in_the_loading_phase(project):
    """A generator's ``warm_up`` (rules: WordNet, the tagger, spaCy, the lexicon) runs while the
    run says "loading models", not inside its first batch."""
    calls: list[str] = []

    class WarmEcho(EchoGenerator):
        def warm_up(self) -> None:
            run = GenerationRun.objects.select_related("job").get()
            calls.append(run_progress(run=run).phase)

    registry.register("test-warm", factory=lambda **opts: WarmEcho(per_original=1))
    try:
        run = run_execute(run_id=run_create(project=project, generator="test-warm", options={"filters": []}).pk)
    finally:
        registry.unregister("test-warm")
    assert calls == ["loading models"] and run.status == "succeeded"


def test_rules_warm_up_loads_its_resources():
    from generation.ml.rules import RulesGenerator, syntax, wordnet

    RulesGenerator().warm_up()
    assert wordnet._WN is not None and syntax._nlp.cache_info().currsize == 1
    # lemminflect's tables (read on first use; the lemma table alone took 0.8 s of a first batch)
    from lemminflect import Inflections, Lemmatizer

    assert hasattr(Lemmatizer(), "lemma_dict") and hasattr(Inflections(), "infl_dict")


def _generating(job: Job, started, points: list[tuple[float, int]], total: int) -> None:
    job.status, job.started_at, job.total, job.done = "running", started - timedelta(seconds=130), total, points[-1][1]
    job.step = {
        "name": "generating",
        "index": 2,
        "count": 2,
        "done": points[-1][1],
        "total": total,
        "unit": "originals",
        "started_at": started.isoformat(),
        "recent": [[(started + timedelta(seconds=s)).isoformat(), d] for s, d in points],
    }
    job.save()


def test_rate_and_eta_come_from_the_recent_batches_not_the_loading(project):
    run = run_create(project=project, generator="rules", options={})
    started = timezone.now() - timedelta(seconds=60)
    # 130 s of loading, then 16 originals every 10 s: 48 of 120 done 30 s into generating
    _generating(run.job, started, [(0, 0), (10, 16), (20, 32), (30, 48)], 120)
    p = run_progress(
        run=GenerationRun.objects.select_related("job").get(pk=run.pk), now=started + timedelta(seconds=30)
    )
    assert p.rate == pytest.approx(1.6) and p.eta_seconds == pytest.approx(45.0)
    # the old figure (done over the whole wall time, loading included) was far off
    assert 72 / (48 / 160) > 3 * 45
    # 5 s after the last batch, 5 s less is left
    p = run_progress(
        run=GenerationRun.objects.select_related("job").get(pk=run.pk), now=started + timedelta(seconds=35)
    )
    assert p.eta_seconds == pytest.approx(40.0)
    # before the first batch: no rate, no ETA (not a guess from the loading time)
    _generating(run.job, started, [(0, 0)], 120)
    p = run_progress(run=GenerationRun.objects.select_related("job").get(pk=run.pk), now=started + timedelta(seconds=5))
    assert p.phase == "generating" and p.rate is None and p.eta_seconds is None


def test_rate_follows_the_recent_batches_when_the_speed_changes(project):
    run = run_create(project=project, generator="rules", options={})
    started = timezone.now() - timedelta(seconds=600)
    # a slow first batch (caches cold: 100 s), then 8 batches of 16 in 10 s each
    points = [(0, 0), (100, 16)] + [(100 + 10 * k, 16 + 16 * k) for k in range(1, 9)]
    _generating(run.job, started, points, 400)
    p = run_progress(
        run=GenerationRun.objects.select_related("job").get(pk=run.pk), now=started + timedelta(seconds=180)
    )
    assert p.rate == pytest.approx(1.6)  # the window holds the last 8 batches only
    assert p.eta_seconds == pytest.approx((400 - 144) / 1.6)


class _CancelAfterBatch(EchoGenerator):
    """Asks for the run's cancel once it has yielded the last candidate of batch ``at`` (so no
    original boundary follows inside the batch: only the filter/write stage can see it)."""

    at = 2

    def generate(self, originals):  # type: ignore[no-untyped-def]
        yield from super().generate(originals)
        if self.calls == self.at:
            Job.objects.filter(kind="generation").update(cancel_requested=True)


def test_a_cancel_during_a_batch_keeps_nothing_of_that_batch(project):
    registry.register("test-cancel-mid", factory=_CancelAfterBatch)
    try:
        run = run_create(project=project, generator="test-cancel-mid", options={"filters": ["dedup"], "batch_size": 2})
        run = run_execute(run_id=run.pk)
    finally:
        registry.unregister("test-cancel-mid")
    assert run.status == "cancelled"
    assert run.done == 2  # batch 1 only
    written = set(Candidate.objects.filter(job_id=run.job_id).values_list("example__external_id", flat=True))
    first_two = list(project.examples.order_by("pk").values_list("external_id", flat=True))[:2]
    assert written == set(first_two)
    assert run.metrics.get("cursor") == project.examples.order_by("pk")[1].pk


class _Watched(EchoGenerator):
    """Reads the run page between the originals of its one batch."""

    client = None
    pages: list[str] = []  # noqa: RUF012

    def generate(self, originals):  # type: ignore[no-untyped-def]
        run = GenerationRun.objects.get()
        for o in originals:
            self.pages.append(self.client.get(f"/runs/{run.pk}/", HTTP_HX_REQUEST="true").content.decode())
            yield from super().generate([o])


def test_a_slow_batch_shows_its_originals_moving(project, client, researcher, monkeypatch):
    """Before: a slow generator (a language model on a CPU, seconds an original) showed 0/6 and
    "generating" with nothing moving until its whole batch of 16 was written (minutes); now the
    run page says how many originals of the batch are done, and the batch's write clears it."""
    from generation.services import runs

    monkeypatch.setattr(runs.time, "monotonic", iter(range(0, 10_000, 5)).__next__)  # 5 s an original
    client.force_login(researcher)
    _Watched.client, _Watched.pages = client, []
    registry.register("test-watched", factory=_Watched)
    try:
        run = run_create(project=project, generator="test-watched", options={"filters": ["dedup"]})
        run = run_execute(run_id=run.pk)
    finally:
        registry.unregister("test-watched")
    assert run.status == "succeeded" and run.done == 6
    assert "of this batch" not in _Watched.pages[0] + _Watched.pages[1]
    for k in range(1, 5):  # read once originals 0..k have yielded: k of them seen finished
        assert f"Step 2 of 2: generating: {k} of this batch&#x27;s 6 originals done" in _Watched.pages[k + 1]
        assert "0 / 6" in _Watched.pages[k + 1]
    assert run.job.step["message"] == ""  # cleared by the batch's write
