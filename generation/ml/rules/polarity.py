"""Where a review's label lives: a polarity lexicon, opposites, negation scope and markup.

Issue 27: the ``rules`` generator edited random words of a sentiment review (3.1 % of its
pooled candidates flipped the label) and once edited inside ``<br />`` markup. Here:

* :func:`polarity` — the polarity (-1..1) of a word from the subjectivity lexicon that
  TextBlob ships (``textblob/en/en-sentiment.xml``: Tom De Smedt and Walter Daelemans's
  *pattern* lexicon, about 2,900 hand-tagged English adjectives, adverbs and verbs, mean over
  senses; installed with ``textblob``, read from disk, never downloaded). A word counts as
  sentiment-bearing when ``|polarity| >= MIN_POLARITY`` and it is subjective.
* :func:`opposites` — words of the opposite polarity for one sentiment-bearing word, in order:
  the curated review pairs of ``lexicons.POLARITY_PAIRS`` (great/terrible,
  loved/hated, ...), then WordNet antonyms of the word's first sense whose lexicon polarity has
  the opposite sign.
* :func:`markup_spans` — character spans of markup (``<br />`` and any ``<...>``) and of a
  broken tag: no edit may touch them.
* :func:`negated` — whether a negation word scopes over a token (it precedes it in the same
  clause, within a few words): a polar word there is flipped by removing the negation, not by
  replacing the word.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from functools import lru_cache
from pathlib import Path

from generation.ml.rules.tokens import Token

MIN_POLARITY = 0.3
MIN_SUBJECTIVITY = 0.3
NEGATION_SCOPE = 4  # words after a negation that it scopes over (up to a clause break)
_NEGATORS = frozenset({"not", "n't", "never", "no", "hardly", "barely"})
_CLAUSE_BREAK = frozenset({",", ".", ";", ":", "!", "?", "but", "and", "although", "though", "because", "while"})
MARKUP_RE = re.compile(r"<[^<>]{0,40}>|<[a-zA-Z/][^<>\s]*\s*/?|/>")


def _lexicon_path() -> Path | None:
    try:
        import textblob
    except ImportError:  # pragma: no cover - textblob is in requirements.txt
        return None
    path = Path(textblob.__file__).parent / "en" / "en-sentiment.xml"
    return path if path.is_file() else None


@lru_cache(maxsize=1)
def lexicon() -> dict[str, float]:
    """word -> mean polarity over its senses, for subjective words with
    ``|polarity| >= MIN_POLARITY`` (empty when the lexicon file is missing)."""
    path = _lexicon_path()
    if path is None:
        return {}
    sums: dict[str, list[float]] = {}
    for el in ET.parse(path).getroot().iter("word"):
        form = (el.get("form") or "").lower()
        if not form.isalpha():
            continue
        try:
            pol, subj = float(el.get("polarity", "0")), float(el.get("subjectivity", "0"))
        except ValueError:
            continue
        acc = sums.setdefault(form, [0.0, 0.0, 0.0])
        acc[0] += pol
        acc[1] += subj
        acc[2] += 1
    out: dict[str, float] = {}
    for form, (pol, subj, n) in sums.items():
        p, s = pol / n, subj / n
        if abs(p) >= MIN_POLARITY and s >= MIN_SUBJECTIVITY:
            out[form] = round(p, 3)
    for pos, neg in _pairs():  # the curated review words count too
        out.setdefault(pos, 0.6)
        out.setdefault(neg, -0.6)
    return out


@lru_cache(maxsize=1)
def _pairs() -> tuple[tuple[str, str], ...]:
    from generation.ml.lexicons import POLARITY_PAIRS

    return tuple((p, n) for p, n in POLARITY_PAIRS if " " not in p and " " not in n)


def polarity(word: str, pos: str | None = None) -> float:
    """The lexicon polarity of ``word`` (its lemma too, for "loved" / "movies"), 0 when it is
    not sentiment-bearing."""
    low = word.lower()
    lex = lexicon()
    if low in lex:
        return lex[low]
    from generation.ml.rules import wordnet as wnx

    for p in ("v", "a", "n") if pos is None else (pos,):
        base = wnx.lemma(low, p)
        if base in lex:
            return lex[base]
    return 0.0


@lru_cache(maxsize=16384)
def opposites(word: str, penn: str) -> tuple[str, ...]:
    """Words of the opposite polarity, inflected like ``word`` (tag ``penn``)."""
    from generation.ml.rules import wordnet as wnx
    from generation.ml.rules.phrases import inflect

    low = word.lower()
    p = polarity(low)
    if p == 0.0:
        return ()
    out: list[str] = []
    for pos_w, neg_w in _pairs():
        if low == pos_w:
            out.append(neg_w)
        elif low == neg_w:
            out.append(pos_w)
    wpos = wnx.wn_pos(penn)
    if wpos in ("a", "r", "v"):
        for ant in wnx.first_sense_antonyms(low, wpos):
            q = polarity(ant)
            if q * p < 0:
                out.append(inflect(ant, penn) if wpos == "v" and penn in ("VBZ", "VBD", "VBG", "VBN") else ant)
        if wpos == "v" and not out:
            base = wnx.lemma(low, "v")
            for pos_w, neg_w in _pairs():
                other = neg_w if base == pos_w else pos_w if base == neg_w else None
                if other is not None:
                    out.append(inflect(other, penn) if penn.startswith("VB") and penn != "VB" else other)
    seen: dict[str, None] = {}
    for w in out:
        if w.lower() != low:
            seen.setdefault(w, None)
    return tuple(seen)


def markup_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of markup in ``text`` (complete tags and broken pieces of one)."""
    return [(m.start(), m.end()) for m in MARKUP_RE.finditer(text)]


def touches(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    """Whether the edit ``[start, end)`` overlaps or abuts one of ``spans``."""
    return any(start <= e and s <= end for s, e in spans)


def negated(toks: list[Token], i: int) -> int | None:
    """Index of the negation that scopes over token ``i`` ("not [very] good", "didn't like"),
    or None."""
    for j in range(i - 1, max(-1, i - 1 - NEGATION_SCOPE), -1):
        low = toks[j].lower
        if low in _CLAUSE_BREAK:
            return None
        if low in _NEGATORS:
            return j
    return None


__all__ = ["lexicon", "markup_spans", "negated", "opposites", "polarity", "touches"]
