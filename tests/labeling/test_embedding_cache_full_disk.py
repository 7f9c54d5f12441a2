"""The embedding cache on a full disk (QA probe: ``COUNTERPART_EMBEDDING_CACHE`` on a full
tmpfs). Writing a cache shard raised ``OSError`` out of ``Encoder.encode``, so training h (and
auto-labelling, the evaluation) failed with "an internal error stopped the job" although the
vectors were computed. The cache only saves time: now the shard is left out (nothing
half-written stays), a warning is logged, and the vectors are returned. The disk is really full:
the shard's temporary file is a link to ``/dev/full``; the pair-feature cache of warm starts
likewise."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

import numpy as np

from labeling.ml.feature_cache import EncodingCache
from projects.ml import embeddings
from projects.ml.embeddings import DIM, Encoder, text_key

TEXTS = ["a man sleeps", "a man runs"]


def _encoder(cache_dir: Path, monkeypatch) -> Encoder:  # type: ignore[no-untyped-def]
    def vectors(self, texts):  # type: ignore[no-untyped-def]  # no model: the cache is under test
        return np.ones((len(texts), DIM), dtype=np.float32)

    monkeypatch.setattr(embeddings.Encoder, "_encode_new", vectors)
    return Encoder(cache_dir=str(cache_dir))


def test_a_full_disk_leaves_the_shard_out_and_returns_the_vectors(tmp_path, monkeypatch, caplog):
    cache = tmp_path / "emb"
    cache.mkdir()
    name = hashlib.sha1("".join(text_key(t) for t in TEXTS).encode()).hexdigest()[:16]
    os.symlink("/dev/full", cache / f".{name}.tmp.npy")  # every write to it: ENOSPC

    vecs = _encoder(cache, monkeypatch).encode(TEXTS)

    assert vecs.shape == (2, DIM)
    assert list(cache.iterdir()) == []  # nothing half-written, not even the temporary
    assert "embedding cache" in caplog.text and "No space left on device" in caplog.text
    again = _encoder(cache, monkeypatch)  # room again: the next encode writes its shard
    again.encode(TEXTS)
    assert sorted(p.suffix for p in cache.iterdir()) == [".keys", ".npy"]


def test_a_cache_folder_that_cannot_be_made_is_skipped(tmp_path, monkeypatch):
    (tmp_path / "emb").write_text("a file where the cache folder should be")
    assert _encoder(tmp_path / "emb", monkeypatch).encode(TEXTS).shape == (2, DIM)


def test_the_pair_feature_cache_on_a_folder_that_cannot_be_made_is_skipped(tmp_path):
    (tmp_path / "pf").write_text("a file where the cache folder should be")
    cache = EncodingCache(tmp_path / "pf")
    cache.record(spec="cad-nli:train", key="k", pairs=1, seconds=1.0)
    assert cache.index() == {}
    cache.put("k", [1, 2])  # type: ignore[arg-type]  # any picklable encoding
    assert cache.get("k") == [1, 2]  # kept in memory
