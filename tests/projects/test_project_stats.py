"""Per-project aggregates (issue 20.8): every write path keeps ``CandidateCount`` and
``ProjectStats`` equal to a full recount of the project's candidates (``project_stats_check``
compares both), the pages read them instead of counting the candidates, and a missing or
stale row is recounted once by the first read. Run on SQLite and, with ``DATABASE_URL``, on
PostgreSQL (the concurrent test only there)."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotate.models import Item
from annotate.services import assignments as svc
from annotate.services.routing import project_route
from projects import states
from projects.aggregates import project_stats_check, project_stats_mark_stale, project_stats_recompute
from projects.models import Candidate, CandidateCount, Example, Job, Label, ProjectStats
from projects.selectors import project_counts, project_overview
from projects.services.candidates import candidate_override, candidate_transition, candidates_transition
from projects.services.import_jobs import import_discard, import_start
from projects.services.imports import data_import
from projects.services.jobs import job_execute
from projects.services.projects import project_create
from tests.annotate.factories import annotator, project_with_candidates, researcher

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def assert_exact(project) -> None:
    """The stored aggregates equal a full recount (and are not merely marked stale)."""
    assert project_stats_check(project_id=project.pk) == {}


def fresh(project):
    """Read once, as a page would (recounts a missing row), so later writes are incremental."""
    project_counts(project=project)
    assert ProjectStats.objects.get(project=project).stale is False
    return project


def pairs_file(tmp_path: Path, n: int, *, prefix: str = "p") -> str:
    sources = ["human", "auto", "gold", "imported", None]
    lines = []
    for i in range(n):
        source = sources[i % len(sources)]
        cf: dict = {"fields": {"premise": f"A man {i}.", "hypothesis": f"He sleeps {i}."}}
        if source:
            cf.update(label=["entailment", "neutral", "contradiction"][i % 3], label_source=source)
            if source == "auto":
                cf["confidence"] = 0.9
        lines.append(
            json.dumps(
                {
                    "id": f"{prefix}{i}",
                    "original": {
                        "id": f"{prefix}o{i // 2}",
                        "fields": {"premise": f"A man {i // 2}.", "hypothesis": "He walks."},
                        "label": ["entailment", "neutral", None][i // 2 % 3],  # one original, one label
                    },
                    "counterfactual": cf,
                    "perturbation": ["negation", "lexical"][i % 2],
                    "generator": "human",
                }
            )
        )
    path = tmp_path / f"{prefix}.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return str(path)


# -- the read side --------------------------------------------------------------------------


def test_a_missing_row_is_recounted_once_then_read_without_counting_candidates():
    project = project_with_candidates(n=12, perturbations=("negation", "insert", "delete"))
    assert not ProjectStats.objects.filter(project=project).exists()  # written around the services
    counts = project_counts(project=project)
    assert counts.total == 12 and counts.by_state()[states.POOLED] == 12 and counts.n_examples == 12
    assert_exact(project)
    table = Candidate._meta.db_table
    with CaptureQueriesContext(connection) as ctx:
        overview = project_overview(project=project)
    assert overview["total"] == 12 and overview["n_examples"] == 12
    assert not [q for q in ctx.captured_queries if table in q["sql"]], "the page counted the candidates"


def test_a_stale_row_is_recounted_by_the_next_read():
    project = fresh(project_with_candidates(n=5))
    Candidate.objects.filter(project=project).update(state=states.ROUTED)  # around the services
    project_stats_mark_stale(project_id=project.pk)
    assert project_counts(project=project).by_state()[states.ROUTED] == 5
    assert_exact(project)


def test_overview_figures_match_the_candidates(tmp_path):
    project = project_create(name="o", task="nli")
    data_import(project=project, format="pairs-jsonl", paths=[pairs_file(tmp_path, 30)])
    overview = project_overview(project=project)
    qs = Candidate.objects.filter(project=project)
    assert overview["total"] == qs.count() == 30
    assert overview["n_examples"] == Example.objects.filter(project=project).count() == 15
    for source in ("human", "auto", "imported"):
        assert overview["label_sources"][source] == qs.filter(label_source=source).count()
    assert overview["label_sources"]["with_gold"] == qs.filter(gold_label__isnull=False).count() > 0
    for state, n in overview["by_state"].items():
        assert n == qs.filter(state=state).count()


# -- every write path -----------------------------------------------------------------------


def test_imports_add_their_rows_batch_by_batch(tmp_path, settings):
    project = fresh(project_create(name="i", task="nli"))
    data_import(project=project, format="pairs-jsonl", paths=[pairs_file(tmp_path, 23)], batch_size=4)
    assert ProjectStats.objects.get(project=project).computed_at is not None  # from the first read
    assert_exact(project)
    # a second file: new pairs on new and existing originals, and pairs already there (skipped)
    data_import(project=project, format="pairs-jsonl", paths=[pairs_file(tmp_path, 30)], batch_size=7)
    assert_exact(project)
    assert project_counts(project=project).total == 30


def test_an_import_job_and_its_discard_keep_them(tmp_path):
    project = fresh(project_create(name="j", task="nli"))
    data_import(project=project, format="pairs-jsonl", paths=[pairs_file(tmp_path, 6, prefix="a")])
    job = import_start(project=project, format="pairs-jsonl", paths=[pairs_file(tmp_path, 10, prefix="b")])
    job_execute(job_id=job.pk)
    assert Job.objects.get(pk=job.pk).status == "succeeded"
    assert_exact(project)
    # a discarded job (a cancelled or failed one) takes its originals and candidates away
    assert import_discard(job_id=job.pk) == 10 + 5
    assert_exact(project)
    assert project_counts(project=project).total == 6


def test_a_job_that_writes_candidates_ends_with_a_recount(tmp_path):
    project = project_with_candidates(n=3)
    project_stats_mark_stale(project_id=project.pk)
    job = import_start(project=project, format="pairs-jsonl", paths=[pairs_file(tmp_path, 4)])
    job_execute(job_id=job.pk)
    stats = ProjectStats.objects.get(project=project)
    assert stats.stale is False and stats.computed_at is not None  # recounted by the job, not a read
    assert_exact(project)


def test_a_discard_without_the_job_end_is_incremental(tmp_path):
    project = project_create(name="k", task="nli")
    job = import_start(project=project, format="pairs-jsonl", paths=[pairs_file(tmp_path, 8)])
    job_execute(job_id=job.pk)
    fresh(project)
    import_discard(job_id=job.pk)
    stats = ProjectStats.objects.get(project=project)
    assert (stats.n_examples, CandidateCount.objects.filter(project=project).count()) == (0, 0)
    assert_exact(project)


def test_transitions_overrides_and_single_moves(tmp_path):
    project = fresh(project_with_candidates(n=10, gold=2))
    label = Label.objects.filter(project=project).first()
    ids = list(Candidate.objects.filter(project=project).order_by("id").values_list("id", flat=True))
    candidates_transition(candidates=ids[:4], to=states.ROUTED)
    assert_exact(project)
    candidates_transition(
        candidates=Candidate.objects.filter(pk__in=ids[4:7]),
        to=states.AUTO_LABELED,
        label=label,
        label_source="auto",
        confidence=0.8,
    )
    assert_exact(project)
    candidates_transition(candidates=ids[7:9], to=states.ABSTAINED, confidence=0.2)
    # a move refused by the state machine changes nothing
    candidates_transition(candidates=ids[:2], to=states.FILTERED_OUT)
    assert_exact(project)
    candidate_transition(candidate=Candidate.objects.get(pk=ids[0]), to=states.POOLED)
    assert_exact(project)
    user = researcher()
    for cid, name in ((ids[4], "neutral"), (ids[1], "contradiction"), (ids[8], "entailment")):
        candidate_override(candidate=Candidate.objects.get(pk=cid), label=name, by=user)
        assert_exact(project)
    assert project_counts(project=project).by_state()[states.HUMAN_LABELED] == 3


def test_routing_answers_and_aggregation():
    project = fresh(project_with_candidates(n=6, k=2))
    project_route(project=project, budget=0.5, strategy="random", seed=0)
    assert_exact(project)
    assert project_counts(project=project).by_state()[states.ROUTED] == 3
    users = [annotator(project) for _ in range(2)]
    for _ in range(3):
        for u in users:
            a = svc.assignment_next(project=project, annotator=u)
            svc.annotation_submit(assignment_id=a.pk, annotator=u, choice="neutral", duration_ms=900)
            assert_exact(project)
    assert Item.objects.filter(project=project, status="complete").count() == 3
    counts = project_counts(project=project)
    assert counts.by_state()[states.HUMAN_LABELED] == 3
    assert sum(c.n for c in counts.cells if c.label_source == "human" and c.label == "neutral") == 3


@pytest.mark.parametrize("recount_at_end", [True, False])
def test_generation_runs_keep_them(recount_at_end, monkeypatch):
    """With the recount at the job's end, and without it (the batches alone keep the cells)."""
    from generation.ml import registry
    from generation.services.runs import run_create, run_execute
    from projects.services import jobs
    from tests.generation.run_fixtures import make_project, register_test_generators

    if not recount_at_end:
        monkeypatch.setattr(jobs, "_stats_recompute", lambda job_id, project_id: None)
    register_test_generators()
    try:
        project = fresh(make_project(n=6))
        run = run_create(project=project, generator="test-echo", options={"filters": ["dedup", "artifacts"]})
        run_execute(run_id=run.pk)
        assert Candidate.objects.filter(project=project).count() > 0
        assert_exact(project)
    finally:
        registry.unregister("test-echo")


