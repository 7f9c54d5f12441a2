"""Generation runs: create/validate, execute, filters, skips, failure at start, cancel,
crash-resume without duplicates, progress and metrics."""

from __future__ import annotations

from collections import Counter
from datetime import timedelta

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from generation.ml import filters as ml_filters
from generation.ml import registry
from generation.ml.base import GeneratedCandidate, Original
from generation.ml.rules import DEFAULT_CODES as DEFAULT_RULE_CODES
from generation.ml.sampling import stratified_sample
from generation.models import GenerationRun
from generation.selectors import run_metrics_rows, run_progress, runs_of_project
from generation.services import run_quality
from generation.services.runs import run_cancel, run_create, run_execute
from projects import states
from projects.models import Candidate, Example, Job
from tests.generation.run_fixtures import (
    EchoGenerator,
    FakeEncoder,
    make_project,
    register_test_generators,
)

pytestmark = pytest.mark.postgres_too

NO_SIM = ["dedup", "artifacts"]


@pytest.fixture(autouse=True)
def _generators():
    register_test_generators()
    EchoGenerator.crashed.clear()
    yield
    registry.unregister("test-echo")


@pytest.fixture
def project(db):
    return make_project(n=10)


def _run(project, **options):
    options.setdefault("filters", NO_SIM)
    return run_create(project=project, generator="test-echo", options=options)


# -- create / validate -------------------------------------------------------------------
def test_create_normalises_options_and_defaults_band_per_task(project):
    run = run_create(project=project, generator="test-echo", options={"limit": "5", "filters": "dedup,similarity"})
    assert run.status == "queued"
    assert run.options["limit"] == 5
    assert run.options["filters"] == ["similarity", "dedup"]
    assert run.options["similarity_band"] == list(ml_filters.band_for("nli"))  # the per-task default
    img = make_project(name="img", n=1, task="image-caption")
    run2 = run_create(project=img, generator="test-echo", options={})
    assert run2.options["similarity_band"] == [0.8, 0.91]
    assert run2.options["filters"] == ["similarity", "dedup", "artifacts"]


@pytest.mark.parametrize(
    "options, field",
    [
        ({"limit": 0}, "limit"),
        ({"limit": "x"}, "limit"),
        ({"similarity_band": "0.9,0.8"}, "similarity_band"),
        ({"similarity_band": "0.9"}, "similarity_band"),
        ({"filters": "similarity,bogus"}, "filters"),
        ({"frobnicate": 1}, "options"),
        ({"generator_options": [1]}, "generator_options"),
    ],
)
def test_create_rejects_bad_options_with_field_messages(project, options, field):
    with pytest.raises(ValidationError) as exc:
        run_create(project=project, generator="test-echo", options=options)
    assert field in exc.value.message_dict
    assert not GenerationRun.objects.exists()


def test_create_refuses_a_split_no_original_has(project):
    """A split the project's originals lack ("trian", "test" in a dev project) is a field error,
    not a run that loads its models and succeeds with 0 / 0 originals."""
    with pytest.raises(ValidationError) as exc:
        run_create(project=project, generator="test-echo", options={"split": "trian"})
    assert exc.value.message_dict["split"] == ["no original of this project has the split 'trian'; its splits are dev"]
    assert not GenerationRun.objects.exists()
    assert run_create(project=project, generator="test-echo", options={"split": "dev"}).options["split"] == "dev"


def test_create_rejects_unknown_generator(project):
    with pytest.raises(ValidationError) as exc:
        run_create(project=project, generator="nope", options={})
    assert "rules" in exc.value.message_dict["generator"][0]


# -- execute -----------------------------------------------------------------------------
def test_execute_writes_candidates_with_deterministic_ids_and_progress(project):
    run = _run(project, batch_size=3)
    seen = []
    run = run_execute(run_id=run.pk, on_progress=lambda r: seen.append(r.done))
    assert run.status == "succeeded" and run.error == ""
    assert (run.done, run.total, run.skipped) == (10, 10, 0)
    assert seen == [3, 6, 9, 10]  # progress per batch
    cands = Candidate.objects.filter(job_id=run.job_id)
    assert cands.count() == 30
    assert set(cands.values_list("external_id", flat=True)) == {
        f"{run.pk}:ex-{i:03d}:{k}" for i in range(10) for k in range(3)
    }
    c = cands.get(external_id=f"{run.pk}:ex-001:0")
    assert c.state == states.POOLED
    assert c.group == "ex-001" and c.generator == "test-echo" and c.perturbation == "negation"
    assert c.example.external_id == "ex-001"
    assert c.target_label is not None and c.target_label.project_id == project.pk
    assert c.scores["gen_score"] == 0.5 and c.scores["dedup"] == 0.0 and c.scores["artifacts"] == 0.0
    assert c.meta["filters"] == {"dedup": True, "artifacts": True}
    assert run.finished_at and run.started_at
    assert not cands.filter(state=states.GENERATED).exists()


