"""Synthetic invalid edits of a sentence, for training the validity discriminator
(``generation/ml/validity.py``). No Django.

Each corruption mimics one class of invalid ``rules`` candidate found in the generated-gold dev
set (docs/generation.md, "Validity (issue 19)"), applied to a sentence a human wrote:

* ``rare_sense`` — a noun replaced by a relative (hypernym, sister term) of one of its *rare*
  WordNet senses ("dishes" -> "coquilles", "guys" -> "effigies");
* ``odd_noun`` — a noun replaced by a random noun that SemCor never attests ("glasses" ->
  "spectroscopes");
* ``odd_adjective`` / ``odd_adverb`` — a random adjective before a noun, a random adverb before
  a verb (most do not fit);
* ``pp_quantifier`` — a universal or odd quantifier for the article of a noun inside a
  prepositional phrase ("walking past each poster");
* ``hedge`` — "hardly" / "not really" before a verb ("are hardly walking");
* ``np_swap`` — two noun phrases swapped ("Guests are married ... as a couple look on");
* ``front`` — the subject noun phrase moved to the end, joined with "and";
* ``insert_word`` / ``delete_word`` — a random word of the corpus inserted, a content word
  deleted.

Also :func:`safe_edit`: label-changing edits that keep the sentence valid (gender, number,
colour words swapped), added to the human edits as valid examples that change one word, as
most rule candidates do.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from functools import lru_cache

from generation.ml.rules import wordnet as wnx
from generation.ml.rules.tokens import Token, apply_edits, match_case, tag

KINDS = (
    "rare_sense",
    "odd_noun",
    "odd_adjective",
    "odd_adverb",
    "pp_quantifier",
    "hedge",
    "np_swap",
    "front",
    "insert_word",
    "delete_word",
)
ODD_QUANTIFIERS = ("each", "every", "all", "some", "a single", "most", "no")
HEDGES = ("hardly", "not really", "barely", "scarcely")
PREPOSITIONS = frozenset(
    "in on at near past into onto over under behind beside by with from through across along around "
    "toward towards off of for down up".split()
)
SWAPS = {
    "man": "woman",
    "woman": "man",
    "men": "women",
    "women": "men",
    "boy": "girl",
    "girl": "boy",
    "boys": "girls",
    "girls": "boys",
    "he": "she",
    "she": "he",
    "his": "her",
    "husband": "wife",
    "wife": "husband",
    "red": "blue",
    "blue": "green",
    "green": "red",
    "black": "white",
    "white": "black",
    "yellow": "orange",
    "two": "three",
    "three": "four",
    "four": "two",
    "one": "two",
    "dog": "cat",
    "cat": "dog",
    "dogs": "cats",
    "indoors": "outdoors",
    "outside": "inside",
    "inside": "outside",
    "sitting": "standing",
    "standing": "sitting",
    "running": "walking",
    "walking": "running",
    "small": "large",
    "large": "small",
    "big": "small",
}


@lru_cache(maxsize=1)
def _lexicon() -> dict[str, tuple[str, ...]]:
    """Single-word WordNet lemmas by part of speech; nouns split by whether SemCor attests them."""
    wn = wnx.wordnet()
    out: dict[str, tuple[str, ...]] = {}
    for pos in ("n", "a", "r"):
        names = sorted({lem.name() for s in wn.all_synsets(pos) for lem in s.lemmas()})
        names = [n for n in names if n.isalpha() and n.islower() and len(n) > 2]
        out[pos] = tuple(names)
    out["n_rare"] = tuple(n for n in out["n"] if not wnx.attested(n, "n"))
    out["r_ly"] = tuple(n for n in out["r"] if n.endswith("ly"))
    return out


def _plural(noun: str) -> str:
    if noun.endswith(("s", "x", "ch", "sh")):
        return noun + "es"
    if noun.endswith("y") and noun[-2:-1] not in "aeiou":
        return noun[:-1] + "ies"
    return noun + "s"


def _inflect(new: str, old: Token) -> str:
    word = _plural(new) if old.pos == "NNS" else new
    return match_case(old.text, word)


def _rare_relatives(word: str) -> list[str]:
    wn = wnx.wordnet()
    syns = wn.synsets(wnx.lemma(word, "n"), "n")
    if len(syns) < 2:
        return []
    first = {lem.name().lower() for s in syns[:1] for h in s.hypernyms() + s.hyponyms() + [s] for lem in h.lemmas()}
    names: set[str] = set()
    for s in syns[1:]:
        for h in s.hypernyms():
            names |= {lem.name() for c in [h, *h.hyponyms()] for lem in c.lemmas()}
        names |= {lem.name() for lem in s.lemmas()}
    base = wnx.lemma(word, "n")
    return sorted(n for n in names if n.isalpha() and n.islower() and n != base and n not in first)


def _nouns(tokens: Sequence[Token]) -> list[int]:
    return [i for i, t in enumerate(tokens) if t.pos in ("NN", "NNS") and t.text.isalpha() and t.text.islower()]


def _np_spans(tokens: Sequence[Token]) -> list[tuple[int, int]]:
    """Token spans [i, j) of simple noun phrases: a determiner or number, adjectives, nouns."""
    spans, i = [], 0
    while i < len(tokens):
        if tokens[i].pos in ("DT", "CD", "PRP$") or tokens[i].pos.startswith(("JJ", "NN")):
            j = i
            while j < len(tokens) and (
                (tokens[j].pos in ("DT", "CD", "PRP$") and j == i) or tokens[j].pos[:2] in ("JJ",)
            ):
                j += 1
            k = j
            while k < len(tokens) and tokens[k].pos in ("NN", "NNS"):
                k += 1
            if k > j:
                spans.append((i, k))
                i = k
                continue
        i += 1
    return spans


def corrupt(sentence: str, kind: str, rng: random.Random, vocab: Sequence[str] = ()) -> str | None:
    """``sentence`` with one corruption of ``kind`` (see the module doc), or None when the
    sentence offers no place for it."""
    toks = tag(sentence)
    if len(toks) < 3:
        return None
    lex = _lexicon()
    nouns = _nouns(toks)
    edits: list[tuple[int, int, str]] = []
    if kind in ("rare_sense", "odd_noun") and nouns:
        i = rng.choice(nouns)
        pool = _rare_relatives(toks[i].text) if kind == "rare_sense" else list(lex["n_rare"])
        if not pool:
            return None
        edits = [(toks[i].start, toks[i].end, _inflect(rng.choice(pool), toks[i]))]
    elif kind == "odd_adjective" and nouns:
        i = rng.choice(nouns)
        edits = [(toks[i].start, toks[i].start, rng.choice(lex["a"]) + " ")]
    elif kind == "odd_adverb":
        verbs = [i for i, t in enumerate(toks) if t.pos in ("VBG", "VBZ", "VBP", "VBD")]
        if not verbs:
            return None
        i = rng.choice(verbs)
        edits = [(toks[i].start, toks[i].start, rng.choice(lex["r_ly"]) + " ")]
    elif kind == "pp_quantifier":
        spots = [
            i + 1
            for i in range(len(toks) - 2)
            if toks[i].lower in PREPOSITIONS and toks[i + 1].lower in ("a", "an", "the")
        ]
        spots += [0] if toks[0].lower in ("a", "an", "the") else []
        if not spots:
            return None
        i = rng.choice(spots)
        edits = [(toks[i].start, toks[i].end, match_case(toks[i].text, rng.choice(ODD_QUANTIFIERS)))]
    elif kind == "hedge":
        verbs = [i for i, t in enumerate(toks) if t.pos in ("VBG", "VBN") and i > 0]
        if not verbs:
            return None
        i = rng.choice(verbs)
        edits = [(toks[i].start, toks[i].start, rng.choice(HEDGES) + " ")]
    elif kind == "np_swap":
        spans = _np_spans(toks)
        if len(spans) < 2:
            return None
        (a, b), (c, d) = sorted(rng.sample(spans, 2))
        ta = sentence[toks[a].start : toks[b - 1].end]
        tc = sentence[toks[c].start : toks[d - 1].end]
        if ta.lower() == tc.lower():
            return None
        if a == 0:
            ta, tc = ta[:1].lower() + ta[1:], tc[:1].upper() + tc[1:]
        edits = [(toks[a].start, toks[b - 1].end, tc), (toks[c].start, toks[d - 1].end, ta)]
    elif kind == "front":
        spans = _np_spans(toks)
        if not spans or spans[0][0] != 0 or spans[0][1] >= len(toks) - 2:
            return None
        a, b = spans[0]
        subject = sentence[toks[a].start : toks[b - 1].end]
        rest = sentence[toks[b].start :].rstrip(" .")
        return f"{rest[:1].upper()}{rest[1:]} and {subject[:1].lower()}{subject[1:]}."
    elif kind == "insert_word" and vocab:
        spots = [i for i in range(1, len(toks)) if toks[i].is_word]
        if not spots:
            return None
        i = rng.choice(spots)
        edits = [(toks[i].start, toks[i].start, rng.choice(vocab) + " ")]
    elif kind == "delete_word":
        content = [i for i, t in enumerate(toks) if t.pos[:2] in ("NN", "VB", "IN") and t.is_word]
        if not content:
            return None
        i = rng.choice(content)
        end = toks[i + 1].start if i + 1 < len(toks) else toks[i].end
        edits = [(toks[i].start, end, "")]
    if not edits:
        return None
    out = apply_edits(sentence, edits)
    return out if out != sentence else None


def safe_edit(sentence: str, rng: random.Random) -> str | None:
    """A one-word swap that keeps the sentence valid (``SWAPS``: gender, colour, number...)."""
    toks = [t for t in tag(sentence) if t.lower in SWAPS]
    if not toks:
        return None
    t = rng.choice(toks)
    return apply_edits(sentence, [(t.start, t.end, match_case(t.text, SWAPS[t.lower]))])


def synthetic_negatives(
    sentences: Sequence[str], n: int, rng: random.Random, kinds: Sequence[str] = KINDS
) -> list[tuple[str, str, str]]:
    """Up to ``n`` (sentence, corrupted, kind) triples, kinds in turn over shuffled sentences."""
    vocab = sorted({w.lower() for s in sentences for w in s.split() if w.isalpha()})
    order = list(sentences)
    rng.shuffle(order)
    out: list[tuple[str, str, str]] = []
    k = 0
    for s in order * 3:
        if len(out) >= n:
            break
        for _ in range(len(kinds)):
            kind = kinds[k % len(kinds)]
            k += 1
            bad = corrupt(s, kind, rng, vocab)
            if bad:
                out.append((s, bad, kind))
                break
    return out