def test_autolabel_keeps_them(monkeypatch, settings, tmp_path):
    from labeling import services as labeling
    from tests.labeling.conftest import FakeEncoder
    from tests.labeling.test_services import make_project

    settings.COUNTERPART = {**settings.COUNTERPART, "MODEL_DIR": str(tmp_path / "models")}
    monkeypatch.setattr(labeling, "embedder", lambda: FakeEncoder())
    project, _ = make_project(n_pairs=80, n_human=40)
    fresh(project)
    labeling.pairwise_train(project=project, mode="pc")
    labeling.autolabel(project=project, min_confidence=0.6, chunk_size=7)
    counts = project_counts(project=project).by_state()
    assert counts[states.AUTO_LABELED] + counts[states.ABSTAINED] == 40
    assert_exact(project)


def test_the_recount_command(capsys):
    project = project_with_candidates(n=4)
    with pytest.raises(CommandError, match="differ"):
        call_command("project_stats", "--check")
    assert "stale" in capsys.readouterr().out
    call_command("project_stats")
    assert_exact(project)
    Candidate.objects.filter(project=project).update(state=states.ROUTED)  # around the services
    with pytest.raises(CommandError):
        call_command("project_stats", "--check", "--project", project.name)
    out = capsys.readouterr().out
    assert "differ" in out and "routed" in out
    call_command("project_stats", "--project", project.name)
    assert_exact(project)


