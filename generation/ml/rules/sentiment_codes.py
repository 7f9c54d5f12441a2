"""The control codes for sentiment (issue 27): edits go where the label lives.

On a review the generic codes edited random words ("some randomly placed columns ride off as
a set", "a pretty good comedy team in silence.") and 3.1 % of the pooled candidates flipped
the label. These work on the sentiment-bearing words of :mod:`generation.ml.rules.polarity`
(TextBlob's polarity lexicon and the curated review pairs) instead:

* ``lexical`` — every sentiment-bearing word of the sentence with an opposite becomes that
  opposite ("a great cast" -> "a terrible cast", "I loved it" -> "I hated it"); a word under a
  negation loses the negation instead ("not funny" -> "funny"), so the sentence flips as a
  whole; :func:`review_flip` does the same for every sentence of the review at once.
* ``negation`` — negation toggled where it scopes over a sentiment-bearing word: removed
  ("wasn't good" -> "was good") or added at the copula / verb of that word's clause ("is
  good" -> "is not good", "I enjoyed" -> "I did not enjoy").
* ``delete`` — a sentiment-bearing modifier removed ("a brilliant film" -> "a film"), or the
  intensifier before one ("very good" -> "good").
* ``insert`` — an intensifier before a sentiment-bearing adjective ("is good" -> "is really
  good").

No edit touches markup (the generator drops any proposal that does).
"""

from __future__ import annotations

import difflib
import random
from collections.abc import Sequence

from generation.ml import lexicons as lx
from generation.ml.rules import coherent, rewritten
from generation.ml.rules import polarity as pol
from generation.ml.rules import wordnet as wnx
from generation.ml.rules.lexical_codes import Edit, Proposal, Sentence, _rep
from generation.ml.rules.phrases import delete_span, fix_article
from generation.ml.rules.tokens import Token, apply_edits, introduced_removed, match_case, sentence_spans

POLAR_TAGS = ("JJ", "JJR", "JJS", "RB", "RBR", "RBS", "VB", "VBD", "VBG", "VBN", "VBP", "VBZ", "NN", "NNS")
INTENSIFIERS = ("very", "really", "truly", "quite")
# what the label-keeping insert puts before a gradable evaluative adjective: twelve, so that no
# one of them becomes a word of the pool's own (with four, "truly" was 29 % of the words the
# sentiment pool of 145 CAD dev reviews introduced once the review flips were no longer pooled)
INSERTED_INTENSIFIERS = (
    *INTENSIFIERS,
    "genuinely",
    "remarkably",
    "incredibly",
    "extremely",
    "particularly",
    "rather",
    "pretty",
    "surprisingly",
)
_FIXED_AUX = {"ca": "can", "wo": "will", "sha": "shall", "ai": "is"}


def _quoted(toks: list[Token]) -> list[bool]:
    """Which tokens sit inside double quotes (a title: "Amazing Grace")."""
    out, inside = [], False
    for t in toks:
        if t.text in ('"', "“", "”"):
            inside = not inside
        out.append(inside)
    return out


def polar(toks: list[Token]) -> list[int]:
    """Indices of the sentiment-bearing words: a verb only when it is no auxiliary; none in a
    title (quoted, or capitalised inside the sentence: "Amazing Grace"), none of
    ``lexicons.POLARITY_SKIP`` ("as well", "a lot of fun", "at least", "recommend that"), none
    before "old" / "as" ("good old boy", "Dumb is as dumb does") or after "at" ("at best")."""
    quoted = _quoted(toks)
    out = []
    for i, t in enumerate(toks):
        if t.pos not in POLAR_TAGS or not t.text.isalpha() or t.lower in lx.AUXILIARIES or t.lower in lx.POLARITY_SKIP:
            continue
        if quoted[i] or (i > 0 and t.text[:1].isupper() and toks[i - 1].text not in (".", "!", "?", '"')):
            continue
        if i + 1 < len(toks) and toks[i + 1].lower in ("old", "as"):
            continue
        if i > 0 and toks[i - 1].lower in ("at", "as"):
            continue
        if pol.polarity(t.lower):
            out.append(i)
    return out


