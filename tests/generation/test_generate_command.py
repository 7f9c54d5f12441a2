"""The ``generate`` management command: foreground with a progress bar, --async, errors."""

from __future__ import annotations

from collections import Counter
from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from generation.ml import registry
from generation.models import GenerationRun
from projects.models import Candidate, Job
from tests.generation.run_fixtures import (
    EchoGenerator,
    make_project,
    register_test_generators,
)

pytestmark = pytest.mark.postgres_too


@pytest.fixture(autouse=True)
def _generators():
    register_test_generators()
    EchoGenerator.crashed.clear()
    yield
    registry.unregister("test-echo")


@pytest.fixture
def project(db):
    return make_project(name="cmd", n=6)


def _call(*args):
    out, err = StringIO(), StringIO()
    call_command("generate", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_foreground_run_with_options_and_progress_bar(project):
    out, err = _call(
        "--project",
        "cmd",
        "--generator",
        "test-echo",
        "--limit",
        "4",
        "--max-per-original",
        "2",
        "--seed",
        "7",
        "--filters",
        "dedup,artifacts",
        "--batch-size",
        "2",
        "--option",
        "per_original=3",
    )
    run = GenerationRun.objects.get()
    assert run.status == "succeeded" and (run.done, run.total) == (4, 4)
    assert run.options["seed"] == 7 and run.options["generator_options"] == {"per_original": 3}
    assert Candidate.objects.count() == 8
    assert f"run {run.pk} succeeded: 4/4 originals, 0 skipped, 8 candidates, 8 accepted" in out
    assert "acceptance by filter: artifacts 100%, dedup 100%" in out
    assert "4/4" in err  # the tqdm bar


def test_similarity_band_option_is_parsed(project):
    _call(
        "--project",
        "cmd",
        "--generator",
        "test-echo",
        "--similarity-band",
        "0.2,0.95",
        "--filters",
        "none",
        "--no-progress",
    )
    run = GenerationRun.objects.get()
    assert run.options["similarity_band"] == [0.2, 0.95] and run.options["filters"] == []


def test_async_enqueues_and_prints_the_job_id_last(project, django_capture_on_commit_callbacks):
    """The last line is the job id (it was the run id, which /api/v1/jobs/ does not address);
    the message before it names both."""
    Job.objects.create(kind="export", project=project, status="succeeded")  # so that the run's id and its job's differ
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        out, _ = _call("--project", "cmd", "--generator", "test-echo", "--filters", "none", "--async")
    run = GenerationRun.objects.get()
    assert len(callbacks) == 1 and run.job_id != run.pk
    *message, last = out.strip().splitlines()
    assert last == str(run.job_id)
    assert f"run {run.pk} queued as job {run.job_id} on the generation queue" in message[-1]
    run.refresh_from_db()
    assert run.status == "succeeded"  # eager Celery in unit tests ran the task on commit


def test_async_with_broker_down_fails_loudly(transactional_db, monkeypatch):
    from projects import tasks

    make_project(name="cmd", n=2)

    def down(*a, **k):
        raise ConnectionError("broker unreachable")

    monkeypatch.setattr(tasks.job_execute_task, "apply_async", down)
    with pytest.raises(CommandError, match="broker is unreachable"):  # autocommit: on_commit runs at once
        _call("--project", "cmd", "--generator", "test-echo", "--async")
    run = GenerationRun.objects.get()
    assert run.status == "failed" and "could not enqueue" in run.error
    assert not Candidate.objects.exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["--project", "nope", "--generator", "test-echo"], "no project named 'nope'"),
        (["--project", "cmd", "--generator", "nope"], "unknown generator 'nope'"),
        (["--project", "cmd", "--generator", "test-echo", "--similarity-band", "0.9,0.1"], "similarity_band"),
        (
            ["--project", "cmd", "--generator", "test-echo", "--option", "colour=red", "--filters", "none"],
            "does not take option(s) colour",
        ),
        (["--generator", "test-echo"], "--project and --generator are required"),
    ],
)
def test_errors_are_command_errors(project, args, message):
    with pytest.raises(CommandError) as exc:
        _call(*args)
    assert message in str(exc.value)
    assert not GenerationRun.objects.exists()  # refused before a run is created, --async or not
    with pytest.raises(CommandError) as exc:
        _call(*args, "--async")
    assert message in str(exc.value) and not GenerationRun.objects.exists()


def test_resume_an_interrupted_run(project):
    with pytest.raises(SystemExit):
        _call(
            "--project",
            "cmd",
            "--generator",
            "test-echo",
            "--filters",
            "none",
            "--batch-size",
            "2",
            "--option",
            "crash_at=ex-003",
            "--no-progress",
        )
    run = GenerationRun.objects.get()
    assert run.status == "running" and run.done == 2
    _call("--resume", str(run.pk), "--no-progress")
    run.refresh_from_db()
    assert run.status == "succeeded" and Candidate.objects.count() == 18
    assert len(set(Candidate.objects.values_list("external_id", flat=True))) == 18


def test_limit_takes_a_stratified_seeded_sample(db):
    make_project(name="sorted", n=30, sorted_by_label=True)  # ids sorted by label, as in CAD
    _call("--project", "sorted", "--generator", "test-echo", "--limit", "6", "--seed", "2", "--filters", "none")
    run = GenerationRun.objects.get()
    used = set(Candidate.objects.filter(job_id=run.job_id).values_list("example__label__name", "example_id"))
    assert sorted(Counter(label for label, _ in used).values()) == [2, 2, 2]
    assert run.metrics["sample_labels"] == {"entailment": 2, "neutral": 2, "contradiction": 2}
