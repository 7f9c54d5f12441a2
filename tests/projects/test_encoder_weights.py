"""MiniLM loads once per process (issue 32.9): every Encoder shares the loaded weights, each
keeps its own text cache — so the real-MiniLM tests of one pytest process pay for one load."""

from __future__ import annotations

import pytest

from projects.ml.embeddings import Encoder

pytestmark = pytest.mark.slow


def test_encoders_share_the_loaded_weights_not_their_caches(tmp_path):
    first, second = Encoder(), Encoder(cache_dir=str(tmp_path))
    assert first.model is second.model  # one load
    a = first.encode(["a sentence"])
    b = second.encode(["a sentence"])
    assert (a == b).all() and first.encoded_count == second.encoded_count == 1  # each its own cache
    assert Encoder(model_path=str(tmp_path / "missing")).model_path.endswith("missing")
    with pytest.raises(FileNotFoundError):
        _ = Encoder(model_path=str(tmp_path / "missing")).model
