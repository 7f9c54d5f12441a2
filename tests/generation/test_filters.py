"""Candidate filters: similarity band (a stub encoder for the band logic, the real MiniLM marked
slow), duplicates, perplexity with a tiny random GPT-2, the DISCO artifact heuristics,
consistency and teacher shift."""

from __future__ import annotations

import numpy as np
import pytest

from generation.ml import filters as F


class StubEncoder:
    """cosine() returns preset similarities, one per candidate text."""

    def __init__(self, sims: dict[str, float]) -> None:
        self.sims = sims
        self.calls = 0

    def cosine(self, a: list[str], b: list[str]) -> np.ndarray:
        self.calls += 1
        return np.array([self.sims[x] for x in b], dtype=np.float32)


# -- similarity --------------------------------------------------------------------------------
def test_similarity_band_is_half_open() -> None:
    enc = StubEncoder({"low": 0.8, "in": 0.85, "edge": 0.91, "high": 0.95})
    res = F.similarity_band(enc, ["o"] * 4, ["low", "in", "edge", "high"], (0.8, 0.91))
    assert [r.keep for r in res] == [False, True, True, False]
    assert [round(r.score, 2) for r in res] == [0.8, 0.85, 0.91, 0.95]
    assert enc.calls == 1  # one batched call
    assert res[0].reasons and not res[1].reasons


def test_band_defaults_and_validation() -> None:
    assert F.band_for("image-caption") == (0.8, 0.91)
    assert F.band_for("nli") == F.DEFAULT_BANDS["nli"]
    assert F.band_for("nli", (0.5, 0.9)) == (0.5, 0.9)
    with pytest.raises(ValueError):
        F.band_for("nli", (0.9, 0.5))


def test_comparison_texts_uses_window_then_changed_field() -> None:
    o = {"premise": "A man sleeps.", "hypothesis": "A person rests."}
    c = {"premise": "A man sleeps.", "hypothesis": "A person never rests."}
    assert F.comparison_texts(o, c) == ("A person rests.", "A person never rests.")
    assert F.comparison_texts(
        {"text": "x. Old one."}, {"text": "x. New one."}, {"window": ["Old one.", "New one."]}
    ) == ("Old one.", "New one.")


@pytest.mark.slow  # real MiniLM
def test_similarity_band_with_real_minilm() -> None:
    from projects.ml.embeddings import Encoder

    enc = Encoder()
    orig = "A man is riding a bike in the park."
    cands = [orig, "A man is riding a horse in the park.", "The stock market fell sharply on Monday."]
    res = F.similarity_band(enc, [orig] * 3, cands, (0.7, 0.985))
    assert res[0].score > 0.99 and not res[0].keep  # identical: no change
    assert 0.7 < res[1].score <= 0.985 and res[1].keep  # a minimal, meaningful edit
    assert res[2].score < 0.3 and not res[2].keep  # unrelated


# -- duplicates --------------------------------------------------------------------------------
def test_dedupe_exact_near_and_original() -> None:
    orig = "A man is riding a bike."
    cands = [
        "A man is riding a bike!",  # same words as the original
        "A man is not riding a bike.",
        "a man is NOT riding a bike",  # exact duplicate once normalised
        "A man is riding a red bike.",
        "A man is not riding a bike .",  # same edit again
        "A woman is riding a bike.",
    ]
    res = F.dedupe(orig, cands)
    assert [r.keep for r in res] == [False, True, False, True, False, True]
    assert "original" in res[0].reasons[0] and "sibling" in res[2].reasons[0]


def test_dedupe_near_duplicate_threshold() -> None:
    orig = "one two three four five six seven eight nine ten"
    a = (
        "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen "
        "sixteen seventeen eighteen nineteen twenty"
    )
    b = a + " extra"  # edit signature Jaccard 10/11 = 0.909
    assert [r.keep for r in F.dedupe(orig, [a, b], threshold=0.9)] == [True, False]
    assert [r.keep for r in F.dedupe(orig, [a, b], threshold=0.95)] == [True, True]


def test_jaccard_and_normalise() -> None:
    assert F.normalise("It's  GREAT!<br />Really.") == "it's great really"
    assert F.token_jaccard("a b c", "a b d") == pytest.approx(0.5)


# -- perplexity --------------------------------------------------------------------------------
def _tiny_gpt2(tmp_path):
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    vocab = {w: i for i, w in enumerate("<unk> <eos> a the man dog is riding bike park in . runs".split())}
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    tk.normalizer = normalizers.Lowercase()
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", eos_token="<eos>")
    torch.manual_seed(0)
    model = GPT2LMHeadModel(GPT2Config(vocab_size=len(vocab), n_positions=32, n_embd=16, n_layer=1, n_head=2))
    path = tmp_path / "gpt2"
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return str(path)


