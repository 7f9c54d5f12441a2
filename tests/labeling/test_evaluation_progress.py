"""Issue 25, item 5: the evaluation job reports progress while it runs — the texts it encodes
(step 1), then each f' fit (step 2) — instead of 0/N until the first fit, near its end."""

from __future__ import annotations

import pytest

from labeling import evaluation, services
from projects.models import Job
from projects.services.jobs import JobContext

from .conftest import FakeEncoder
from .test_evaluation import api
from .test_services import make_project

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def test_the_evaluation_reports_encoding_then_fits(monkeypatch, settings, tmp_path, django_capture_on_commit_callbacks):
    settings.COUNTERPART = {**settings.COUNTERPART, "MODEL_DIR": str(tmp_path / "models")}
    monkeypatch.setattr(services, "embedder", lambda: FakeEncoder())
    monkeypatch.setattr(evaluation, "embedder", lambda: FakeEncoder())
    monkeypatch.setattr(evaluation, "ENCODE_CHUNK", 16)
    calls: list[tuple[str, int, int]] = []
    step, step_progress = JobContext.step, JobContext.step_progress

    def record_step(self, name, *, index, count, total=0, unit="", plan=()):
        calls.append(("step", index, total))
        assert list(plan) == list(evaluation.STEPS)  # every step named from the start
        return step(self, name, index=index, count=count, total=total, unit=unit, plan=plan)

    def record_progress(self, done, total=None):
        calls.append(("progress", done, total or 0))
        return step_progress(self, done, total)

    monkeypatch.setattr(JobContext, "step", record_step)
    monkeypatch.setattr(JobContext, "step_progress", record_progress)

    project, _ = make_project(n_pairs=160, n_human=40)
    with django_capture_on_commit_callbacks(execute=True):
        resp = api().post(
            f"/api/v1/projects/{project.pk}/evaluate/",
            {"evals": ["project"], "budget": 0.25, "seeds": 2, "classifier": "tfidf-lr"},
            format="json",
        )
    job = Job.objects.get(pk=resp.json()["id"])
    assert job.status == "succeeded", job.error
    steps = [i for i, c in enumerate(calls) if c[0] == "step"]
    assert [calls[i][1] for i in steps] == [1, 2]
    encoding = [c for c in calls[steps[0] + 1 : steps[1]] if c[0] == "progress"]
    fixed = calls[steps[0]][2]  # the step's total, given when it starts: it never grows (issue 32.6)
    assert len(encoding) >= 5 and all(0 < done <= fixed and total == 0 for _, done, total in encoding)
    assert encoding[-1][1] == fixed
    assert [d for _, d, _ in encoding] == sorted(d for _, d, _ in encoding)  # it only moves forward
    fits = [c for c in calls[steps[1] + 1 :] if c[0] == "progress"]
    assert [d for _, d, _ in fits] == list(range(1, len(fits) + 1)) and fits[-1][1] == calls[steps[1]][2]
    assert job.step["index"] == 2 and job.step["done"] == job.step["total"] == fits[-1][1]
    assert (job.done, job.total) == (2, 2)  # a succeeded job reads all done (the API, jobs --json), as the box:
    from projects.selectors import job_progress

    p = job_progress(job=job)
    assert (p.done, p.total) == (2, 2) and [s["state"] for s in p.steps] == ["done", "done"]
    assert p.summary == "succeeded · all 2 steps done"


@pytest.mark.parametrize("classifier", ["tfidf-lr", "finetune"])
def test_only_minilm_lr_has_the_test_sets_and_the_export_encoded(classifier):
    """The evaluation's first step encoded the test sets' and the export's texts with MiniLM
    whatever f' was; with tfidf-lr (or finetune) only f and h read embeddings, of the pool's
    pairs, so only those are encoded now."""
    from labeling.ml.augmentation import EvalSet
    from labeling.ml.features import Pair
    from labeling.ml.pairs import LabelledPairs

    fields = ["premise", "hypothesis"]

    def pair(tag: str) -> Pair:
        return Pair({"premise": "p", "hypothesis": f"{tag} o"}, {"premise": "p", "hypothesis": f"{tag} c"}, "neutral")

    pool = LabelledPairs([pair("pool")], ["entailment"])
    export = LabelledPairs([pair("export")], ["entailment"])
    evals = [EvalSet("test", [{"premise": "t", "hypothesis": "test h"}], ["neutral"])]
    assert evaluation._texts(pool, export, evals, fields, classifier) == ["p", "pool o", "pool c"]
    everything = evaluation._texts(pool, export, evals, fields, "minilm-lr")
    assert everything == ["p", "pool o", "pool c", "export o", "export c", "t", "test h"]
