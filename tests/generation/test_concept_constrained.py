"""concept-constrained: concept extraction, clauses from a real tokenizer, and the generator
over tiny random GPT-2 / T5 models (every concept must appear in every candidate)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from generation.ml import registry
from generation.ml.base import GeneratedCandidate, GeneratorConfigError, Original, Skip
from generation.ml.concept_constrained import (
    ConceptConstrainedGenerator,
    concept_clause,
    extract_concepts,
)
from tests.generation._tiny_hf import save_gpt2, save_t5, torch_single_thread  # noqa: F401 - autouse fixture

LABELS = ("negative", "positive")


def review(text: str, oid: str = "r1", label: str = "negative") -> Original:
    return Original(id=oid, fields={"text": text}, label=label, labels=LABELS, task="sentiment")


@pytest.fixture(scope="module")
def gpt2_path(tmp_path_factory):
    return str(save_gpt2(tmp_path_factory.mktemp("gpt2")))


def test_concepts_are_content_noun_phrases() -> None:
    assert extract_concepts("The movie had clever plot devices and a great collection of analogies.") == [
        "movie",
        "plot devices",
        "collection",
        "analogies",
    ]
    assert extract_concepts("A young man is riding a brown horse in the open field.", max_concepts=2) == [
        "man",
        "horse",
    ]
    assert extract_concepts("It was awful.") == []
    # a concept contained in a longer one is dropped
    assert extract_concepts("The plot was thin, but the plot devices were clever.") == ["plot devices"]


def test_clauses_hold_tokenised_variants(gpt2_path) -> None:
    from generation.ml import hf

    tok = hf.load_causal_lm(gpt2_path).tokenizer
    clause = concept_clause("Brown horse", tok)
    assert clause is not None and clause.text == "Brown horse"
    ids = tok("brown horse", add_special_tokens=False)["input_ids"]
    assert tuple(ids) in clause.alternatives and len(ids) == 2
    assert concept_clause("zyzzyva", tok) is None  # unknown to the vocabulary: not a usable clause


def test_tiny_gpt2_candidates_keep_every_concept(gpt2_path) -> None:
    gen = ConceptConstrainedGenerator(causal_lm_path=gpt2_path, beam_size=4, candidate_k=6, candidates_per_label=2)
    text = "The movie was boring but the horse in the park was great ."
    out = list(gen.generate([review(text)]))
    cands = [c for c in out if isinstance(c, GeneratedCandidate)]
    assert cands, out
    concepts = extract_concepts(text)
    assert concepts == ["movie", "horse", "park"]
    for c in cands:
        assert c.generator == "concept-constrained" and c.target_label == "positive"
        low = c.fields["text"].lower()
        for concept in concepts:
            assert re.search(rf"\b{concept}\b", low), (concept, low)
        assert c.fields["text"].split()[0] == "The"  # the 1-gram prefix of the original
        assert c.scores["constraint_coverage"] == 1.0
        assert np.isfinite(c.scores["lm_logprob"])
        assert c.meta["concepts"] == concepts


def test_tiny_t5_and_per_label_steer_models(gpt2_path, tmp_path) -> None:
    t5 = str(save_t5(tmp_path / "t5"))
    gen = ConceptConstrainedGenerator(seq2seq_path=t5, beam_size=3, candidate_k=5, candidates_per_label=1)
    out = list(gen.generate([review("the dog sat in the park with the woman .")]))
    cands = [c for c in out if isinstance(c, GeneratedCandidate)]
    assert cands and all(all(w in c.fields["text"] for w in ("dog", "park", "woman")) for c in cands)

    steer = ConceptConstrainedGenerator(steer_paths={"positive": gpt2_path}, beam_size=3, candidate_k=5)
    out = list(
        steer.generate(
            [
                review("the dog sat in the park .", oid="a"),
                review("the dog sat in the park .", oid="b", label="positive"),
            ]
        )
    )
    got = {x.original_id: x for x in out}
    assert isinstance(got["a"], GeneratedCandidate) and got["a"].target_label == "positive"
    assert isinstance(got["b"], Skip) and "no model for 'negative'" in got["b"].reason


def test_skips_and_config_errors(gpt2_path, tmp_path) -> None:
    gen = ConceptConstrainedGenerator(causal_lm_path=gpt2_path, beam_size=2, candidate_k=4)
    out = list(
        gen.generate(
            [
                review("It was awful .", oid="noconcept"),
                review("dogs", oid="short"),
                Original(id="nofield", fields={"premise": "a dog"}, label="negative", labels=LABELS, task="sentiment"),
            ]
        )
    )
    reasons = {s.original_id: s.reason for s in out if isinstance(s, Skip)}
    assert "no content concepts" in reasons["noconcept"]
    assert "too short" in reasons["short"]
    assert set(reasons) == {"noconcept", "short", "nofield"} and len(out) == 3
    out = list(ConceptConstrainedGenerator().generate([review("the dog sat in the park .")]))
    assert len(out) == 1 and isinstance(out[0], Skip) and "no language model configured" in out[0].reason
    with pytest.raises(GeneratorConfigError, match="does not exist"):
        registry.create("concept-constrained", {}, {"causal_lm_path": str(tmp_path / "gone"), "device": "cpu"})
    with pytest.raises(GeneratorConfigError, match="prefix"):
        ConceptConstrainedGenerator(causal_lm_path=gpt2_path, prefix="2g")


def test_consistency_classifier_filters(gpt2_path) -> None:
    class Never:
        labels = LABELS

        def predict_proba(self, inputs):
            return np.array([[0.9, 0.1] for _ in inputs])

    gen = ConceptConstrainedGenerator(causal_lm_path=gpt2_path, beam_size=2, candidate_k=4, classifier=Never())
    out = list(gen.generate([review("the dog sat in the park .")]))
    assert len(out) == 1 and isinstance(out[0], Skip) and "consistency filter kept 0/" in out[0].reason


def test_near_copies_among_the_beams_are_passed_over(gpt2_path, monkeypatch) -> None:
    """The beams of one search often differ only in their last word: a near copy of a kept
    hypothesis (word-set Jaccard > 0.8) gives way to the next, different beam."""
    from generation.ml import concept_constrained as cc
    from generation.ml import hf
    from generation.ml.neurologic import Hypothesis

    tok = hf.load_causal_lm(gpt2_path).tokenizer
    beams = [
        "movie was great and the horse in the park was fun .",
        "movie was great and the horse in the park was good .",  # a near copy of the first
        "movie and the horse in the park were brilliant .",
    ]

    def fake_search(model, clauses, cfg, should_stop=None):
        return [
            Hypothesis(tuple(tok(" " + b, add_special_tokens=False)["input_ids"]), -1.0, frozenset(range(len(clauses))))
            for b in beams
        ]

    monkeypatch.setattr(cc, "constrained_beam_search", fake_search)
    gen = ConceptConstrainedGenerator(causal_lm_path=gpt2_path, candidates_per_label=2)
    out = list(gen.generate([review("The movie was boring but the horse in the park was great .")]))
    texts = [c.fields["text"] for c in out if isinstance(c, GeneratedCandidate)]
    assert texts == ["The " + beams[0], "The " + beams[2]]


def test_a_several_sentence_text_is_rewritten_one_sentence_at_a_time_in_chat_form(gpt2_path, monkeypatch) -> None:
    """The chat instruction asks for one sentence, so a short review of several sentences has
    its best sentence rewritten and spliced back (meta window), not the whole review replaced."""
    gen = ConceptConstrainedGenerator(causal_lm_path=gpt2_path, beam_size=2, candidate_k=4, candidates_per_label=1)
    text = "It was awful . The horse in the park was boring and the movie was long ."
    assert not gen._one_sentence_asked(text)  # the tiny tokenizer has no chat template
    monkeypatch.setattr(gen, "_one_sentence_asked", lambda full: True)
    out = list(gen.generate([review(text)]))
    cands = [c for c in out if isinstance(c, GeneratedCandidate)]
    assert cands, out
    for c in cands:
        old, new = c.meta["window"]
        assert old == "The horse in the park was boring and the movie was long ."
        assert c.fields["text"] == f"It was awful . {new}"
