"""Shallow syntax over POS-tagged tokens: noun-phrase chunks, prepositional phrases, verb
inflection, a/an agreement. Enough for the rule-based control codes; no parser needed."""

from __future__ import annotations

from functools import lru_cache
from itertools import pairwise

from generation.ml import lexicons as lx
from generation.ml.rules.tokens import Token

NOUN_TAGS = ("NN", "NNS", "NNP", "NNPS")
MOD_TAGS = ("JJ", "JJR", "JJS", "VBN", "CD")


def is_noun(t: Token) -> bool:
    return t.pos in NOUN_TAGS and t.text[:1].isalpha()


def fix_tags(toks: list[Token]) -> list[Token]:
    """Repair the commonest tagger slip: a sentence without a verb whose "N Ns" pair is really
    subject + verb ("A man watches a dog": watches/NNS -> VBZ)."""
    if any(t.pos.startswith(("VB", "MD")) for t in toks):
        return toks
    from generation.ml.rules import wordnet as wnx

    out = list(toks)
    for i in range(1, len(out) - 1):
        t = out[i]
        if (
            t.pos == "NNS"
            and out[i - 1].pos == "NN"
            and t.lower.endswith("s")
            and wnx.known(t.lower, "v")
            and out[i + 1].pos in ("DT", "PRP$", "IN", "PRP", "JJ", "CD", "RB")
        ):
            out[i] = Token(t.text, t.start, t.end, "VBZ")
            break
    return out


def np_chunks(toks: list[Token]) -> list[tuple[int, int]]:
    """[start, end) token-index spans of simple noun phrases: (DT|PRP$|CD)? (JJ|VBN)* NN+ or a
    personal pronoun."""
    out = []
    i, n = 0, len(toks)
    while i < n:
        j = i
        if toks[j].pos in ("DT", "PRP$", "CD") and toks[j].lower not in ("that", "which", "all"):
            j += 1
        while j < n and toks[j].pos in (*MOD_TAGS, "RB") and j + 1 < n and toks[j + 1].pos in MOD_TAGS + NOUN_TAGS:
            j += 1
        k = j
        while k < n and is_noun(toks[k]):
            k += 1
        if k > j:
            out.append((i, k))
            i = k
        elif toks[i].pos == "PRP" and toks[i].lower not in ("it", "'s"):
            out.append((i, i + 1))
            i += 1
        else:
            i += 1
    return out


def pp_chunks(toks: list[Token]) -> list[tuple[int, int]]:
    """[start, end) spans of 'IN NP' prepositional phrases (NP as chunked above)."""
    nps = dict(np_chunks(toks))
    out = []
    for i, t in enumerate(toks):
        if t.pos in ("IN", "TO") and t.lower in lx.PREPOSITIONS and i + 1 in nps:
            out.append((i, nps[i + 1]))
    return out


def article_for(word: str) -> str:
    w = word.lower()
    vowel = w[:1] in "aeiou" and not w.startswith(("uni", "use", "eu", "one", "uk"))
    return "an" if vowel or w.startswith(("hour", "honest", "heir")) else "a"


def article_error(toks: list[Token]) -> bool:
    """Whether the text has "a" / "an" before a word that wants the other ("A older
    gentleman", "an dog"), a determiner twice in one noun phrase ("A brown a dog", "a a
    building") or before punctuation: a
    candidate keeps the original's error, and a reader rejects it."""
    for i, (det, nxt) in enumerate(pairwise(toks)):
        if det.lower in ("a", "an") and nxt.text[:1].isalpha() and nxt.text.islower() and fix_article(det, nxt.text):
            return True
        if det.lower in ("a", "an", "the", "each", "every") and (
            nxt.lower in ("a", "an", "the", "and", "or", "but", "is", "are", "was", "were", "while")
            or nxt.text in (".", ",", "!", "?")
        ):
            return True  # "looking a a building", "cross each and give each a high five"
        if det.lower in ("a", "an", "the") and nxt.pos.startswith("JJ"):
            j = i + 1
            while j < len(toks) and toks[j].pos.startswith("JJ"):
                j += 1
            if j < len(toks) and toks[j].lower in ("a", "an", "the"):
                return True  # "A brown a dog and a black dog"
    return False