def test_limit_max_per_original_and_split(project):
    Example.objects.create(
        project=project, external_id="other", split="train", fields={"premise": "a b", "hypothesis": "c d"}
    )
    run = run_execute(run_id=_run(project, limit=4, max_per_original=2, split="dev").pk)
    assert (run.done, run.total) == (4, 4)
    per = Counter(Candidate.objects.filter(job_id=run.job_id).values_list("example__external_id", flat=True))
    # a limit takes a stratified sample (generation/ml/sampling.py): every label, only the split
    assert len(per) == 4 and set(per.values()) == {2} and "other" not in per
    labels = Counter(project.examples.filter(external_id__in=per).values_list("label__name", flat=True))
    assert sorted(labels.values()) == [1, 1, 2]


def test_generator_options_reach_the_generator(project):
    run = run_execute(run_id=_run(project, generator_options={"per_original": 1}).pk)
    assert Candidate.objects.filter(job_id=run.job_id).count() == 10


def test_per_original_skips_are_recorded_and_the_run_continues(project):
    ex = list(project.examples.order_by("pk"))
    ex[0].fields = {"premise": "only the premise"}  # missing field
    ex[1].fields = {"premise": "p", "hypothesis": "   "}  # empty field
    ex[2].fields = {"premise": "skipme", "hypothesis": "h"}  # generator skip
    ex[3].fields = {"premise": "boom", "hypothesis": "h"}  # generator raises for this one
    for e in ex[:4]:
        e.save()
    run = run_execute(run_id=_run(project, batch_size=4).pk)
    assert run.status == "succeeded"
    assert (run.done, run.skipped) == (10, 4)
    reasons = {s["example"]: s["reason"] for s in run.skips}
    assert reasons["ex-000"] == "missing field 'hypothesis'"
    assert reasons["ex-001"] == "empty field 'hypothesis'"
    assert reasons["ex-002"] == "too short to perturb"
    assert reasons["ex-003"].startswith("generator error: RuntimeError: generator exploded")
    assert Candidate.objects.filter(job_id=run.job_id).count() == 6 * 3
    assert run.metrics["originals_skipped"] == 4
    # per original the run went through, the 4 skipped ones (which yielded nothing) included
    accepted = Candidate.objects.filter(job_id=run.job_id, state="pooled").count()
    assert run.metrics["candidates_per_original"] == 1.8  # 18 candidates from 10 originals, not 18 / 6
    assert run.metrics["accepted_per_original"] == round(accepted / 10, 4)


def test_skip_list_is_capped_but_counted(project, settings):
    settings.COUNTERPART = {**settings.COUNTERPART, "GENERATION_MAX_SKIPS": 3}
    project.examples.update(fields={"premise": "x"})
    run = run_execute(run_id=_run(project, batch_size=4).pk)
    assert run.skipped == 10 and len(run.skips) == 3


@pytest.mark.parametrize(
    "generator_options, message",
    [
        ({"per_original": 0}, "misconfigured: per_original must be at least 1"),
        ({"mode": "broken"}, "mode 'broken' is not supported"),
    ],
)
def test_misconfigured_generator_fails_the_run_at_start(project, generator_options, message):
    run = run_execute(run_id=_run(project, generator_options=generator_options).pk)
    assert run.status == "failed"
    assert message in run.error
    assert run.done == 0 and run.finished_at is not None
    assert not Candidate.objects.exists()


@pytest.mark.parametrize("generator", ["test-echo", "rules"])
def test_a_generator_option_the_generator_does_not_take_is_refused_at_creation(project, generator, monkeypatch):
    """Before, the run was queued and failed in the worker once its models had loaded."""

    def build(*args, **kwargs):
        raise AssertionError("checking the options' names builds no generator (loads no model)")

    monkeypatch.setattr(registry, "create", build)
    with pytest.raises(ValidationError) as exc:
        run_create(project=project, generator=generator, options={"generator_options": {"colour": "red"}})
    [message] = exc.value.message_dict["generator_options"]
    assert message.startswith(f"generator {generator!r} does not take option(s) colour; it takes: ")
    assert not GenerationRun.objects.exists() and not Job.objects.exists()


