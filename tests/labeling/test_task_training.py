"""The project's task model f (issue 26): task training data kept apart from the pool, the
leak strip, training as a service and a job (progress, cancel, cache hit), and the API
(202/400/403/409). A tiny random BERT stands in for MiniLM."""

from __future__ import annotations

import io
import json

import pytest
from rest_framework.test import APIClient

from annotate.services.routing import project_route
from labeling import task_training as T
from labeling.models import TaskModel, TaskTrainingExample
from projects.models import Candidate, Example, Job
from projects.selectors import project_counts
from projects.services.exports import data_export
from projects.services.jobs import JobContext, job_create, job_execute
from projects.services.projects import project_create
from tests.annotate.factories import annotator, login, researcher

from ._tiny_bert import save_tiny_bert
from .test_services import make_project

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]

TEXTS = [
    ("a man runs in the park", "a man runs", "entailment"),
    ("a woman is in the field", "a dog sleeps", "neutral"),
    ("the boy is not in the park", "a boy runs", "contradiction"),
    ("a girl with the ball", "a girl is not", "contradiction"),
    ("a horse in the field", "a horse runs", "entailment"),
    ("the dog sleeps", "a woman runs", "neutral"),
]


@pytest.fixture(autouse=True)
def _tiny(settings, tmp_path, monkeypatch):
    import torch

    base = save_tiny_bert(tmp_path / "tiny-base", ["a", "b"])
    settings.COUNTERPART = {
        **settings.COUNTERPART,
        "TASK_MODEL_DIR": str(tmp_path / "task-models"),
        "MINILM_PATH": str(base),
        "SHARED_DATA_DIR": str(tmp_path / "no-shared-data"),
        "DEVICE": "cpu",
    }
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


def _many(n):
    """``n`` distinct labelled pairs."""
    words = "man woman dog horse boy girl ball park field".split()
    return [
        (f"{words[i % 9]} {words[(i // 9) % 9]} runs", f"a {words[(i // 81) % 9]} {i}", TEXTS[i % 3][2])
        for i in range(n)
    ]


def _task_file(tmp_path, rows=TEXTS, name="task.jsonl"):
    f = tmp_path / name
    f.write_text("\n".join(json.dumps({"premise": p, "hypothesis": h, "label": y, "source": "t"}) for p, h, y in rows))
    return str(f)


def test_task_data_is_kept_apart_from_the_pool(tmp_path):
    project, _ = make_project(n_pairs=12, n_human=4)
    before = (Example.objects.count(), Candidate.objects.count(), project_counts(project=project))
    out = T.task_data_import(project=project, format="labelled-jsonl", paths=[_task_file(tmp_path)])
    assert out == {"imported": 6, "duplicates": 0, "problems": 0, "problem_messages": []}
    again = T.task_data_import(project=project, format="labelled-jsonl", paths=[_task_file(tmp_path)])
    assert again["imported"] == 0 and again["duplicates"] == 6
    assert TaskTrainingExample.objects.filter(project=project).count() == 6
    assert T.task_data_counts(project=project) == {"entailment": 2, "neutral": 2, "contradiction": 2}
    # not in the pool, its counts, routing or an export
    assert (Example.objects.count(), Candidate.objects.count(), project_counts(project=project)) == before
    routed = project_route(project=project, budget=1.0, seed=0)
    assert routed is not None
    buf = io.StringIO()
    data_export(project=project, format="pairs-jsonl", out=buf, manifest=False)
    exported = buf.getvalue()
    assert exported and not any(p in exported for p, _, _ in TEXTS)


def test_cad_pairs_import_as_task_data_and_bad_input_is_refused(tmp_path):
    project = project_create(name="cad", task="nli")
    cad = tmp_path / "NLI"
    for part in ("original", "revised_premise", "revised_hypothesis"):
        (cad / part).mkdir(parents=True)
    (cad / "original" / "train.tsv").write_text(
        "sentence1\tsentence2\tgold_label\na man runs\ta man moves\tentailment\n"
    )
    (cad / "revised_premise" / "train.tsv").write_text(
        "sentence1\tsentence2\tgold_label\n"
        "a man sleeps\ta man moves\tcontradiction\na man walks\ta man moves\tentailment\n"
    )
    (cad / "revised_hypothesis" / "train.tsv").write_text(
        "sentence1\tsentence2\tgold_label\na man runs\ta man sleeps\tcontradiction\na man runs\ta dog moves\tneutral\n"
    )
    out = T.task_data_import(project=project, format="cad-nli", paths=[str(tmp_path)], split="train")
    assert out["imported"] == 5 and not Example.objects.filter(project=project).exists()
    with pytest.raises(T.ValidationError, match="file not found"):
        T.task_data_import(project=project, format="labelled-jsonl", paths=[str(tmp_path / "nope.jsonl")])
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"premise": "a", "hypothesis": "b", "label": "maybe"}\n{"premise": "a", "hypothesis": "b"}\n')
    out = T.task_data_import(project=project, format="labelled-jsonl", paths=[str(bad)])
    assert out["imported"] == 0 and out["problems"] == 2 and "unknown label" in out["problem_messages"][0]


