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
from collections.abc import Callable, Sequence

from generation.ml import opinion
from generation.ml.rules import coherent
from generation.ml.rules.tokens import apply_edits, sentence_spans

# the rewriter: sentences of a review labelled ``source`` -> those sentences written to ``target``
Rewrite = Callable[[Sequence[str], str, str], list[str]]

REWRITE_LEAN = 0.55  # a sentence leaning this far to the original's side is rewritten
MIN_SHARED = 0.5  # a rewrite shares at least this share of words with its sentence (difflib ratio)


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


__all__ = ["REWRITE_LEAN", "Rewrite", "acceptable", "written_flip"]