def test_unavailable_generator_module_fails_only_that_generator(project):
    registry.register("ghost", module="generation.ml.no_such_generator_module")
    try:
        run = run_execute(run_id=run_create(project=project, generator="ghost", options={"filters": NO_SIM}).pk)
        assert run.status == "failed" and "generator 'ghost' is not available" in run.error
        ok = run_execute(run_id=_run(project).pk)
        assert ok.status == "succeeded"
    finally:
        registry.unregister("ghost")


# -- resume ------------------------------------------------------------------------------
def test_killed_mid_run_resumes_without_duplicates_and_with_full_coverage(project):
    run = _run(project, batch_size=2, generator_options={"crash_at": "ex-007"})
    with pytest.raises(SystemExit):
        run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "running"  # the worker "died": nothing marked it finished
    assert run.done == 6  # three batches of two committed; the fourth (ex-006, ex-007) rolled back
    assert run.metrics["cursor"] == project.examples.get(external_id="ex-005").pk
    assert Candidate.objects.filter(job_id=run.job_id).count() == 18
    # Its heartbeat is fresh, so a redelivered message does not take it over yet ...
    assert run_execute(run_id=run.pk).status == "running" and Candidate.objects.count() == 18
    # ... once the heartbeat is stale (the executor is dead), the same run id executes again.
    Job.objects.filter(pk=run.job_id).update(heartbeat_at=timezone.now() - timedelta(minutes=5))
    run = run_execute(run_id=run.pk)
    assert run.status == "succeeded" and (run.done, run.total) == (10, 10)
    assert run.job.attempts == 2
    ids = list(Candidate.objects.filter(job_id=run.job_id).values_list("external_id", flat=True))
    assert len(ids) == len(set(ids)) == 30
    per = Counter(Candidate.objects.filter(job_id=run.job_id).values_list("example__external_id", flat=True))
    assert per == {f"ex-{i:03d}": 3 for i in range(10)}
    assert run.metrics["candidates"] == 30  # metrics are computed from the stored rows


def test_finished_run_is_not_executed_again(project):
    run = run_execute(run_id=_run(project).pk)
    before = Candidate.objects.count()
    again = run_execute(run_id=run.pk)
    assert again.status == "succeeded" and Candidate.objects.count() == before


def test_a_second_executor_of_the_same_run_stops_without_writing(project):
    run = _run(project, batch_size=2)

    def other_executor_wrote_a_batch(r):
        if r.done == 2:  # simulate another worker committing the next batch meanwhile
            Job.objects.filter(pk=r.job_id).update(done=4)

    result = run_execute(run_id=run.pk, on_progress=other_executor_wrote_a_batch)
    assert result.status == "running" and result.done == 4
    assert Candidate.objects.filter(job_id=run.job_id).count() == 6  # only its own first batch


# -- cancel ------------------------------------------------------------------------------
def test_cancel_stops_at_the_next_batch(project):
    run = _run(project, batch_size=2)
    result = run_execute(run_id=run.pk, on_progress=lambda r: r.done == 4 and run_cancel(run=r))
    assert result.status == "cancelled" and result.done == 4 and result.cancel_requested
    assert Candidate.objects.filter(job_id=run.job_id).count() == 12
    assert result.metrics["candidates"] == 12


def test_cancel_a_queued_run_and_a_finished_one(project):
    run = run_cancel(run=_run(project))
    assert run.status == "cancelled" and run.finished_at
    assert run_execute(run_id=run.pk).status == "cancelled"
    assert not Candidate.objects.exists()
    done = run_execute(run_id=_run(project).pk)
    assert run_cancel(run=done).status == "succeeded"


# -- filters -----------------------------------------------------------------------------
class FixedGenerator:
    """Yields exactly the candidates given (per original id) — to test the filters."""

    name = "test-fixed"

    def __init__(self, outputs: dict) -> None:
        self.outputs = outputs

    def generate(self, originals):
        for o in originals:
            for fields, target in self.outputs.get(o.id, []):
                yield GeneratedCandidate(o.id, fields, "test-fixed", "lexical", target)


