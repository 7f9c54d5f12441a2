"""Issue 26.2: h reads the task model (features f(x), f(x'), their change, its confidence,
f(x')·y, "f agrees with y") and its cross-validation chooses among invariant, f alone, the
few-label recipe, pc and capc, reporting each candidate's CV accuracy. No database."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from labeling.ml.features import FeatureConfig, encode_pairs, pair_matrix, task_block
from labeling.ml.pairwise import PairInputs, PairwiseClassifier, prepare_inputs, task_proba
from labeling.ml.task_inputs import load_task, task_leak
from projects.ml.textkeys import text_hash

from .conftest import FIELDS, LABELS, fake_embed, synthetic_pairs

pytestmark = pytest.mark.postgres_too  # reaches database-specific code (docs/testing.md)


class OracleTaskModel:
    """A task model that knows the label of the texts it was told, right ``accuracy`` of the
    time (which texts it gets wrong is fixed by a hash of the text), unsure otherwise."""

    def __init__(self, known: dict[str, str], accuracy: float = 0.85) -> None:
        self.known = known
        self.accuracy = accuracy
        self.calls = 0

    def predict_proba(self, records):
        self.calls += 1
        out = np.full((len(records), len(LABELS)), 0.1)
        for i, r in enumerate(records):
            key = text_hash(r, FIELDS)
            lab = self.known.get(key)
            u = int(hashlib.sha1(key.encode()).hexdigest()[:6], 16) / 0xFFFFFF
            if lab is None:
                out[i] = 1 / 3
                continue
            k = LABELS.index(lab)
            if u >= self.accuracy:  # wrong: a confident other label
                k = (k + 1 + int(u * 1000) % 2) % 3
            out[i, k] = 0.8
        return out / out.sum(axis=1, keepdims=True)


def scrambled(n: int, seed: int = 0):
    """Synthetic pairs whose counterfactual label has nothing to do with the edit (a random
    label): only something that knows the task can tell it."""
    pairs, _ = synthetic_pairs(n, seed=seed)
    rng = np.random.default_rng(seed + 1)
    ys = [LABELS[int(rng.integers(3))] for _ in pairs]
    known = {text_hash(p.counterfactual, FIELDS): y for p, y in zip(pairs, ys, strict=True)}
    known.update({text_hash(p.original, FIELDS): p.y for p in pairs})
    return pairs, ys, OracleTaskModel(known)


def test_task_block_holds_the_recipe_columns():
    t_o = np.array([[0.7, 0.2, 0.1], [0.1, 0.1, 0.8]])
    t_c = np.array([[0.1, 0.2, 0.7], [0.2, 0.1, 0.7]])
    y = np.array([0, 2])
    b = task_block(t_o, t_c, y, 3)
    # f(x'), f(x') - f(x), confidence on x' and x, f(x')·y one-hot, f agrees with y
    assert b.shape == (2, 3 + 3 + 2 + 3 + 1)
    assert np.allclose(b[0, :3], t_c[0]) and np.allclose(b[0, 3:6], t_c[0] - t_o[0])
    assert np.allclose(b[:, 6], [0.7, 0.7]) and np.allclose(b[:, 7], [0.7, 0.8])
    assert np.allclose(b[0, 8:11], [0.1, 0, 0]) and np.allclose(b[1, 8:11], [0, 0, 0.7])
    assert list(b[:, 11]) == [0.0, 1.0]


def test_pair_matrix_reads_the_task_model_only_when_given():
    pairs, _, task = scrambled(20)
    enc = encode_pairs(pairs, labels=LABELS, fields=FIELDS, embed=None)
    t_o, t_c = task_proba(task, pairs)
    cfg = FeatureConfig(embeddings=False, bag=False)
    plain = pair_matrix(enc, n_labels=3, perturbations=["insert"], config=cfg)
    with_task = pair_matrix(enc, n_labels=3, perturbations=["insert"], config=cfg, task_o=t_o, task_c=t_c)
    # the block and its interactions with y one-hot
    assert with_task.shape[1] == plain.shape[1] + 12 * 4
    off = FeatureConfig(embeddings=False, bag=False, task=False)
    assert pair_matrix(enc, n_labels=3, perturbations=["insert"], config=off, task_o=t_o, task_c=t_c).shape == (
        plain.shape
    )


def test_h_with_the_task_model_beats_h_without_and_reports_every_candidate():
    pairs, ys, task = scrambled(240)
    train = list(range(120))
    test = list(range(120, 240))
    plain = prepare_inputs(pairs, labels=LABELS, fields=FIELDS, embed=fake_embed, spans=False)
    informed = plain.with_task(task, pairs)
    assert informed.t_c is not None and plain.t_c is None

    def fit(inputs: PairInputs) -> tuple[PairwiseClassifier, float]:
        h = PairwiseClassifier(LABELS, FIELDS, mode="pc").fit(inputs.subset(train), [ys[i] for i in train])
        pred = h.predict_proba(inputs.subset(test)).argmax(1)
        return h, float(np.mean([LABELS[k] == ys[i] for k, i in zip(pred, test, strict=True)]))

    h0, acc0 = fit(plain)
    h1, acc1 = fit(informed)
    # the edits carry nothing; the task model is right 85 % of the time on x'
    assert acc0 < 0.5 and acc1 >= 0.75
    names = [c["name"] for c in h1.candidates]
    assert names[:3] == [
        "invariant (nothing flips), calibrated",
        "f alone (the task model's label for x'), calibrated",
        "y + task model (the few-label recipe)",
    ]
    assert any(n.startswith("pc: lean") and n.endswith("+ task model") for n in names)
    assert sum(c["chosen"] for c in h1.candidates) == 1
    chosen = next(c for c in h1.candidates if c["chosen"])
    assert chosen["name"] == h1.feature_set_name and h1.uses_task
    assert chosen["cv_accuracy"] == pytest.approx(h1.cv.accuracy, abs=1e-4)
    f_alone = h1.candidates[1]
    assert 0.7 <= f_alone["cv_accuracy"] <= 0.95
    # without the task model: no task candidates, and h does not read it
    assert not any("task model" in c["name"] or "f alone" in c["name"] for c in h0.candidates)
    assert not h0.uses_task


def test_a_capc_h_also_tries_plain_pc():
    pairs, ys = synthetic_pairs(120, seed=3)
    from labeling.ml.base_classifier import TfidfClassifier

    base = TfidfClassifier(LABELS, FIELDS).fit([p.original for p in pairs], [p.y for p in pairs])
    inputs = prepare_inputs(pairs, labels=LABELS, fields=FIELDS, embed=None, base=base)
    h = PairwiseClassifier(LABELS, FIELDS, mode="capc").fit(inputs, ys)
    names = [c["name"] for c in h.candidates]
    assert "pc: lean" in names and "capc: lean" in names
    assert all(c["cv_accuracy"] is not None for c in h.candidates)


def test_the_task_model_loads_from_a_hugging_face_folder(tmp_path):
    pytest.importorskip("torch")
    from ._tiny_bert import save_tiny_bert

    # its labels in another order than the project's: the columns come back in the project's
    save_tiny_bert(tmp_path / "f", ["contradiction", "entailment", "neutral"])
    task = load_task(str(tmp_path / "f"), LABELS, FIELDS)
    pairs, _ = synthetic_pairs(30, seed=5)
    p = task.predict_proba([dict(pairs[0].original)])
    assert p.shape == (1, 3) and np.isclose(p.sum(), 1.0)
    inputs = prepare_inputs(pairs, labels=LABELS, fields=FIELDS, embed=None, task=task)
    assert inputs.t_o is not None and inputs.t_o.shape == (30, 3)
    with pytest.raises(FileNotFoundError):
        load_task(str(tmp_path / "missing"), LABELS, FIELDS)


def test_task_leak_from_the_metadata():
    pairs, _ = synthetic_pairs(10)
    labelled = [p.counterfactual for p in pairs]
    originals = [p.original for p in pairs]
    hashes = [text_hash(r, FIELDS) for r in labelled[:3] + originals[:5]]
    leak = task_leak({"text_hashes": hashes}, labelled=labelled, originals=originals, fields=FIELDS)
    assert (leak.labelled_seen, leak.originals_seen, leak.refused) == (3, 5, True)
    assert "trained on 3 of the human-labelled counterfactuals" in leak.message()
    only_originals = task_leak({"text_hashes": hashes[3:]}, labelled=labelled, originals=originals, fields=FIELDS)
    assert not only_originals.refused and "5 of the project's originals" in only_originals.message()
    blind = task_leak({}, labelled=labelled, originals=originals, fields=FIELDS)
    assert not blind.refused and not blind.known
    flagged = task_leak({"project_data": True}, labelled=labelled, originals=originals, fields=FIELDS)
    assert flagged.refused
    # train_task_model's metadata: counts of the project's data it trained on, not the texts
    trained = {"training_set": {"originals": 10, "counterfactuals": 4, "task_data": 500}}
    assert task_leak(trained, labelled=labelled, originals=originals, fields=FIELDS).refused
    originals_only = {"training_set": {"originals": 10, "counterfactuals": 0, "task_data": 500}}
    leak = task_leak(originals_only, labelled=labelled, originals=originals, fields=FIELDS)
    assert not leak.refused and leak.originals_seen == 10


# -- through the service: train_pairwise --task-model, autolabel reloads it ---------------------
@pytest.mark.django_db
def test_train_with_a_task_model_then_autolabel(tmp_path, monkeypatch, settings, capsys):
    pytest.importorskip("torch")
    import json

    from django.core.management import call_command

    from labeling import services
    from projects import states
    from projects.models import Candidate

    from ._tiny_bert import save_tiny_bert
    from .conftest import FakeEncoder
    from .test_services import make_project

    settings.COUNTERPART = {**settings.COUNTERPART, "MODEL_DIR": str(tmp_path / "models")}
    monkeypatch.setattr(services, "embedder", lambda: FakeEncoder())
    save_tiny_bert(tmp_path / "f", LABELS)
    project, _ = make_project(n_pairs=100, n_human=40)
    model = services.pairwise_train(project=project, mode="capc", task_model=str(tmp_path / "f"))
    names = [c["name"] for c in model.metrics["candidates"]]
    assert "f alone (the task model's label for x'), calibrated" in names
    assert any("metadata lists no training texts" in n for n in model.metrics["notes"])
    bundle = services.load_model(project, model)
    assert (bundle.task is not None) == bool(model.metrics["task_model"])
    run = services.autolabel(project=project, min_confidence=0.0)
    assert run.considered == 60
    assert Candidate.objects.filter(project=project, state=states.AUTO_LABELED).count() == run.auto_labeled
    # a task model whose metadata says it trained on this project's labels: h goes without it
    (tmp_path / "f" / "counterpart_task_model.json").write_text(json.dumps({"project_data": True}))
    call_command("train_pairwise", "--project", project.name, "--mode", "pc", "--task-model", str(tmp_path / "f"))
    out = capsys.readouterr().out
    assert "note: the task model was trained on 40 of the human-labelled counterfactuals" in out
    latest = project.pairwise_models.order_by("-version").first()
    assert latest.metrics["task_model"] == ""
    assert not any("f alone" in c["name"] for c in latest.metrics["candidates"])
    # a folder that is not there: a clear error, nothing saved
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError, match="task model directory not found"):
        services.pairwise_train(project=project, mode="pc", task_model=str(tmp_path / "nope"))
    assert project.pairwise_models.count() == 2