def test_overlap_with_the_pool_is_stripped_with_a_message(tmp_path):
    project, _ = make_project(n_pairs=12, n_human=4)
    orig = Example.objects.filter(project=project).first().fields
    cand = Candidate.objects.filter(project=project).last().fields
    rows = [
        *TEXTS,
        # the pool's texts, differently cased and punctuated: the same normalised text
        (orig["premise"].upper() + ".", " " + orig["hypothesis"], "neutral"),
        (cand["premise"], cand["hypothesis"] + "!", "entailment"),
    ]
    T.task_data_import(project=project, format="labelled-jsonl", paths=[_task_file(tmp_path, rows)])
    recs, ys, info = T.task_training_set(project=project, counterfactuals=True)
    assert info["stripped"] == 2 and info["task_data"] == 6
    assert "2 task training examples left out" in info["message"]
    assert info["originals"] == 12 and info["counterfactuals"] == 4 and len(ys) == 12 + 4 + 6
    assert {"premise": orig["premise"].upper() + ".", "hypothesis": " " + orig["hypothesis"]} not in recs


def test_train_records_the_model_and_a_second_project_with_the_same_data_trains_nothing(tmp_path):
    a = project_create(name="a", task="nli")
    b = project_create(name="b", task="nli")
    for p in (a, b):
        T.task_data_import(project=p, format="labelled-jsonl", paths=[_task_file(tmp_path, TEXTS * 1)])
    events = []
    m = T.task_model_train(project=a, epochs=1, options={"batch_size": 2, "held_out": 0.34}, progress=events.append)
    assert not m.cached and m.n_train + m.n_held_out == 6 and m.held_out_accuracy is not None
    assert any("eta_s" in e for e in events)
    m2 = T.task_model_train(project=b, epochs=1, options={"batch_size": 2, "held_out": 0.34})
    assert m2.cached and m2.path == m.path and m2.seconds == 0.0
    from labeling.ml.task_model import load_task_model

    assert load_task_model(m.path).predict_proba([{"premise": "a man", "hypothesis": "a dog"}]).shape == (1, 3)


def test_the_job_reports_progress_and_cancel_keeps_a_checkpoint(tmp_path, monkeypatch):
    project = project_create(name="j", task="nli")
    T.task_data_import(project=project, format="labelled-jsonl", paths=[_task_file(tmp_path, _many(100))])
    job = job_create(kind="task_model", project=project, params={"base": "minilm", "epochs": 2})
    real = JobContext.cancel_requested
    asked = {"n": 0}

    def cancel_after_two_steps(self):
        asked["n"] += 1
        if asked["n"] == 3:
            Job.objects.filter(pk=self.job_id).update(cancel_requested=True)  # "Cancel" pressed mid-run
        return real(self)

    monkeypatch.setattr(JobContext, "cancel_requested", cancel_after_two_steps)
    done = job_execute(job_id=job.pk)
    assert done.status == "cancelled" and not TaskModel.objects.exists()
    # two training steps of 32 examples were reported, in the fine-tuning step (the second of two:
    # loading is a step of its own, issue 32.6), counted in examples
    assert (done.done, done.total) == (1, 2) and done.step["index"] == 2 and done.step["unit"] == "examples"
    assert done.step["done"] == 2 * 32 and done.step["plan"] == list(T.TASK_MODEL_STEPS)
    assert list((tmp_path / "task-models").glob("*.partial/checkpoint/state.pt"))
    monkeypatch.setattr(JobContext, "cancel_requested", real)
    job = job_create(kind="task_model", project=project, params={"base": "minilm", "epochs": 2})
    done = job_execute(job_id=job.pk)
    assert done.status == "succeeded", done.error
    assert done.total == 2 and done.step["done"] == done.step["total"] > 0  # every example of every epoch
    assert done.result["task_model"] == TaskModel.objects.get().pk and done.result["cached"] is False


def test_api_202_400_403_409(tmp_path, django_capture_on_commit_callbacks):
    project = project_create(name="api", task="nli")
    api = APIClient()
    api.force_authenticate(researcher())
    url = f"/api/v1/projects/{project.pk}/task-model/"
    r = api.post(url, {}, format="json")
    assert r.status_code == 400 and "too little labelled data" in " ".join(r.json()["detail"])
    T.task_data_import(project=project, format="labelled-jsonl", paths=[_task_file(tmp_path)])
    assert api.post(url, {"epochs": 0}, format="json").status_code == 400
    r = api.post(url, {"base": str(tmp_path / "nowhere")}, format="json")
    assert r.status_code == 400 and "not a local Hugging Face model folder" in " ".join(r.json()["detail"])
    assert api.post(url, {"base": "mpnet"}, format="json").status_code == 400  # COUNTERPART_MPNET_PATH unset
    other = APIClient()
    other.force_authenticate(annotator(project))
    assert other.post(url, {}, format="json").status_code == 403
    busy = job_create(kind="task_model", project=project)
    assert api.post(url, {}, format="json").status_code == 409
    assert api.get(url).json()["job"]["id"] == busy.pk
    Job.objects.filter(pk=busy.pk).update(status="cancelled")
    with django_capture_on_commit_callbacks(execute=True):
        r = api.post(url, {"epochs": 1}, format="json")
    assert r.status_code == 202 and r.json()["kind"] == "task_model"
    assert Job.objects.get(pk=r.json()["id"]).status == "succeeded"
    body = api.get(url).json()
    assert body["job"] is None and body["model"]["n_train"] + body["model"]["n_held_out"] == 6
    assert body["task_training_data"] == {"entailment": 2, "neutral": 2, "contradiction": 2}


