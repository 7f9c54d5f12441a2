"""The teacher filter (issue 31.3): the task model f on every candidate — a flip is pooled only
when f gives its target label >= P, a label-keeping edit only when f keeps the label; the run
option (on / off / auto, on by default when the project has a task model) through the service,
the API, the page form and the ``generate`` command. A tiny random BERT stands in for f."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.contrib.auth.models import Group, User
from django.core.exceptions import ValidationError
from django.core.management import call_command
from rest_framework.test import APIClient

from generation.ml.teacher import teacher_filter
from generation.models import GenerationRun
from generation.services.runs import run_create, run_execute, run_options_clean
from labeling import task_training as T
from labeling.selectors import teacher_available, teacher_from_folder
from projects import permissions, states
from projects.models import Candidate, Example
from projects.services.projects import project_create
from tests.labeling._tiny_bert import save_tiny_bert

pytestmark = pytest.mark.postgres_too

LABELS = ["negative", "positive"]
REVIEWS = [
    "The movie is good and the acting is great. I loved it.",
    "The movie is bad and the acting is terrible. I hated it.",
    "A great film with a good story.",
    "A boring film with a bad story.",
]


def test_teacher_filter_keeps_flips_above_p_and_keeps_that_keep_the_label(tmp_path) -> None:
    path = save_tiny_bert(tmp_path / "f", LABELS)
    f = teacher_from_folder(path=str(path), labels=LABELS, fields=["text"])
    recs = [{"text": t} for t in ["a man runs", "the dog sleeps", "a girl is not", "the ball"]]
    proba = np.asarray(f.predict_proba(recs))
    assert proba.shape == (4, 2) and np.allclose(proba.sum(axis=1), 1.0)
    p_pos = proba[:, 1]
    threshold = float(np.median(p_pos))
    orig = ["negative", "negative", "positive", None]
    target = ["positive", "negative", "positive", "positive"]  # flip, keep, keep, no original label
    out = teacher_filter(f, LABELS, recs, orig, target, threshold=threshold)
    assert out[0].keep == (p_pos[0] >= threshold) and out[0].score == pytest.approx(p_pos[0])
    assert out[1].keep == (proba[1].argmax() == 0) and out[1].score == pytest.approx(proba[1, 0])
    assert out[2].keep == (proba[2].argmax() == 1)
    assert out[3].keep  # no original label: nothing to check
    for r in out:
        assert r.keep or r.reasons[0].startswith("teacher:")
    # a flip at P = 1.01 never passes, at P = 0 always
    assert not any(r.keep for r in teacher_filter(f, LABELS, recs[:1], ["negative"], ["positive"], threshold=1.01))
    assert all(r.keep for r in teacher_filter(f, LABELS, recs[:1], ["negative"], ["positive"], threshold=0.0))
    with pytest.raises(ValueError, match="differ in length"):
        teacher_filter(f, LABELS, recs, orig[:2], target, threshold=0.5)


@pytest.fixture
def tiny_base(settings, tmp_path):
    base = save_tiny_bert(tmp_path / "tiny-base", ["a", "b"])
    settings.COUNTERPART = {
        **settings.COUNTERPART,
        "TASK_MODEL_DIR": str(tmp_path / "task-models"),
        "MINILM_PATH": str(base),
        "DEVICE": "cpu",
    }
    return base


def _sentiment_project(name: str, tmp_path) -> object:
    p = project_create(name=name, task="sentiment")
    labels = list(p.labels.order_by("position"))
    Example.objects.bulk_create(
        [
            Example(project=p, external_id=f"r{i}", split="dev", label=labels[i % 2 == 0], fields={"text": t})
            for i, t in enumerate(REVIEWS)
        ]
    )
    return p


def _train_f(project, tmp_path) -> None:
    data = tmp_path / "task.jsonl"
    rows = [
        {"text": f"the film {w} number {i}", "label": lab}
        for i in range(6)
        for w, lab in (("good", "positive"), ("bad", "negative"))
    ]
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = T.task_data_import(project=project, format="labelled-jsonl", paths=[str(data)])
    assert out["imported"] == 12 and out["problems"] == 0
    # CAD sentiment train, as ../shared/data/cad/sentiment holds it (original + revision per batch_id)
    paired = tmp_path / "cad" / "sentiment" / "combined" / "paired"
    paired.mkdir(parents=True, exist_ok=True)
    (paired / "train_paired.tsv").write_text(
        "Sentiment\tText\tbatch_id\n"
        "Negative\tA dull film.<br /><br />I hated it.\t1\nPositive\tA great film.<br /><br />I loved it.\t1\n"
    )
    out = T.task_data_import(
        project=project, format="cad-sentiment", paths=[str(tmp_path / "cad" / "sentiment")], split="train"
    )
    assert out["imported"] == 2 and T.task_data_counts(project=project) == {"negative": 7, "positive": 7}
    T.task_model_train(project=project, epochs=1, options={"batch_size": 4, "max_length": 32})


def _researcher_api() -> APIClient:
    u = User.objects.create_user("res", password="pw-123456")
    u.groups.add(Group.objects.get_or_create(name=permissions.RESEARCHER)[0])
    c = APIClient()
    c.force_authenticate(u)
    return c


@pytest.mark.django_db
def test_the_run_option_defaults_to_on_only_with_a_task_model_and_refuses_on_without_one(tiny_base, tmp_path) -> None:
    p = _sentiment_project("teach", tmp_path)
    assert not teacher_available(project=p)
    assert run_options_clean(project=p, options={})["teacher"] == "off"
    with pytest.raises(ValidationError) as exc:
        run_options_clean(project=p, options={"teacher": "on"})
    assert "no task model" in exc.value.message_dict["teacher"][0]
    api = _researcher_api()
    url = f"/api/v1/generation/projects/{p.pk}/runs/"
    for bad in ({"teacher": "on"}, {"teacher": "maybe"}, {"teacher": "off", "teacher_threshold": 2}):
        r = api.post(url, {"generator": "rules", "options": bad}, format="json")
        assert r.status_code == 400, r.content
        assert "teacher" in json.dumps(r.json())
    _train_f(p, tmp_path)
    assert teacher_available(project=p)
    clean = run_options_clean(project=p, options={})
    assert clean["teacher"] == "on" and clean["teacher_threshold"] == 0.5
    assert run_options_clean(project=p, options={"teacher": "off"})["teacher"] == "off"
    assert run_options_clean(project=p, options={"teacher": False})["teacher"] == "off"


@pytest.mark.django_db
def test_a_run_with_the_teacher_scores_every_candidate_and_pools_only_what_it_passes(tiny_base, tmp_path) -> None:
    p = _sentiment_project("teach-run", tmp_path)
    _train_f(p, tmp_path)
    run = run_create(project=p, generator="rules", options={"filters": "none", "teacher_threshold": 0.5})
    assert run.options["teacher"] == "on"
    run = run_execute(run_id=run.pk)
    assert run.job.status == "succeeded"
    cands = list(Candidate.objects.filter(job_id=run.job_id))
    assert cands
    for c in cands:
        assert "teacher" in c.meta["filters"] and "teacher" in c.scores
        assert (c.state == states.POOLED) == c.meta["filters"]["teacher"]
        if c.perturbation == "lexical":
            assert c.target_label_id is not None
            assert c.meta["filters"]["teacher"] == (c.scores["teacher"] >= 0.5)
    off = run_execute(run_id=run_create(project=p, generator="rules", options={"filters": "none", "teacher": "off"}).pk)
    off_cands = list(Candidate.objects.filter(job_id=off.job_id))
    assert off_cands and all("teacher" not in c.meta["filters"] for c in off_cands)


@pytest.mark.django_db
def test_the_page_form_and_the_command_pass_the_option(tiny_base, tmp_path, client, capsys) -> None:
    p = _sentiment_project("teach-form", tmp_path)
    u = User.objects.create_user("res2", password="pw-123456")
    u.groups.add(Group.objects.get_or_create(name=permissions.RESEARCHER)[0])
    client.force_login(u)
    r = client.post(f"/projects/{p.pk}/runs/new/", {"generator": "rules", "teacher": "on", "seed": 0})
    assert r.status_code == 400 and b"no task model" in r.content
    call_command("generate", project="teach-form", generator="rules", teacher="off", filters="none", no_progress=True)
    run = GenerationRun.objects.filter(project=p).latest("pk")
    assert run.options["teacher"] == "off"
