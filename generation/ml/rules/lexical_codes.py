"""The word-level control codes: negation, quantifier, lexical, resemantic.

Each function takes one POS-tagged sentence and returns every ``Proposal`` it can make; the
generator samples among them. Edits are absolute character spans of the field text.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from generation.ml import lexicons as lx
from generation.ml.rules import syntax
from generation.ml.rules import wordnet as wnx
from generation.ml.rules.phrases import (
    agree_verb,
    delete_span,
    fix_article,
    inflect,
    is_noun,
    np_chunks,
    pluralize,
)
from generation.ml.rules.tokens import Token, match_case

Edit = tuple[int, int, str]


@dataclass(frozen=True)
class Sentence:
    text: str  # the whole field text (offsets are into it)
    toks: list[Token]
    start: int
    end: int


@dataclass(frozen=True)
class Proposal:
    code: str
    edits: tuple[Edit, ...]
    introduced: tuple[str, ...]
    removed: tuple[str, ...]
    detail: str


def _rep(t: Token, word: str) -> Edit:
    return (t.start, t.end, match_case(t.text, word))


def _is_aux(t: Token) -> bool:
    return t.lower in lx.AUXILIARIES and (t.pos.startswith("VB") or t.pos == "MD")


def _content_verb(t: Token) -> bool:
    return t.pos in ("VB", "VBZ", "VBD", "VBP", "VBG", "VBN") and t.lower not in lx.AUXILIARIES and t.text.isalpha()


# -- negation ----------------------------------------------------------------------------------
_AUX_FIX = {"ca": "can", "wo": "will", "sha": "shall", "ai": "is"}
_CONTRACT = {
    "is": "isn't",
    "are": "aren't",
    "was": "wasn't",
    "were": "weren't",
    "has": "hasn't",
    "have": "haven't",
    "had": "hadn't",
    "does": "doesn't",
    "do": "don't",
    "did": "didn't",
    "can": "can't",
    "could": "couldn't",
    "will": "won't",
    "would": "wouldn't",
    "should": "shouldn't",
}


def negation(s: Sentence, rng: random.Random) -> list[Proposal]:
    toks, out = s.toks, []
    has_neg = False
    for i, t in enumerate(toks):
        low = t.lower
        if low == "n't" and i > 0:
            has_neg = True
            prev = toks[i - 1]
            aux = _AUX_FIX.get(prev.lower, prev.text)
            out.append(
                Proposal("negation", ((prev.start, t.end, match_case(prev.text, aux)),), (), ("n't",), "remove n't")
            )
        elif low == "not":
            has_neg = True
            out.append(Proposal("negation", (delete_span(s.text, toks, i, i + 1),), (), ("not",), "remove not"))
        elif low == "cannot":
            has_neg = True
            out.append(Proposal("negation", (_rep(t, "can"),), ("can",), ("cannot",), "remove cannot"))
        elif low in lx.NEGATION_REMOVALS and not (low == "no" and t.pos not in ("DT", "RB")):
            has_neg = True
            word = rng.choice(lx.NEGATION_REMOVALS[low])
            if low == "no" and word == "a" and i + 1 < len(toks):
                word = fix_article(Token("a", 0, 0, "DT"), toks[i + 1].text) or "a"
            out.append(Proposal("negation", (_rep(t, word),), tuple(word.split()), (low,), f"{low} -> {word}"))
    if has_neg:
        return out
    # add a negation: vary the form so no single negation word dominates the introduced text;
    # the main clause's finite word first when spaCy parses the sentence
    lemmas: dict[int, str] = {}
    order = list(range(len(toks)))
    main = syntax.main_verb(s.text[s.start : s.end])
    if main is not None:
        fin, verb = main
        k = next((j for j, t in enumerate(toks) if t.start == s.start + fin.start), None)
        if k is not None:
            order.insert(0, k)
            if fin.start == verb.start and verb.lemma.isalpha():
                lemmas[k] = verb.lemma.lower()
                # the parser's tag: the POS tagger may take "likes" for a plural noun
                toks = [*toks[:k], Token(toks[k].text, toks[k].start, toks[k].end, fin.tag), *toks[k + 1 :]]
    for i in order:
        t = toks[i]
        if _is_aux(t) and i + 1 < len(toks) and toks[i + 1].lower not in ("not", "n't", "never"):
            low = t.lower
            forms = [" not", " never"]
            if low in lx.COPULAS:
                # not " hardly" / " not really": 7 of their 13 pooled candidates on the
                # generated-gold dev set were not sensible English ("There is hardly an
                # elderly woman in a crowd.", "Their hands are not really holding something")
                forms += [" no longer"]
            for form in forms:
                out.append(Proposal("negation", ((t.end, t.end, form),), tuple(form.split()), (), f"{low}{form}"))
            if low in _CONTRACT and rng.random() < 0.5:
                out.append(Proposal("negation", (_rep(t, _CONTRACT[low]),), ("n't",), (), f"{low} -> {_CONTRACT[low]}"))
            break
        if t.pos in ("VBZ", "VBD", "VBP") and _content_verb(t) and i > 0:
            base = lemmas.get(i) or wnx.lemma(t.lower, "v")
            aux = lx.DO_SUPPORT[t.pos]
            for form in (f"{aux} not {base}", f"{aux}n't {base}", f"never {t.text}", f"rarely {t.text}"):
                intro = tuple(w for w in form.replace("n't", " n't").split() if w not in (base, t.text))
                out.append(Proposal("negation", ((t.start, t.end, form),), intro, (), f"{t.text} -> {form}"))
            break
    for i, t in enumerate(toks):
        low = t.lower
        if low in ("someone", "somebody", "something", "everyone", "everybody", "everything"):
            word = {
                "someone": "no one",
                "somebody": "nobody",
                "something": "nothing",
                "everyone": "no one",
                "everybody": "nobody",
                "everything": "nothing",
            }[low]
            out.append(Proposal("negation", (_rep(t, word),), tuple(word.split()), (low,), f"{low} -> {word}"))
        elif low in ("a", "an", "some") and t.pos == "DT" and i + 1 < len(toks) and toks[i + 1].pos[:2] in ("NN", "JJ"):
            out.append(Proposal("negation", (_rep(t, "no"),), ("no",), (low,), f"{low} -> no"))
            break
    return out


# -- quantifier --------------------------------------------------------------------------------
def _np_head(toks: list[Token], i: int) -> int | None:
    """Index of the last noun of the NP that starts right after determiner ``i``."""
    j = i + 1
    while j < len(toks) and toks[j].pos in ("JJ", "JJR", "JJS", "VBN", "RB") and j + 1 < len(toks):
        j += 1
    if j >= len(toks) or not is_noun(toks[j]):
        return None
    while j + 1 < len(toks) and is_noun(toks[j + 1]):
        j += 1
    return j


def _verb_after(toks: list[Token], head: int) -> int | None:
    """The finite verb whose subject ends at ``head``: right after it, or after adverbs
    ("a man often walks"): a be/have/do form or a present-tense content verb (VBZ/VBP)."""
    j = head + 1
    while j < len(toks) and toks[j].pos in ("RB", "RBR", "RBS") and toks[j].lower not in ("not", "n't"):
        j += 1
    if j < len(toks) and (
        toks[j].lower in ("is", "was", "has", "does", "are", "were", "have", "do") or toks[j].pos in ("VBZ", "VBP")
    ):
        return j
    return None


def _subject_verb(s: Sentence, head: int) -> int | None:
    """The finite verb agreeing with the subject noun ``head``: from spaCy's parse when spaCy
    is installed ("a man in a red shirt is" -> "is"; none when the noun is no subject), else
    the positional rule (:func:`_verb_after`)."""
    toks = s.toks
    if not syntax.available():
        return _verb_after(toks, head)
    # parsed: a noun that is no subject ("a man in two red shirts is") agrees with no verb
    parsed = syntax.agreeing_verb(s.text[s.start : s.end], toks[head].start - s.start)
    if parsed is None:
        return None
    k = next((j for j, t in enumerate(toks) if t.start == s.start + parsed.start), None)
    return k if k is not None and k > head else None


UNIVERSAL = frozenset({"every", "each", "all"})


def _in_pp(toks: list[Token], i: int) -> bool:
    """Whether the noun phrase starting at ``i`` is the object of a preposition."""
    return i > 0 and toks[i - 1].pos == "IN" and toks[i - 1].lower not in ("than", "that", "if", "because", "while")


def quantifier(s: Sentence, rng: random.Random) -> list[Proposal]:
    toks, out = s.toks, []
    for i, t in enumerate(toks):
        low = t.lower
        head = _np_head(toks, i) if t.pos in ("DT", "CD", "JJ", "RB") or low in lx.QUANTIFIERS else None
        if head is None:
            continue
        subj_verb = _subject_verb(s, head)
        # no universal quantifier inside a prepositional phrase ("the engine of every train",
        # "walking past each poster", "in all grocery stores"): 5 of 6 such dev-set candidates
        # were invalid, against 13 of 37 for the other quantifier changes
        universal = _in_pp(toks, i)
        if low in ("a", "an", "one", "every", "each") and toks[head].pos == "NN":
            for q in ("one", "every", "a single", "another", "each"):
                if universal and q in UNIVERSAL:
                    continue
                if q != low and not (low in ("a", "an") and q == "a single" and i > 0 and toks[i - 1].lower == "than"):
                    out.append(Proposal("quantifier", (_rep(t, q),), tuple(q.split()), (low,), f"{low} -> {q}"))
            for q in ("two", "several", "many", "three", "some", "a few"):
                plural = pluralize(toks[head].text)
                edits = [_rep(t, q), (toks[head].start, toks[head].end, plural)]
                if subj_verb is not None:  # agreement: "a man walks" -> "two men walk"
                    verb = toks[subj_verb]
                    agreed = agree_verb(verb.text, verb.pos, True)
                    if agreed != verb.text:
                        edits.append(_rep(verb, agreed))
                out.append(Proposal("quantifier", tuple(edits), tuple(q.split()), (low,), f"{low} N -> {q} Ns"))
        elif (
            low
            in (
                "some",
                "all",
                "many",
                "few",
                "several",
                "most",
                "both",
                "two",
                "three",
                "four",
                "five",
                "six",
                "seven",
                "eight",
                "nine",
                "ten",
            )
            and toks[head].pos == "NNS"
        ):
            pool = [
                q
                for q in ("some", "all", "many", "few", "several", "most", "two", "three", "four", "five")
                if q != low and not (universal and q in UNIVERSAL)
            ]
            for q in rng.sample(pool, 4):
                out.append(Proposal("quantifier", (_rep(t, q),), (q,), (low,), f"{low} -> {q}"))
        elif t.pos == "CD" and t.text.isdigit() and len(t.text) < 6:
            n = int(t.text)
            for m in {n + 1, n * 2, max(n - 1, 2), n + 10} - {n}:
                out.append(Proposal("quantifier", ((t.start, t.end, str(m)),), (str(m),), (t.text,), f"{n} -> {m}"))
    # bare plural noun phrase: add a quantifier
    for a, b in np_chunks(toks):
        first = toks[a]
        if (
            first.pos in ("NNS", "JJ")
            and toks[b - 1].pos == "NNS"
            and (a == 0 or toks[a - 1].pos not in ("DT", "CD", "PRP$"))
        ):
            quants = ("Some", "Many", "Few", "All", "Several", "Most", "Two", "Three")
            for q in rng.sample([q for q in quants if not (_in_pp(toks, a) and q.lower() in UNIVERSAL)], 3):
                phrase = (
                    (q if a == 0 else q.lower())
                    + " "
                    + (first.text[:1].lower() + first.text[1:] if a == 0 and first.pos != "NNP" else first.text)
                )
                out.append(
                    Proposal("quantifier", ((first.start, first.end, phrase),), (q.lower(),), (), f"+{q.lower()}")
                )
    return out


# -- lexical (WordNet relations) and resemantic (different word, same POS) ----------------------
def _inflect_like(t: Token, base: str) -> str:
    if t.pos == "NNS":
        return pluralize(base)
    if t.pos.startswith("VB"):
        return inflect(base, t.pos)
    return base


def _slot_ok(t: Token) -> bool:
    return t.text.isalpha() and t.lower not in lx.FUNCTION_WORDS and t.lower not in lx.NEGATION_WORDS


ENOUGH = 6  # proposals per sentence for the WordNet codes: look up words lazily, in random order


def _shuffled(toks: list[Token], rng: random.Random) -> list[tuple[int, Token]]:
    order = list(enumerate(toks))
    rng.shuffle(order)
    return order


def lexical(s: Sentence, rng: random.Random) -> list[Proposal]:
    out: list[Proposal] = []
    toks = s.toks
    for i, t in _shuffled(toks, rng):
        if len(out) >= ENOUGH:
            break
        if not _slot_ok(t) or t.pos in ("NNP", "NNPS"):
            continue
        p = wnx.wn_pos(t.pos)
        if p is None or (p == "v" and t.lower in lx.AUXILIARIES):
            continue
        rels: list[tuple[str, tuple[str, ...]]] = [("antonym", wnx.antonyms(t.lower, p))]
        # hypernyms of the first (most frequent) sense only: on the generated-gold dev set all 7
        # lexical candidates that went through a second sense were invalid ("guys" -> "effigies",
        # "trick" -> "shift", "excited" -> "affected"), and none of the valid ones did
        if p == "n":
            rels += [("hypernym", wnx.hypernyms(t.lower, p, 1)[:3]), ("hyponym", wnx.hyponyms(t.lower, p)[:4])]
        elif p == "a":
            rels += [("cohyponym", wnx.similar_adjectives(t.lower)[:4])]
        elif p == "v":
            rels += [("hypernym", wnx.hypernyms(t.lower, p, 1)[:2])]
        for rel, words in rels:
            for w in words[:4]:
                word = _inflect_like(t, w)
                if word.lower() == t.lower:
                    continue
                edits = [_rep(t, word)]
                if i > 0 and (fix := fix_article(toks[i - 1], word)):
                    edits.append((toks[i - 1].start, toks[i - 1].end, fix))
                out.append(
                    Proposal("lexical", tuple(edits), (word.lower(),), (t.lower,), f"{rel}: {t.lower} -> {word}")
                )
    return out


def resemantic(s: Sentence, rng: random.Random) -> list[Proposal]:
    out: list[Proposal] = []
    toks = s.toks
    for i, t in _shuffled(toks, rng):
        if len(out) >= ENOUGH:
            break
        if not _slot_ok(t):
            continue
        if t.pos in ("NN", "NNS"):
            # only sister terms attested in SemCor: the unattested ones were 11 of the 26 invalid
            # resemantic candidates of the generated-gold dev set ("near the elixir", "two
            # spectroscopes") and 5 of its 26 valid ones
            pool = [w for w in wnx.cohyponyms(t.lower, "n")[:8] if wnx.attested(w, "n")]
            for w in rng.sample(pool, min(3, len(pool))):
                word = _inflect_like(t, w)
                edits = [_rep(t, word)]
                if i > 0 and (fix := fix_article(toks[i - 1], word)):
                    edits.append((toks[i - 1].start, toks[i - 1].end, fix))
                intro = [word.lower()]
                # phrase-level: also swap the adjective in front of it
                if i > 0 and toks[i - 1].pos == "JJ" and _slot_ok(toks[i - 1]) and rng.random() < 0.5:
                    adj = rng.choice([a for a in lx.INSERT_ADJECTIVES if wnx.adjective_fits(a, word)])
                    edits = [_rep(toks[i - 1], adj), _rep(t, word)]
                    if i > 1 and (fix := fix_article(toks[i - 2], adj)):
                        edits.append((toks[i - 2].start, toks[i - 2].end, fix))
                    intro.insert(0, adj)
                out.append(
                    Proposal("resemantic", tuple(edits), tuple(intro), (t.lower,), f"{t.lower} -> {' '.join(intro)}")
                )
        elif _content_verb(t) and t.pos in ("VBZ", "VBD", "VBG", "VBP", "VB"):
            base = wnx.lemma(t.lower, "v")
            if base in ("be", "have", "do", "get", "go", "say", "make"):
                continue
            for row in rng.sample(lx.VERB_FORMS, 3):
                if row[0] == base:
                    continue
                word = inflect(row[0], t.pos)
                out.append(
                    Proposal("resemantic", (_rep(t, word),), (word.lower(),), (t.lower,), f"verb {t.lower} -> {word}")
                )
    return out
