"""Cached WordNet lookups (NLTK's WordNet reader, ``projects.ml.wordnet``, reading NLTK_DATA; never downloads).

Every function is ``lru_cache``d: a run touches the same few thousand words over and over.
Only single-word, alphabetic lemmas are returned, most frequent first (SemCor counts), so
substitutions stay fluent.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Iterator
from contextlib import AbstractContextManager
from functools import lru_cache
from typing import Protocol

# nltk is untyped: the parts of its WordNet API this project uses, as Protocols.


class Lemma(Protocol):
    def name(self) -> str: ...

    def key(self) -> str: ...

    def count(self) -> int: ...

    def antonyms(self) -> list[Lemma]: ...


class Synset(Protocol):
    def name(self) -> str: ...

    def lexname(self) -> str: ...

    def lemmas(self) -> list[Lemma]: ...

    def hypernyms(self) -> list[Synset]: ...

    def instance_hypernyms(self) -> list[Synset]: ...

    def hyponyms(self) -> list[Synset]: ...

    def similar_tos(self) -> list[Synset]: ...

    def closure(self, rel: Callable[[Synset], Iterable[Synset]], depth: int = -1) -> Iterator[Synset]: ...


class WordNet(Protocol):
    """NLTK's ``WordNetCorpusReader``, as ``projects.ml.wordnet.english_wordnet`` builds it."""

    def ensure_loaded(self) -> None: ...

    def synsets(self, lemma: str, pos: str | None = None) -> list[Synset]: ...

    def lemmas(self, lemma: str, pos: str | None = None) -> list[Lemma]: ...

    def morphy(self, form: str, pos: str | None = None) -> str | None: ...

    def all_synsets(self, pos: str | None = None) -> Iterable[Synset]: ...

    def open(self, file: str) -> AbstractContextManager[Iterable[str]]: ...


_WN: WordNet | None = None

PENN_TO_WN = {"N": "n", "V": "v", "J": "a", "R": "r"}


def wordnet() -> WordNet:
    global _WN
    if _WN is None:
        if "NLTK_DATA" not in os.environ:
            here = os.path.dirname(os.path.abspath(__file__))
            os.environ["NLTK_DATA"] = os.path.normpath(os.path.join(here, "..", "..", "..", "var", "nltk_data"))
        from projects.ml.wordnet import english_wordnet

        _WN = english_wordnet(os.environ["NLTK_DATA"])
    return _WN


def wn_pos(penn: str) -> str | None:
    return PENN_TO_WN.get(penn[:1]) if penn else None


@lru_cache(maxsize=65536)
def lemma(word: str, pos: str) -> str:
    base = wordnet().morphy(word.lower(), pos)
    return base or word.lower()


@lru_cache(maxsize=65536)
def _synsets(word: str, pos: str, limit: int = 3) -> tuple[Synset, ...]:
    wn = wordnet()
    syns = wn.synsets(lemma(word, pos), pos)
    if pos == "a":
        syns = syns + wn.synsets(lemma(word, pos), "s")
    return tuple(syns[:limit])


def _clean(names: list[tuple[str, int]], exclude: str) -> tuple[str, ...]:
    seen: dict[str, int] = {}
    for name, count in names:
        if "_" in name or not name.isalpha() or name.lower() == exclude or name[:1].isupper():
            continue
        key = name.lower()
        seen[key] = max(seen.get(key, 0), count)
    return tuple(sorted(seen, key=lambda k: (-seen[k], k)))


_COUNTS: dict[str, int] | None = None


def _count(lem: Lemma) -> int:
    """SemCor frequency of a lemma, from cntlist.rev read once into a dict (``Lemma.count()``
    re-opens and searches that file on every call: too slow for a hot loop)."""
    global _COUNTS
    if _COUNTS is None:
        counts: dict[str, int] = {}
        try:
            with wordnet().open("cntlist.rev") as fh:
                for line in fh:
                    parts = line.split()
                    if len(parts) == 3:
                        counts[parts[0]] = int(parts[2])
        except OSError:
            pass
        _COUNTS = counts
    try:
        return _COUNTS.get(lem.key(), 0)
    except Exception:  # noqa: BLE001 - a malformed lemma key: treat as unseen
        return 0


def _lemmas(synsets: Iterable[Synset]) -> list[tuple[str, int]]:
    return [(lem.name(), _count(lem)) for s in synsets for lem in s.lemmas()]


@lru_cache(maxsize=65536)
def antonyms(word: str, pos: str) -> tuple[str, ...]:
    base = lemma(word, pos)
    names = []
    for s in _synsets(word, pos):
        for lem in s.lemmas():
            if lem.name().lower() != base:
                continue
            names += [(a.name(), _count(a) + 1) for a in lem.antonyms()]
        if pos == "a":  # satellites: antonyms of the head adjective of the cluster
            for sim in s.similar_tos():
                for lem in sim.lemmas():
                    names += [(a.name(), _count(a)) for a in lem.antonyms()]
    return _clean(names, base)