def fix_article(det: Token, next_word: str) -> str | None:
    """The a/an form ``det`` should take before ``next_word`` (None: leave as is)."""
    if det.lower not in ("a", "an"):
        return None
    want = article_for(next_word)
    if want == det.lower:
        return None
    return want.capitalize() if det.text[:1].isupper() else want


def _lemminflect(word: str, tag: str) -> str | None:
    """lemminflect's inflection of a lower-case base ``word`` for a Penn ``tag`` (its tables
    come from the AGID/SPECIALIST lexicons: irregular plurals and verbs right), None when it
    is not installed or knows no form."""
    try:
        from lemminflect import getInflection
    except ImportError:  # pragma: no cover - lemminflect is in requirements.txt
        return None
    forms = getInflection(word, tag=tag)
    return str(forms[0]) if forms else None


def warm_up() -> None:
    """Read lemminflect's lemma and inflection tables and textblob's inflection rules now: each
    is read on first use (the lemma table alone 0.8 s), which would otherwise land in a run's
    first batch that needs a verb agreed or a noun made plural."""
    try:
        from lemminflect import getInflection, getLemma
    except ImportError:  # pragma: no cover - lemminflect is in requirements.txt
        return
    getLemma("walks", upos="VERB")
    getInflection("walk", tag="VBZ")
    from textblob.en.inflect import pluralize as _pl

    _pl("dog")


def _keep_case(like: str, word: str) -> str:
    if like.isupper() and len(like) > 1:
        return word.upper()
    return word[:1].upper() + word[1:] if like[:1].isupper() else word


@lru_cache(maxsize=16384)
def pluralize(noun: str) -> str:
    if noun.isalpha() and not noun.isupper():
        form = _lemminflect(noun.lower(), "NNS")
        if form:
            return _keep_case(noun, form)
    from textblob.en.inflect import pluralize as _pl

    return str(_pl(noun))


@lru_cache(maxsize=16384)
def singularize(noun: str) -> str:
    from textblob.en.inflect import singularize as _sg

    return str(_sg(noun))


_VERB_TABLE = {row[0]: row for row in lx.VERB_FORMS}
_IRREGULAR_PP_BY_BASE = {
    "eat": "eaten",
    "throw": "thrown",
    "write": "written",
    "ride": "ridden",
    "sing": "sung",
    "swim": "swum",
    "run": "run",
    "drive": "driven",
    "take": "taken",
    "give": "given",
    "see": "seen",
    "break": "broken",
    "choose": "chosen",
    "draw": "drawn",
    "fly": "flown",
    "hide": "hidden",
    "shake": "shaken",
    "steal": "stolen",
    "speak": "spoken",
    "wear": "worn",
    "begin": "begun",
    "bite": "bitten",
    "blow": "blown",
    "know": "known",
    "grow": "grown",
    "hold": "held",
    "build": "built",
    "buy": "bought",
    "sell": "sold",
    "read": "read",
    "catch": "caught",
    "teach": "taught",
    "bring": "brought",
    "make": "made",
    "find": "found",
    "hit": "hit",
    "cut": "cut",
    "put": "put",
    "feed": "fed",
    "lead": "led",
    "leave": "left",
    "keep": "kept",
    "sweep": "swept",
    "hang": "hung",
    "dig": "dug",
    "spin": "spun",
    "swing": "swung",
    "win": "won",
    "lose": "lost",
    "send": "sent",
    "spend": "spent",
    "tell": "told",
    "pay": "paid",
    "lay": "laid",
    "do": "done",
    "get": "gotten",
    "have": "had",
    "play": "played",
    "kick": "kicked",
    "pull": "pulled",
    "push": "pushed",
}


