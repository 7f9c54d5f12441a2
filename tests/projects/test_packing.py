"""Packed rows (projects/ml/packing.py): several sequences per row of a transformer batch, each
seeing only itself (and a row's shared prefix), with its own position ids; and the MiniLM
encoder that runs on them, against sentence-transformers' padded batches."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from projects.ml.packing import pack_rows, packed_batches


def test_pack_rows_fills_rows_longest_first_within_capacity() -> None:
    lengths = [5, 3, 8, 2, 6, 1, 4]
    rows = pack_rows(lengths, capacity=8)
    assert sorted(i for row in rows for i in row) == list(range(len(lengths)))  # each once
    assert all(sum(lengths[i] for i in row) <= 8 for row in rows)
    assert rows[0] == [2]  # the longest opens the first row and fills it
    assert len(rows) == 4  # 29 tokens in rows of 8: the fewest rows possible
    assert pack_rows(lengths, capacity=8) == rows  # the same lengths, the same rows


def test_pack_rows_gives_an_overlong_sequence_a_row_of_its_own() -> None:
    rows = pack_rows([12, 2, 2], capacity=8)
    assert [0] in rows and sum(len(r) for r in rows) == 3


def test_causal_rows_with_a_shared_prefix() -> None:
    seqs = [[11, 12, 13], [21, 22]]
    (batch,) = list(packed_batches(seqs, width=8, causal=True, dtype=torch.float32, prefix=[1]))
    assert batch.input_ids.tolist() == [[1, 11, 12, 13, 21, 22]]
    # each sequence counts its positions from the prefix, as if it stood alone after it
    assert batch.position_ids.tolist() == [[0, 1, 2, 3, 1, 2]]
    assert sorted(batch.spans) == [(0, 0, 1, 3), (1, 0, 4, 2)]
    seen = (batch.attention_mask[0, 0] == 0).int().tolist()
    assert seen == [
        [1, 0, 0, 0, 0, 0],
        [1, 1, 0, 0, 0, 0],
        [1, 1, 1, 0, 0, 0],
        [1, 1, 1, 1, 0, 0],
        [1, 0, 0, 0, 1, 0],  # the second sequence sees the prefix and itself, not the first
        [1, 0, 0, 0, 1, 1],
    ]
    assert batch.attention_mask.dtype == torch.float32 and batch.attention_mask.min() == torch.finfo(torch.float32).min


def test_bidirectional_rows_padding_and_batches() -> None:
    seqs = [[5, 6, 7], [8, 9], [3]]
    batches = list(packed_batches(seqs, width=3, causal=False, dtype=torch.float32, max_tokens=3, pad_id=0))
    assert len(batches) == 2  # rows of 3 tokens, at most 3 tokens per batch: one row each
    second = batches[1]
    assert second.input_ids.tolist() == [[8, 9, 3]]
    assert (second.attention_mask[0, 0] == 0).int().tolist() == [[1, 1, 0], [1, 1, 0], [0, 0, 1]]
    # a row shorter than the batch's widest is padded; padding sees only itself
    (one,) = list(packed_batches([[5, 6, 7], [8]], width=3, causal=False, dtype=torch.float32))
    assert one.input_ids.tolist() == [[5, 6, 7], [8, 0, 0]]
    assert (one.attention_mask[1, 0] == 0).int().tolist() == [[1, 0, 0], [0, 1, 0], [0, 0, 1]]


def test_empty_sequences_are_refused() -> None:
    with pytest.raises(ValueError, match="at least one token"):
        list(packed_batches([[1], []], width=4, causal=True, dtype=torch.float32))
    assert list(packed_batches([], width=4, causal=True, dtype=torch.float32)) == []


# -- the MiniLM encoder on packed rows (a tiny random BERT with mean pooling) -----------------
@pytest.fixture(scope="module")
def tiny_sentence_model(tmp_path_factory):
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.sentence_transformer.modules import Normalize, Pooling, Transformer
    from transformers import BertModel

    from tests.generation._tiny_hf import _bert_config, wordlevel_tokenizer

    root = tmp_path_factory.mktemp("st")
    torch.manual_seed(0)
    BertModel(_bert_config()).save_pretrained(root / "bert")
    wordlevel_tokenizer(pair_template=True).save_pretrained(root / "bert")
    st = SentenceTransformer(modules=[Transformer(str(root / "bert")), Pooling(16, "mean"), Normalize()])
    st.save(str(root / "st"))
    return str(root / "st")


TEXTS = [
    "the movie was great .",
    "a man is riding a horse in the park",
    "bad",
    "two dogs",
    "the acting was not good but the story was clever and the film was fun",
]


def test_packed_encoder_gives_sentence_transformers_vectors(tiny_sentence_model) -> None:
    from projects.ml.embeddings import Encoder

    padded = Encoder(model_path=tiny_sentence_model, pack=False)
    packed = Encoder(model_path=tiny_sentence_model, pack_width=16)
    assert packed.packed is None and padded.packed is False
    a, b = padded.encode(TEXTS), packed.encode(TEXTS)
    assert packed.packed is True and padded.packed is False
    np.testing.assert_allclose(b, a, atol=1e-5)
    np.testing.assert_allclose(np.linalg.norm(b, axis=1), 1.0, atol=1e-5)
    # a text alone gives the vector it gets packed beside others
    np.testing.assert_allclose(Encoder(model_path=tiny_sentence_model).encode([TEXTS[1]])[0], b[1], atol=1e-5)


def test_packed_token_vectors_and_alignment_match_sentence_transformers(tiny_sentence_model) -> None:
    from projects.ml.embeddings import Encoder

    padded = Encoder(model_path=tiny_sentence_model, pack=False)
    packed = Encoder(model_path=tiny_sentence_model, pack_width=16)
    want, got = padded.token_vectors(TEXTS), packed.token_vectors(TEXTS)
    assert packed.packed is True
    assert [g.shape for g in got] == [w.shape for w in want] and sum(len(g) for g in got) > 10
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, atol=1e-5)
    pairs = [(TEXTS[1], TEXTS[0]), (TEXTS[4], TEXTS[3])]
    np.testing.assert_allclose(packed.alignment(pairs), padded.alignment(pairs), atol=1e-5)


def test_encoder_falls_back_when_packing_disagrees(tiny_sentence_model, monkeypatch) -> None:
    from projects.ml import embeddings

    def wrong(self, texts):
        return np.zeros((len(texts), 16), dtype=np.float32)

    monkeypatch.setattr(embeddings.Encoder, "_encode_packed", wrong)
    enc = embeddings.Encoder(model_path=tiny_sentence_model)
    vecs = enc.encode(TEXTS[:2])
    assert enc.packed is False  # checked once, then sentence-transformers' encode
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)


@pytest.mark.slow
def test_packed_minilm_matches_sentence_transformers() -> None:
    from projects.ml.embeddings import Encoder

    texts = [
        "A man in a blue shirt is riding a bicycle down a busy street.",
        "Two dogs play.",
        "The woman is not holding an umbrella.",
        "Several children are sitting on the steps of an old stone church while their parents talk.",
    ] * 3
    texts = [f"{t} ({i})" for i, t in enumerate(texts)]
    plain = Encoder(pack=False)
    a = plain.encode(texts)
    enc = Encoder()
    b = enc.encode(texts)
    assert enc.packed is True
    np.testing.assert_allclose(b, a, atol=1e-5)
    pairs = list(zip(texts[:4], texts[4:8], strict=True))
    np.testing.assert_allclose(enc.alignment(pairs), plain.alignment(pairs), atol=1e-4)