def test_a_recount_replaces_wrong_cells():
    project = fresh(project_with_candidates(n=3))
    CandidateCount.objects.filter(project=project).update(n=99)
    assert project_stats_check(project_id=project.pk)
    project_stats_recompute(project_id=project.pk)
    assert_exact(project)


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_concurrent_writers_keep_them_exact(require_postgres):
    """Overrides, transitions and a recount racing on one project (PostgreSQL: real row locks)."""
    project = fresh(project_with_candidates(name="race", n=60))
    ids = list(Candidate.objects.filter(project=project).order_by("id").values_list("id", flat=True))
    user = researcher()
    errors: list[Exception] = []

    def run(fn) -> None:
        try:
            fn()
        except Exception as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)
        finally:
            connection.close()

    def overrides(part: list[int]) -> None:
        for cid in part:
            candidate_override(candidate=Candidate.objects.get(pk=cid), label="neutral", by=user)

    def routes(part: list[int]) -> None:
        for cid in part:
            candidates_transition(candidates=[cid], to=states.ROUTED)

    def recounts() -> None:
        for _ in range(5):
            project_stats_recompute(project_id=project.pk)

    threads = [
        threading.Thread(target=run, args=(lambda: overrides(ids[0:30:2]),)),
        threading.Thread(target=run, args=(lambda: overrides(ids[1:30:2]),)),
        threading.Thread(target=run, args=(lambda: routes(ids[20:60]),)),
        threading.Thread(target=run, args=(recounts,)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    assert_exact(project)
