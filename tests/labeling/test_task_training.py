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
from labeling.ml.task_inputs import TaskLeak, read_task_meta, task_leak
from labeling.models import TaskModel, TaskTrainingExample
from projects import states
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
    assert out == {"imported": 6, "duplicates": 0, "problems": 0, "warnings": 0, "problem_messages": []}
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
    # the tiny random f is near chance, so h does not default to it (issue 30: its gate) ...
    h = services.pairwise_train(project=project, mode="pc", task_model=services.TASK_MODEL_LATEST)
    assert h.metrics["task_model"] == ""
    assert any("without the newest task model" in n and "near chance" in n for n in h.metrics["notes"])
    # ... this test is about the glue, not f's quality: its held-out figures made those of a good f
    TaskModel.objects.filter(pk=f.pk).update(held_out_accuracy=0.9, n_held_out=500)
    h = services.pairwise_train(project=project, mode="pc", task_model=services.TASK_MODEL_LATEST)
    assert h.metrics["task_model"] == f.path or any("adds nothing here" in n for n in h.metrics["notes"])
    assert not any("without the newest task model" in n for n in h.metrics["notes"])

    seen = T.task_model_train(project=project, epochs=1, counterfactuals=True, options=opts)
    assert seen.path != f.path and seen.metrics["training_set"]["counterfactuals"] == 40
    # the metadata lists the texts each trained on, so a pool neither saw is not taken for this one
    # (bench_pairwise --task-model on a file refused any f trained on a project's originals)
    fields = list(project.text_fields)
    human = [c.fields for c in project.candidates.filter(state=states.HUMAN_LABELED)]
    own = [e.fields for e in project.examples.filter(label__isnull=False)]
    other = [{k: f"{k} of a text f never saw, number {i}" for k in fields} for i in range(5)]
    for model, cf_seen in ((f, 0), (seen, 40)):
        meta = read_task_meta(model.path)
        assert len(meta["text_hashes"]) == len(set(meta["text_hashes"])) > 0
        assert task_leak(meta, labelled=other, originals=other, fields=fields) == TaskLeak(0, 0, True)
        leak = task_leak(meta, labelled=human, originals=own, fields=fields)
        assert (leak.labelled_seen, leak.originals_seen) == (cf_seen, len(own))
    TaskModel.objects.filter(pk=seen.pk).update(held_out_accuracy=0.9, n_held_out=500)  # past its gate
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


def test_h_never_defaults_to_an_f_near_chance_and_the_page_and_api_say_why(
    tmp_path, django_capture_on_commit_callbacks
):
    """Issue 30: a capped f at chance (0.378 held-out on NLI) was offered as "Train h"'s default
    without a word. The gate: f's held-out accuracy, with a one-sided 95 % Wilson bound, must beat
    the larger of 1 / labels and the held-out majority share by 0.05."""
    from labeling.ml.task_gate import judge_task_model, wilson_lower

    assert not judge_task_model(0.378, 2000, 3).usable
    assert "near chance" in judge_task_model(0.378, 2000, 3).reason
    assert judge_task_model(0.80, 400, 3, 0.34).usable
    assert not judge_task_model(0.62, 400, 2, 0.60).usable  # the majority share is chance here
    assert not judge_task_model(None, 0, 3).usable
    assert 0.75 < wilson_lower(0.8, 400) < 0.8 and wilson_lower(0.5, 0) == 0.0

    project, _ = make_project(n_pairs=60, n_human=40)
    f = T.task_model_train(project=project, epochs=1, options={"batch_size": 16, "held_out": 0.2})
    assert f.metrics["held_out_majority"] is not None
    TaskModel.objects.filter(pk=f.pk).update(held_out_accuracy=0.378, n_held_out=2000)
    chosen, why = T.task_model_for_h(project=project)
    assert chosen is None and "near chance" in why and "0.378" in why
    # the API: the job's params say it before training starts, and the task-model API shows the gate
    client = APIClient()
    client.force_authenticate(researcher())
    with django_capture_on_commit_callbacks(execute=False):
        r = client.post(f"/api/v1/projects/{project.pk}/train/", {"mode": "pc"}, format="json")
    assert r.status_code == 202 and "near chance" in r.json()["params"]["task_model_note"]
    gate = client.get(f"/api/v1/projects/{project.pk}/task-model/").json()["model"]["gate"]
    assert gate["usable"] is False and "near chance" in gate["reason"]
    # the page: the newest f is not offered, and the reason is shown beside the select
    page = login(researcher())
    html = page.get(f"/labeling/projects/{project.pk}/flip-rates/", HTTP_HX_REQUEST="true").content.decode()
    assert '<option value="latest">' not in html and "Not offered: h trains without the newest task model" in html
    # a good f is offered again
    TaskModel.objects.filter(pk=f.pk).update(held_out_accuracy=0.9, n_held_out=500)
    html = page.get(f"/labeling/projects/{project.pk}/flip-rates/", HTTP_HX_REQUEST="true").content.decode()
    assert '<option value="latest">' in html and "Not offered" not in html