def _unnegate(s: Sentence, j: int) -> tuple[tuple[int, int, str], ...] | None:
    """Edits that remove the negation at token ``j``."""
    toks = s.toks
    t = toks[j]
    if t.lower == "n't" and j > 0:
        prev = toks[j - 1]
        aux = _FIXED_AUX.get(prev.lower, prev.text)
        return ((prev.start, t.end, match_case(prev.text, aux)),)
    if t.lower == "not":
        return (delete_span(s.text, toks, j, j + 1),)
    if t.lower == "never":
        return (_rep(t, "always"),)
    return None


def _flip_edits(s: Sentence) -> tuple[list[tuple[int, int, str]], list[str], list[str]]:
    """Edits that flip every sentiment-bearing word of the sentence (opposites; negations
    removed), with the words introduced and removed."""
    toks = s.toks
    edits: list[tuple[int, int, str]] = []
    intro: list[str] = []
    removed: list[str] = []
    used_neg: set[int] = set()
    taken: set[int] = set()
    for i in polar(toks):
        j = pol.negated(toks, i)
        if j is not None:
            if j in used_neg:
                continue
            un = _unnegate(s, j)
            if un is not None:
                edits += list(un)
                used_neg.add(j)
                taken.add(j)
                removed.append(toks[j].lower)
            continue
        opp = pol.opposites(toks[i].text, toks[i].pos)
        if not opp or i in taken:
            continue
        word = opp[0]
        edits.append(_rep(toks[i], word))
        if i > 0 and (fix := fix_article(toks[i - 1], word)) and i - 1 not in taken:
            edits.append((toks[i - 1].start, toks[i - 1].end, fix))
            taken.add(i - 1)
        taken.add(i)
        intro.append(word.lower())
        removed.append(toks[i].lower)
    return edits, intro, removed


def lexical(s: Sentence, rng: random.Random) -> list[Proposal]:
    edits, intro, removed = _flip_edits(s)
    if not edits:
        return []
    detail = "polarity: " + ", ".join(f"{a} -> {b}" for a, b in zip(removed, intro, strict=False))
    return [Proposal("lexical", tuple(edits), tuple(intro), tuple(removed), detail)]


def review_flip(text: str, *, variant: int = 0, label: str | None = None) -> Proposal | None:
    """One proposal flipping every verdict of the review at once and leaving out what would
    still argue the original's side (:func:`coherent.coherent_flip`), or None when there is no
    coherent flip. ``variant`` picks the next opposite of each word where it has several
    ("great" -> "terrible" / "awful"); ``label`` is the review's (None: the opinion model's
    reading). No flipped word touches markup; a sentence left out may take a paragraph break
    with it."""
    flip = coherent.coherent_flip(text, label, variant=variant)
    if flip.blocked or not flip.edits:
        return None
    markup = pol.markup_spans(text)
    if any(pol.touches(markup, e.start, e.end) for e in flip.verdicts):
        return None
    intro = tuple(w.lower() for e in flip.verdicts for w in e.new.split())
    removed = tuple(w.lower() for e in flip.verdicts for w in e.old.split())
    detail = "review flip: " + ", ".join(f"{e.old.strip()} -> {e.new or '-'}" for e in flip.verdicts)
    if flip.dropped:
        detail += f"; {len(flip.dropped)} sentence(s) left out"
    return Proposal("lexical", flip.edits, intro, removed, detail[:500])


def side_flip(text: str, label: str | None = None) -> Proposal | None:
    """A flip that swaps no word: the review's sentences on the original's side left out, its
    own sentences on the other side kept (:func:`coherent.side_flip`); None when there is none.
    Its code is ``delete`` (what the edit is); its aim is the other label."""
    flip = coherent.side_flip(text, label)
    if flip.blocked or not flip.edits:
        return None
    removed = tuple(w.lower() for a, b in flip.dropped for w in text[a:b].split())
    detail = f"review flip by leaving out {len(flip.dropped)} sentence(s) of the original's side"
    return Proposal("delete", flip.edits, (), removed, detail)


