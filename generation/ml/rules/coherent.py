"""A coherent review-wide flip: every verdict flipped, and no sentence left arguing the other way
(issue 31.2).

:func:`verdicts.read_review` flips the verdicts a lexicon and a parse can find. Read whole, the
flipped review was still mostly rejected by blind readers (0.09-0.15 valid on CAD sentiment dev,
round 2): a long review argues its side in sentences no verdict rule sees ("I'm surprised the
Croc Hunter did not beg the crocodile to eat him", "The acting is beyond terrible" next to a
flipped "the plot is good"), and a swapped word that does not take in its sentence ("god
excellent", "a fine use of two hours") leaves that sentence arguing the old way too. So:

1. read the verdicts with ``drop``: a sentence whose verdict has no safe flip is left out
   rather than blocking the review;
2. score every sentence of the flipped review with the opinion model (:mod:`generation.ml.opinion`,
   AutoCAD's idea of a classifier that says where a label lives): a sentence still sure of the
   original's side (``RESIDUE`` for an untouched one, ``STILL`` for one the flip edited), or
   still holding a lexicon verdict of that side (an edited one always, an untouched one when the
   model leans that way at all), is left out too;
3. the result is a flip only if it keeps most of the review (at most ``MAX_DROPPED`` of its
   words left out, at least ``MIN_KEPT`` sentences of a longer review), keeps at least one
   flipped verdict, and reads, whole, on the other side (``WHOLE``).

:func:`side_flip` is the flip that swaps no word: the review's sentences of the original's side
left out, its own sentences of the other side kept.

Leaving a sentence out is an edit like any other: the candidate's diff shows it, the pairwise
classifier and the reader see it. Measured blind on 145 CAD sentiment dev reviews
(docs/generation.md, "The coherent review flip"): the review flips read as flipped 0.59 of the
time but as valid only 0.08; the flips by leaving out 0.67 valid, 0.16 flipped. So the
generator pools :func:`coherent_flip` on texts of one sentence unless a run asks for more
(``RulesConfig.review_flip_sentences``; rounds 7-11, "The default sentiment pool"). No Django.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from generation.ml import lexicons as lx
from generation.ml import opinion
from generation.ml.rules import polarity as pol
from generation.ml.rules import verdicts
from generation.ml.rules.tokens import apply_edits, sentence_spans

# the opinion model's lean on a sentence with no opinion (median of CAD sentiment dev
# sentences: 0.64 in positive reviews, 0.38 in negative ones)
CENTER = 0.5
RESIDUE = 0.6  # an untouched sentence this sure of the original's side is left out
STILL = 0.45  # a flipped sentence still this sure of the original's side is left out
WHOLE = 0.7  # the flipped review must lean this far to the other side
MAX_DROPPED = 0.6  # share of the review's words that may be left out
MIN_KEPT = 2
# a sentence that still holds a lexicon word of the original's side this strong ("pitiful",
# "juvenile and compelling") is left out: an edited one always, an untouched one when the model
# leans that way at all (LEXICON_LEAN)
LEXICON_STRENGTH = 0.4
LEXICON_LEAN = 0.4
# the flip by leaving out (:func:`side_flip`): a sentence leaning this far to the original's side
# goes; one that stays must lean this far to the other side
SIDE_DROP = 0.5
SIDE_CLEAR = 0.75


@dataclass(frozen=True)
class Flip:
    """A review-wide flip: the edits (verdicts flipped, sentences left out), what was left out,
    and the opinion model's lean of the result toward the target label; or why there is none."""

    edits: tuple[tuple[int, int, str], ...]
    verdicts: tuple[verdicts.Edit, ...]
    dropped: tuple[tuple[int, int], ...]
    toward_target: float
    blocked: str


def _toward(model: opinion.OpinionModel, text: str, positive: bool) -> float:
    """The model's probability, centred, that ``text`` is on the positive (or negative) side."""
    p = min(max(model.lean(text), 1e-6), 1 - 1e-6)
    z = math.log(p / (1 - p)) - math.log(CENTER / (1 - CENTER))
    q = 1 / (1 + math.exp(-z))
    return q if positive else 1 - q


_WORD = re.compile(r"[A-Za-z]+(?:'[a-z]+)?")
# the reviewer's stance verbs, which the adjective lexicon lacks
STANCE = {
    f: v
    for lemma, v in (
        ("love", 0.6),
        ("enjoy", 0.6),
        ("admire", 0.5),
        ("adore", 0.7),
        ("hate", -0.6),
        ("dislike", -0.5),
        ("despise", -0.7),
        ("loathe", -0.7),
    )
    for f in (lemma, lemma + "s", lemma + "d", lemma + "ed", lemma.rstrip("e") + "ed")
}
_NEG = frozenset({"not", "never", "no", "hardly", "barely", "nothing"})