@lru_cache(maxsize=65536)
def synonyms(word: str, pos: str) -> tuple[str, ...]:
    return _clean(_lemmas(_synsets(word, pos, 2)), lemma(word, pos))


@lru_cache(maxsize=65536)
def hypernyms(word: str, pos: str, senses: int = 2) -> tuple[str, ...]:
    """Hypernyms of the word's first ``senses`` senses (the generator's ``lexical`` code asks for
    the first, most frequent, sense only: a rarer sense gives "two guys" -> "two effigies")."""
    return _clean(_lemmas([h for s in _synsets(word, pos, senses) for h in s.hypernyms()]), lemma(word, pos))


@lru_cache(maxsize=65536)
def hyponyms(word: str, pos: str) -> tuple[str, ...]:
    return _clean(_lemmas([h for s in _synsets(word, pos, 1) for h in s.hyponyms()]), lemma(word, pos))


@lru_cache(maxsize=65536)
def cohyponyms(word: str, pos: str) -> tuple[str, ...]:
    """Sister terms: other hyponyms of the word's direct hypernyms (first sense)."""
    syns = _synsets(word, pos, 1)
    own = {lem.name().lower() for s in syns for lem in s.lemmas()}
    names = _lemmas([c for s in syns for h in s.hypernyms() for c in h.hyponyms() if c not in syns])
    return tuple(n for n in _clean(names, lemma(word, pos)) if n not in own)


@lru_cache(maxsize=65536)
def similar_adjectives(word: str) -> tuple[str, ...]:
    """Adjectives in the same cluster (similar_tos) — co-hyponyms for adjectives."""
    names = _lemmas([t for s in _synsets(word, "a", 2) for t in s.similar_tos()])
    return _clean(names, lemma(word, "a"))


@lru_cache(maxsize=262144)
def relation(a: str, b: str, pos: str | None) -> str | None:
    """The WordNet relation that turns word ``a`` into word ``b`` (any POS when None):
    antonym, synonym, hypernym, hyponym, similar (adjective cluster), cohyponym, or None."""
    a, b = a.lower(), b.lower()
    poses = [pos] if pos else ["n", "v", "a", "r"]
    for p in poses:
        lb = lemma(b, p)
        if lb == lemma(a, p):
            return "synonym"
        if lb in antonyms(a, p):
            return "antonym"
    for p in poses:
        lb = lemma(b, p)
        if lb in synonyms(a, p):
            return "synonym"
        if lb in hypernyms(a, p):
            return "hypernym"
        if lb in hyponyms(a, p):
            return "hyponym"
        if p == "a" and lb in similar_adjectives(a):
            return "similar"
        if lb in cohyponyms(a, p):
            return "cohyponym"
    return None


def known(word: str, pos: str | None = None) -> bool:
    wn = wordnet()
    return bool(wn.synsets(word.lower(), pos) if pos else wn.synsets(word.lower()))


# Animacy of a noun, for the selectional restrictions of inserted adjectives ("an elderly
# woman", never "elderly sandals"; "a wooden box", never "a wooden dog"): the hypernym closure
# of the noun's first two senses reaches a living thing, or only things that are not.
_ANIMATE_ROOTS = frozenset({"person.n.01", "animal.n.01", "organism.n.01", "people.n.01", "social_group.n.01"})


@lru_cache(maxsize=65536)
def animacy(noun: str) -> str | None:
    """``"animate"`` (a person, an animal, a group of people), ``"inanimate"`` (every sense
    known, none of them living) or ``None`` (not in WordNet)."""
    syns = _synsets(noun, "n", 2)
    if not syns:
        return None
    for s in syns:
        names = {s.name()} | {h.name() for h in s.closure(lambda x: x.hypernyms() + x.instance_hypernyms())}
        if names & _ANIMATE_ROOTS:
            return "animate"
    return "inanimate"


