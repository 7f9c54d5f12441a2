"""Word-level edits between an original and its counterfactual (difflib), per text field.

No Django. Tokens are lower-cased words and punctuation marks.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
from numpy.typing import NDArray

_TOKEN = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|n't|[^\sa-z0-9]", re.IGNORECASE)

NEGATIONS = frozenset(
    {
        "not",
        "no",
        "never",
        "n't",
        "nobody",
        "none",
        "nothing",
        "nowhere",
        "neither",
        "nor",
        "without",
        "cannot",
        "isn't",
        "aren't",
        "wasn't",
        "weren't",
        "don't",
        "doesn't",
        "didn't",
        "can't",
        "won't",
    }
)


def tokenize(text: str) -> list[str]:
    return [t.lower() for t in _TOKEN.findall(text or "")]


@dataclass(frozen=True)
class FieldEdit:
    """What changed in one field: tokens inserted (new or replacing), deleted (removed or
    replaced), and counts of each diff operation."""

    inserted: tuple[str, ...]
    deleted: tuple[str, ...]
    n_insert_ops: int
    n_delete_ops: int
    n_replace_ops: int
    len_original: int
    len_counterfactual: int

    @property
    def changed(self) -> bool:
        return bool(self.n_insert_ops or self.n_delete_ops or self.n_replace_ops)


def field_edit(original: str, counterfactual: str) -> FieldEdit:
    a, b = tokenize(original), tokenize(counterfactual)
    ins: list[str] = []
    dele: list[str] = []
    n_i = n_d = n_r = 0
    if a != b:
        for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
            if op == "insert":
                n_i += 1
                ins.extend(b[j1:j2])
            elif op == "delete":
                n_d += 1
                dele.extend(a[i1:i2])
            elif op == "replace":
                n_r += 1
                ins.extend(b[j1:j2])
                dele.extend(a[i1:i2])
    return FieldEdit(tuple(ins), tuple(dele), n_i, n_d, n_r, len(a), len(b))


def _containment(tokens: Sequence[str], other: set[str]) -> float:
    if not tokens:
        return 0.0
    return sum(1 for t in tokens if t in other) / len(tokens)


def _neg_count(tokens: Sequence[str]) -> int:
    return sum(1 for t in tokens if t in NEGATIONS)


N_FIELD_EDIT_FEATURES = 12


def edit_features(
    original: dict[str, str], counterfactual: dict[str, str], fields: Sequence[str]
) -> NDArray[np.float32]:
    """Numeric edit features for one pair: per field (changed?, insert/delete/replace op counts,
    inserted/deleted token counts and fractions, length ratio, negation change, and — for
    multi-field tasks — how much of what was inserted/deleted appears in the other fields),
    then, for each pair of fields, the token overlap of the original, of the counterfactual and
    its change."""
    out: list[float] = []
    toks_o = {f: tokenize(original.get(f, "")) for f in fields}
    toks_c = {f: tokenize(counterfactual.get(f, "")) for f in fields}
    for f in fields:
        e = field_edit(original.get(f, ""), counterfactual.get(f, ""))
        other_c: set[str] = set()
        other_o: set[str] = set()
        for g in fields:
            if g != f:
                other_c.update(toks_c[g])
                other_o.update(toks_o[g])
        lo = max(e.len_original, 1)
        out.extend(
            [
                float(e.changed),
                float(e.n_insert_ops),
                float(e.n_delete_ops),
                float(e.n_replace_ops),
                np.log1p(len(e.inserted)),
                np.log1p(len(e.deleted)),
                len(e.inserted) / lo,
                len(e.deleted) / lo,
                np.log((e.len_counterfactual + 1) / (e.len_original + 1)),
                float(_neg_count(toks_c[f]) - _neg_count(toks_o[f])),
                _containment(e.inserted, other_c),
                _containment(e.deleted, other_o),
            ]
        )
    for i, f in enumerate(fields):
        for g in fields[i + 1 :]:
            ov_o = _containment(toks_o[g], set(toks_o[f]))
            ov_c = _containment(toks_c[g], set(toks_c[f]))
            out.extend([ov_o, ov_c, ov_c - ov_o])
    return np.asarray(out, dtype=np.float32)


def n_edit_features(n_fields: int) -> int:
    return N_FIELD_EDIT_FEATURES * n_fields + 3 * (n_fields * (n_fields - 1) // 2)


def edit_bags(original: dict[str, str], counterfactual: dict[str, str], fields: Sequence[str]) -> tuple[str, str]:
    """Inserted and deleted words as two space-joined strings, each word prefixed by its
    field index (``0:not``), for a hashed bag-of-edits."""
    ins: list[str] = []
    dele: list[str] = []
    for k, f in enumerate(fields):
        e = field_edit(original.get(f, ""), counterfactual.get(f, ""))
        ins.extend(f"{k}:{t}" for t in e.inserted)
        dele.extend(f"{k}:{t}" for t in e.deleted)
    return " ".join(ins), " ".join(dele)


def edit_spans(original: dict[str, str], counterfactual: dict[str, str], fields: Sequence[str]) -> tuple[str, str, str]:
    """(inserted words, deleted words, the unedited context) as texts: the context is the
    other fields of the counterfactual (for a one-field task, the counterfactual itself)."""
    ins: list[str] = []
    dele: list[str] = []
    changed: list[str] = []
    for f in fields:
        e = field_edit(original.get(f, ""), counterfactual.get(f, ""))
        if e.changed:
            ins.extend(e.inserted)
            dele.extend(e.deleted)
            changed.append(f)
    others = [counterfactual.get(f, "") for f in fields if f not in changed]
    context = " ".join(others) if others else " ".join(counterfactual.get(f, "") for f in fields)
    return " ".join(ins), " ".join(dele), context


# -- cross-field relation features (two-field tasks: premise / hypothesis, question / passage) --

_NUMBER = re.compile(r"^\d+(?:[.,]\d+)?$")
_NUMBER_WORDS = frozenset(
    {
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
        "twenty",
        "hundred",
        "thousand",
        "dozen",
        "several",
        "many",
        "few",
        "some",
    }
)
_STOP = frozenset(
    {
        "a",
        "an",
        "the",
        "is",
        "are",
        "was",
        "were",
        "be",
        "been",
        "of",
        "in",
        "on",
        "at",
        "to",
        "and",
        "or",
        "with",
        "for",
        "by",
        "his",
        "her",
        "their",
        "its",
        "it",
        "he",
        "she",
        "they",
        "this",
        "that",
        "these",
        "those",
        "there",
        "as",
        "from",
        "while",
        "who",
        "which",
        "into",
        "up",
        "down",
        ".",
        ",",
        "!",
        "?",
        "'",
        '"',
        "-",
        "s",
        "'s",
    }
)


@lru_cache(maxsize=200_000)
def antonyms(word: str) -> frozenset[str]:
    """WordNet antonyms of a (lower-case) word, all parts of speech; empty when WordNet is
    unavailable (the features then read 0)."""
    try:
        from projects.ml.wordnet import english_wordnet

        wn = english_wordnet()

        out = {a.name().lower() for s in wn.synsets(word) for lem in s.lemmas() for a in lem.antonyms()}
    except LookupError:  # WordNet not installed
        return frozenset()
    return frozenset(out)


@lru_cache(maxsize=200_000)
def broader(word: str) -> tuple[frozenset[str], frozenset[str]]:
    """(synonyms, hypernyms up to 4 levels) of a word's three most common WordNet senses."""
    try:
        from projects.ml.wordnet import english_wordnet

        wn = english_wordnet()

        senses = wn.synsets(word)[:3]
    except LookupError:
        return frozenset(), frozenset()
    syn = {lem.name().lower() for s in senses for lem in s.lemmas()} - {word}
    hyper: set[str] = set()
    frontier = list(senses)
    for _ in range(4):
        frontier = [h for s in frontier for h in s.hypernyms() + s.instance_hypernyms()]
        hyper.update(lem.name().lower() for s in frontier for lem in s.lemmas())
    return frozenset(syn), frozenset(hyper)