def lexicon_side(sentence: str) -> float:
    """The strongest lexicon verdict of a sentence, signed (negation within three words before
    turns it), skipping quoted text, capitalised words inside the sentence (titles, names) and
    the frozen idioms of :mod:`verdicts`; 0 when it holds none."""
    skip = [(m.start(), m.end()) for m in verdicts._FROZEN_RE.finditer(sentence)]
    skip += verdicts._quoted_spans(sentence)
    best = 0.0
    words = list(_WORD.finditer(sentence))
    for k, m in enumerate(words):
        w = m.group(0)
        if any(a <= m.start() < b for a, b in skip) or (k > 0 and w[:1].isupper()):
            continue
        if w.lower() in lx.POLARITY_SKIP or w.lower() in verdicts.NOT_VERDICTS:
            continue
        p = STANCE.get(w.lower()) or pol.polarity(w)
        if abs(p) < LEXICON_STRENGTH:
            continue
        before = [x.group(0).lower() for x in words[max(0, k - 3) : k]]
        if any(b in _NEG or b.endswith("n't") for b in before):
            p = -p
        if abs(p) > abs(best):
            best = p
    return best


def _apply(text: str, a: int, b: int, edits: list[verdicts.Edit]) -> str:
    """Sentence ``text[a:b]`` with the verdict edits inside it applied."""
    return apply_edits(text[a:b], [(e.start - a, e.end - a, e.new) for e in edits])


def _positive(model: opinion.OpinionModel, text: str, label: str | None) -> bool:
    """Whether the review's side is positive: its label, else the opinion model's reading."""
    side = (label or "").lower()
    return side == "positive" if side in ("positive", "negative") else model.lean(text) >= CENTER


def _words_left_out(text: str, spans: list[tuple[int, int]], gone: set[int]) -> tuple[int, int]:
    """(words of the sentences left out, words of all sentences)."""
    total = sum(_words(text[a:b]) for a, b in spans) or 1
    return sum(_words(text[spans[n][0] : spans[n][1]]) for n in gone), total


def _merged(edits: list[tuple[int, int, str]]) -> list[tuple[int, int, str]] | None:
    """The edits in order, adjacent or overlapping removals joined into one; None when a
    replacement overlaps another edit."""
    merged: list[tuple[int, int, str]] = []
    for a, b, new in sorted(edits):
        if merged and not new and not merged[-1][2] and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]), "")
        elif merged and a < merged[-1][1]:
            return None
        else:
            merged.append((a, b, new))
    return merged


def _words(text: str) -> int:
    return len(text.split())


# a sentence that opens with one of these leans on the sentence before it ("That's mainly
# because ...", "The first is ...", "Then, he gets ...", "She ..."): when that one is left out,
# it goes too (round 8: the flips by leaving out that readers called invalid kept such
# sentences). Not "this" (most often the film itself) nor a contrast ("Still, the photography is
# stunning" after a sentence of the other side left out is the reviewer's own other side).
_LEANS_BACK = frozenset(
    "that that's these those which he she they his her their him them then also later what's".split()
)
_LEADING_WORD = re.compile(r"\W*([A-Za-z]+(?:'[a-z]+)?)")


def _leans_back(sentence: str) -> bool:
    """Whether a sentence opens by referring to the one before it (:data:`_LEANS_BACK`, or "The
    first / second / other ...")."""
    m = _LEADING_WORD.match(sentence)
    if not m:
        return False
    first = m.group(1).lower().replace("’", "'")
    if first in _LEANS_BACK:
        return True
    rest = sentence[m.end() :].split()
    return (
        first == "the" and bool(rest) and rest[0].lower() in ("first", "second", "third", "other", "latter", "former")
    )


def _with_dangling(text: str, spans: list[tuple[int, int]], gone: set[int]) -> set[int]:
    """``gone`` and every sentence that would open leaning on a sentence left out (in order, so a
    chain of them goes)."""
    out = set(gone)
    for n in range(1, len(spans)):
        if n not in out and n - 1 in out and _leans_back(text[spans[n][0] : spans[n][1]]):
            out.add(n)
    return out


def _removal(spans: list[tuple[int, int]], n: int, gone: set[int]) -> tuple[int, int]:
    """The characters to delete to leave out sentence ``n``: up to the next sentence (the
    whitespace or paragraph break after it too); when every sentence after it is left out too,
    from the end of the last one kept."""
    a, b = spans[n]
    if all(k in gone for k in range(n, len(spans))):
        kept = [k for k in range(n) if k not in gone]
        return (spans[kept[-1]][1] if kept else a), b
    return a, spans[n + 1][0]


