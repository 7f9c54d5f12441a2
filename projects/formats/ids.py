"""Ids within one input (every file of one import read together): a pair id, or an original
id, must name one thing. A repeat with different content is a :class:`Problem` naming both
lines (the row is not yielded); an identical repeat of a pair or of an original given as a row
of its own is a warning naming both lines (the row is yielded and skipped as already there).

An original's content is its text fields, label and image: a later row may name the same
original with less about it (no ``split``, ``source`` or ``meta``; the first row wins)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import asdict

from projects.formats.records import OriginalRecord, PairRecord, Problem


def _original(o: OriginalRecord) -> list[object]:
    return [o.fields, o.label, o.image]


def _digest(value: object) -> bytes:
    text = json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.blake2b(text.encode("utf-8"), digest_size=16).digest()


class SeenIds:
    def __init__(self, warn: Callable[[Problem], None] | None = None) -> None:
        self._warn = warn
        self._pairs: dict[str, tuple[bytes, str]] = {}  # id -> (content digest, "file:line")
        self._originals: dict[str, tuple[bytes, str]] = {}

    def check(self, rec: OriginalRecord | PairRecord, path: str, line: int) -> Problem | None:
        """None when ``rec`` (read at ``path:line``) may be yielded, else the problem."""
        where = f"{path}:{line}"
        original = rec if isinstance(rec, OriginalRecord) else rec.original
        o_digest = _digest(_original(original))
        o_seen = self._originals.get(original.id)
        if o_seen is not None and o_seen[0] != o_digest:
            key = "id" if rec is original else "original.id"
            return Problem(
                path,
                line,
                f"{key} {original.id!r} was given a different original at {o_seen[1]} (an id names one original)",
            )
        if isinstance(rec, PairRecord):
            p_digest = _digest({**asdict(rec), "original": [original.id, *_original(original)]})
            p_seen = self._pairs.get(rec.id)
            if p_seen is not None and p_seen[0] != p_digest:
                return Problem(
                    path, line, f"id {rec.id!r} was given a different pair at {p_seen[1]} (an id names one pair)"
                )
            if p_seen is not None:
                self._note(path, line, f"id {rec.id!r} repeats the pair at {p_seen[1]}; skipped")
            else:
                self._pairs[rec.id] = (p_digest, where)
        elif o_seen is not None:
            self._note(path, line, f"id {rec.id!r} repeats the original at {o_seen[1]}; skipped")
        if o_seen is None:
            self._originals[original.id] = (o_digest, where)
        return None

    def _note(self, path: str, line: int, message: str) -> None:
        if self._warn is not None:
            self._warn(Problem(path, line, message))