def written_flip(text: str, rewrite: rewritten.Rewrite, label: str | None = None) -> Proposal | None:
    """The review flipped by the CAD-trained rewriter, sentence by sentence
    (:func:`rewritten.written_flip`); None when there is none. Its code is ``resemantic`` (a
    sentence rewritten, not a word swapped); its aim is the other label."""
    flip = rewritten.written_flip(text, label, rewrite)
    if flip.blocked or not flip.edits:
        return None
    rewrites = sum(1 for _, _, new in flip.edits if new)
    detail = f"review flip written: {rewrites} sentence(s) rewritten"
    if flip.dropped:
        detail += f", {len(flip.dropped)} left out"
    return _written("resemantic", text, flip.edits, detail)


def _written(code: str, text: str, edits: Sequence[Edit], detail: str) -> Proposal:
    """A proposal of ``edits`` to ``text`` with the words they introduce and remove (lower-cased,
    as every code's are)."""
    intro, removed = introduced_removed(text, apply_edits(text, list(edits)))
    return Proposal(code, tuple(edits), tuple(w.lower() for w in intro), tuple(w.lower() for w in removed), detail)


def written_review_flip(text: str, write: rewritten.Rewrite, label: str | None = None) -> Proposal | None:
    """The review written whole to the other side by the CAD-trained review writer
    (:func:`rewritten.written_review_flip`); None when there is none. Code ``resemantic``, aimed
    at the other label."""
    flip = rewritten.written_review_flip(text, label, write)
    if flip.blocked or not flip.edits:
        return None
    detail = f"review written whole to the other side: {len(flip.edits)} edit(s)"
    return _written("resemantic", text, flip.edits, detail)


def changed_sentences(text: str, new_text: str) -> tuple[str, str] | None:
    """The sentences a review-wide edit changed, joined, before and after: what the
    similarity band and the perplexity filter compare (the whole review would hide a flip of a
    few words in a long text): each changed sentence beside the old one most like it; sentences
    left out are no part of it. None when nothing changed or only sentences were left out."""
    a = [text[s:e] for s, e in sentence_spans(text)]
    b = [new_text[s:e] for s, e in sentence_spans(new_text)]
    if len(a) < 2:
        return None
    before, after = [], []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal" or j1 == j2:
            continue  # sentences left out are no part of the comparison
        for y in b[j1:j2]:  # each changed sentence against the old one most like it
            ratios = [(difflib.SequenceMatcher(a=x, b=y).ratio(), x) for x in a[i1:i2]]
            before.append(max(ratios)[1] if ratios else "")
            after.append(y)
    if not before or not after:
        return None
    return " ".join(before), " ".join(after)


def negation(s: Sentence, rng: random.Random) -> list[Proposal]:
    toks = s.toks
    out: list[Proposal] = []
    idx = polar(toks)
    for i in idx:
        j = pol.negated(toks, i)
        if j is None:
            continue
        un = _unnegate(s, j)
        if un is not None:
            out.append(Proposal("negation", un, (), (toks[j].lower,), f"remove {toks[j].lower} before {toks[i].lower}"))
            return out
    for i in idx:
        # the copula or auxiliary of the word's clause, right before it (adverbs between)
        k = i - 1
        while k >= 0 and toks[k].pos.startswith("RB") and toks[k].lower not in ("not", "n't", "never"):
            k -= 1
        if k >= 0 and toks[k].lower in lx.AUXILIARIES and toks[k].pos.startswith(("VB", "MD")):
            out.append(
                Proposal("negation", ((toks[k].end, toks[k].end, " not"),), ("not",), (), f"{toks[k].lower} not")
            )
            return out
        t = toks[i]
        if t.pos in ("VBD", "VBZ", "VBP") and i > 0 and toks[i - 1].pos in ("PRP", "NN", "NNS", "NNP", "DT"):
            aux = lx.DO_SUPPORT[t.pos]
            base = wnx.lemma(t.lower, "v")
            form = f"{aux} not {base}"
            out.append(Proposal("negation", ((t.start, t.end, form),), (aux, "not"), (), f"{t.text} -> {form}"))
            return out
    return out