def test_filters_score_every_candidate_and_keep_the_filtered_ones(db):
    p = make_project(name="filt", n=1)  # ex-000: premise/hypothesis "<field> number 0 is a plain sentence"
    prem, hyp = "premise number 0 is a plain sentence", "hypothesis number 0 is a plain sentence"
    outputs = {
        "ex-000": [
            ({"premise": prem, "hypothesis": "hypothesis number 0 is a lovely sentence"}, None),  # kept
            ({"premise": prem, "hypothesis": hyp}, None),  # identical to the original
            ({"premise": prem, "hypothesis": "Hypothesis number 0 is a lovely sentence!"}, None),  # near dup
            ({"premise": prem, "hypothesis": "completely different words here"}, None),  # too dissimilar
            (
                {"premise": prem, "hypothesis": "hypothesis number 0 is not a plain sentence"},
                "contradiction",
            ),  # shortcut
            ({"premise": prem, "hypothesis": prem}, None),  # copies the premise
        ]
    }
    registry.register("test-fixed", factory=lambda: FixedGenerator(outputs))
    try:
        run = run_create(project=p, generator="test-fixed", options={"similarity_band": "0.3,0.99"})
        run = run_execute(run_id=run.pk, encoder=FakeEncoder())
    finally:
        registry.unregister("test-fixed")
    cands = list(Candidate.objects.filter(job_id=run.job_id).order_by("external_id"))
    assert [c.state for c in cands] == [states.POOLED] + [states.FILTERED_OUT] * 5
    failed = [sorted(k for k, ok in c.meta["filters"].items() if not ok) for c in cands]
    assert failed == [[], ["dedup", "similarity"], ["dedup"], ["similarity"], ["artifacts"], ["artifacts"]]
    for c in cands:
        assert {"similarity", "dedup", "artifacts"} <= set(c.scores)
    assert "negation shortcut to contradiction: not" in cands[4].meta["filter_reasons"]
    assert "hypothesis copies premise" in cands[5].meta["filter_reasons"]
    assert cands[0].scores["similarity"] == pytest.approx(6 / 8)
    m = run.metrics
    assert m["candidates"] == 6 and m["accepted"] == 1 and m["filtered_out"] == 5
    assert m["accepted_all_filters"] == pytest.approx(1 / 6, abs=1e-3)
    assert m["acceptance_by_filter"]["dedup"] == pytest.approx(4 / 6, abs=1e-3)
    assert m["acceptance_by_filter"]["artifacts"] == pytest.approx(4 / 6, abs=1e-3)


def test_dedup_against_another_run_of_the_same_originals(project):
    first = run_execute(run_id=_run(project).pk)
    second = run_execute(run_id=_run(project).pk)
    assert Candidate.objects.filter(job_id=first.job_id, state=states.POOLED).count() == 30
    assert Candidate.objects.filter(job_id=second.job_id, state=states.POOLED).count() == 0
    assert second.metrics["acceptance_by_filter"]["dedup"] == 0.0


def test_similarity_filter_loads_minilm_failure_fails_at_start(project, settings):
    settings.COUNTERPART = {**settings.COUNTERPART, "MINILM_PATH": "/nonexistent/minilm"}
    from projects.ml import embeddings

    embeddings._shared.clear()
    run = run_execute(run_id=run_create(project=project, generator="test-echo", options={}).pk)
    assert run.status == "failed" and "MiniLM" in run.error


# -- metrics and progress ----------------------------------------------------------------
def test_run_metrics_are_stored(project):
    run = run_execute(run_id=_run(project, filters="similarity,dedup,artifacts").pk, encoder=FakeEncoder())
    m = run.metrics
    assert m["candidates"] == 30 and m["candidates_per_original"] == 3.0
    assert m["share_per_code"] == {
        "insert": pytest.approx(1 / 3, abs=1e-3),
        "lexical": pytest.approx(1 / 3, abs=1e-3),
        "negation": pytest.approx(1 / 3, abs=1e-3),
    }
    assert set(m["acceptance_by_filter"]) == {"similarity", "dedup", "artifacts"}
    # every candidate changes the premise (the first field): "<premise> variant k"
    assert m["mean_token_edit_distance"] == 2.0
    assert 0 < m["distinct_1"] < 1 and 0 < m["distinct_2"] < 1
    assert 0 < m["self_bleu"] <= 1
    assert 0.75 < m["mean_similarity"] < 0.9  # FakeEncoder: token Jaccard, 7/9 or 7/8
    assert m["introduced_top"] == "variant" and m["introduced_max_share"] == 0.5
    assert m["all_candidates"]["candidates"] == 30


