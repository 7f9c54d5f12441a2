"""``rules``: offline control-code perturbations (Polyjuice's eight codes, no model needed).

Per original, per text field, a few sentences are chosen (all of a short field; at most
``max_sentences`` of a long review), POS-tagged once, and every control code proposes edits.
The generator samples among the proposals with a per-original seeded RNG (deterministic for a
seed, independent of batch order), caps each code (negation lower than the rest, so negation
words never become the shortcut), and yields up to ``max_per_original`` distinct candidates,
round-robin over codes for diversity. Multi-field originals (NLI) get one field edited per
candidate, recorded in ``meta["field"]``. ``target_label`` is None, except for the sentiment
codes (issue 31): the review-wide flip (and, on a one-sentence review, negation) aims at the
other label, ``delete`` / ``insert`` at the original's.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from generation.ml import rewriter as rewriter_model
from generation.ml.base import GeneratedCandidate, GeneratorConfigError, Original, Skip, StopHook, stop_point
from generation.ml.rules import lexical_codes, rewritten, sentiment_codes, structural_codes
from generation.ml.rules.lexical_codes import Proposal, Sentence
from generation.ml.rules.phrases import article_error, fix_tags
from generation.ml.rules.polarity import markup_spans, touches
from generation.ml.rules.tokens import (
    apply_edits,
    loose_sentence_spans,
    sentence_spans,
    tag,
    words,
)

CODES: tuple[str, ...] = (
    "negation",
    "quantifier",
    "lexical",
    "resemantic",
    "insert",
    "delete",
    "restructure",
    "shuffle",
)
# what a run uses unless told otherwise: every code but ``shuffle``, whose noun-phrase swaps
# were valid English in 1 of 14 pooled candidates of the generated-gold dev set (``Desks sit
# at two men``); ``codes=["shuffle", ...]`` still asks for it
DEFAULT_CODES: tuple[str, ...] = tuple(c for c in CODES if c != "shuffle")
# per task, when a run names no codes: a review's label lives in a few sentiment-bearing words,
# so sentiment gets the four codes that edit them (``sentiment_codes``; issue 27: the generic
# quantifier / restructure / resemantic edits of a review were valid English 29-57 % of the
# time and flipped nothing)
TASK_CODES: dict[str, tuple[str, ...]] = {"sentiment": ("lexical", "negation", "delete", "insert")}

# the fields a negation may be added to, per task (others only lose one): a premise is a photo
# caption, and 1 of 52 blind-judged premises with an added negation read as one ("Sheep farmers
# aren't crouching ...", "A young puppy does not suckle from his mother": issue 31.4)
NEGATION_ADD_FIELDS: dict[str, tuple[str, ...]] = {"nli": ("hypothesis",)}

# sentiment (issue 31): the codes that aim to flip the review's label and those that aim to keep
# it; a candidate's ``target_label`` says which (the other label / the original's)
SENTENCE_FLIPS: tuple[str, ...] = ("lexical", "negation")
KEEP_CODES: tuple[str, ...] = ("delete", "insert")
SENTIMENT_KEEP_CAP = 1  # label-keeping candidates per code and review
REVIEW_FLIP_VARIANTS = 2
# the review-wide word flip (``lexical``) is pooled on texts of at most this many sentences: on
# CAD's multi-sentence reviews, read whole by two blind readers (rounds 3-7, 204 flips of dev
# reviews), what it left still argued the other way and 0.09 of them read as a review a person
# could write (docs/generation.md, "The default sentiment pool"); a run asks for it on longer
# texts with ``review_flip_sentences`` (0: any length). The same holds for the flip written by the
# CAD-trained rewriter (``rewritten``; round 12: 92 of the same reviews' written flips, 0.08
# valid, 0.68 flipped)
REVIEW_FLIP_SENTENCES = 1


def _adapter_base(option: str, value: str, model_dir: Path, causal_lm_path: str) -> str:
    """The causal LM folder an adapter of the rules generator runs on (``""``: none). ``value``
    is the run's option: ``off``; ``auto``, the adapter when it is shipped and was trained on a
    model of ``causal_lm_path``'s shape; ``on``, the same or a ``GeneratorConfigError``."""
    if value not in ("auto", "on", "off"):
        raise GeneratorConfigError(f"rules: {option} must be auto, on or off, not {value!r}")
    if value == "off":
        return ""
    meta = rewriter_model.read_meta(model_dir)
    if value == "on" and not (meta is not None and causal_lm_path):
        raise GeneratorConfigError(
            f"rules: {option}=on needs its adapter (python manage.py train_rewriter) "
            "and a causal language model (the bundled SmolLM2)"
        )
    if meta is None or not causal_lm_path:
        return ""
    # a hub name or a folder of another shape than the adapter's: no written flip
    if rewriter_model.fits(causal_lm_path, model_dir):
        return str(causal_lm_path)
    if value == "on":
        raise GeneratorConfigError(
            f"rules: the {option} adapter was trained on {meta.get('base')}, "
            f"not on a model folder shaped like {causal_lm_path!r}"
        )
    return ""


