"""The task model f (issue 26): trained from a tiny random BERT (no hub, no network), loaded by
the predictor and by the ``hf`` base classifier; resume after a kill, cancel, cache hit."""

from __future__ import annotations

import json

import numpy as np
import pytest

from labeling.ml import task_model as TM
from labeling.ml.base_classifier import make_base_classifier

from ._tiny_bert import save_tiny_bert

LABELS = ("entailment", "neutral", "contradiction")
FIELDS = ("premise", "hypothesis")


@pytest.fixture(autouse=True)
def _one_thread(monkeypatch):
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    monkeypatch.setenv("COUNTERPART_DEVICE", "cpu")
    yield
    torch.set_num_threads(before)


def _data(n=24):
    # the label is readable from the hypothesis: "man" entails, "woman" is neutral, "not" contradicts
    words = {"entailment": "a man runs", "neutral": "a woman runs", "contradiction": "the man is not"}
    recs, y = [], []
    for i in range(n):
        lab = LABELS[i % 3]
        recs.append(
            {
                "premise": f"{'the dog' if i % 2 else 'a boy'} {'park' if i % 4 < 2 else 'field'}",
                "hypothesis": words[lab],
            }
        )
        y.append(lab)
    return recs, y


def _cfg(**kw):
    base = {
        "labels": LABELS,
        "fields": FIELDS,
        "epochs": 2,
        "max_length": 16,
        "batch_size": 4,
        "learning_rate": 1e-2,
        "held_out": 0.25,
    }
    base.update(kw)
    return TM.TaskModelConfig(**base)


@pytest.fixture
def base(tmp_path):
    return save_tiny_bert(tmp_path / "base", ["a", "b"])  # head replaced: the base's labels don't matter


def test_trains_saves_an_hf_folder_and_predicts_in_label_order(base, tmp_path):
    recs, y = _data(36)
    events = []
    res = TM.train_task_model(base, recs, y, _cfg(epochs=4), tmp_path / "cache", progress=events.append)
    assert res.trained
    steps = [e for e in events if "loss" in e]
    assert steps[-1]["step"] == steps[-1]["total"] and steps[-1]["eta_s"] == pytest.approx(0.0)
    assert [e["epoch_done"]["epoch"] for e in events if "epoch_done" in e] == [1, 2, 3, 4]
    meta = json.loads((res.path / TM.META_FILE).read_text())
    assert meta["labels"] == list(LABELS) and meta["fields"] == list(FIELDS) and meta["n_held_out"] >= 3
    assert meta["held_out_accuracy"] is not None and 1 <= meta["best_epoch"] <= 4
    cfg = json.loads((res.path / "config.json").read_text())
    assert [cfg["id2label"][str(i)] for i in range(3)] == list(LABELS)
    f = TM.load_task_model(res.path)
    p = f.predict_proba(recs)
    assert p.shape == (36, 3) and np.allclose(p.sum(1), 1.0)
    # a learnable toy task is learnt (chance is 1/3)
    assert TM.accuracy(p, y, LABELS) > 0.5
    # the same folder through the existing hf base-classifier path, in another label order
    other = ["contradiction", "entailment", "neutral"]
    g = make_base_classifier("hf", labels=other, fields=list(FIELDS), model_path=str(res.path))
    q = g.predict_proba(recs)
    assert np.allclose(q, p[:, [2, 0, 1]], atol=1e-5)


def test_cache_hit_trains_nothing_whatever_the_order(base, tmp_path):
    recs, y = _data()
    first = TM.train_task_model(base, recs, y, _cfg(epochs=1), tmp_path / "cache")
    calls = []
    second = TM.train_task_model(base, recs[::-1], y[::-1], _cfg(epochs=1), tmp_path / "cache", progress=calls.append)
    assert first.trained and not second.trained and second.path == first.path and calls == []
    # other hyperparameters or other data: another key
    assert TM.cache_key(base, recs, y, _cfg(epochs=2)) != first.path.name
    assert TM.cache_key(base, recs[1:], y[1:], _cfg(epochs=1)) != first.path.name


def test_cancel_saves_a_checkpoint_and_a_new_run_resumes_to_the_same_model(base, tmp_path):
    recs, y = _data()
    cfg = _cfg(epochs=2)
    ref = TM.train_task_model(base, recs, y, cfg, tmp_path / "ref")
    ref_p = TM.load_task_model(ref.path).predict_proba(recs)

    n = {"steps": 0}

    def cancel():
        n["steps"] += 1
        return n["steps"] > 7  # cancelled mid-way through the second epoch (5 steps per epoch)

    with pytest.raises(TM.TaskModelCancelled):
        TM.train_task_model(base, recs, y, cfg, tmp_path / "run", cancel=cancel)
    key = TM.cache_key(base, recs, y, cfg)
    assert (tmp_path / "run" / f"{key}.partial" / TM.CHECKPOINT_DIR / "state.pt").is_file()
    assert TM.find_cached(base, recs, y, cfg, tmp_path / "run") is None
    seen = []
    res = TM.train_task_model(base, recs, y, cfg, tmp_path / "run", progress=seen.append)
    assert res.trained and next(e["step"] for e in seen if "loss" in e) == 8  # resumed, not restarted
    p = TM.load_task_model(res.path).predict_proba(recs)
    assert np.allclose(p, ref_p, atol=1e-5)


def test_resume_after_a_kill_from_a_mid_epoch_checkpoint(base, tmp_path):
    recs, y = _data()
    cfg = _cfg(epochs=1, checkpoint_every=2)

    class Killed(BaseException):
        pass

    def die(event):
        if event.get("step") == 3:
            raise Killed  # the process dies after step 3; the last checkpoint is after step 2

    with pytest.raises(Killed):
        TM.train_task_model(base, recs, y, cfg, tmp_path / "run", progress=die)
    seen = []
    TM.train_task_model(base, recs, y, cfg, tmp_path / "run", progress=seen.append)
    assert next(e["step"] for e in seen if "loss" in e) == 3


def test_refuses_unknown_labels_and_a_missing_base(base, tmp_path):
    recs, y = _data(6)
    with pytest.raises(ValueError, match="not in the task's label set"):
        TM.train_task_model(base, recs, ["yes"] * 6, _cfg(), tmp_path)
    with pytest.raises(FileNotFoundError):
        TM.train_task_model(tmp_path / "nope", recs, y, _cfg(), tmp_path)
    with pytest.raises(FileNotFoundError):
        TM.load_task_model(tmp_path / "nope")


def test_stratified_split_keeps_every_label():
    y = ["a"] * 50 + ["b"] * 30 + ["c"] * 20
    train, held = TM.stratified_split(y, 0.1, 1000, seed=0)
    assert len(held) == 10 and sorted(train + held) == list(range(100))
    assert {y[i] for i in held} == {"a", "b", "c"}
    assert TM.stratified_split(y, 0.1, 1000, seed=0) == (train, held)
