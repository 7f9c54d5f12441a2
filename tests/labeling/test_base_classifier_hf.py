"""f from a local Hugging Face sequence-classification model: a tiny random BERT saved to a
temporary folder with an in-memory word-level tokenizer (no hub, no network)."""

from __future__ import annotations

import numpy as np
import pytest

from labeling.ml.base_classifier import HFSequenceClassifier, make_base_classifier

from ._tiny_bert import save_tiny_bert


def test_hf_classifier_maps_labels_by_name(tmp_path):
    path = save_tiny_bert(tmp_path / "m", ["contradiction", "entailment", "neutral"])
    labels = ["entailment", "neutral", "contradiction"]
    f = make_base_classifier("hf", labels=labels, fields=["premise", "hypothesis"], model_path=str(path))
    assert isinstance(f, HFSequenceClassifier)
    recs = [{"premise": "a man runs", "hypothesis": "a man sleeps"}, {"premise": "the dog", "hypothesis": "a dog"}]
    p = f.fit(recs, ["entailment", "neutral"]).predict_proba(recs)
    assert p.shape == (2, 3) and np.allclose(p.sum(1), 1.0)
    # column order follows the project's labels, not the model's
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    model = AutoModelForSequenceClassification.from_pretrained(path)
    tok = AutoTokenizer.from_pretrained(path)
    with torch.no_grad():
        raw = torch.softmax(model(**tok(["a man runs"], ["a man sleeps"], return_tensors="pt")).logits, -1)[0].numpy()
    assert np.allclose(p[0], [raw[1], raw[2], raw[0]], atol=1e-5)


def test_hf_classifier_refuses_a_label_count_mismatch_and_a_missing_path(tmp_path):
    path = save_tiny_bert(tmp_path / "m", ["no", "yes"])
    f = make_base_classifier(
        "hf", labels=["entailment", "neutral", "contradiction"], fields=["premise", "hypothesis"], model_path=str(path)
    )
    with pytest.raises(ValueError, match="has 2 labels"):
        f.predict_proba([{"premise": "a", "hypothesis": "b"}])
    with pytest.raises(FileNotFoundError):
        make_base_classifier("hf", labels=["a", "b"], fields=["text"], model_path=str(tmp_path / "none")).fit([], [])
    with pytest.raises(ValueError, match="needs a local model path"):
        make_base_classifier("hf", labels=["a", "b"], fields=["text"])