def _target(original: Original, code: str) -> str | None:
    """The label a sentiment candidate aims at: the original's for a keeping code, the other
    label for a flipping one (None without a label or with more than two)."""
    if original.label is None:
        return None
    if code in KEEP_CODES:
        return original.label
    others = [lab for lab in original.labels if lab != original.label]
    return others[0] if len(others) == 1 else None


Perturb = Callable[[Sentence, random.Random], list[Proposal]]
PERTURBATIONS: dict[str, Perturb] = {
    "negation": lexical_codes.negation,
    "quantifier": lexical_codes.quantifier,
    "lexical": lexical_codes.lexical,
    "resemantic": lexical_codes.resemantic,
    "insert": structural_codes.insert,
    "delete": structural_codes.delete,
    "restructure": structural_codes.restructure,
    "shuffle": structural_codes.shuffle,
}


def _malformed(text: str) -> bool:
    """Whether an NLI field has an error its candidates would keep: a wrong or doubled article,
    or one with no noun after it (``phrases.article_error``)."""
    return article_error(tag(text))


@dataclass(frozen=True)
class RulesConfig:
    seed: int = 0
    max_per_code: int = 2
    max_negation: int = 1
    max_per_original: int = 12
    max_sentences: int = 2  # per field; long texts (reviews) get one or two sentences edited
    min_words: int = 3
    max_sentence_words: int = 60
    codes: tuple[str, ...] | None = None  # None: TASK_CODES for the original's task, else DEFAULT_CODES
    review_flip_sentences: int = REVIEW_FLIP_SENTENCES  # sentiment: 0 = the review flip on any length

    def codes_for(self, task: str) -> tuple[str, ...]:
        return self.codes if self.codes is not None else TASK_CODES.get(task, DEFAULT_CODES)

    def validate(self) -> None:
        unknown = [c for c in self.codes or () if c not in PERTURBATIONS]
        if unknown:
            raise GeneratorConfigError(f"rules: unknown control code(s) {unknown}; known: {list(CODES)}")
        if self.max_per_code < 1 or self.max_per_original < 1 or self.max_sentences < 1:
            raise GeneratorConfigError("rules: max_per_code, max_per_original and max_sentences must be >= 1")
        if self.max_negation < 0:
            raise GeneratorConfigError("rules: max_negation must be >= 0")
        if self.review_flip_sentences < 0:
            raise GeneratorConfigError("rules: review_flip_sentences must be >= 0 (0: any length)")