def test_perplexity_with_tiny_gpt2_from_a_local_path(tmp_path) -> None:
    path = _tiny_gpt2(tmp_path)
    scorer = F.PerplexityScorer(path)
    ppl = scorer.score(["a man is riding a bike .", "a dog runs in the park ."])
    assert ppl.shape == (2,) and np.all(np.isfinite(ppl)) and np.all(ppl > 1)
    same = F.perplexity(scorer, ["a man is riding a bike ."], ["a man is riding a bike ."], max_ratio=1.0)
    assert same[0].keep and same[0].score == pytest.approx(1.0)  # the score is the ratio
    strict = F.perplexity(scorer, ["a man is riding a bike ."], ["a dog runs in the park ."], max_ratio=1e-6)
    assert not strict[0].keep


def test_perplexity_missing_path_is_a_clear_error(tmp_path) -> None:
    with pytest.raises(FileNotFoundError, match="perplexity LM"):
        F.PerplexityScorer(str(tmp_path / "nope"))


# -- artifacts ---------------------------------------------------------------------------------
NLI = {"premise": "A man is riding a bike in the park.", "hypothesis": "A person is outdoors."}


def test_artifact_copies_the_other_sentence_or_the_prompt() -> None:
    r = F.artifacts(NLI, {"premise": "A person is outdoors.", "hypothesis": NLI["hypothesis"]})
    assert not r.keep and any("copies hypothesis" in x for x in r.reasons)
    r = F.artifacts(
        NLI,
        {"premise": "Fill in the blank so that the label is true: a man rides.", "hypothesis": NLI["hypothesis"]},
        prompt="Fill in the blank so that the label is true:\n[blank]",
    )
    assert not r.keep and any("prompt" in x for x in r.reasons)


def test_artifact_overlap_thresholds() -> None:
    # introduced words {person, is, outdoors} = hypothesis words minus "a": Jaccard 0.75 > 0.6
    r = F.artifacts(
        NLI,
        {"premise": "A man is riding a bike in the park person is outdoors.", "hypothesis": NLI["hypothesis"]},
        introduced=["person", "is", "outdoors"],
    )
    assert not r.keep and any("hypothesis" in x for x in r.reasons)
    # introduced {man, riding, bike}: Jaccard with the premise words 3/8 = 0.375 > 0.35
    r = F.artifacts(
        NLI, {"premise": NLI["premise"], "hypothesis": "A man riding a bike."}, introduced=["man", "riding", "bike"]
    )
    assert not r.keep and any("premise" in x for x in r.reasons)
    r = F.artifacts(NLI, {"premise": "A man is riding a horse in the park.", "hypothesis": NLI["hypothesis"]})
    assert r.keep and r.score == 0.0


def test_negation_shortcut_whole_words_only() -> None:
    cf = {"premise": NLI["premise"], "hypothesis": "A person is not outdoors."}
    assert not F.artifacts(NLI, cf, target_label="contradiction").keep
    assert F.artifacts(NLI, cf, target_label="neutral").keep  # only a shortcut towards contradiction
    cf2 = {"premise": NLI["premise"], "hypothesis": "A person is taking notes outdoors."}  # 'not' inside 'notes'
    assert F.artifacts(NLI, cf2, target_label="contradiction").keep
    cf3 = {"premise": NLI["premise"], "hypothesis": "A person isn't outdoors."}
    assert not F.artifacts(NLI, cf3, target_label="contradiction").keep


# -- classifier-based --------------------------------------------------------------------------
LABELS = ["entailment", "neutral", "contradiction"]


def test_consistency() -> None:
    p = np.array([[0.7, 0.2, 0.1], [0.2, 0.3, 0.5]])
    res = F.consistency(p, LABELS, ["entailment", "neutral"])
    assert [r.keep for r in res] == [True, False]
    assert [r.score for r in res] == [pytest.approx(0.7), pytest.approx(0.3)]
    with pytest.raises(ValueError):
        F.consistency(p, LABELS, ["entailment", "maybe"])


def test_teacher_shift() -> None:
    before = np.array([[0.6, 0.3, 0.1], [0.6, 0.3, 0.1], [0.6, 0.3, 0.1]])
    after = np.array([[0.2, 0.2, 0.6], [0.3, 0.35, 0.35], [0.2, 0.45, 0.35]])
    res = F.teacher_shift(before, after, LABELS, ["contradiction", "contradiction", "contradiction"])
    assert [round(r.score, 2) for r in res] == [0.5, 0.25, 0.25]
    assert [r.keep for r in res] == [True, False, False]  # strictly greater than 0.25
    assert F.teacher_shift(before, after, LABELS, ["contradiction"] * 3, threshold=0.2)[1].keep
