"""A review flip written sentence by sentence by the CAD-trained rewriter (issue 31).

:mod:`coherent` swaps verdict words; on reviews of several sentences readers found what it left
self-contradictory. Here every sentence the opinion model (or the lexicon) puts on the
original's side is handed to a rewriter (:class:`generation.ml.rewriter.Rewriter`, SmolLM2 with an
adapter learnt from the 8,803 sentences CAD's annotators rewrote), which writes the sentence as a
person revising the review did. A rewrite is kept only when it is an edit of its sentence (most
words shared, markup kept) and now reads on the other side; a sentence whose rewrite fails is left
out, as :func:`coherent.coherent_flip` leaves out a verdict it cannot flip, under the same limits
(words left out, sentences kept, the whole result on the other side). No Django; the rewriter is
passed in, so that this module needs no torch.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence

from generation.ml import opinion
from generation.ml.rules import coherent
from generation.ml.rules.tokens import apply_edits, edit_ops, sentence_spans

# the rewriter: sentences of a review labelled ``source`` -> those sentences written to ``target``
Rewrite = Callable[[Sequence[str], str, str], list[str]]

REWRITE_LEAN = 0.55  # a sentence leaning this far to the original's side is rewritten
MIN_SHARED = 0.5  # a rewrite shares at least this share of words with its sentence (difflib ratio)
# A review written whole is an edit of the review as CAD's revisions are: on CAD sentiment dev,
# 95 % of the annotators' revisions share >= 0.70 of their words with the original (difflib
# ratio) and 90 % are 0.92-1.05 times its length.
MIN_REVIEW_SHARED = 0.7
REVIEW_LENGTH = (0.8, 1.2)


def _edit_ratio(old: str, new: str) -> float:
    return difflib.SequenceMatcher(a=old.lower().split(), b=new.lower().split(), autojunk=False).ratio()


def acceptable(old: str, new: str, model: opinion.OpinionModel, positive: bool) -> bool:
    """Whether ``new`` is a rewrite of sentence ``old`` (of a review on the positive side when
    ``positive``) that now reads on the other side: not empty, not the same, an edit (at least
    ``MIN_SHARED`` of the words shared), the markup kept, leaning past the opinion model's
    ``coherent.STILL`` and holding no strong lexicon word of the original's side."""
    new = new.strip()
    if not new or new == old.strip() or _edit_ratio(old, new) < MIN_SHARED:
        return False
    if old.count("<") != new.count("<") or old.count('"') % 2 != new.count('"') % 2:
        return False
    if coherent._toward(model, new, positive) >= coherent.STILL:
        return False
    word = coherent.lexicon_side(new)
    return not (word and (word > 0) == positive)


def written_flip(text: str, label: str | None, rewrite: Rewrite) -> coherent.Flip:
    """The flip of review ``text`` (labelled ``label``; None: the opinion model's reading) with
    its sentences of the original's side rewritten by ``rewrite``, or a Flip with ``blocked``
    saying why there is none. ``Flip.edits`` replace sentences and leave sentences out."""
    model = opinion.load()
    if model is None:
        return coherent.Flip((), (), (), 0.0, "no opinion model")
    spans = sentence_spans(text)
    if not spans:
        return coherent.Flip((), (), (), 0.0, "no sentence")
    positive = coherent._positive(model, text, label)
    source, target = ("positive", "negative") if positive else ("negative", "positive")
    toward = [coherent._toward(model, text[a:b], positive) for a, b in spans]
    chosen = []
    for n, (a, b) in enumerate(spans):
        word = coherent.lexicon_side(text[a:b])
        if toward[n] >= REWRITE_LEAN or (word and (word > 0) == positive and toward[n] >= coherent.LEXICON_LEAN):
            chosen.append(n)
    if not chosen:
        return coherent.Flip((), (), (), 0.0, "no sentence on the original's side")
    written = rewrite([text[spans[n][0] : spans[n][1]] for n in chosen], source, target)
    replaced: dict[int, str] = {}
    gone: set[int] = set()
    for n, new in zip(chosen, written, strict=True):
        old = text[spans[n][0] : spans[n][1]]
        if acceptable(old, new, model, positive):
            replaced[n] = new.strip()
        else:
            gone.add(n)
    gone = coherent._with_dangling(text, spans, gone)
    kept = [n for n in range(len(spans)) if n not in gone]
    if not any(n in replaced for n in kept):
        return coherent.Flip((), (), (), 0.0, "no rewrite reads on the other side")
    lost, total = coherent._words_left_out(text, spans, gone)
    if lost / total > coherent.MAX_DROPPED:
        return coherent.Flip((), (), (), 0.0, f"{lost} of {total} words would be left out")
    if len(spans) > coherent.MIN_KEPT and len(kept) < coherent.MIN_KEPT:
        return coherent.Flip((), (), (), 0.0, f"only {len(kept)} of {len(spans)} sentences would stay")
    edits = [(*spans[n], replaced[n]) for n in kept if n in replaced]
    edits += [(*coherent._removal(spans, n, gone), "") for n in sorted(gone)]
    merged = coherent._merged(edits)
    if merged is None:
        return coherent.Flip((), (), (), 0.0, "overlapping edits")
    lean = coherent._toward(model, apply_edits(text, merged), not positive)
    if lean < coherent.WHOLE:
        return coherent.Flip((), (), (), lean, "the rewritten review still reads on the original's side")
    return coherent.Flip(tuple(merged), (), tuple(spans[n] for n in sorted(gone)), lean, "")