def test_metrics_match_the_metrics_module_on_the_same_candidates(project):
    """The streaming accumulation gives what generation.ml.metrics.run_metrics gives."""
    from generation.ml import metrics as ml_metrics

    run = run_execute(run_id=_run(project, filters="dedup").pk)
    stats = []
    for c in Candidate.objects.filter(job_id=run.job_id).select_related("example").order_by("pk"):
        a, b = ml_filters.comparison_texts(c.example.fields, c.fields, c.meta)
        stats.append(ml_metrics.CandidateStat(a, b, c.perturbation, kept=c.meta["filters"]))
    ref = ml_metrics.run_metrics(10, stats)
    mine = run.metrics["all_candidates"]
    for key in (
        "distinct_1",
        "distinct_2",
        "self_bleu",
        "mean_token_edit_distance",
        "introduced_distinct_1",
        "introduced_max_share",
        "introduced_top",
    ):
        assert mine[key] == (pytest.approx(ref[key], abs=1e-3) if isinstance(ref[key], float) else ref[key]), key
    assert run.metrics["acceptance_by_filter"] == ref["acceptance_by_filter"]
    assert run.metrics["share_per_code"] == pytest.approx(ref["share_per_code"], abs=1e-3)


def test_progress_rate_and_eta(project):
    run = _run(project)
    now = timezone.now()
    Job.objects.filter(pk=run.job_id).update(status="running", total=10, done=4, started_at=now - timedelta(seconds=8))
    run.refresh_from_db()
    p = run_progress(run=run, now=now)
    assert (p.done, p.total, p.percent) == (4, 10, 40)
    assert p.rate == pytest.approx(0.5) and p.eta_seconds == pytest.approx(12.0)
    assert not p.finished
    Job.objects.filter(pk=run.job_id).update(status="cancelled")  # else the next run waits behind it
    finished = run_execute(run_id=_run(project).pk)
    p2 = run_progress(run=finished)
    assert p2.finished and p2.eta_seconds is None and p2.percent == 100 and p2.candidates == 30
    assert next(iter(runs_of_project(project=project))) == finished


# -- the real "rules" generator ------------------------------------------------------------
RULES_NLI = [
    ("A man is playing a guitar on the stage.", "The man is performing music."),
    ("Two dogs are running through a snowy field.", "Some animals are outside in the cold."),
    ("A woman is reading a book in the park.", "A person is holding a book."),
    ("Children are laughing at the clown.", "The kids are happy."),
    ("Hi.", "Ok."),  # too short to perturb: a skip with a reason
]


@pytest.fixture
def rules_project(db):
    from projects.services.projects import project_create

    p = project_create(name="rules-nli", task="nli")
    ent = p.labels.get(name="entailment")
    Example.objects.bulk_create(
        [
            Example(project=p, external_id=f"r{i}", label=ent, fields={"premise": a, "hypothesis": b})
            for i, (a, b) in enumerate(RULES_NLI)
        ]
    )
    return p


@pytest.mark.slow  # real WordNet and POS tagger
def test_real_rules_generator_through_the_run(rules_project):
    from generation.ml.rules import CODES

    run = run_create(
        project=rules_project,
        generator="rules",
        options={"filters": "dedup,artifacts", "max_per_original": 6, "seed": 3},
    )
    run = run_execute(run_id=run.pk)
    assert run.status == "succeeded", run.error
    assert (run.done, run.total) == (5, 5)
    cands = Candidate.objects.filter(job_id=run.job_id)
    assert cands.filter(state=states.POOLED).exists()
    assert set(cands.values_list("generator", flat=True)) == {"rules"}
    assert set(cands.values_list("perturbation", flat=True)) <= set(CODES)
    per = Counter(cands.values_list("example__external_id", flat=True))
    assert all(1 <= per[f"r{i}"] <= 6 for i in range(4))
    assert [s["example"] for s in run.skips] == ["r4"] and "short" in run.skips[0]["reason"]
    for c in cands:
        assert c.fields.keys() == {"premise", "hypothesis"} and c.fields != c.example.fields
    assert run.metrics["candidates"] == cands.count() and run.metrics["share_per_code"]


def test_real_rules_generator_misconfigured_fails_at_start(rules_project):
    run = run_create(project=rules_project, generator="rules", options={"generator_options": {"codes": ["bogus"]}})
    run = run_execute(run_id=run.pk)
    assert run.status == "failed" and "unknown control code" in run.error and run.done == 0