def _content(tokens: Sequence[str]) -> list[str]:
    return [t for t in tokens if t not in _STOP]


N_RELATION_FEATURES = 14


def relation_features(record: dict[str, str], fields: Sequence[str]) -> NDArray[np.float32]:
    """How the first two fields of one record relate (e.g. premise and hypothesis): word
    Jaccard, share of the second's (content) words found in the first, and of the first's in
    the second, content words of the second not in the first, negations in each and their
    mismatch, WordNet antonym pairs across the fields, numbers of the second not in the first,
    and the lengths. Zeros for one-field tasks."""
    if len(fields) < 2:
        return np.zeros(N_RELATION_FEATURES, dtype=np.float32)
    a = tokenize(record.get(fields[0], ""))
    b = tokenize(record.get(fields[1], ""))
    sa, sb = set(a), set(b)
    ca, cb = _content(a), _content(b)
    sca, scb = set(ca), set(cb)
    jacc = len(sa & sb) / max(len(sa | sb), 1)
    new_b = [t for t in cb if t not in sa]
    neg_a, neg_b = _neg_count(a), _neg_count(b)
    ant = sum(1 for t in scb if t.isalpha() and antonyms(t) & sca)
    # the second's new content words: a synonym or a broader term of one of the first's
    # (entailment-like), or unexplained (new information)
    n_syn = n_hyper = 0
    for t in set(new_b):
        if not t.isalpha():
            continue
        if any(t in broader(w)[0] for w in sca if w.isalpha()):
            n_syn += 1
        elif any(t in broader(w)[1] for w in sca if w.isalpha()):
            n_hyper += 1
    n_unexplained = len(set(new_b)) - n_syn - n_hyper
    nums_a = {t for t in a if _NUMBER.match(t) or t in _NUMBER_WORDS}
    nums_b = {t for t in b if _NUMBER.match(t) or t in _NUMBER_WORDS}
    return np.asarray(
        [
            jacc,
            _containment(cb, sa),
            _containment(ca, sb),
            np.log1p(len(new_b)),
            float(neg_a),
            float(neg_b),
            float((neg_a > 0) != (neg_b > 0)),
            float(ant),
            float(len(nums_b - nums_a)),
            float(n_syn),
            float(n_hyper),
            np.log1p(n_unexplained),
            np.log1p(len(a)),
            np.log1p(len(b)),
        ],
        dtype=np.float32,
    )
