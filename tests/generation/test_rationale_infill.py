"""rationale-infill: saliency-chosen masks, label-targeted infilling (lexical, masked LM, T5)
and the consistency filter, with classifiers whose weights we set."""

from __future__ import annotations

import numpy as np
import pytest

from generation.ml import registry
from generation.ml.base import GeneratedCandidate, GeneratorConfigError, Original, Skip
from generation.ml.rationale_infill import (
    RationaleInfillGenerator,
    Slot,
    apply_fills,
    consistency_filter,
    label_substitutes,
    parse_sentinels,
    wordnet,
)
from generation.ml.saliency import SklearnClassifier
from tests.generation._tiny_hf import torch_single_thread  # noqa: F401 - autouse fixture

LABELS = ("negative", "positive")


def sentiment_pipeline(weights: dict[str, float]):
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import Pipeline

    texts = [
        "the movie was great and interesting",
        "the movie was terrible and boring",
        "a fun plot with brilliant acting",
        "the acting was awful and dull",
    ]
    pipe = Pipeline([("vec", CountVectorizer()), ("clf", LogisticRegression())])
    pipe.fit(texts, ["positive", "negative", "positive", "negative"])
    vocab = pipe.named_steps["vec"].vocabulary_
    coef = np.zeros((1, len(vocab)))
    for word, w in weights.items():
        coef[0, vocab[word]] = w
    pipe.named_steps["clf"].coef_ = coef
    pipe.named_steps["clf"].intercept_ = np.zeros(1)
    return pipe


FLIPPABLE = {"terrible": -3.0, "boring": -2.5, "great": 3.0, "interesting": 2.5, "movie": 0.1}


def orig(text: str, label: str = "negative", oid: str = "o1") -> Original:
    return Original(id=oid, fields={"text": text}, label=label, labels=LABELS, task="sentiment")


def out_pairs(out: list[GeneratedCandidate | Skip]) -> list[GeneratedCandidate | Skip]:
    return sorted(out, key=lambda x: x.original_id)


def run(gen: RationaleInfillGenerator, *originals: Original) -> list[GeneratedCandidate | Skip]:
    return list(gen.generate(list(originals)))


def test_lexical_infill_flips_the_label_and_keeps_the_rest() -> None:
    clf = SklearnClassifier(sentiment_pipeline(FLIPPABLE))
    gen = RationaleInfillGenerator(classifier=clf, infiller="lexical")
    text = "The movie was terrible and boring ."
    out = run(gen, orig(text))
    cands = [c for c in out if isinstance(c, GeneratedCandidate)]
    assert cands, out
    for c in cands:
        assert c.generator == "rationale-infill" and c.target_label == "positive"
        assert c.scores["p_target"] > 0.5 and c.scores["consistency"] == 1.0
        assert c.fields["text"].startswith("The movie was ")  # non-rationale words untouched
        assert set(c.meta["rationale"]) <= {"terrible", "boring"}
        assert clf.predict_proba([c.fields["text"]])[0][1] == pytest.approx(c.scores["p_target"], abs=1e-5)
    assert any("great" in c.fields["text"] for c in cands)


def test_consistency_filter_drops_what_the_classifier_rejects() -> None:
    # "great"/"interesting" carry no weight here: substitutions cannot flip the prediction
    weights = {"terrible": -3.0, "boring": -2.5, "was": -0.5}
    clf = SklearnClassifier(sentiment_pipeline(weights))
    out = run(RationaleInfillGenerator(classifier=clf, infiller="lexical"), orig("The movie was terrible and boring ."))
    assert len(out) == 1 and isinstance(out[0], Skip)
    assert "consistency filter" in out[0].reason
    # without the filter the same candidates come out, marked inconsistent
    loose = run(
        RationaleInfillGenerator(classifier=clf, infiller="lexical", consistency=False),
        orig("The movie was terrible and boring ."),
    )
    assert loose and all(isinstance(c, GeneratedCandidate) and c.scores["consistency"] == 0.0 for c in loose)

    verdicts = consistency_filter(
        SklearnClassifier(sentiment_pipeline(FLIPPABLE)),
        ["the movie was great", "the movie was terrible", "movie"],
        ["positive", "positive", "negative"],
    )
    assert [v[0] for v in verdicts] == [True, False, False]  # "movie" alone leans positive
    assert verdicts[0][1] > 0.9


def test_per_original_problems_are_skips_with_reasons() -> None:
    clf = SklearnClassifier(sentiment_pipeline(FLIPPABLE))
    gen = RationaleInfillGenerator(classifier=clf, infiller="lexical")
    out = run(
        gen,
        orig("terrible", oid="short"),
        orig("The movie was terrible and boring .", label="positive", oid="wrong"),
        orig("The movie was terrible and boring .", label="sarcastic", oid="unknown"),
        Original(id="empty", fields={"text": "  "}, label="negative", labels=LABELS, task="sentiment"),
        orig("the movie was a movie", oid="unsure"),
    )
    reasons = {s.original_id: s.reason for s in out if isinstance(s, Skip)}
    assert set(reasons) == {"short", "wrong", "unknown", "empty", "unsure"}
    assert "not right and sure" in reasons["wrong"] and "not right and sure" in reasons["unsure"]
    assert "unknown to the base classifier" in reasons["unknown"]
    assert "empty" in reasons["empty"]
    missing = RationaleInfillGenerator(classifier=clf, infiller="lexical", edit_fields=["hypothesis"])
    assert "missing field" in run(missing, orig("The movie was terrible and boring ."))[0].reason