_WORD_SPAN = re.compile(r"\S+")


def text_edits(text: str, new: str) -> list[tuple[int, int, str]]:
    """The word-level edits (character spans of ``text``) that turn ``text`` into ``new``, the
    whitespace of ``text`` kept outside them: ``apply_edits(text, edits).split() ==
    new.split()``. A left-out run takes the space after it (before it, at the end)."""
    old = [(m.start(), m.end(), m.group()) for m in _WORD_SPAN.finditer(text)]
    words_new = new.split()
    edits: list[tuple[int, int, str]] = []
    for _, i1, i2, j1, j2 in edit_ops([w for _, _, w in old], words_new):
        rep = " ".join(words_new[j1:j2])
        if i1 < i2:
            start, end = old[i1][0], old[i2 - 1][1]
            if not rep and i2 < len(old):
                end = old[i2][0]
            elif not rep and i1 > 0:
                start = old[i1 - 1][1]
        elif i1 < len(old):
            start = end = old[i1][0]
            rep += " "
        else:
            start = end = old[-1][1] if old else len(text)
            rep = (" " if old else "") + rep
        edits.append((start, end, rep))
    return edits


def _sentences(text: str) -> list[str]:
    return [text[a:b].strip() for a, b in sentence_spans(text)]


def review_problem(text: str, new: str, model: opinion.OpinionModel, positive: bool) -> str:
    """Why ``new``, a review written whole from ``text`` (a review on the positive side when
    ``positive``), is no counterfactual of it; ``""`` when it is one: an edit the size of CAD's
    revisions (``MIN_REVIEW_SHARED`` of the words shared, ``REVIEW_LENGTH`` times as long), the
    markup kept, no sentence written twice that the original has once, the whole leaning past
    ``coherent.WHOLE`` to the other side and no sentence left that the opinion model and the
    lexicon both still put on the original's side (the half-flip readers reject)."""
    return _review_check(text, new, model, positive)[0]


def _review_check(text: str, new: str, model: opinion.OpinionModel, positive: bool) -> tuple[str, float]:
    """:func:`review_problem` and the written review's lean to the other side (0.0 when it was
    not read that far)."""
    new = new.strip()
    if not new or new.split() == text.split():
        return "nothing rewritten", 0.0
    size = len(new.split()) / max(1, len(text.split()))
    if not REVIEW_LENGTH[0] <= size <= REVIEW_LENGTH[1]:
        return f"written {size:.2f} times as long", 0.0
    if _edit_ratio(text, new) < MIN_REVIEW_SHARED:
        return "not an edit of the review", 0.0
    if text.count("<") != new.count("<") or text.count('"') % 2 != new.count('"') % 2:
        return "markup not kept", 0.0
    old_sents, new_sents = _sentences(text), _sentences(new)
    if any(new_sents.count(s) > max(1, old_sents.count(s)) for s in new_sents):
        return "a sentence written twice", 0.0
    lean = coherent._toward(model, new, not positive)
    if lean < coherent.WHOLE:
        return "the written review still reads on the original's side", lean
    for sent in new_sents:
        word = coherent.lexicon_side(sent)
        if word and (word > 0) == positive and coherent._toward(model, sent, positive) >= coherent.RESIDUE:
            return "a sentence still argues the original's side", lean
    return "", lean


def written_review_flip(text: str, label: str | None, write: Rewrite) -> coherent.Flip:
    """The flip of review ``text`` (labelled ``label``; None: the opinion model's reading)
    written whole by ``write`` (the whole-review writer, :mod:`generation.ml.rewriter` with
    ``unit="review"``), kept only when :func:`review_problem` finds none; ``Flip.edits`` are
    word-level edits of ``text``. (A second writing of a review the writer left leaning to the
    original's side, from what it wrote, pooled 1 more of 100 reviews at twice the time:
    round 14.)"""
    model = opinion.load()
    if model is None:
        return coherent.Flip((), (), (), 0.0, "no opinion model")
    if not text.split():
        return coherent.Flip((), (), (), 0.0, "no text")
    positive = coherent._positive(model, text, label)
    source, target = ("positive", "negative") if positive else ("negative", "positive")
    new = write([text], source, target)[0].strip()
    problem, lean = _review_check(text, new, model, positive)
    if problem:
        return coherent.Flip((), (), (), 0.0, problem)
    return coherent.Flip(tuple(text_edits(text, new)), (), (), lean, "")


__all__ = [
    "MIN_REVIEW_SHARED",
    "REWRITE_LEAN",
    "Rewrite",
    "acceptable",
    "review_problem",
    "text_edits",
    "written_flip",
    "written_review_flip",
]
