"""h's pair features computed in chunks with a progress callback, and an on-disk cache of a
whole encoding, so that a warm-start set (CAD: thousands of pairs) is encoded once per
machine, not once per project and training run.

Django-free. :func:`encode_pairs_chunked` gives exactly :func:`features.encode_pairs` (every
block is computed row by row) and tells ``progress(pairs_done, pairs_total)`` after each
chunk, so a job can show "pairs encoded / total" inside the long step. :class:`EncodingCache`
stores a :class:`features.PairEncoding` under a key of everything it depends on
(:func:`encoding_key`): the warm-start spec, the content of its files, the encoder's model,
the label set and text fields, the feature options, and the source of the code that computes
the features (so a change of ``features.py``/``edits.py`` is a cache miss, never a stale hit).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import pickle
import tempfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

from labeling.ml import edits, features
from labeling.ml.features import Embed, Pair, PairEncoding, encode_pairs

logger = logging.getLogger(__name__)
ProgressFn = Callable[[int, int], None]
CHUNK = 256
CACHE_VERSION = 1


def encode_pairs_chunked(
    pairs: Sequence[Pair],
    *,
    labels: Sequence[str],
    fields: Sequence[str],
    embed: Embed | None,
    progress: ProgressFn | None = None,
    chunk: int = CHUNK,
    hash_features: int = 512,
    spans: bool = True,
) -> PairEncoding:
    """:func:`encode_pairs` of ``pairs``, ``chunk`` pairs at a time; ``progress(done, total)``
    is told 0 first, then after every chunk."""
    total = len(pairs)
    if progress is not None:
        progress(0, total)

    def encode(part: Sequence[Pair]) -> PairEncoding:
        return encode_pairs(part, labels=labels, fields=fields, embed=embed, hash_features=hash_features, spans=spans)

    if total <= chunk:
        enc = encode(pairs)
        if progress is not None and total:
            progress(total, total)
        return enc
    parts: list[PairEncoding] = []
    for start in range(0, total, chunk):
        parts.append(encode(pairs[start : start + chunk]))
        if progress is not None:
            progress(min(start + chunk, total), total)
    enc = parts[0]
    for part in parts[1:]:
        enc = PairEncoding.concat(enc, part)
    return enc


def embed_records_chunked(
    records: Sequence[dict[str, str]],
    fields: Sequence[str],
    embed: Embed,
    progress: ProgressFn | None = None,
    chunk: int = 4 * CHUNK,
) -> None:
    """Embed the records' field texts as :func:`features.embed_fields` does, ``chunk``
    records at a time with ``progress(done, total)``; the encoder caches them, so a fit that
    embeds the same records next (f on the originals) finds them ready."""
    total = len(records)
    if progress is not None:
        progress(0, total)
    for start in range(0, total, chunk):
        features.embed_fields(records[start : start + chunk], fields, embed)
        if progress is not None:
            progress(min(start + chunk, total), total)


def files_digest(path: str) -> str:
    """SHA-256 over the content of ``path`` (a file, or every file under a directory, in
    sorted order with their relative names)."""
    digest = hashlib.sha256()
    root = Path(path)
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    for p in files:
        digest.update(str(p.relative_to(root) if p != root else p.name).encode() + b"\0")
        with p.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return digest.hexdigest()


def _code_digest() -> str:
    digest = hashlib.sha256()
    for module in (features, edits):
        digest.update(Path(str(module.__file__)).read_bytes())
    return digest.hexdigest()


def encoding_key(
    *,
    spec: str,
    content: str,
    model: str,
    labels: Iterable[str],
    fields: Iterable[str],
    hash_features: int = 512,
    spans: bool = True,
) -> str:
    """The cache key of an encoding: a hash of everything the features depend on."""
    doc = {
        "v": CACHE_VERSION,
        "spec": spec,
        "content": content,
        "model": model,
        "labels": list(labels),
        "fields": list(fields),
        "hash_features": hash_features,
        "spans": spans,
        "code": _code_digest(),
    }
    return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32]


class EncodingCache:
    """Encodings by key, one pickle file each under ``directory`` (None: no disk cache), plus
    an in-process copy. Files are written atomically; an unreadable one is a miss."""

    def __init__(self, directory: str | Path | None) -> None:
        self.directory = Path(directory) if directory else None
        self._memory: dict[str, PairEncoding] = {}

    def path(self, key: str) -> Path | None:
        return None if self.directory is None else self.directory / f"{key}.pkl"

    def get(self, key: str) -> PairEncoding | None:
        if key in self._memory:
            return self._memory[key]
        path = self.path(key)
        if path is None or not path.is_file():
            return None
        try:
            with path.open("rb") as fh:
                enc = pickle.load(fh)
        except (OSError, EOFError, pickle.UnpicklingError, AttributeError, TypeError, ValueError):
            return None
        if not isinstance(enc, PairEncoding):
            return None
        self._memory[key] = enc
        return enc

    # -- what was encoded, and how fast (the train form's cost estimate) ----------------------
    def _index_path(self) -> Path | None:
        return None if self.directory is None else self.directory / "index.json"

    def index(self) -> dict[str, dict[str, Any]]:
        path = self._index_path()
        if path is None or not path.is_file():
            return {}
        try:
            doc = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return doc if isinstance(doc, dict) else {}

    def record(self, *, spec: str, key: str, pairs: int, seconds: float) -> None:
        """Note that ``spec`` was encoded (``pairs`` in ``seconds``) under ``key``."""
        path = self._index_path()
        if path is None:
            return
        doc = self.index()
        doc[spec] = {"key": key, "pairs": pairs, "seconds": round(seconds, 2)}
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp.write_text(json.dumps(doc, indent=1, sort_keys=True), encoding="utf-8")
            os.replace(tmp, path)
        except OSError as exc:  # a note for estimates only: a full disk must not fail the training
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)
            logger.warning("pair-feature cache index %s not written: %s", path, exc)

    def cached(self, spec: str) -> bool:
        """Whether ``spec``'s last encoding is still on disk (its file content is checked only
        when training: a changed file is then a miss)."""
        entry = self.index().get(spec) or {}
        path = self.path(str(entry.get("key") or ""))
        return bool(entry.get("key")) and path is not None and path.is_file()

    def pairs_per_second(self) -> float | None:
        """The encoding rate measured on this machine (every recorded cold encoding)."""
        entries = [e for e in self.index().values() if float(e.get("seconds") or 0) > 0]
        seconds = sum(float(e["seconds"]) for e in entries)
        return sum(int(e.get("pairs") or 0) for e in entries) / seconds if seconds else None

    def put(self, key: str, enc: PairEncoding) -> None:
        self._memory[key] = enc
        path = self.path(key)
        if path is None:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(prefix=".enc-", dir=path.parent)
        except OSError as exc:
            logger.warning("pair-feature cache %s not written: %s", path, exc)
            return
        try:
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(enc, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, path)
        except BaseException as exc:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)
            if not isinstance(exc, OSError):
                raise
            # the cache only saves time: a full disk must not fail the training that built it
            logger.warning("pair-feature cache %s not written: %s", path, exc)