def test_misconfiguration_fails_at_construction(tmp_path) -> None:
    # unconfigured (empty setting) is a per-original skip; a wrong path fails at construction
    unconfigured = run(
        RationaleInfillGenerator(base_classifier_path=""), orig("The movie was bad ."), orig("It was bad .", oid="o2")
    )
    assert [(s.original_id, type(s)) for s in out_pairs(unconfigured)] == [("o1", Skip), ("o2", Skip)]
    assert "COUNTERPART_BASE_CLASSIFIER_PATH" in unconfigured[0].reason
    clf = SklearnClassifier(sentiment_pipeline(FLIPPABLE))
    with pytest.raises(GeneratorConfigError, match="does not exist"):
        RationaleInfillGenerator(classifier=clf, infiller="mlm", mlm_path=str(tmp_path / "missing"))
    with pytest.raises(GeneratorConfigError, match="top_fraction"):
        RationaleInfillGenerator(classifier=clf, top_fraction=0)
    with pytest.raises(GeneratorConfigError):
        registry.create("rationale-infill", {}, {"base_classifier_path": str(tmp_path / "nope.joblib")})


def test_registry_builds_it_from_a_joblib_pipeline(tmp_path) -> None:
    import joblib

    path = tmp_path / "clf.joblib"
    joblib.dump(sentiment_pipeline(FLIPPABLE), path)
    gen = registry.create(
        "rationale-infill",
        {"infiller": "lexical"},
        {"base_classifier_path": str(path), "mlm_path": "", "seq2seq_path": "", "device": "cpu"},
    )
    out = run(gen, orig("The movie was terrible and boring ."))
    assert any(isinstance(c, GeneratedCandidate) for c in out)


def test_label_substitutes_use_wordnet_and_the_lexicon() -> None:
    wn = wordnet()
    assert label_substitutes("terrible", "JJ", "positive", wn)[0] == "great"
    assert "bad" in label_substitutes("good", "JJ", "negative", wn)
    assert label_substitutes("good", "JJ", "positive", wn) == []  # already positive
    assert "animal" in " ".join(label_substitutes("dog", "NN", "entailment", wn)) or label_substitutes(
        "dog", "NN", "entailment", wn
    )
    assert label_substitutes("asleep", "JJ", "contradiction", wn) == ["awake"]


def test_masked_lm_infill_with_a_tiny_bert(tmp_path) -> None:
    from tests.generation._tiny_hf import save_bert_mlm

    path = save_bert_mlm(tmp_path / "mlm")
    clf = SklearnClassifier(sentiment_pipeline(FLIPPABLE))
    gen = RationaleInfillGenerator(
        classifier=clf, infiller="auto", mlm_path=str(path), consistency=False, candidates_per_label=2
    )
    assert gen.infiller == "mlm"
    out = run(gen, orig("The movie was terrible and boring ."))
    cands = [c for c in out if isinstance(c, GeneratedCandidate)]
    assert cands
    for c in cands:
        words = c.fields["text"].split()
        assert words[:3] == ["The", "movie", "was"] and words[4] == "and"
        assert c.meta["infiller"] == "mlm"
        assert words[3].lower() != "terrible" and words[5].lower() != "boring"
        assert words[3].isalpha()


def test_t5_infill_path_and_sentinel_parsing(tmp_path) -> None:
    from tests.generation._tiny_hf import save_t5

    assert parse_sentinels("<extra_id_0> really great <extra_id_1> fun </s>", 2) == {0: "really great", 1: "fun"}
    assert parse_sentinels("<extra_id_0> great", 2) is None
    slots = [Slot("text", 14, 22, "terrible", "JJ"), Slot("text", 27, 33, "boring", "JJ")]
    assert apply_fills({"text": "The movie was terrible and boring ."}, slots, ["very good", "fun"]) == {
        "text": "The movie was very good and fun ."
    }

    clf = SklearnClassifier(sentiment_pipeline(FLIPPABLE))
    gen = RationaleInfillGenerator(classifier=clf, seq2seq_path=str(save_t5(tmp_path / "t5")), consistency=False)
    assert gen.infiller == "seq2seq"
    out = run(gen, orig("The movie was terrible and boring ."), orig("The movie was boring .", oid="o2"))
    assert {x.original_id for x in out} == {"o1", "o2"}  # every original yields a candidate or a skip
    for c in out:
        if isinstance(c, GeneratedCandidate):
            assert c.fields["text"].startswith("The movie was")


def test_causal_lm_infill_with_a_tiny_gpt2(tmp_path) -> None:
    from tests.generation._tiny_hf import save_gpt2

    path = save_gpt2(tmp_path / "gpt2")
    clf = SklearnClassifier(sentiment_pipeline(FLIPPABLE))
    gen = RationaleInfillGenerator(
        classifier=clf, infiller="causal", causal_lm_path=str(path), consistency=False, candidates_per_label=3
    )
    out = run(gen, orig("The movie was terrible and boring ."))
    cands = [c for c in out if isinstance(c, GeneratedCandidate)]
    assert cands
    for c in cands:
        words = c.fields["text"].split()
        assert words[:3] == ["The", "movie", "was"] and len(words) == 7
        assert c.meta["infiller"] == "causal"
        assert words[3].isalpha() and words[3].lower() != "terrible"
    with pytest.raises(GeneratorConfigError):
        RationaleInfillGenerator(classifier=clf, infiller="causal", causal_lm_path=str(tmp_path / "missing"))
