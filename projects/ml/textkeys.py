"""Normalized text keys: the one definition of "the same text" used to keep an evaluation
honest (a test example whose text also occurs in the training data is left out and counted).
No Django.

A text is normalized by Unicode NFKC, lower case, every run of whitespace collapsed to one
space, and punctuation stripped at both edges ("The cat sat." and "the  cat sat" are the same
text; "the cat, sat" is not). A record (``{field: text}``) is keyed by the SHA-1 of its
normalized fields, in the order given, joined by a unit separator.
"""

from __future__ import annotations

import hashlib
import string
import unicodedata
from collections.abc import Mapping, Sequence


def _punctuation(c: str) -> bool:
    """ASCII punctuation and every Unicode punctuation character (curly quotes, dashes, …)."""
    return c in string.punctuation or unicodedata.category(c).startswith("P")


def normalize_text(text: str) -> str:
    """Lower case, whitespace collapsed, punctuation stripped at the edges (module docstring)."""
    s = " ".join(unicodedata.normalize("NFKC", text).lower().split())
    start, end = 0, len(s)
    while start < end and (_punctuation(s[start]) or s[start].isspace()):
        start += 1
    while end > start and (_punctuation(s[end - 1]) or s[end - 1].isspace()):
        end -= 1
    return s[start:end]


def text_hash(record: Mapping[str, object], fields: Sequence[str]) -> str:
    """The key of a record: SHA-1 of its normalized ``fields`` (a missing field counts as "")."""
    joined = "\x1f".join(normalize_text(str(record.get(f) or "")) for f in fields)
    return hashlib.sha1(joined.encode("utf-8")).hexdigest()
