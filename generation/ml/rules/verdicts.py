"""The verdicts of a review and a coherent review-wide flip of all of them (issue 31.2).

A counterfactual review is one text with one label. Flipping the verdict of one sentence ("I
loved Rolf in this role" -> "I hated Rolf in this role") leaves the rest of the review arguing
the other way; flipping every sentiment word of the review also flips what is no verdict ("their
love for each other" -> "their hate", "the superb Tom Pettit" -> "the poor Tom Pettit", "fails
miserably" -> "succeeds miserably"). Here, on spaCy's parse of the whole review
(:mod:`generation.ml.rules.syntax`):

* a **verdict** is a sentiment-bearing word (:func:`polarity.polarity`) whose target is the work
  or its parts (``WORK_NOUNS``: "a great cast", "the plot is boring", "it was brilliant", "I
  found the script dull"), a craft verb's manner ("beautifully shot", "well acted"), the
  reviewer's stance ("I loved / hated / enjoyed it", "highly recommended", "avoid this movie"),
  a verdict noun ("a masterpiece", "a waste of time") or a rating ("8/10", "10 stars",
  "must-see");
* what is **not** a verdict is left alone: the narrative (emotion nouns, a character's traits:
  "their love", "a sad man"), epithets of people ("the superb Tom Pettit"), titles, songs and
  quoted text, and idioms (``FROZEN``: "fall in love", "the bad guys", "as well", ...);
* :func:`read_review` flips every verdict at once: an opposite word (``lexicons.POLARITY_PAIRS``
  first), a negation removed where one scopes over the verdict ("wasn't good" -> "was good",
  "I didn't like it" -> "I liked it"), a rating mirrored on its scale ("8/10" -> "3/10"), an
  intensifying adverb is left as it is ("amazingly good" -> "amazingly bad"). When one verdict
  has no safe flip (no opposite; a negation it cannot remove) the reading is blocked: a
  half-flipped review is self-contradictory, so no candidate is better than one. With
  ``drop=True`` that verdict's sentence is left out instead (``Reading.dropped``), for
  :mod:`generation.ml.rules.coherent`, which also leaves out what still argues the other way.

No Django. Without spaCy the flip is unavailable (None).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from generation.ml import lexicons as lx
from generation.ml.rules import polarity as pol
from generation.ml.rules import syntax
from generation.ml.rules.phrases import article_for, inflect
from generation.ml.rules.tokens import match_case, sentence_spans

# what a verdict is about: the work and its parts
WORK_NOUNS = frozenset(
    """film films movie movies picture flick flicks show shows series episode episodes documentary
    acting performance performances cast casting plot plots script scripts screenplay story stories
    storyline storylines ending endings direction directing effects music score soundtrack
    dialogue dialog dialogues cinematography photography camerawork editing production
    characterization characterisation premise writing humor humour comedy drama thriller horror
    sequel remake scene scenes visuals animation pacing twist twists narrative adaptation version
    job watch experience entertainment effort entry example addition work piece debut flick
    actor actors actress actresses director performer performers portrayal role roles
    filmmaking film-making special cgi makeup costumes sets set design songs lines jokes gags
    characters""".split()
)
# "it / this / that" as the subject of a verdict: the work
WORK_PRONOUNS = frozenset({"it", "this", "that", "which", "everything", "everyone", "all"})
# verbs whose manner adverb is a verdict on the craft ("beautifully shot", "poorly written")
CRAFT_VERBS = frozenset(
    """act write direct shoot make do execute craft play photograph edit pace perform cast produce
    handle portray film develop realize realise construct script choreograph render stage
    deliver score light design""".split()
)
# the reviewer's stance toward the work (subject I / we, or none: "Loved it!")
STANCE_VERBS = frozenset({"love", "like", "enjoy", "hate", "dislike", "adore", "despise", "loathe", "admire"})
STANCE_ADJECTIVES = frozenset(
    {"disappointed", "bored", "impressed", "pleased", "satisfied", "thrilled", "amazed", "annoyed", "delighted"}
)
# verbs whose subject is the work ("it fails", "the film succeeds")
WORK_VERBS = frozenset({"fail", "succeed", "disappoint", "impress", "entertain", "bore", "delight", "excel", "shine"})
# sentiment-bearing nouns that are a verdict when they predicate the work ("it is a masterpiece")
VERDICT_NOUNS = frozenset(
    {"masterpiece", "gem", "mess", "disaster", "failure", "success", "pleasure", "chore", "treat", "triumph", "flop"}
)
# phrases that are no verdict whatever their words: never edited
FROZEN = (
    "fall in love",
    "falls in love",
    "fell in love",
    "falling in love",
    "fallen in love",
    "in love",
    "love story",
    "love interest",
    "love affair",
    "love triangle",
    "love life",
    "love letter",
    "make love",
    "made love",
    "good guy",
    "good guys",
    "bad guy",
    "bad guys",
    "good old",
    "for good",
    "as well",
    "pretty much",
    "pretty sure",
    "pretty well",
    "good luck",
    "too bad",
    "best friend",
    "best friends",
    "boyfriend",
    "bad news",
    "feel good",
    "feel-good",
    "good and evil",
    "good vs evil",
    "good versus evil",
    "good vs. evil",
    "best man",
    "bad boy",
    "bad boys",
    "poor thing",
    "kind of",
    "sort of",
    "at least",
    "at best",
    "at worst",
    "for the better",
    "for the worse",
    "better off",
    "had better",
    "'d better",
    "great deal",
    "good deal",
    "good number",
    "great many",
    "good many",
    "no wonder",
    "thank god",
    "thank goodness",
    "oh god",
    "my god",
    "good morning",
    "good night",
    "good-looking",
    "good looking",
    "well known",
    "well-known",
    "as good as",
    "would like",
    "'d like",
    "would love",
    "'d love",
    "like to",
    "love to",
    "the best of",
    "best of all",
    "do my best",
    "did his best",
    "did her best",
    "did their best",
    "does his best",
    "does her best",
    "tries his best",
    "tries her best",
    "tried his best",
    "tried her best",
    "did its best",
    "very well may",
    "may well",
    "might well",
    "could well",
    "just as well",
    "well enough",
    "well, ",
    "oh well",
    "well...",
    "mean well",
    "good-natured",
    "good natured",
    "hard time",
    "hard times",
    "difficult times",
    "happy ending",
    "sad ending",
    "happy end",
    "bad taste",
    "good taste",
    "special effects",
    "special features",
    "special edition",
    "special effect",
)
# sentiment words that are no verdict on their own
NOT_VERDICTS = frozenset(
    {"many", "special", "latest", "top", "sound", "light", "criminal", "popular", "famous", "familiar", "beloved"}
    | {"weird", "outrageous", "accessible", "distinct", "static"}
)
_FROZEN_RE = re.compile(
    r"(?<![\w'])(?:" + "|".join(re.escape(p) for p in sorted(FROZEN, key=len, reverse=True)) + r")(?![\w])",
    re.IGNORECASE,
)
# review-wide phrase flips, both ways where both are verdicts
PHRASES: tuple[tuple[str, str], ...] = (
    (r"\bone of the (?:great|greatest|best|finest)\b", "one of the worst"),
    (r"\bone of the (?:worst|poorest)\b", "one of the best"),
    (r"\bnothing special\b", "something special"),
    (r"\btop[- ]notch\b", "second-rate"),
    (r"\b(is|was)n't worth\b", r"\1 worth"),
    (r"\b(?:do not|don't) waste your (time|money)\b", r"spend your \1"),
    (r"\bavoid (this|it)\b", r"see \1"),
    (r"\bi can recommend\b", "I cannot recommend"),
    (r"\b(is|was|are|comes) (?:highly |strongly )?recommended\b", r"\1 not recommended"),
    (r"\bwould (?:definitely |highly |strongly )?recommend\b", "would not recommend"),
    (r"\ba must[- ]see\b", "one to skip"),
    (r"\bmust[- ]see\b", "must-skip"),
    (r"\bmust[- ]skip\b", "must-see"),
    (r"\bfails miserably\b", "succeeds brilliantly"),
    (r"\bsucceeds brilliantly\b", "fails miserably"),
    (r"\bnot worth (?:the|your) (time|money)\b", r"worth the \1"),
    (r"\bwell worth\b", "not worth"),
    (r"\bnot worth\b", "worth"),
    (r"\bhighly recommended\b", "not recommended"),
    (r"\bnot recommended\b", "recommended"),
    (r"\bwould highly recommend\b", "would not recommend"),
    (r"\bwould recommend\b", "would not recommend"),
    (r"\bwould not recommend\b", "would recommend"),
    (r"\bwouldn't recommend\b", "would recommend"),
    (r"\bcan't recommend\b", "can recommend"),
    (r"\bcannot recommend\b", "can recommend"),
    (r"\bdo not recommend\b", "recommend"),
    (r"\bdon't recommend\b", "recommend"),
    (r"\bi highly recommend\b", "I do not recommend"),
    (r"\bi strongly recommend\b", "I do not recommend"),
    (r"\bi recommend\b", "I do not recommend"),
    (r"\bi definitely recommend\b", "I do not recommend"),
    (r"\b(?<!not )(?<!well )worth\b", "not worth"),
)
_PHRASE_RES = [(re.compile(p, re.IGNORECASE), r) for p, r in PHRASES]
# any phrase that holds a verdict word this module cannot flip: the review is left alone
UNFLIPPABLE = re.compile(
    r"\bwaste (?:of|your)\b|\bwasted (?:my|\d|two|an|a)\b|\brecommend\w*\b|\bavoid\b|\bworth\b|"
    r"\bmust[- ]see\b|\bskip (?:it|this)\b",
    re.IGNORECASE,
)
RATING_RE = re.compile(
    r"(?<![\w./])(?P<n>\d{1,2}(?:\.\d)?)\s*(?P<sep>/|out of)\s*(?P<of>10|5|4)(?![\w/]|\.\d)"
    r"|(?<![\w./])(?P<sn>\d{1,2})\s+(?P<st>stars?)\b",
    re.IGNORECASE,
)
_NEG_AUX = {"ca": "can", "wo": "will", "sha": "shall", "ai": "is"}


@dataclass(frozen=True)
class Edit:
    start: int
    end: int
    new: str
    old: str
    why: str  # "verdict", "unnegate", "rating", "phrase"


@dataclass(frozen=True)
class Reading:
    """What the review flip found: the edits of a coherent flip, or why there is none; and the
    sentiment words it left alone, each with the reason (``narrative``, ``epithet``, ``title``,
    ``idiom``)."""

    edits: tuple[Edit, ...]
    blocked: str  # "" when the flip is safe
    left: tuple[tuple[str, str], ...]
    # with ``drop``: the review's sentences (character spans, trimmed) and those left out because
    # a verdict in them has no safe flip
    sentences: tuple[tuple[int, int], ...] = ()
    dropped: tuple[tuple[int, int], ...] = ()


def _quoted_spans(text: str) -> list[tuple[int, int]]:
    spans = []
    for m in re.finditer(r"\"[^\"]{1,200}\"|“[^”]{1,200}”|'[A-Z][^']{0,120}'(?!\w)", text):
        spans.append((m.start(), m.end()))
    return spans


def _inside(spans: list[tuple[int, int]], a: int, b: int) -> bool:
    return any(s <= a and b <= e for s, e in spans)


def _masked(text: str) -> str:
    """The text with markup blanked to newlines (same offsets): sentences break there."""
    return pol.MARKUP_RE.sub(lambda m: "\n" * len(m.group(0)), text)


def rating_flip(m: re.Match[str]) -> str | None:
    """A rating mirrored on its scale: 8/10 -> 3/10, 4/5 -> 2/5, 10 stars -> 1 star."""
    if m.group("n") is not None:
        n, of = float(m.group("n")), int(m.group("of"))
        if n > of:
            return None
        low = 0 if of == 4 else 1
        new = of + low - n
        new = min(max(new, low), of)
        s = f"{new:.1f}".rstrip("0").rstrip(".") if "." in m.group("n") else str(round(new))
        return m.group(0).replace(m.group("n"), s, 1)
    n = int(m.group("sn"))
    if n > 10 or n < 0:
        return None
    of = 5 if n <= 5 else 10
    new = of + 1 - n
    return f"{new} {'star' if new == 1 else 'stars'}"


def _subject(tok: Any) -> Any:
    for c in tok.children:
        if c.dep_ in ("nsubj", "nsubjpass"):
            return c
    if tok.dep_ in ("conj", "xcomp", "ccomp", "advcl") and tok.head is not tok:
        return _subject(tok.head)
    return None


def _noun_is_work(noun: Any) -> bool:
    if noun is None:
        return False
    low = noun.lower_
    if noun.pos_ == "PRON":
        return low in WORK_PRONOUNS
    if noun.pos_ == "PROPN":
        return False
    if low == "time":  # "a great time" (had), not "the difficult times"
        return bool(noun.head.lemma_ == "have")
    if low in WORK_NOUNS or noun.lemma_.lower() in WORK_NOUNS:
        return True
    if noun.dep_ == "attr" and noun.head is not noun:  # "the film is a good one"
        subj = _subject(noun.head)
        return subj is not None and subj is not noun and _noun_is_work(subj)
    return False


def _epithet(tok: Any) -> bool:
    """A word before a name ("the superb Tom Pettit", "the lovely Miss X")."""
    doc = tok.doc
    j = tok.i + 1
    while j < len(doc) and doc[j].pos_ in ("ADJ", "CCONJ", "PUNCT", "ADV") and doc[j].text != ".":
        j += 1
    return j < len(doc) and doc[j].pos_ == "PROPN" and (doc[j].dep_ in ("compound", "appos") or tok.dep_ == "amod")


def _first_conjunct(tok: Any) -> Any:
    h = tok
    while h.dep_ == "conj" and h.head is not h and h.head.pos_ == tok.pos_:
        h = h.head
    return h


def classify(tok: Any) -> str:
    """``verdict`` or why the sentiment word ``tok`` is none (``epithet``, ``narrative``)."""
    h = _first_conjunct(tok)
    if tok.pos_ in ("ADJ", "NOUN") and _epithet(tok):
        return "epithet"
    if tok.pos_ == "ADJ" or (tok.pos_ == "NOUN" and tok.tag_ == "JJ"):
        if h.dep_ == "amod":
            if h.head.pos_ == "PROPN":
                return "epithet"
            return "verdict" if _noun_is_work(h.head) else "narrative"
        if h.dep_ in ("acomp", "attr", "oprd", "ccomp", "xcomp", "ROOT", "conj", "advcl"):
            subj = _subject(h) if h.dep_ == "ROOT" else (h if h.dep_ == "ccomp" else None)
            if h.dep_ != "ROOT":
                gov = h.head
                subj = None
                for c in h.children:
                    if c.dep_ in ("nsubj", "nsubjpass"):
                        subj = c
                subj = subj if subj is not None else _subject(gov)
                if (
                    gov.lemma_ in ("find", "think", "consider", "call")
                    and subj is not None
                    and subj.lower_ in ("i", "we")
                ):
                    obj = next((c for c in gov.children if c.dep_ == "dobj"), None)
                    if obj is not None:
                        return "verdict" if _noun_is_work(obj) else "narrative"
            if subj is None:
                # a fragment ("Brilliant!", "Boring and predictable.")
                return "verdict" if len([t for t in h.sent if t.is_alpha]) <= 4 else "narrative"
            if subj.lower_ in ("i", "we") and tok.lower_ in STANCE_ADJECTIVES:
                return "verdict"
            return "verdict" if _noun_is_work(subj) else "narrative"
        return "narrative"
    if tok.pos_ == "ADV":
        head = tok.head
        if head.pos_ in ("VERB", "AUX") and head.lemma_.lower() in CRAFT_VERBS and tok.dep_ == "advmod":
            subj = _subject(head)
            return "verdict" if subj is None or _noun_is_work(subj) or head.tag_ == "VBN" else "narrative"
        return "narrative"
    if tok.pos_ == "VERB":
        subj = _subject(tok)
        lemma = tok.lemma_.lower()
        if lemma in STANCE_VERBS:
            if any(c.dep_ in ("xcomp", "ccomp") and c.pos_ == "VERB" for c in tok.children):
                return "narrative"  # "I'd like to say"
            if tok.dep_ == "xcomp":
                return "narrative"  # "I wanted to like this movie": a hope, not the verdict
            if subj is None and tok.i == tok.sent.start:
                return "verdict"  # "Loved it!"
            return "verdict" if subj is not None and subj.lower_ in ("i", "we") else "narrative"
        if lemma in WORK_VERBS:
            return "verdict" if _noun_is_work(subj) else "narrative"
        return "narrative"
    if tok.pos_ == "NOUN" and tok.lower_ in VERDICT_NOUNS:
        if tok.dep_ in ("attr", "appos", "ROOT", "npadvmod"):
            gov = tok.head
            subj = _subject(gov) if tok.dep_ == "attr" else None
            return "verdict" if tok.dep_ != "attr" or _noun_is_work(subj) else "narrative"
        return "narrative"
    return "narrative"


def _negation_of(tok: Any) -> Any:
    """The negation that scopes over a verdict word ("not good", "isn't a good film", "didn't
    like"), or None."""
    cands = [tok, _first_conjunct(tok)]
    h = _first_conjunct(tok)
    if h.dep_ == "amod":
        cands.append(h.head)
        if h.head.dep_ in ("attr", "dobj"):
            cands.append(h.head.head)
    elif h.dep_ in ("acomp", "attr", "oprd", "xcomp"):
        cands.append(h.head)
    elif tok.pos_ == "ADV":
        cands.append(tok.head)
    for c in cands:
        for ch in c.children:
            if ch.dep_ == "neg" or (ch.lower_ in ("not", "n't", "never") and ch.dep_ in ("advmod", "neg")):
                return ch
    return None


def _unnegate(neg: Any, text: str) -> list[Edit] | None:
    """Edits removing a negation: "not" deleted, "didn't like" -> "liked", "isn't" -> "is"."""
    low = neg.lower_.replace("’", "'")
    doc = neg.doc
    if low == "never":
        return None
    sent_end = neg.sent.end_char
    at_all = re.search(r",? at all\b", text[neg.idx : sent_end])
    extra = []
    if at_all is not None:  # "I didn't like it at all" -> "I liked it"
        s0 = neg.idx + at_all.start()
        extra = [Edit(s0, neg.idx + at_all.end(), "", text[s0 : neg.idx + at_all.end()], "unnegate")]
    out = _unnegate_word(neg, text, low, doc)
    return None if out is None else out + extra


def _unnegate_word(neg: Any, text: str, low: str, doc: Any) -> list[Edit] | None:
    if low == "n't" and neg.i > 0:
        aux = doc[neg.i - 1]
        verb = neg.head
        if aux.lemma_ == "do" and verb.pos_ == "VERB" and verb.i > neg.i:
            tag = {"did": "VBD", "does": "VBZ"}.get(aux.lower_, "VBP")
            form = inflect(verb.lemma_.lower(), tag) if tag != "VBP" else verb.lemma_.lower()
            start = aux.idx
            return [
                Edit(
                    start,
                    verb.idx + len(verb.text),
                    match_case(aux.text, form),
                    text[start : verb.idx + len(verb.text)],
                    "unnegate",
                )
            ]
        word = _NEG_AUX.get(aux.lower_, aux.text)
        return [
            Edit(
                aux.idx,
                neg.idx + len(neg.text),
                match_case(aux.text, word),
                text[aux.idx : neg.idx + len(neg.text)],
                "unnegate",
            )
        ]
    if low == "not":
        s, e = neg.idx, neg.idx + len(neg.text)
        if neg.i > 0 and doc[neg.i - 1].lower_ == "do" and neg.head.pos_ == "VERB" and neg.head.i == neg.i + 1:
            aux = doc[neg.i - 1]  # "I do not like it" -> "I like it"
            return [Edit(aux.idx, e + 1, "", text[aux.idx : e + 1], "unnegate")]
        if (
            neg.i > 0
            and doc[neg.i - 1].lower_ in ("did", "does")
            and neg.head.pos_ == "VERB"
            and neg.head.i == neg.i + 1
        ):
            aux, verb = doc[neg.i - 1], neg.head
            form = inflect(verb.lemma_.lower(), "VBD" if aux.lower_ == "did" else "VBZ")
            end = verb.idx + len(verb.text)
            return [Edit(aux.idx, end, match_case(aux.text, form), text[aux.idx : end], "unnegate")]
        if e < len(text) and text[e] == " ":
            e += 1
        elif s > 0 and text[s - 1] == " ":
            s -= 1
        if neg.text[:1].isupper() and e < len(text):  # "Not good." -> "Good."
            nxt = doc[neg.i + 1] if neg.i + 1 < len(doc) else None
            if nxt is not None:
                return [
                    Edit(
                        neg.idx,
                        nxt.idx + len(nxt.text),
                        nxt.text[:1].upper() + nxt.text[1:],
                        text[neg.idx : nxt.idx + len(nxt.text)],
                        "unnegate",
                    )
                ]
        return [Edit(s, e, "", text[s:e], "unnegate")]
    return None


def _prefixed(word: str, opposite: str | None) -> bool:
    """Whether one of the two is the other with a negative prefix ("funny" / "unfunny")."""
    if opposite is None:
        return False
    a, b = word.lower(), opposite.lower()
    return any(b == p + a or a == p + b for p in ("un", "in", "im", "dis", "non"))


def _starts_sentence(tok: Any) -> bool:
    """Whether a capitalised word starts a sentence (else it is a title or a name: "Amazing
    Grace"): the first word, or after end punctuation, a quote, a bracket or markup."""
    j = tok.i - 1
    while j >= 0 and tok.doc[j].is_space:
        j -= 1
    return j < 0 or tok.doc[j].text[-1:] in '.!?:;"()-*' or tok.doc[j].text.endswith(("\n", ">"))


def _opposite(tok: Any, variant: int) -> str | None:
    low = tok.lower_
    multi = [n for p, n in lx.POLARITY_PAIRS if p == low and " " in n]
    multi += [p for p, n in lx.POLARITY_PAIRS if n == low and " " in p]
    opp = tuple(multi) + pol.opposites(tok.text, tok.tag_)
    opp = tuple(o for o in opp if o.lower() not in lx.POLARITY_SKIP or o.lower() in ("well",))
    if not opp:
        return None
    if tok.pos_ == "ADV":  # "well" -> "badly", never WordNet's "ill"
        variant = 0
    return match_case(tok.text, opp[min(variant, len(opp) - 1)])


def read_review(text: str, *, variant: int = 0, drop: bool = False) -> Reading:
    """The verdicts of ``text`` and the edits that flip all of them (see the module doc).
    ``drop``: a sentence holding a verdict with no safe flip is left out of the flip (listed in
    ``Reading.dropped``) instead of blocking it."""
    doc = syntax.parse(_masked(text))
    if doc is None:
        return Reading((), "no parser", ())
    sents = sentence_spans(text)
    dropped: set[int] = set()

    def sentence_at(pos: int) -> int | None:
        for n, (a, b) in enumerate(sents):
            if a <= pos < b:
                return n
        return None

    def unsafe(pos: int) -> bool:
        """Leave out the sentence at ``pos`` when dropping; False: the flip is blocked."""
        n = sentence_at(pos) if drop else None
        if n is None:
            return False
        dropped.add(n)
        return True

    markup = pol.markup_spans(text)
    quoted = _quoted_spans(text)
    frozen = [(m.start(), m.end()) for m in _FROZEN_RE.finditer(text)]
    edits: list[Edit] = []
    taken: list[tuple[int, int]] = []
    left: list[tuple[str, str]] = []

    def free(a: int, b: int) -> bool:
        return not any(a < e and s < b for s, e in taken)

    for m in RATING_RE.finditer(text):
        if _inside(quoted, m.start(), m.end()):
            continue
        new = rating_flip(m)
        if new is None:
            if unsafe(m.start()):
                continue
            return Reading((), f"rating {m.group(0)!r} off its scale", ())
        edits.append(Edit(m.start(), m.end(), new, m.group(0), "rating"))
        taken.append((m.start(), m.end()))
    for rx, rep in _PHRASE_RES:
        for m in rx.finditer(text):
            if not free(m.start(), m.end()) or _inside(quoted, m.start(), m.end()):
                continue
            new = match_case(m.group(0), m.expand(rep))
            edits.append(Edit(m.start(), m.end(), new, m.group(0), "phrase"))
            taken.append((m.start(), m.end()))
    for m in UNFLIPPABLE.finditer(text):
        if free(m.start(), m.end()) and not _inside(quoted, m.start(), m.end()):
            if unsafe(m.start()):
                continue
            return Reading((), f"no safe flip for {m.group(0)!r}", ())
    used_neg: set[int] = set()
    flipped: set[int] = set()
    found: list[tuple[Any, Any]] = []
    for tok in doc:
        a, b = tok.idx, tok.idx + len(tok.text)
        if not tok.is_alpha or not free(a, b) or pol.touches(markup, a, b):
            continue
        low = tok.lower_
        if (low in lx.POLARITY_SKIP and low != "well") or low in lx.AUXILIARIES:
            continue
        if not pol.polarity(low) or low in NOT_VERDICTS:
            continue
        if tok.pos_ not in ("ADJ", "ADV", "VERB", "NOUN"):
            continue
        if _inside(quoted, a, b):
            left.append((tok.text, "title"))
            continue
        if any(s <= a and b <= e for s, e in frozen):
            left.append((tok.text, "idiom"))
            continue
        if tok.text[:1].isupper() and not _starts_sentence(tok):
            left.append((tok.text, "title"))
            continue
        if low == "well" and not (tok.head.lemma_.lower() in CRAFT_VERBS and tok.head.tag_ == "VBN"):
            continue
        kind = classify(tok)
        if kind != "verdict":
            left.append((tok.text, kind))
            continue
        found.append((tok, _negation_of(tok)))
    # a sentence whose verdicts point both ways once negation is counted ("it's not bad, it's
    # actually good", "not good, and not horrible") keeps its negations and flips the words
    # ("not good, it's actually bad"); elsewhere a negated verdict loses its negation
    signs: dict[int, set[bool]] = {}
    for tok, neg in found:
        signs.setdefault(tok.sent.start, set()).add((pol.polarity(tok.lower_) > 0) != (neg is not None))
    for tok, neg in found:
        a, b = tok.idx, tok.idx + len(tok.text)
        if not free(a, b):
            continue
        if neg is not None and len(signs[tok.sent.start]) > 1 and not _prefixed(tok.lower_, _opposite(tok, variant)):
            neg = None  # keep the negation, flip the word ("not bad" -> "not good"; never "not unfunny")
        if neg is not None:
            if neg.i in used_neg:
                continue
            un = _unnegate(neg, text)
            if un is None or not all(free(e.start, e.end) for e in un):
                if tok.tag_ in ("JJR", "JJS"):  # "never seen a worse film" -> "a better film"
                    neg = None
                elif unsafe(a):
                    continue
                else:
                    return Reading((), f"cannot remove {neg.text!r} before {tok.text!r}", tuple(left))
            else:
                used_neg.add(neg.i)
                edits += un
                taken += [(e.start, e.end) for e in un]
                continue
        new = _opposite(tok, variant)
        if new is None:
            if unsafe(a):
                continue
            return Reading((), f"no opposite for {tok.text!r}", tuple(left))
        edits.append(Edit(a, b, new, tok.text, "verdict"))
        taken.append((a, b))
        flipped.add(tok.i)
        prev = doc[tok.i - 1] if tok.i > 0 else None
        if prev is not None and prev.lower_ in ("a", "an") and free(prev.idx, prev.idx + len(prev.text)):
            want = article_for(new)
            if want != prev.lower_:
                edits.append(
                    Edit(prev.idx, prev.idx + len(prev.text), match_case(prev.text, want), prev.text, "verdict")
                )
                taken.append((prev.idx, prev.idx + len(prev.text)))
    out = []
    for e in edits:
        n = sentence_at(e.start)
        if n is None or n not in dropped:
            out.append(e)
    if not out:
        return Reading((), "no verdict", tuple(left), tuple(sents), tuple(sents[n] for n in sorted(dropped)))
    return Reading(
        tuple(sorted(out, key=lambda e: e.start)),
        "",
        tuple(left),
        tuple(sents),
        tuple(sents[n] for n in sorted(dropped)),
    )


__all__ = ["FROZEN", "WORK_NOUNS", "Edit", "Reading", "classify", "rating_flip", "read_review"]