@pytest.mark.slow
def test_real_rules_with_real_minilm_similarity_band(rules_project):
    run = run_create(project=rules_project, generator="rules", options={"similarity_band": "0.6,0.99", "seed": 1})
    run = run_execute(run_id=run.pk)
    assert run.status == "succeeded", run.error
    cands = list(Candidate.objects.filter(job_id=run.job_id))
    assert cands
    for c in cands:
        sim = c.scores["similarity"]
        assert -1.0 <= sim <= 1.0
        assert c.meta["filters"]["similarity"] == (0.6 < sim <= 0.99)
        assert (c.state == states.POOLED) == all(c.meta["filters"].values())
    assert 0.0 < run.metrics["mean_similarity"] <= 1.0


def test_one_pass_self_bleu_equals_leave_one_out_bleu():
    """``self_bleu_all`` (one pass over the n-grams) against its definition: the mean of
    ``bleu`` of each text against all the others."""
    import random

    from generation.ml import metrics as ml_metrics
    from generation.ml.rules.tokens import words

    rng = random.Random(0)
    vocab = "a man dog is not running the park blue red sits on".split()
    for _ in range(20):
        texts = [" ".join(rng.choice(vocab) for _ in range(rng.randint(0, 9))) for _ in range(rng.randint(2, 12))]
        toks = [words(t) for t in texts]
        by_definition = sum(ml_metrics.bleu(h, toks[:i] + toks[i + 1 :]) for i, h in enumerate(toks)) / len(toks)
        assert ml_metrics.self_bleu_all(texts) == pytest.approx(by_definition, abs=1e-9), texts


# -- registry ------------------------------------------------------------------------------
def test_registry_lists_builtins_and_checks_names():
    from generation.ml.base import GeneratorConfigError

    assert {"rules", "rationale-infill", "llm-prompt", "concept-constrained"} <= set(registry.names())
    with pytest.raises(GeneratorConfigError, match="unknown generator 'nope'"):
        registry.create("nope")
    with pytest.raises(ValueError):
        registry.register("x", factory=EchoGenerator, module="a.b")
    assert registry.options_for("test-echo")["per_original"] == 3


def test_registry_context_fills_only_named_parameters_and_run_options_reach_kwargs():
    class Named:
        name = "named"

        def __init__(self, mlm_path: str = "", seed: int = 0) -> None:
            self.mlm_path, self.seed = mlm_path, seed

        def generate(self, originals):
            return iter(())

    class Kw:
        name = "kw"

        def __init__(self, **options) -> None:
            if set(options) - {"seed", "max_per_original", "codes"}:
                raise TypeError(f"unexpected keyword argument {sorted(options)[0]!r}")
            self.options = options

        def generate(self, originals):
            return iter(())

    registry.register("named", factory=Named)
    registry.register("kw", factory=Kw)
    try:
        g = registry.create(
            "named", {}, {"mlm_path": "/models/mlm", "device": "cpu"}, run_options={"seed": 5, "max_per_original": 2}
        )
        assert (g.mlm_path, g.seed) == ("/models/mlm", 5)
        k = registry.create("kw", {"codes": ["negation"]}, {"mlm_path": "/x"}, run_options={"seed": 5})
        assert k.options == {"codes": ["negation"], "seed": 5}  # context not forced into **kwargs
    finally:
        registry.unregister("named")
        registry.unregister("kw")


def test_unregister_restores_a_builtin():
    registry.register("rules", factory=EchoGenerator)
    registry.unregister("rules")
    assert registry.entry("rules").module == "generation.ml.rules"


def test_apply_filters_directly():
    o = Original(
        "o", {"premise": "a b c", "hypothesis": "a b"}, "neutral", ("entailment", "neutral", "contradiction"), "nli"
    )
    shortcut = GeneratedCandidate("o", {"premise": "a b c", "hypothesis": "a not b"}, "g", "negation", "contradiction")
    fine = GeneratedCandidate("o", {"premise": "a b c", "hypothesis": "a green b"}, "g", "insert", None)
    same = GeneratedCandidate("o", {"premise": "a b c", "hypothesis": "a green b"}, "g", "insert", None)
    v = run_quality.apply_filters(
        [(o, shortcut), (o, fine), (o, same)], filters=["artifacts", "dedup"], band=(0, 1), encoder=None, existing={}
    )
    assert v[0].passed == {"artifacts": False, "dedup": True} and v[0].scores["artifacts"] == 1.0
    assert v[1].keep and not v[2].keep and v[2].passed["dedup"] is False
    assert [
        x.keep
        for x in run_quality.apply_filters(
            [(o, fine)],
            filters=["dedup"],
            band=(0, 1),
            encoder=None,
            existing={"o": {'{"hypothesis": "a green b", "premise": "a b c"}'}},
        )
    ] == [False]


