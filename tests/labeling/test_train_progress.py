"""Issue 20.4: "Train h" reports progress inside its long steps (pairs encoded / total), its
first step before any heavy work, an ETA from the current step's rate, and the warm-start
set's features come from a cache shared across projects the second time (no re-encoding)."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path

import pytest
from django.template.loader import render_to_string
from django.utils import timezone

from labeling import services
from labeling.ml.feature_cache import CHUNK
from labeling.selectors import warm_start_cost
from projects.models import Job
from projects.selectors import job_progress
from projects.services.jobs import JobContext, job_create

from .conftest import FakeEncoder, synthetic_pairs
from .test_services import make_project

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


class CountingEncoder(FakeEncoder):
    """The stand-in encoder, counting the texts it is asked to encode."""

    model_path = "fake-minilm"

    def __init__(self) -> None:
        self.texts = 0

    def encode(self, texts):
        self.texts += len(texts)
        return super().encode(texts)


class Recorder:
    def __init__(self, encoder: CountingEncoder) -> None:
        self.encoder = encoder
        self.events: list[tuple[str, str, int, int]] = []  # (kind, step, done/total, texts so far)
        self.current = ""

    def step(self, name, *, index, count, total=0, unit="", plan=()):
        assert len(plan) == count and plan[index - 1] == name  # every step named (issue 32.6)
        self.current = name
        self.events.append(("step", name, index, self.encoder.texts))

    def step_progress(self, done, total=None):
        self.events.append(("progress", self.current, done, self.encoder.texts))

    def updates(self, step: str) -> list[int]:
        return [n for kind, name, n, _ in self.events if kind == "progress" and name == step]

    def texts_during(self, step: str) -> int:
        starts = [i for i, e in enumerate(self.events) if e[0] == "step"]
        i = next(i for i in starts if self.events[i][1] == step)
        nxt = next((j for j in starts if j > i), None)
        end = self.events[nxt][3] if nxt is not None else self.encoder.texts
        return end - self.events[i][3]


@pytest.fixture
def encoder(monkeypatch, settings, tmp_path):
    settings.COUNTERPART = {
        **settings.COUNTERPART,
        "MODEL_DIR": str(tmp_path / "models"),
        "EMBEDDING_CACHE_DIR": str(tmp_path / "embeddings"),
    }
    enc = CountingEncoder()
    monkeypatch.setattr(services, "embedder", lambda: enc)
    services._WARM_CACHES.clear()
    yield enc
    services._WARM_CACHES.clear()


def warm_file(path: Path, n: int) -> str:
    pairs, ys = synthetic_pairs(n, seed=11)
    with path.open("w") as fh:
        for i, (p, y2) in enumerate(zip(pairs, ys, strict=True)):
            row = {
                "id": f"w{i}",
                "original": {"fields": p.original, "label": p.y},
                "counterfactual": {"fields": p.counterfactual, "label": y2, "label_source": "human"},
            }
            fh.write(json.dumps(row) + "\n")
    return f"pairs-jsonl:{path}"


WARM_STEP = "encoding the warm-start pairs"


def test_progress_is_reported_inside_the_warm_start_step(encoder, tmp_path):
    spec = warm_file(tmp_path / "warm.jsonl", 2 * CHUNK + 50)
    project, _ = make_project(n_pairs=80, n_human=30)
    rec = Recorder(encoder)
    model = services.pairwise_train(project=project, mode="capc", warm_start=spec, progress=rec)
    steps = [name for kind, name, _, _ in rec.events if kind == "step"]
    assert steps == services.train_steps(mode="capc", warm_start=spec)
    # the first report comes before any text is encoded (the job box moves at once)
    assert rec.events[0][0] == "step" and rec.events[0][3] == 0
    done = rec.updates(WARM_STEP)
    assert done == [0, CHUNK, 2 * CHUNK, 2 * CHUNK + 50]  # chunk by chunk, up to every pair
    assert model.n_warm == 2 * CHUNK + 50 and model.metrics["warm_features_cached"] is False
    assert rec.updates("encoding the project's pairs")[-1] == 30  # the human-labelled pairs (no siblings)
    # f's step embeds the originals (80 of the project, 2 * CHUNK + 50 of the warm start) with progress
    f_step = rec.updates("training f on the labelled originals")
    assert f_step[0] == 0 and f_step[-1] == 80 + 2 * CHUNK + 50 and len(f_step) >= 2
    assert rec.texts_during("training f on the labelled originals") > 0


def test_a_second_train_with_the_same_warm_start_reuses_its_features(encoder, tmp_path):
    spec = warm_file(tmp_path / "warm.jsonl", 300)
    first, _ = make_project(n_pairs=60, n_human=30, name="first")
    rec1 = Recorder(encoder)
    services.pairwise_train(project=first, mode="pc", warm_start=spec, progress=rec1)
    assert rec1.texts_during(WARM_STEP) > 0
    services._WARM_CACHES.clear()  # as a new worker process: only the disk cache is left
    second, _ = make_project(n_pairs=60, n_human=30, name="second")
    rec2 = Recorder(encoder)
    model = services.pairwise_train(project=second, mode="pc", warm_start=spec, progress=rec2)
    assert rec2.texts_during(WARM_STEP) == 0  # no warm-start pair went through the encoder
    assert model.metrics["warm_features_cached"] is True and model.n_warm == 300
    assert rec2.updates(WARM_STEP) == [300]
    assert "features cached" in warm_start_cost(spec=spec)


def test_a_changed_warm_start_file_is_encoded_again(encoder, tmp_path):
    path = tmp_path / "warm.jsonl"
    spec = warm_file(path, 200)
    project, _ = make_project(n_pairs=60, n_human=30)
    services.pairwise_train(project=project, mode="pc", warm_start=spec)
    lines = path.read_text().splitlines()
    path.write_text("\n".join(lines[:150]) + "\n")
    rec = Recorder(encoder)
    model = services.pairwise_train(project=project, mode="pc", warm_start=spec, progress=rec)
    assert model.metrics["warm_features_cached"] is False and model.n_warm == 150
    assert rec.texts_during(WARM_STEP) > 0


def test_the_eta_is_the_current_steps_rate(encoder):
    project, _ = make_project(n_pairs=20, n_human=20)
    job = job_create(kind="train", project=project, total=5)
    now = timezone.now()
    Job.objects.filter(pk=job.pk).update(status="running", token="t", started_at=now - timedelta(hours=1))
    ctx = JobContext(job_id=job.pk, token="t")
    ctx.step("encoding the warm-start pairs", index=3, count=5, total=200, unit="pairs")
    job.refresh_from_db()
    assert (job.done, job.total) == (2, 5)
    step = dict(job.step, started_at=(now - timedelta(seconds=10)).isoformat(), done=50)
    Job.objects.filter(pk=job.pk).update(step=step)
    job.refresh_from_db()
    p = job_progress(job=job, now=now)
    # 50 pairs in the step's 10 s: 5 pairs/s and 30 s for the other 150 — not the job's hour
    assert p.rate == 5.0 and p.eta_seconds == 30.0 and p.step["name"] == "encoding the warm-start pairs"
    html = render_to_string("projects/_job.html", {"job": job, "progress": p})
    assert "step 3 of 5: encoding the warm-start pairs — 50 / 200 pairs" in html
    assert "about 30 s left in this step" in html


def test_step_progress_is_written_for_the_job(encoder):
    project, _ = make_project(n_pairs=20, n_human=20)
    job = job_create(kind="train", project=project, total=5)
    Job.objects.filter(pk=job.pk).update(status="running", token="t", started_at=timezone.now())
    ctx = JobContext(job_id=job.pk, token="t")
    ctx.step("encoding the project's pairs", index=4, count=5, total=40, unit="pairs")
    ctx.step_progress(40)  # the end of a step is always written
    job.refresh_from_db()
    assert job.step["done"] == 40 and job.step["total"] == 40


def test_the_train_form_shows_the_warm_starts_cost(encoder, settings, tmp_path):
    from django.test import Client

    from tests.annotate.factories import researcher

    cad = Path(settings.COUNTERPART["SHARED_DATA_DIR"]) / "cad"
    if not (cad / "NLI" / "original" / "train.tsv").is_file():
        settings.COUNTERPART = {**settings.COUNTERPART, "SHARED_DATA_DIR": str(tmp_path / "shared")}
        nli = tmp_path / "shared" / "cad" / "NLI"
        for part in ("original", "revised_premise", "revised_hypothesis"):
            (nli / part).mkdir(parents=True)
            rows = ["sentence1\tsentence2\tgold_label"] + [f"p {i}\th {i}\tneutral" for i in range(1200)]
            (nli / part / "train.tsv").write_text("\n".join(rows) + "\n")
    project, _ = make_project(n_pairs=20, n_human=20)
    c = Client()
    c.force_login(researcher())
    html = c.get(f"/labeling/projects/{project.pk}/flip-rates/").content.decode()
    assert "min the first time" in html and "then seconds (cached)" in html