class RulesGenerator:
    name = "rules"

    def __init__(
        self,
        config: RulesConfig | None = None,
        *,
        seed: int = 0,
        max_per_code: int = 2,
        max_negation: int = 1,
        max_per_original: int = 12,
        max_sentences: int = 2,
        min_words: int = 3,
        max_sentence_words: int = 60,
        codes: Sequence[str] | None = None,
        review_flip_sentences: int = REVIEW_FLIP_SENTENCES,
        rewriter: str = "auto",
        review_writer: str = "off",
        causal_lm_path: str = "",
    ) -> None:
        self._rewrite: rewritten.Rewrite | None = None
        self._write_review: rewritten.Rewrite | None = None
        # sentiment's written flips: the bundled LM with the shipped CAD adapters (sentences;
        # whole reviews)
        self._rewriter_base = _adapter_base("rewriter", rewriter, rewriter_model.MODEL_DIR, causal_lm_path)
        self._review_writer_base = _adapter_base(
            "review_writer", review_writer, rewriter_model.REVIEW_MODEL_DIR, causal_lm_path
        )
        if config is None:
            try:
                config = RulesConfig(
                    seed=int(seed),
                    max_per_code=int(max_per_code),
                    max_negation=int(max_negation),
                    max_per_original=int(max_per_original),
                    max_sentences=int(max_sentences),
                    min_words=int(min_words),
                    max_sentence_words=int(max_sentence_words),
                    codes=None if codes is None else (codes,) if isinstance(codes, str) else tuple(codes),
                    review_flip_sentences=int(review_flip_sentences),
                )
            except (TypeError, ValueError) as exc:
                raise GeneratorConfigError(f"rules: bad option value: {exc}") from exc
        self.config = config
        self.config.validate()

    def use_rewriter(self, rewrite: rewritten.Rewrite | None) -> None:
        """Write sentiment's review flip with ``rewrite`` (sentences, source label, target label
        -> sentences) instead of the shipped adapter; None: no written flip."""
        self._rewrite, self._rewriter_base = rewrite, ""

    def use_review_writer(self, write: rewritten.Rewrite | None) -> None:
        """Write sentiment's flip of a review of several sentences whole with ``write`` (reviews,
        source label, target label -> reviews) instead of the shipped adapter; None: none."""
        self._write_review, self._review_writer_base = write, ""

    def _rewriter(self) -> rewritten.Rewrite | None:
        """The sentence rewriter of the written review flip, loaded on first use (None: off)."""
        if self._rewrite is None and self._rewriter_base:
            model = rewriter_model.Rewriter(self._rewriter_base)
            self._rewrite = model.rewrite
        return self._rewrite

    def _review_writer(self) -> rewritten.Rewrite | None:
        """The whole-review writer, loaded on first use (None: off)."""
        if self._write_review is None and self._review_writer_base:
            model = rewriter_model.Rewriter(self._review_writer_base, rewriter_model.REVIEW_MODEL_DIR)
            self._write_review = model.rewrite
        return self._write_review

    # -- sentence choice -----------------------------------------------------------------------
    def _sentences(self, text: str, rng: random.Random, *, polar: bool = False, every: bool = False) -> list[Sentence]:
        """The sentences to edit: all of a short field, else ``max_sentences`` of them, sampled
        (``polar``: those with the most sentiment-bearing words; ``every``: all of them)."""
        cfg = self.config
        spans = []
        for s, e in sentence_spans(text):
            if len(words(text[s:e])) > cfg.max_sentence_words:  # e.g. an all-lower-case review
                spans += loose_sentence_spans(text, s, e)
            else:
                spans.append((s, e))
        scored = []
        for s, e in spans:
            n = len(words(text[s:e]))
            if cfg.min_words <= n <= cfg.max_sentence_words:
                scored.append((s, e))
        if polar:
            sents = [Sentence(text, fix_tags(tag(text[s:e], offset=s)), s, e) for s, e in scored]
            if every:
                return sents
            keys = {id(x): (len(sentiment_codes.polar(x.toks)), rng.random()) for x in sents}
            top = sorted(sents, key=lambda x: keys[id(x)], reverse=True)[: cfg.max_sentences]
            return sorted((x for x in top if keys[id(x)][0] > 0), key=lambda x: x.start)
        if len(scored) > cfg.max_sentences:
            scored = sorted(rng.sample(scored, cfg.max_sentences))
        return [Sentence(text, fix_tags(tag(text[s:e], offset=s)), s, e) for s, e in scored]

    # -- one original --------------------------------------------------------------------------
    def candidates_for(self, original: Original) -> list[GeneratedCandidate] | Skip:
        cfg = self.config
        fields = {k: v for k, v in original.fields.items() if isinstance(v, str) and v.strip()}
        if not fields:
            return Skip(original.id, "no text field to perturb")
        rng = random.Random(f"{cfg.seed}:{original.id}")
        codes = cfg.codes_for(original.task)
        if original.task == "nli" and any(_malformed(t) for t in fields.values()):
            # issue 31.4: every candidate would keep the original's "A older gentleman", "A brown a
            # dog", "a basketballs", and a reader judges the pair, both sentences
            return Skip(original.id, "the original is malformed (a/an, a lost noun): its candidates would keep it")
        # the sentiment forms of the codes when a sentiment run names no codes (TASK_CODES)
        sentiment = original.task == "sentiment" and cfg.codes is None
        by_code: dict[str, list[tuple[str, Sentence, Proposal]]] = {c: [] for c in codes}
        first: dict[str, list[tuple[str, Sentence, Proposal]]] = {c: [] for c in codes}
        side_flips: list[tuple[str, Sentence, Proposal]] = []  # flips by leaving out (issue 31)
        perturbable = False
        for name, text in fields.items():
            markup = markup_spans(text)
            sents = self._sentences(text, rng, polar=sentiment)
            perturbable = perturbable or bool(sents)

            def clean(props: list[Proposal], markup: list[tuple[int, int]] = markup) -> list[Proposal]:
                # nothing is edited inside or against markup ("<br /><br [[/>Crew ...")
                return [p for p in props if not any(touches(markup, a, b) for a, b, _ in p.edits)]

            # a review of several sentences: single-sentence flips (lexical, negation) would
            # leave the rest of it arguing the other way; only the review-wide flip flips it
            n_sentences = len(sentence_spans(text))
            whole = sentiment and n_sentences > 1
            for sent in sents:
                for code in codes:
                    if sentiment and code in SENTENCE_FLIPS and (whole or code == "lexical"):
                        continue
                    if sentiment and code in sentiment_codes.PERTURBATIONS:
                        props = sentiment_codes.PERTURBATIONS[code](sent, rng)
                    elif code == "insert":
                        props = structural_codes.insert(sent, rng, evaluative=original.task == "sentiment")
                    else:
                        props = PERTURBATIONS[code](sent, rng)
                    if code == "negation" and name not in NEGATION_ADD_FIELDS.get(original.task, (name,)):
                        props = [p for p in props if lexical_codes.removes_negation(p)]
                    by_code[code] += [(name, sent, p) for p in clean(props)]
            if sentiment and "lexical" in codes and sents:
                whole_text = Sentence(text, [], 0, len(text))
                if cfg.review_flip_sentences == 0 or n_sentences <= cfg.review_flip_sentences:
                    # the text written to the other side by the CAD-trained rewriter, sentence by
                    # sentence: first choice
                    if (rewrite := self._rewriter()) is not None:
                        written = sentiment_codes.written_flip(text, rewrite, label=original.label)
                        if written is not None:
                            first["lexical"].append((name, whole_text, written))
                    # every verdict of the review at once (issue 31): the edit that flips a
                    # label; a second variant with the next opposite of each word
                    for variant in range(REVIEW_FLIP_VARIANTS):
                        flip = sentiment_codes.review_flip(text, variant=variant, label=original.label)
                        if flip is not None:
                            first["lexical"].append((name, whole_text, flip))
                if whole and (write := self._review_writer()) is not None:
                    # a review of several sentences written whole to the other side by the
                    # CAD-trained review writer
                    review = sentiment_codes.written_review_flip(text, write, label=original.label)
                    if review is not None:
                        first["lexical"].append((name, whole_text, review))
                if "delete" in codes and (side := sentiment_codes.side_flip(text, original.label)) is not None:
                    side_flips.append((name, whole_text, side))
        if not perturbable:
            if sentiment and any(self._sentences(t, rng) for t in fields.values()):
                return Skip(original.id, "no sentiment-bearing word to edit (sentiment codes)")
            if all(len(words(t)) < cfg.min_words for t in fields.values()):
                return Skip(original.id, f"too short to perturb (fewer than {cfg.min_words} words in every field)")
            return Skip(original.id, f"no sentence of {cfg.min_words}-{cfg.max_sentence_words} words to perturb")
        picked: dict[str, list[GeneratedCandidate]] = {}
        seen = {tuple(sorted(fields.items()))}
        for code in codes:
            pool = by_code[code]
            rng.shuffle(pool)
            pool = first[code] + pool
            cap = cfg.max_negation if code == "negation" else cfg.max_per_code
            if sentiment and code in KEEP_CODES:
                cap = min(cap, SENTIMENT_KEEP_CAP)
            chosen: list[GeneratedCandidate] = []

            def take(cand: GeneratedCandidate, chosen: list[GeneratedCandidate] = chosen) -> None:
                """``cand`` unless a sibling (or the original) already has its text."""
                key = tuple(sorted(cand.fields.items()))
                if key not in seen:
                    seen.add(key)
                    chosen.append(cand)

            for name, sent, prop in pool:
                if len(chosen) >= cap:
                    break
                take(self._candidate(original, name, sent, prop, target=_target(original, code) if sentiment else None))
            if code == "delete":
                # the review flip that swaps no word: a delete aimed at the other label, on top
                # of the label-keeping one
                for name, sent, prop in side_flips:
                    take(self._candidate(original, name, sent, prop, target=_target(original, "lexical")))
            picked[code] = chosen
        out: list[GeneratedCandidate] = []
        depth = 0
        while len(out) < cfg.max_per_original and any(len(v) > depth for v in picked.values()):
            for code in codes:
                if depth < len(picked[code]) and len(out) < cfg.max_per_original:
                    out.append(picked[code][depth])
            depth += 1
        if not out:
            return Skip(original.id, "no control code applies to this text")
        return out

    def _candidate(
        self, original: Original, field: str, sent: Sentence, prop: Proposal, *, target: str | None = None
    ) -> GeneratedCandidate:
        text = sent.text
        new_text = apply_edits(text, list(prop.edits))
        new_fields = dict(original.fields)
        new_fields[field] = new_text
        meta: dict[str, object] = {
            "field": field,
            "detail": prop.detail,
            "introduced": list(prop.introduced),
            "removed": list(prop.removed),
        }
        if (sent.start, sent.end) != (0, len(text)) and len(sentence_spans(text)) > 1:
            delta = len(new_text) - len(text)
            meta["window"] = [text[sent.start : sent.end], new_text[sent.start : max(sent.start, sent.end + delta)]]
        elif original.task == "sentiment" and (changed := sentiment_codes.changed_sentences(text, new_text)):
            meta["window"] = list(changed)  # a review-wide flip: the sentences it changed
        return GeneratedCandidate(
            original_id=original.id,
            fields=new_fields,
            generator=self.name,
            perturbation=prop.code,
            target_label=target,
            meta=meta,
        )

    # -- interface -----------------------------------------------------------------------------
    should_stop: StopHook | None = None  # set by the service: the run was cancelled

    def warm_up(self) -> None:
        """Load what the first batch would otherwise load (WordNet, the POS tagger, spaCy's
        pipeline, the polarity lexicon, lemminflect's and textblob's inflection tables), so a
        run's "loading models" phase covers it and its rate and ETA start from a representative
        batch."""
        from generation.ml.rules import phrases, polarity, syntax, wordnet

        wordnet.wordnet()
        tag("A man runs in the park.")
        syntax.available()
        polarity.lexicon()
        phrases.warm_up()

    def generate(self, originals: Sequence[Original]) -> Iterator[GeneratedCandidate | Skip]:
        for original in originals:  # lazily: memory does not grow with the number of originals
            stop_point(self.should_stop)
            result = self.candidates_for(original)
            if isinstance(result, Skip):
                yield result
            else:
                yield from result


__all__ = [
    "CODES",
    "DEFAULT_CODES",
    "NEGATION_ADD_FIELDS",
    "PERTURBATIONS",
    "TASK_CODES",
    "RulesConfig",
    "RulesGenerator",
]