def test_perplexity_skips_the_exempt_codes_of_a_generator():
    """Issue 31.5: the LM does not score a code of ``PERPLEXITY_EXEMPT`` (it passes, with no
    perplexity score); another generator's code of the same name, or another task's, is scored."""

    class CountingScorer:
        def __init__(self) -> None:
            self.texts: list[str] = []

        def score(self, texts):
            import numpy as np

            self.texts += list(texts)
            return np.array([100.0 if "zzz" in t else 10.0 for t in texts])

    o = Original("o", {"premise": "a b c", "hypothesis": "a b"}, "neutral", ("entailment", "neutral"), "nli")
    routed = GeneratedCandidate("o", {"premise": "a b c", "hypothesis": "a zzz b"}, "rules", "insert", None)
    scored = GeneratedCandidate("o", {"premise": "a b c", "hypothesis": "a zzz zzz b"}, "rules", "lexical", None)
    other = GeneratedCandidate("o", {"premise": "a b c", "hypothesis": "zzz a b"}, "llm-prompt", "insert", None)
    scorer = CountingScorer()
    v = run_quality.apply_filters(
        [(o, routed), (o, scored), (o, other)],
        filters=["perplexity"],
        band=(0, 1),
        encoder=None,
        scorer=scorer,
        perplexity_exempt={("rules", "nli"): frozenset({"insert"})},
    )
    assert v[0].keep and "perplexity" not in v[0].scores
    assert not v[1].keep and not v[2].keep and v[1].scores["perplexity"] == 10.0
    assert not [t for t in scorer.texts if t == "a zzz b"]
    # {} scores every code
    v = run_quality.apply_filters(
        [(o, routed)], filters=["perplexity"], band=(0, 1), encoder=None, scorer=scorer, perplexity_exempt={}
    )
    assert not v[0].keep
    assert run_quality.PERPLEXITY_EXEMPT[("rules", "nli")] <= set(DEFAULT_RULE_CODES)
    # sentiment keeps the LM on every code (round 18): its insert is scored
    s = Original("s", {"text": "a b c"}, "positive", ("negative", "positive"), "sentiment")
    routed_s = GeneratedCandidate("s", {"text": "a zzz b c"}, "rules", "insert", None)
    v = run_quality.apply_filters([(s, routed_s)], filters=["perplexity"], band=(0, 1), encoder=None, scorer=scorer)
    assert not v[0].keep


def test_candidate_scores_and_meta_are_stored_as_plain_json(db):
    import numpy as np

    p = make_project(name="json", n=1)
    out = GeneratedCandidate(
        "ex-000",
        {"premise": "x y z", "hypothesis": "u v"},
        "test-odd",
        "lexical",
        "nope",
        scores={"np": np.float32(0.5), "nan": float("nan")},
        meta={"arr": (1, 2), "obj": object},
    )

    class Odd:
        name = "test-odd"

        def generate(self, originals):
            yield out

    registry.register("test-odd", factory=Odd)
    try:
        run = run_execute(run_id=run_create(project=p, generator="test-odd", options={"filters": "none"}).pk)
    finally:
        registry.unregister("test-odd")
    c = Candidate.objects.get(job_id=run.job_id)
    assert c.scores == {"np": 0.5, "nan": None}
    assert c.meta["arr"] == [1, 2] and isinstance(c.meta["obj"], str)
    assert c.target_label is None and c.meta["target_label_unknown"] == "nope"


