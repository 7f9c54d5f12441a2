"""Word saliency: linear models with weights we set, true gradients on a tiny torch classifier,
leave-one-out for anything else, and the rationale selection rule."""

from __future__ import annotations

import numpy as np
import pytest

from generation.ml.base import GeneratorConfigError
from generation.ml.saliency import (
    HFClassifier,
    SklearnClassifier,
    gradient_token_saliency,
    leave_one_out_saliency,
    load_classifier,
    select_rationale,
    word_saliency,
    word_scores_from_tokens,
    word_spans,
)
from tests.generation._tiny_hf import torch_single_thread  # noqa: F401 - autouse fixture


def _linear_pipeline(weights: dict[str, float]):
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline

    texts = ["the movie was great", "the movie was terrible", "a plot", "the acting was awful"]
    pipe = Pipeline([("vec", CountVectorizer()), ("clf", LogisticRegression())])
    pipe.fit(texts, ["positive", "negative", "positive", "negative"])
    vocab = pipe.named_steps["vec"].vocabulary_
    coef = np.zeros((1, len(vocab)))
    for word, w in weights.items():
        coef[0, vocab[word]] = w
    pipe.named_steps["clf"].coef_ = coef
    pipe.named_steps["clf"].intercept_ = np.zeros(1)
    return pipe


def test_linear_saliency_ranks_the_heavy_words_first() -> None:
    # classes_ = [negative, positive]; positive weight pushes to "positive"
    pipe = _linear_pipeline({"terrible": -4.0, "awful": -3.0, "great": 2.5, "movie": 0.1, "the": 0.05})
    clf = SklearnClassifier(pipe)
    assert clf.labels == ("negative", "positive")
    text = "The movie was terrible and the acting was awful ."
    spans = word_spans(text)
    toks = [text[s:e] for s, e in spans]
    scores = clf.word_saliency(text, clf.labels.index("negative"))[0]
    assert len(scores) == len(toks)
    ranked = [toks[i] for i in np.argsort(scores)[::-1][:2]]
    assert ranked == ["terrible", "awful"]
    assert scores[toks.index(".")] == 0.0
    chosen = select_rationale(scores, toks, top_fraction=0.3, min_saliency=0.1)
    assert {toks[i] for i in chosen} == {"terrible", "awful"}  # "movie" is below 10% of the top
    # |w·x| is symmetric in the label for a binary model
    assert clf.word_saliency(text, 1)[0] == pytest.approx(scores)


def test_select_rationale_takes_top_fraction_and_honours_the_minimum() -> None:
    toks = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "."]
    scores = [0.0, 0.9, 0.5, 0.05, 0.3, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0]
    assert select_rationale(scores, toks, top_fraction=0.3, min_saliency=0.1) == [1, 2, 4]  # "." never
    assert select_rationale(scores, toks, top_fraction=0.3, min_saliency=0.6) == [1]
    assert select_rationale(scores, toks, eligible=[i != 1 for i in range(11)]) == [2, 3, 4]
    assert select_rationale([0.0] * 3, ["a", "b", "c"]) == []


def test_word_score_is_the_max_over_sub_tokens() -> None:
    text = "moviegoers loved it"
    spans = word_spans(text)  # moviegoers | loved | it
    offsets = [None, (0, 5), (5, 7), (7, 10), (11, 16), (17, 19), None]  # [CLS] movie ##go ##ers loved it [SEP]
    scores = [9.0, 0.1, 0.7, 0.3, 0.2, 0.05, 9.0]
    assert word_scores_from_tokens(scores, offsets, spans) == [0.7, 0.2, 0.05]


def _tiny_wordpiece_classifier(tmp_path):
    import torch
    from transformers import BertConfig, BertForSequenceClassification, BertTokenizer

    words = [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        "the",
        "movie",
        "was",
        "great",
        "terrible",
        "mo",
        "##vie",
        "##go",
        "##ers",
        "loved",
        "it",
        ".",
    ]
    vocab_file = tmp_path / "vocab.txt"
    vocab_file.write_text("\n".join(words) + "\n")
    tok = BertTokenizer(vocab=str(vocab_file))
    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=len(words),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        num_labels=2,
        id2label={0: "negative", 1: "positive"},
        label2id={"negative": 0, "positive": 1},
    )
    path = tmp_path / "cls"
    BertForSequenceClassification(cfg).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def test_gradient_saliency_on_a_tiny_torch_classifier(tmp_path) -> None:
    path = _tiny_wordpiece_classifier(tmp_path)
    clf = load_classifier(str(path))
    assert isinstance(clf, HFClassifier)
    assert clf.labels == ("negative", "positive")
    probs = clf.predict_proba(["the movie was great", ("moviegoers loved it", "the movie")])
    assert probs.shape == (2, 2) and np.allclose(probs.sum(1), 1.0)

    text = "moviegoers loved it"
    ts = gradient_token_saliency(clf.model, clf.tokenizer, text, 1)
    real = [s for s, o in zip(ts.scores, ts.offsets, strict=True) if o is not None]
    assert len(real) == 5  # movie ##go ##ers loved it: "moviegoers" is three sub-tokens
    assert all(s > 0 for s in real)
    assert sum(real) == pytest.approx(1.0)
    words = clf.word_saliency(text, 1)[0]
    sub = [s for s, o in zip(ts.scores, ts.offsets, strict=True) if o is not None and o[1] <= 10]
    assert len(sub) >= 2
    assert words[0] == pytest.approx(max(sub))
    assert words[0] != pytest.approx(sum(sub) / len(sub))
    # pairs: scores per segment, aligned with each segment's words
    pair = clf.word_saliency(("the movie was great", "it was terrible"), 0)
    assert [len(x) for x in pair] == [4, 3]
    assert all(v > 0 for seg in pair for v in seg)


def test_leave_one_out_for_any_classifier() -> None:
    class KeywordClassifier:
        labels = ("negative", "positive")

        def predict_proba(self, inputs):
            out = []
            for x in inputs:
                text = x if isinstance(x, str) else " ".join(x)
                p = 0.9 if "great" in text.split() else 0.4
                out.append([1 - p, p])
            return np.array(out)

    clf = KeywordClassifier()
    scores = word_saliency(clf, "the movie was great", 1)[0]
    assert scores == pytest.approx([0.0, 0.0, 0.0, 0.5])
    assert leave_one_out_saliency(clf, ("a movie", "great"), 1) == [[0.0, 0.0], [pytest.approx(0.5)]]


def test_load_classifier_errors_are_config_errors(tmp_path) -> None:
    with pytest.raises(GeneratorConfigError, match="empty"):
        load_classifier("")
    with pytest.raises(GeneratorConfigError, match="does not exist"):
        load_classifier(str(tmp_path / "nope"))
    (tmp_path / "broken").mkdir()
    with pytest.raises(GeneratorConfigError, match=r"config\.json"):
        load_classifier(str(tmp_path / "broken"))
    bad = tmp_path / "bad.joblib"
    bad.write_bytes(b"not a pickle")
    with pytest.raises(GeneratorConfigError, match="cannot load"):
        load_classifier(str(bad))
