"""The optional cross-encoder learner, with a tiny random BERT standing in for MiniLM."""

from __future__ import annotations

import numpy as np
import pytest
from django.core.exceptions import ValidationError

from labeling.ml.cross_encoder import CrossEncoderH
from labeling.ml.pairwise import LabelingModel

from ._tiny_bert import save_tiny_bert
from .conftest import FIELDS, LABELS, synthetic_pairs

pytestmark = pytest.mark.postgres_too


def test_cross_encoder_trains_calibrates_and_round_trips(tmp_path):
    path = save_tiny_bert(tmp_path / "bert", ["x", "y", "z"])
    pairs, ys = synthetic_pairs(60)
    h = CrossEncoderH(LABELS, FIELDS, str(path), epochs=1, min_labels=10).fit(pairs, ys)
    assert h.cv is not None and h.cv.n == 12 and h.temperature > 0
    bundle = LabelingModel(LABELS, FIELDS, "pc", h)
    bundle.save(str(tmp_path / "m.joblib"))
    p = LabelingModel.load(str(tmp_path / "m.joblib")).predict_proba(pairs[:5])
    assert p.shape == (5, 3) and np.allclose(p.sum(1), 1.0)
    assert np.allclose(p, h.predict_proba_pairs(pairs[:5]), atol=1e-5)


@pytest.mark.django_db
def test_service_cross_encoder_needs_pc_and_enough_labels(tmp_path, settings, monkeypatch):
    from labeling import services

    from .test_services import make_project

    settings.COUNTERPART = {
        **settings.COUNTERPART,
        "MINILM_PATH": str(save_tiny_bert(tmp_path / "b", ["a", "b", "c"])),
        "MODEL_DIR": str(tmp_path / "models"),
    }
    project, _ = make_project(n_pairs=80, n_human=60)
    with pytest.raises(ValidationError, match="PC only"):
        services.pairwise_train(project=project, mode="capc", learner="cross-encoder")
    with pytest.raises(ValidationError, match="the cross-encoder needs at least 200"):
        services.pairwise_train(project=project, mode="pc", learner="cross-encoder")


@pytest.mark.django_db
def test_service_cross_encoder_trains_and_autolabels(tmp_path, settings, monkeypatch):
    from labeling import services
    from projects import states
    from projects.models import Candidate

    from .conftest import FakeEncoder
    from .test_services import make_project

    monkeypatch.setattr(services, "embedder", lambda: FakeEncoder())
    settings.COUNTERPART = {
        **settings.COUNTERPART,
        "MINILM_PATH": str(save_tiny_bert(tmp_path / "b", ["a", "b", "c"])),
        "MODEL_DIR": str(tmp_path / "models"),
    }
    project, _ = make_project(n_pairs=240, n_human=210)
    model = services.pairwise_train(project=project, mode="pc", learner="cross-encoder")
    assert model.n_train == 210 and model.metrics["features"] == "cross-encoder" and model.cv_folds == 1
    run = services.autolabel(project=project, min_confidence=0.0)
    assert run.auto_labeled == 30
    assert Candidate.objects.filter(project=project, state=states.AUTO_LABELED, label_source="auto").count() == 30


def test_cross_encoder_reads_two_field_pairs_as_an_nli_pair(tmp_path):
    from labeling.ml.features import Pair

    h = CrossEncoderH(LABELS, FIELDS, "unused")
    p = Pair(
        {"premise": "A dog runs.", "hypothesis": "An animal moves."},
        {"premise": "A dog sleeps.", "hypothesis": "An animal moves."},
        "entailment",
    )
    assert h._texts([p]) == (["entailment. A dog sleeps."], ["An animal moves."])
    one = CrossEncoderH(LABELS, ["text"], "unused")
    q = Pair({"text": "good film"}, {"text": "bad film"}, "positive")
    assert one._texts([q]) == (["positive: good film"], ["bad film"])


def test_cross_encoder_trains_in_fp32_from_an_fp16_checkpoint(tmp_path):
    import torch
    from transformers import AutoModelForSequenceClassification

    path = save_tiny_bert(tmp_path / "bert", ["x", "y", "z"])
    m = AutoModelForSequenceClassification.from_pretrained(str(path), local_files_only=True)
    m.half().save_pretrained(str(path))
    pairs, ys = synthetic_pairs(60)
    h = CrossEncoderH(LABELS, FIELDS, str(path), epochs=1, min_labels=10).fit(pairs, ys)
    assert next(h.model.parameters()).dtype == torch.float32
