"""``hf.sample_continuations``: each prompt run once and its cache shared by its samples, with
what ``generate`` would give (greedy: the same tokens), over a tiny random GPT-2."""

from __future__ import annotations

import pytest

from generation.ml import hf
from tests.generation._tiny_hf import save_gpt2, torch_single_thread  # noqa: F401 - autouse fixture


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    return hf.load_causal_lm(str(save_gpt2(tmp_path_factory.mktemp("gpt2") / "gpt2", seed=3)))


def _left_padded(lm, prompts):
    tok = lm.tokenizer
    side = tok.padding_side
    tok.padding_side = "left"
    try:
        return tok(prompts, return_tensors="pt", padding=True)
    finally:
        tok.padding_side = side


PROMPTS = ["the movie was", "a young man is riding a brown horse in the", "i"]


def test_greedy_continuations_match_generate_with_left_padding(tiny) -> None:
    import torch

    enc = _left_padded(tiny, PROMPTS)
    pad = tiny.tokenizer.pad_token_id
    got = hf.sample_continuations(
        tiny.model, enc["input_ids"], enc["attention_mask"], n=2, max_new_tokens=6, temperature=0, pad_id=pad
    )
    with torch.inference_mode():
        ref = tiny.model.generate(**enc, max_new_tokens=6, do_sample=False, pad_token_id=pad)
    ref = ref[:, enc["input_ids"].shape[1] :].tolist()
    assert len(got) == 2 * len(PROMPTS)
    for i, row in enumerate(ref):
        assert got[2 * i] == row and got[2 * i + 1] == row  # both samples of prompt i, in order


def test_sampling_is_seeded_and_stops_at_a_stop_id(tiny) -> None:
    enc = _left_padded(tiny, PROMPTS)
    kw = {"n": 4, "max_new_tokens": 8, "temperature": 1.0, "top_p": 1.0, "pad_id": 0}
    a = hf.sample_continuations(tiny.model, enc["input_ids"], enc["attention_mask"], seed=5, **kw)
    b = hf.sample_continuations(tiny.model, enc["input_ids"], enc["attention_mask"], seed=5, **kw)
    assert a == b and len(a) == 12 and len({tuple(r) for r in a}) > 1  # samples differ, seeds repeat
    stop = frozenset(t for row in a for t in row[:2])  # tokens that surely occur early
    cut = hf.sample_continuations(tiny.model, enc["input_ids"], enc["attention_mask"], seed=5, stop_ids=stop, **kw)
    for row in cut:
        assert row and row[-1] in stop and not set(row[:-1]) & stop  # ends at (and keeps) its first stop id
        assert len(row) <= 2


def test_top_p_keeps_only_the_head_of_the_distribution(tiny) -> None:
    enc = _left_padded(tiny, PROMPTS[:1])
    greedy = hf.sample_continuations(
        tiny.model, enc["input_ids"], enc["attention_mask"], n=1, max_new_tokens=1, temperature=0
    )
    tiny_p = hf.sample_continuations(
        tiny.model, enc["input_ids"], enc["attention_mask"], n=6, max_new_tokens=1, top_p=1e-9, seed=1
    )
    assert all(row == greedy[0] for row in tiny_p)  # top-p ~0: only the most likely token is left
