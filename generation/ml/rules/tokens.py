"""Tokens with character offsets, sentence spans and POS tags (TextBlob's PatternTagger).

Edits are applied as character-span replacements on the original text, so everything outside
the edited span (spacing, ``<br />`` markup of IMDb reviews) stays byte-identical.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Protocol

TOKEN_RE = re.compile(
    r"[A-Za-z]+(?=n['’]t\b)"  # "did" of "didn't", "ca" of "can't"
    r"|n['’]t\b"
    r"|['’](?:s|re|ve|ll|m|d)\b"
    r"|\w+(?:-\w+)*(?:['’](?!(?:s|re|ve|ll|m|d|t)\b)\w+(?:-\w+)*)*"  # o'clock, not You'd
    r"|[^\w\s]",
)
# A break: <br />, end punctuation (+ closing quotes, kept in the sentence) and a space before an
# upper-case start, a missing space after a full stop ("movie.You"), or newlines.
SENT_BREAK_RE = re.compile(
    r"<br\s*/?>"
    r"|(?<=[.!?])(?P<close>[\"')\]]*)\s+(?=[\"'(\[]?[A-Z0-9])"
    r"|(?<=[a-z]{2}[.!?])(?P<close2>[\"')\]]*)(?=[A-Z][a-z])"
    r"|\n+"
)


@dataclass(frozen=True)
class Token:
    text: str
    start: int
    end: int
    pos: str

    @property
    def lower(self) -> str:
        return self.text.lower().replace("’", "'")

    @property
    def is_word(self) -> bool:
        return self.text[:1].isalnum() or self.text[:1] in "'’"


def tokenize(text: str) -> list[tuple[str, int, int]]:
    return [(m.group(0), m.start(), m.end()) for m in TOKEN_RE.finditer(text)]


def words(text: str) -> list[str]:
    """Lower-cased tokens (no offsets); what the tagger and the metrics compare."""
    return [m.group(0).lower().replace("’", "'") for m in TOKEN_RE.finditer(text)]


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences of ``text`` (stripped, markup excluded)."""
    spans: list[tuple[int, int]] = []
    pos = 0
    for m in SENT_BREAK_RE.finditer(text):
        close = m.group("close") or m.group("close2") or ""
        if m.end() == m.start() == pos:  # a zero-width break ("movie.You") right here: nothing to cut
            continue
        spans.append((pos, m.start() + len(close)))
        pos = m.end()
    spans.append((pos, len(text)))
    out = []
    for s, e in spans:
        seg = text[s:e]
        lstrip = len(seg) - len(seg.lstrip())
        rstrip = len(seg) - len(seg.rstrip())
        if e - rstrip > s + lstrip:
            out.append((s + lstrip, e - rstrip))
    return out


_LOOSE_BREAK_RE = re.compile(r"(?<=[.!?;])[\"')\]]*\s+")


def loose_sentence_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    """Split text[start:end] at any end punctuation followed by a space, whatever the case of
    the next word (for texts written without capitals)."""
    out, pos = [], start
    for m in _LOOSE_BREAK_RE.finditer(text, start, end):
        out.append((pos, m.start()))
        pos = m.end()
    out.append((pos, end))
    return [(s, e) for s, e in out if text[s:e].strip()]


class _Tagger(Protocol):
    """textblob's ``PatternTagger`` (textblob is untyped)."""

    def tag(self, text: str, tokenize: bool = True) -> list[tuple[str, str]]: ...


_TAGGER: _Tagger | None = None


def _tagger() -> _Tagger:
    global _TAGGER
    if _TAGGER is None:
        from textblob.en.taggers import PatternTagger

        _TAGGER = PatternTagger()
    return _TAGGER


@lru_cache(maxsize=8192)
def _tag_words(joined: str) -> tuple[str, ...]:
    toks = joined.split(" ")
    try:
        tagged = _tagger().tag(joined, tokenize=False)
    except Exception:  # noqa: BLE001 - the tagger is a heuristic; fall back to nouns
        tagged = []
    if len(tagged) != len(toks):
        return tuple("NN" for _ in toks)
    return tuple(t for _, t in tagged)


def tag(text: str, offset: int = 0) -> list[Token]:
    """Tokens of ``text`` with POS tags; offsets are shifted by ``offset``."""
    raw = tokenize(text)
    if not raw:
        return []
    safe = [t.replace("/", "-").replace(" ", "") or "-" for t, _, _ in raw]
    tags = _tag_words(" ".join(safe))
    out = []
    for (t, s, e), p in zip(raw, tags, strict=True):
        low = t.lower()
        if low in ("n't", "n’t"):
            p = "RB"
        elif low in ("'s", "’s") and p not in ("POS", "VBZ"):
            p = "POS"
        out.append(Token(t, s + offset, e + offset, p))
    return out


def apply_edits(text: str, edits: list[tuple[int, int, str]]) -> str:
    """Replace character spans (non-overlapping) of ``text``; spans are absolute offsets."""
    out = text
    for s, e, rep in sorted(edits, key=lambda x: (x[0], x[1]), reverse=True):
        out = out[:s] + rep + out[e:]
    return out


def match_case(template: str, word: str) -> str:
    if template[:1].isupper() and not word[:1].isupper():
        return word[:1].upper() + word[1:]
    return word


def edit_ops(a: list[str], b: list[str]) -> list[tuple[str, int, int, int, int]]:
    """Word-level diff ops (difflib opcodes without 'equal'): (op, i1, i2, j1, j2)."""
    from difflib import SequenceMatcher

    return [op for op in SequenceMatcher(None, a, b, autojunk=False).get_opcodes() if op[0] != "equal"]


def introduced_removed(a: str, b: str) -> tuple[list[str], list[str]]:
    """Words of ``b`` not aligned to ``a`` (introduced) and words of ``a`` dropped (removed)."""
    wa, wb = words(a), words(b)
    intro: list[str] = []
    rem: list[str] = []
    for _, i1, i2, j1, j2 in edit_ops(wa, wb):
        rem += wa[i1:i2]
        intro += wb[j1:j2]
    return intro, rem