def coherent_flip(text: str, label: str | None, *, variant: int = 0) -> Flip:
    """The flip of ``text`` (whose label is ``label``, ``positive``/``negative``; None: the
    opinion model's reading) to the other side, or a Flip with ``blocked`` saying why not."""
    model = opinion.load()
    reading = verdicts.read_review(text, variant=variant, drop=model is not None)
    if reading.blocked or not reading.edits:
        return Flip((), (), (), 0.0, reading.blocked or "no verdict")
    if model is None:  # no opinion model: the verdict flip alone, blocked on any unsafe verdict
        return Flip(tuple((e.start, e.end, e.new) for e in reading.edits), reading.edits, (), 0.0, "")
    spans = list(reading.sentences)
    positive = _positive(model, text, label)
    gone = {spans.index(s) for s in reading.dropped if s in spans}
    in_sent: dict[int, list[verdicts.Edit]] = {}
    stray = []
    for e in reading.edits:
        n = next((k for k, (a, b) in enumerate(spans) if a <= e.start < b), None)
        if n is None:
            stray.append(e)
        else:
            in_sent.setdefault(n, []).append(e)
    for n, (a, b) in enumerate(spans):
        if n in gone:
            continue
        here = in_sent.get(n, [])
        sentence = _apply(text, a, b, here)
        lean = _toward(model, sentence, positive)
        word = lexicon_side(sentence)
        residue = bool(word) and (word > 0) == positive
        # an edited sentence keeps no verdict word of the original's side at all ("is badly
        # directed, fast paced and exciting"); an untouched one goes when the model agrees
        if lean >= (STILL if here else RESIDUE) or (residue and (bool(here) or lean >= LEXICON_LEAN)):
            gone.add(n)
    gone = _with_dangling(text, spans, gone)
    kept = [n for n in range(len(spans)) if n not in gone]
    if not any(in_sent.get(n) for n in kept) and not stray:
        return Flip((), (), (), 0.0, "no verdict flip survives the sentences left out")
    lost, total = _words_left_out(text, spans, gone)
    if lost / total > MAX_DROPPED:
        return Flip((), (), (), 0.0, f"{lost} of {total} words would be left out")
    if len(spans) > MIN_KEPT and len(kept) < MIN_KEPT:
        return Flip((), (), (), 0.0, f"only {len(kept)} of {len(spans)} sentences would stay")
    flips = [e for n in kept for e in in_sent.get(n, [])] + stray
    removals = [_removal(spans, n, gone) for n in sorted(gone)]
    merged = _merged([(e.start, e.end, e.new) for e in flips] + [(a, b, "") for a, b in removals])
    if merged is None:
        return Flip((), (), (), 0.0, "overlapping edits")
    result = apply_edits(text, merged)
    toward = _toward(model, result, not positive)
    if toward < WHOLE:
        return Flip((), (), (), toward, f"the flipped review still reads {'positive' if positive else 'negative'}")
    return Flip(
        tuple(merged),
        tuple(sorted(flips, key=lambda e: e.start)),
        tuple(spans[n] for n in sorted(gone)),
        toward,
        "",
    )


def side_flip(text: str, label: str | None) -> Flip:
    """A flip with no word swapped: leave out the sentences on the original's side and keep
    those on the other side, so that the reviewer's own words carry the other label ("The women
    are beautiful and the photography stunning." stays, "The dialog is inane." goes). Pooled
    only when a sentence that stays is clearly on the other side (``SIDE_CLEAR``), at most
    ``MAX_DROPPED`` of the words go, ``MIN_KEPT`` sentences stay, and the result leans to the
    other side at ``WHOLE``; else a Flip with ``blocked`` saying why."""
    model = opinion.load()
    if model is None:
        return Flip((), (), (), 0.0, "no opinion model")
    spans = sentence_spans(text)
    if len(spans) <= MIN_KEPT:
        return Flip((), (), (), 0.0, "too few sentences")
    positive = _positive(model, text, label)
    toward = [_toward(model, text[a:b], positive) for a, b in spans]
    gone = set()
    for n, (a, b) in enumerate(spans):
        word = lexicon_side(text[a:b])
        if toward[n] >= SIDE_DROP or (toward[n] >= LEXICON_LEAN and word and (word > 0) == positive):
            gone.add(n)
    gone = _with_dangling(text, spans, gone)
    kept = [n for n in range(len(spans)) if n not in gone]
    if not gone:
        return Flip((), (), (), 0.0, "no sentence on the original's side")
    if not kept or max(1 - toward[n] for n in kept) < SIDE_CLEAR:
        return Flip((), (), (), 0.0, "no sentence clearly on the other side")
    lost, total = _words_left_out(text, spans, gone)
    if lost / total > MAX_DROPPED or len(kept) < MIN_KEPT:
        return Flip((), (), (), 0.0, f"{lost} of {total} words, {len(kept)} sentences would stay")
    merged = _merged([(*_removal(spans, n, gone), "") for n in sorted(gone)]) or []  # removals never clash
    result = apply_edits(text, merged)
    lean = _toward(model, result, not positive)
    if lean < WHOLE:
        return Flip((), (), (), lean, "what stays does not read on the other side")
    return Flip(tuple(merged), (), tuple(spans[n] for n in sorted(gone)), lean, "")


__all__ = ["Flip", "coherent_flip", "side_flip"]