def test_the_project_page_section_trains_shows_and_cancels(tmp_path, django_capture_on_commit_callbacks):
    project = project_create(name="page", task="nli")
    c = login(researcher())
    url = f"/labeling/projects/{project.pk}/task-model/"
    r = c.get(url)
    assert r.status_code == 200 and b"No task model trained yet" in r.content and b"none imported" in r.content
    assert login(annotator(project)).get(url).status_code == 403
    r = c.post(url + "train/", {"epochs": "1"})
    assert r.status_code == 400 and b"too little labelled data" in r.content
    assert c.post(url + "train/", {"epochs": "99"}).status_code == 400
    assert c.post(url + "cancel/").status_code == 409
    T.task_data_import(project=project, format="labelled-jsonl", paths=[_task_file(tmp_path)])
    with django_capture_on_commit_callbacks(execute=True):
        r = c.post(url + "train/", {"epochs": "1", "base": "minilm"}, HTTP_HX_REQUEST="true")  # the htmx form
    assert r.status_code == 200 and b"Training the task model queued" in r.content
    r = c.get(url)
    assert b"held-out accuracy" in r.content and b"entailment 2" in r.content
    busy = job_create(kind="task_model", project=project)
    assert c.post(url + "train/", {}).status_code == 409
    r = c.post(url + "cancel/")
    assert r.status_code == 200 and Job.objects.get(pk=busy.pk).status == "cancelled"


def test_h_reads_the_newest_task_model_unless_it_trained_on_the_human_labels(tmp_path, settings, monkeypatch):
    """The glue between f and h: train_task_model leaves the human-labelled counterfactuals out
    unless asked, and "Train h" (task_model="latest", the page's and the API's default) reads
    the project's newest task model, or goes without it, saying why."""
    from labeling import services

    from .conftest import FakeEncoder

    settings.COUNTERPART = {**settings.COUNTERPART, "MODEL_DIR": str(tmp_path / "models")}
    monkeypatch.setattr(services, "embedder", lambda: FakeEncoder())
    project, _ = make_project(n_pairs=60, n_human=40)
    assert T.task_training_set(project=project)[2]["counterfactuals"] == 0
    assert T.task_training_set(project=project, counterfactuals=True)[2]["counterfactuals"] == 40

    h = services.pairwise_train(project=project, mode="pc", task_model=services.TASK_MODEL_LATEST)
    assert h.metrics["task_model"] == ""
    assert any(n.startswith("no task model") for n in h.metrics["notes"])

    opts = {"batch_size": 16, "held_out": 0.2}
    f = T.task_model_train(project=project, epochs=1, options=opts)
    assert f.metrics["training_set"]["counterfactuals"] == 0
    h = services.pairwise_train(project=project, mode="pc", task_model=services.TASK_MODEL_LATEST)
    assert h.metrics["task_model"] == f.path

    seen = T.task_model_train(project=project, epochs=1, counterfactuals=True, options=opts)
    assert seen.path != f.path and seen.metrics["training_set"]["counterfactuals"] == 40
    h = services.pairwise_train(project=project, mode="pc", task_model=services.TASK_MODEL_LATEST)
    assert h.metrics["task_model"] == ""
    assert any("human-labelled counterfactuals" in n for n in h.metrics["notes"])


def test_train_h_api_and_page_default_to_the_newest_task_model(tmp_path, django_capture_on_commit_callbacks):
    project, _ = make_project(n_pairs=60, n_human=40)
    client = APIClient()
    client.force_authenticate(researcher())
    url = f"/api/v1/projects/{project.pk}/train/"
    r = client.post(url, {"mode": "pc"}, format="json")
    assert r.status_code == 202, r.content
    assert Job.objects.filter(project=project, kind="train").latest("id").params["task_model"] == "latest"
    r = client.post(url, {"mode": "pc", "task_model": "none"}, format="json")
    assert r.status_code == 202, r.content
    assert Job.objects.filter(project=project, kind="train").latest("id").params["task_model"] == ""
    r = client.post(url, {"mode": "pc", "task_model": "/etc"}, format="json")
    assert r.status_code == 400 and "task_model" in r.json()