def _regular_ed(base: str) -> str:
    if base.endswith("e"):
        return base + "d"
    if base.endswith("y") and len(base) > 2 and base[-2] not in "aeiou":
        return base[:-1] + "ied"
    if (
        len(base) <= 4
        and len(base) >= 3
        and base[-1] not in "aeiouwxy"
        and base[-2] in "aeiou"
        and base[-3] not in "aeiou"
    ):
        return base + base[-1] + "ed"
    return base + "ed"


def participle(base: str) -> str:
    return _IRREGULAR_PP_BY_BASE.get(base) or _regular_ed(base)


def inflect(base: str, tag: str) -> str:
    """Inflect a verb base form for a Penn tag (VB, VBP, VBZ, VBD, VBG, VBN): the curated
    table, else lemminflect, else the regular rules."""
    row = _VERB_TABLE.get(base)
    if not row and tag in ("VBZ", "VBD", "VBN", "VBG") and base.isalpha() and base.islower():
        form = _lemminflect(base, tag)
        if form:
            return form
    if tag == "VBZ":
        if row:
            return row[1]
        if base.endswith(("s", "sh", "ch", "x", "z", "o")):
            return base + "es"
        if base.endswith("y") and len(base) > 2 and base[-2] not in "aeiou":
            return base[:-1] + "ies"
        return base + "s"
    if tag == "VBD":
        if row:
            return row[2]
        return _regular_ed(base)
    if tag == "VBN":
        return participle(base)
    if tag == "VBG":
        if row:
            return row[3]
        if base.endswith("ie"):
            return base[:-2] + "ying"
        if base.endswith("e") and not base.endswith(("ee", "ye", "oe")):
            return base[:-1] + "ing"
        if len(base) in (3, 4) and base[-1] not in "aeiouwxy" and base[-2] in "aeiou" and base[-3] not in "aeiou":
            return base + base[-1] + "ing"
        return base + "ing"
    return base


def agree_be(word: str, plural: bool) -> str:
    table = {"is": "are", "was": "were", "has": "have", "does": "do"}
    inverse = {v: k for k, v in table.items()}
    low = word.lower()
    if plural and low in table:
        rep = table[low]
    elif not plural and low in inverse:
        rep = inverse[low]
    else:
        return word
    return rep.capitalize() if word[:1].isupper() else rep


def agree_verb(word: str, tag: str, plural: bool) -> str:
    """A finite verb made to agree with a subject that became plural (or singular): the
    be/have/do forms through :func:`agree_be`, a 3rd-person content verb (VBZ) to its base form
    and back (``walks`` <-> ``walk``); past forms of other verbs need no change."""
    low = word.lower()
    if low in ("is", "are", "was", "were", "has", "have", "does", "do"):
        return agree_be(word, plural)
    if plural and tag == "VBZ":
        try:
            from lemminflect import getLemma
        except ImportError:  # pragma: no cover
            return word
        lemmas = getLemma(low, upos="VERB")
        return _keep_case(word, str(lemmas[0])) if lemmas else word
    if not plural and tag == "VBP":
        return _keep_case(word, inflect(low, "VBZ"))
    return word


def span_text(text: str, toks: list[Token], s: int, e: int) -> str:
    """The original characters covered by tokens [s, e)."""
    return text[toks[s].start : toks[e - 1].end]


def delete_span(text: str, toks: list[Token], s: int, e: int) -> tuple[int, int, str]:
    """A character edit deleting tokens [s, e) together with one adjacent space."""
    start, end = toks[s].start, toks[e - 1].end
    if start > 0 and text[start - 1] == " ":
        start -= 1
    elif end < len(text) and text[end] == " ":
        end += 1
    return (start, end, "")


def lower_first(phrase: str, tok: Token) -> str:
    """Lower-case the first letter when it is only capitalised for being sentence-initial."""
    if tok.pos in ("NNP", "NNPS") or tok.text == "I" or (tok.text.isupper() and len(tok.text) > 1):
        return phrase
    return phrase[:1].lower() + phrase[1:]


def upper_first(phrase: str) -> str:
    return phrase[:1].upper() + phrase[1:]