def adjective_fits(adj: str, noun: str) -> bool:
    """Whether an inserted adjective can describe the noun: no age adjective before a noun
    that already says the age ("an elderly girl"); an adjective of
    ``lexicons.ADJECTIVE_LEXNAMES`` only before a noun whose first sense is in one of its
    lexicographer files ("loud grass", "a dry microphone", "a red kid" were invalid;
    "crowded"/"empty" also before the places of ``PLACE_NOUNS``); the others by WordNet
    animacy (a living being's adjective only before an animate noun, a thing's only before an
    inanimate one). A noun WordNet does not know gets only the neutral ones."""
    from generation.ml import lexicons as lx

    adj, noun = adj.lower(), noun.lower()
    base = lemma(noun, "n")
    if adj in lx.AGE_ADJECTIVES and base in lx.AGE_NOUNS:
        return False
    if adj in lx.ADJECTIVE_LEXNAMES:
        if adj in ("crowded", "empty") and base in lx.PLACE_NOUNS:
            return True
        return lexname(noun, "n") in lx.ADJECTIVE_LEXNAMES[adj]
    kind = animacy(noun)
    if adj in lx.ANIMATE_ADJECTIVES:
        return kind == "animate"
    if adj in lx.INANIMATE_ADJECTIVES:
        return kind == "inanimate"
    return True


@lru_cache(maxsize=65536)
def attested(word: str, pos: str) -> bool:
    """Whether the word occurs in SemCor in that part of speech (WordNet's sense-tagged corpus,
    ``cntlist.rev``): "spectroscope", "elixir", "jubilation" do not, "motorcycle" does not
    either, "couch" does."""
    return any(_count(lem) > 0 for lem in wordnet().lemmas(lemma(word, pos), pos))


@lru_cache(maxsize=65536)
def lexname(word: str, pos: str = "n") -> str | None:
    """The lexicographer file of the word's first (most frequent) sense: ``noun.person``,
    ``noun.artifact``, ``noun.act``, ... (None when WordNet does not know it)."""
    syns = _synsets(word, pos, 1)
    return syns[0].lexname() if syns else None


@lru_cache(maxsize=65536)
def frequency(word: str, pos: str) -> int:
    """SemCor count of the word in that part of speech, all senses together."""
    return sum(_count(lem) for lem in wordnet().lemmas(lemma(word, pos), pos))


def _names_counts(synsets: Iterable[Synset], exclude: str, min_count: int) -> tuple[str, ...]:
    """Single-word lemmas of ``synsets`` attested at least ``min_count`` times in SemCor (for
    that sense), most frequent first: rare or archaic words ("bambinos", "shtick", "dame",
    "daishiki") never come out."""
    best: dict[str, int] = {}
    for s in synsets:
        for lem in s.lemmas():
            name, c = lem.name(), _count(lem)
            if "_" in name or not name.isalpha() or name[:1].isupper() or name.lower() == exclude or c < min_count:
                continue
            best[name.lower()] = max(best.get(name.lower(), 0), c)
    return tuple(sorted(best, key=lambda k: (-best[k], k)))


@lru_cache(maxsize=65536)
def frequent_hyponyms(word: str, pos: str, min_count: int = 5) -> tuple[str, ...]:
    """Hyponyms of the first sense that SemCor attests ``min_count`` times or more."""
    return _names_counts([h for s in _synsets(word, pos, 1) for h in s.hyponyms()], lemma(word, pos), min_count)


@lru_cache(maxsize=65536)
def frequent_hypernyms(word: str, pos: str, min_count: int = 1) -> tuple[str, ...]:
    """Hypernyms of the first sense that SemCor attests ``min_count`` times or more."""
    return _names_counts([h for s in _synsets(word, pos, 1) for h in s.hypernyms()], lemma(word, pos), min_count)


@lru_cache(maxsize=65536)
def first_sense_antonyms(word: str, pos: str) -> tuple[str, ...]:
    """Antonyms of the word's first sense only ("dark waters" -> "light", never the hair
    sense's "blond"); for an adjective satellite, of its cluster head."""
    base = lemma(word, pos)
    names: list[tuple[str, int]] = []
    for s in _synsets(word, pos, 1):
        for lem in s.lemmas():
            if lem.name().lower() == base:
                names += [(a.name(), _count(a) + 1) for a in lem.antonyms()]
        if pos == "a" and not names:
            for sim in s.similar_tos():
                for lem in sim.lemmas():
                    names += [(a.name(), _count(a)) for a in lem.antonyms()]
    return _clean(names, base)


@lru_cache(maxsize=65536)
def frequent_cohyponyms(word: str, pos: str, min_count: int = 3) -> tuple[str, ...]:
    """Sister terms of the first sense, in the same lexicographer file, attested
    ``min_count`` times or more in SemCor, whose own first sense is in that file too (issue
    31.4: "dog" -> "head", a sense of "head" as a counted animal, gave "A cat attacks a head")."""
    syns = _synsets(word, pos, 1)
    if not syns:
        return ()
    own = {lem.name().lower() for s in syns for lem in s.lemmas()}
    lex = syns[0].lexname()
    sisters = [c for s in syns for h in s.hypernyms() for c in h.hyponyms() if c not in syns and c.lexname() == lex]
    return tuple(
        n for n in _names_counts(sisters, lemma(word, pos), min_count) if n not in own and lexname(n, pos) == lex
    )
