"""Soft word alignment of two texts from MiniLM token vectors (``Encoder.alignment``)."""

from __future__ import annotations

import numpy as np
import pytest

from projects.ml.embeddings import N_ALIGN, Encoder, alignment_features


def test_alignment_features_read_how_well_the_second_text_is_covered_by_the_first():
    rng = np.random.default_rng(0)
    a = rng.normal(size=(4, 16))
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    same = alignment_features(a, a)
    assert same == pytest.approx([1, 1, 0, 0, 1, 1, 0], abs=1e-6)
    # the second text has two pieces the first lacks (orthogonal to all of it)
    extra = np.zeros((2, 16))
    basis = np.linalg.svd(a, full_matrices=True)[2][4:6]  # orthogonal to every row of a
    extra[:] = basis
    b = np.vstack([a[:2], extra])
    f = alignment_features(a, b)
    assert f[0] == pytest.approx(0.5, abs=1e-6) and f[1] == pytest.approx(0.0, abs=1e-6)
    assert f[2] == pytest.approx(0.5) and f[3] == pytest.approx(0.5)
    assert f[6] == pytest.approx(0.5)  # a's last two pieces have no counterpart in b either
    assert not alignment_features(a, np.zeros((0, 16))).any()
    assert alignment_features(a, b).shape == (N_ALIGN,)


@pytest.mark.slow  # real MiniLM
def test_alignment_with_real_minilm_is_cached_per_pair(tmp_path):
    enc = Encoder(cache_dir=str(tmp_path))
    pairs = [
        ("A man is playing a guitar on stage.", "A man is playing a guitar on stage."),
        ("A man is playing a guitar on stage.", "A woman is eating soup in a kitchen."),
        ("A man is playing a guitar on stage.", "A man plays an instrument."),
    ]
    f = enc.alignment(pairs)
    assert f.shape == (3, N_ALIGN)
    assert f[0, 0] == pytest.approx(1.0, abs=1e-4) and f[0, 2] == 0.0
    assert f[1, 0] < f[2, 0] < f[0, 0]  # unrelated < paraphrase-like < identical
    assert f[1, 2] > f[2, 2]  # more pieces of the unrelated text with nothing like them
    vecs = enc.token_vectors(["The the a of."])
    assert vecs[0].shape[0] == 0  # no content piece
    # a second encoder on the same cache answers from disk without loading the model
    again = Encoder(cache_dir=str(tmp_path))
    assert np.allclose(again.alignment(pairs), f)
    assert again._model is None