def test_propose_fits_the_budget():
    """Issue 30: 3 epochs over 53,674 examples at 0.05 s each is 2.2 hours: the proposal keeps
    within the hour (one epoch over a cap), and keeps the request when it fits."""
    from labeling.ml.task_probe import Probe, estimate_seconds, propose

    probe = Probe("cpu", 32, 3, seconds_per_example=0.1, eval_seconds_per_example=0.01, load_seconds=2.0)
    assert estimate_seconds(probe, examples=53_674, epochs=3, scored_per_epoch=2000) > 4 * 3600
    p = propose(probe, available=53_674, epochs=3, scored_per_epoch=2000)
    # (3600 - 2 - 2000 x 0.01) / 0.1 = 35,780 examples fit in one epoch: a cap of 35,000
    assert (p["epochs"], p["max_examples"], p["examples"]) == (1, 35_000, 35_000)
    assert 3000 < p["estimate_seconds"] <= 3600
    small = propose(probe, available=5_000, epochs=3, scored_per_epoch=200)
    assert small == {**small, "epochs": 3, "max_examples": 0, "examples": 5_000}
    assert small["estimate_seconds"] <= 3600
    # all examples fit once but not three times: as many epochs as fit
    mid = propose(probe, available=15_000, epochs=3, scored_per_epoch=200)
    assert mid["epochs"] == 2 and mid["max_examples"] == 0 and mid["estimate_seconds"] <= 3600


def test_the_form_estimates_the_time_from_a_probe_and_proposes_a_cap(tmp_path, django_capture_on_commit_callbacks):
    project = project_create(name="probe", task="nli")
    T.task_data_import(project=project, format="labelled-jsonl", paths=[_task_file(tmp_path, _many(60))])
    result = T.task_model_probe(project=project, epochs=3, max_examples=0)
    probe = result["probe"]
    assert probe["device"] == "cpu" and probe["steps"] == 4 and probe["seconds_per_example"] > 0
    assert result["requested"]["examples"] == 60 and result["requested"]["estimate_seconds"] > 0
    # the page: estimate the time first (a job), then the form carries the proposal
    c = login(researcher())
    url = f"/labeling/projects/{project.pk}/task-model/"
    assert c.post(url + "probe/", {"epochs": "0"}).status_code == 400
    with django_capture_on_commit_callbacks(execute=True):
        r = c.post(url + "probe/", {"epochs": "3"}, HTTP_HX_REQUEST="true")
    assert r.status_code == 200 and b"Estimating the training time" in r.content
    html = c.get(url).content.decode()
    assert "Measured on cpu (4 training steps of 32 examples" in html and "would take about" in html
    proposed = T.task_model_probe_latest(project=project)["proposed"]
    assert f'name="epochs" type="number" min="1" max="20" value="{proposed["epochs"]}"' in html
    # the API: the same job, and GET shows the newest probe
    api = APIClient()
    api.force_authenticate(researcher())
    with django_capture_on_commit_callbacks(execute=True):
        r = api.post(f"/api/v1/projects/{project.pk}/task-model/probe/", {"epochs": 1}, format="json")
    assert r.status_code == 202 and r.json()["kind"] == "task_model" and r.json()["params"]["probe"] is True
    body = api.get(f"/api/v1/projects/{project.pk}/task-model/").json()
    assert body["probe"]["requested"]["epochs"] == 1 and body["probe"]["proposed"]["estimate_seconds"] <= 3600
    assert (
        api.post(f"/api/v1/projects/{project.pk}/task-model/probe/", {"epochs": 99}, format="json").status_code == 400
    )


def test_task_data_from_cad_nli_reports_the_row_it_skips(tmp_path):
    """CAD-NLI train has a revised row that does not align with its original: the reader skips
    it with a warning, and the task data import says so instead of losing it quietly."""
    from tests.generation.test_formats import make_cad_nli

    project, _ = make_project(n_pairs=12, n_human=4)
    root = make_cad_nli(
        tmp_path,
        ["A man sleeps.\tA person rests.\tentailment"],
        ["A man runs.\tA person rests.\tcontradiction", "A man sits.\tA person eats.\tneutral"],  # misaligned
        ["A man sleeps.\tA person runs.\tcontradiction", "A man sleeps.\tA person dreams.\tneutral"],
    )
    out = T.task_data_import(project=project, format="cad-nli", paths=[str(root)], split="dev")
    assert (out["imported"], out["problems"], out["warnings"]) == (4, 0, 1)
    assert out["problem_messages"][0].startswith("warning: ") and "misaligned, skipped" in out["problem_messages"][0]