@pytest.mark.postgres
def test_two_executors_of_one_run_on_postgresql_write_each_batch_once(transactional_db):
    """Two executors of the same run at once (a person resumed a run whose worker was in fact
    alive: ``take_over``). The first holds its first batch while the second takes the job over
    and finishes it; the first's write is then refused (row lock + token/done check) and it
    stops quietly: every batch is written exactly once."""
    import threading

    from django.db import connection, connections

    from tests.conftest import need

    need(connection.vendor == "postgresql", "needs DATABASE_URL=postgres://... (scripts/test.sh runs these)")
    first_holds = threading.Event()
    second_done = threading.Event()
    made: list[int] = []

    class Racing(EchoGenerator):
        def __init__(self, **kw):
            super().__init__(**kw)
            self.number = len(made)
            made.append(self.number)

        def generate(self, originals):
            if self.number == 0 and self.calls == 0:
                first_holds.set()
                second_done.wait(60)  # holds its first batch until the other executor is done
            return super().generate(originals)

    registry.register("test-echo", factory=Racing)
    p = make_project(name="race", n=20)
    run = _run(p, batch_size=2, generator_options={"delay": 0.01})
    results, errors = [], []

    def execute(resume: bool, done: threading.Event | None = None):
        try:
            results.append(run_execute(run_id=run.pk, resume=resume).status)
        except Exception as exc:  # noqa: BLE001
            errors.append(exc)
        finally:
            connections.close_all()
            if done is not None:
                done.set()

    first = threading.Thread(target=execute, args=(False,))
    first.start()
    assert first_holds.wait(60)
    second = threading.Thread(target=execute, args=(True, second_done))
    second.start()
    for t in (second, first):
        t.join(120)
    assert not errors
    run.refresh_from_db()
    assert (run.status, run.done) == ("succeeded", 20) and run.job.attempts == 2
    assert results == ["succeeded", "succeeded"]  # the superseded one returned without failing the job
    ids = list(Candidate.objects.filter(job_id=run.job_id).values_list("external_id", flat=True))
    assert len(ids) == len(set(ids)) == 60


# -- a limit takes a stratified, seeded sample (generation/ml/sampling.py) ------------------
@pytest.fixture
def sorted_project(db):
    """60 originals whose ids are sorted by label (20 of each), as CAD's files are."""
    return make_project(name="sorted-nli", n=60, split="test", sorted_by_label=True)


def _labels_of_run(run):
    used = Candidate.objects.filter(job_id=run.job_id).values("example_id")
    return Counter(Example.objects.filter(pk__in=used).values_list("label__name", flat=True))


def test_a_limited_run_covers_every_label(sorted_project):
    run = run_execute(run_id=_run(sorted_project, limit=12).pk)
    assert run.status == "succeeded" and (run.done, run.total) == (12, 12)
    assert _labels_of_run(run) == {"entailment": 4, "neutral": 4, "contradiction": 4}
    assert run.metrics["sample_labels"] == {"entailment": 4, "neutral": 4, "contradiction": 4}
    row = ("originals sampled (stratified by label, seeded)", "contradiction 4, entailment 4, neutral 4")
    assert row in run_metrics_rows(run=run)
    # the same seed gives the same originals; another seed others
    assert run_execute(run_id=_run(sorted_project, limit=12).pk).metrics["sample"] == run.metrics["sample"]
    assert run_execute(run_id=_run(sorted_project, limit=12, seed=3).pk).metrics["sample"] != run.metrics["sample"]


def test_no_limit_takes_every_original_by_id(sorted_project):
    run = run_execute(run_id=_run(sorted_project).pk)
    assert run.done == 60 and "sample" not in run.metrics
    assert run.metrics["cursor"] == Example.objects.filter(project=sorted_project).order_by("-pk").first().pk


def test_a_killed_sampled_run_resumes_inside_its_sample(sorted_project):
    rows = list(Example.objects.filter(project=sorted_project).values_list("pk", "label_id"))
    order = stratified_sample(rows, 9, 0)
    # crash on the sample's sixth original: two batches of two committed, the cursor is position 4
    crash_at = Example.objects.get(pk=order[5]).external_id
    run = _run(sorted_project, limit=9, batch_size=2, generator_options={"crash_at": crash_at})
    with pytest.raises(SystemExit):
        run_execute(run_id=run.pk)
    run.refresh_from_db()
    assert run.status == "running" and run.done == 4 and run.metrics["cursor"] == 4
    Job.objects.filter(pk=run.job_id).update(heartbeat_at=timezone.now() - timedelta(minutes=5))
    run = run_execute(run_id=run.pk)
    assert run.status == "succeeded" and (run.done, run.total) == (9, 9)
    assert set(Candidate.objects.filter(job_id=run.job_id).values_list("example_id", flat=True)) == set(order)
    ids = list(Candidate.objects.filter(job_id=run.job_id).values_list("external_id", flat=True))
    assert len(ids) == len(set(ids))