def delete(s: Sentence, rng: random.Random) -> list[Proposal]:
    toks, out = s.toks, []
    for i in polar(toks):
        t = toks[i]
        if i > 0 and toks[i - 1].lower in (*INTENSIFIERS, "so", "extremely", "incredibly", "pretty"):
            out.append(
                Proposal(
                    "delete",
                    (delete_span(s.text, toks, i - 1, i),),
                    (),
                    (toks[i - 1].lower,),
                    f"-int {toks[i - 1].lower}",
                )
            )
        # an adjective of an indefinite noun phrase only: not a superlative or comparative ("the
        # worst movie I have ever"), not one of a list ("a refreshing, movie"), not after an
        # intensifier ("two very men")
        if (
            t.pos == "JJ"
            and i + 1 < len(toks)
            and toks[i + 1].pos in ("NN", "NNS")
            and i > 0
            and toks[i - 1].lower in ("a", "an", "some", "many", "this", "these")
            and (i + 2 >= len(toks) or toks[i + 2].text != ",")
        ):
            edits = [delete_span(s.text, toks, i, i + 1)]
            if fix := fix_article(toks[i - 1], toks[i + 1].text):
                edits.append((toks[i - 1].start, toks[i - 1].end, fix))
            out.append(Proposal("delete", tuple(edits), (), (t.lower,), f"-adj {t.lower}"))
    return out


# an intensifier after these read wrong to blind readers (CAD sentiment dev, rounds 1-9): a
# definite noun phrase is often a name or a fixed phrase ("the late Dudley Moore", "the sexual
# revolution", "the wrong whale": 16 of 21 valid), "its own title", "no unnecessary shots", and
# "such a rather bad movie"
_NO_INTENSIFIER_AFTER = frozenset({"the", "its", "no"})
# "their [[truly]] own", "his [[quite]] own": the lexicon gives "own" a polarity, but it takes no
# intensifier (4 of the 6 inserts the LM dropped on dev reviews 101-245, round 18; readers: invalid)
_TAKES_NO_INTENSIFIER = frozenset({"own"})


def insert(s: Sentence, rng: random.Random) -> list[Proposal]:
    toks, out = s.toks, []
    for i in polar(toks):
        t = toks[i]
        if t.pos != "JJ" or i == 0 or toks[i - 1].pos.startswith("RB") or toks[i - 1].lower in INTENSIFIERS:
            continue
        if abs(pol.polarity(t.lower)) >= 0.8:
            continue  # extreme already: "quite great", "very awful"
        if toks[i - 1].lower in _NO_INTENSIFIER_AFTER or (i > 1 and toks[i - 2].lower in ("such", "so", "what")):
            continue
        if t.lower in _TAKES_NO_INTENSIFIER:
            continue
        if toks[i - 1].lower in lx.COPULAS or toks[i - 1].pos in ("DT", "PRP$"):
            adv = rng.choice(INSERTED_INTENSIFIERS)
            edits = [(t.start, t.start, adv + " ")]
            if fix := fix_article(toks[i - 1], adv):
                edits.append((toks[i - 1].start, toks[i - 1].end, fix))
            out.append(Proposal("insert", tuple(edits), (adv,), (), f"+int {adv}"))
    return out


PERTURBATIONS = {"lexical": lexical, "negation": negation, "delete": delete, "insert": insert}

__all__ = [
    "PERTURBATIONS",
    "changed_sentences",
    "delete",
    "insert",
    "lexical",
    "negation",
    "polar",
    "review_flip",
    "side_flip",
    "written_flip",
    "written_review_flip",
]
