"""``llm-prompt``: masked-span prompting of a local language model with a teacher filter (the
idea of DISCO).

Per original, for each span of the edited field (noun/verb/adjective/adverb phrases from
TextBlob's pattern chunker, or contiguous word windows) and each other label, the span is
replaced by a blank and a causal or seq2seq model from a local path is asked to fill it so that
the label becomes the target (a prompt template per task, naming the label). Fills are decoded
with sampling (temperature 0.8, top-p 0.9) or beam search. Then:

* artifact heuristics drop fills that are empty, unchanged, use the prompt's own wording or are
  far longer than the span, plus the DISCO heuristics of :func:`generation.ml.filters.artifacts`:
  copies of the prompt or the other sentence, introduced words with word-set Jaccard > 0.6 with
  the hypothesis or > 0.35 with the premise, and negation words introduced as a shortcut to
  contradiction (or negative sentiment) — whole words;
* when a teacher classifier is configured, a candidate is kept only if
  p_teacher(target | x') − p_teacher(target | x) > ``teacher_threshold`` (0.25).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from generation.ml.base import (
    GeneratedCandidate,
    GeneratorConfigError,
    Original,
    PerOriginalGenerator,
    Skip,
    edit_field_of,
    stop_point,
)
from generation.ml.chat_fill import chat_messages, copies_demo, join_fill, rest_fill, sentence_around
from generation.ml.endpoint import BACKENDS
from generation.ml.saliency import ClassifierInput, TextClassifier, is_word, label_index, load_classifier, word_spans

if TYPE_CHECKING:
    from generation.ml.endpoint import EndpointClient, EndpointConfig
    from generation.ml.hf import LoadedModel

NAME = "llm-prompt"
BLANK = "[blank]"
NLI_VERBALIZER = {"entailment": "true", "contradiction": "false", "neutral": "possible"}


# -- spans -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Chunk:
    start: int
    end: int
    text: str
    kind: str  # NP, VP, ADJP, ADVP or "window"
    tags: tuple[str, ...] = ()  # POS tags of the chunk's tokens


@dataclass(frozen=True)
class FillRequest:
    """One blank to fill: a span of the edited text and a target label."""

    span_index: int
    target: str
    prompt: str  # the plain-text prompt (also what the artifact filter compares against)
    masked: str  # the text shown, with the blank
    before: str  # the shown text before the blank (pre-filled in a chat answer)
    after: str  # the shown text after the blank (where a chat answer re-joins)
    seed: int


def window_chunks(text: str, size: int = 3) -> list[Chunk]:
    spans = [s for s in word_spans(text) if is_word(text[s[0] : s[1]])]
    out = []
    for i in range(0, len(spans), max(1, size)):
        group = spans[i : i + size]
        a, b = group[0][0], group[-1][1]
        out.append(Chunk(a, b, text[a:b], "window"))
    return out


def phrase_chunks(text: str, kinds: Sequence[str] = ("NP", "VP", "ADJP", "ADVP")) -> list[Chunk]:
    """Phrase chunks from pattern's shallow parser (via TextBlob); [] when it fails."""
    spans = word_spans(text)
    if not spans:
        return []
    tokens = [text[s:e].replace(" ", "_") for s, e in spans]
    try:
        from textblob.en import parse

        tagged = parse(" ".join(tokens), tokenize=False, chunks=True, relations=False, lemmata=False).split()
    except Exception:  # noqa: BLE001 - fall back to windows
        return []
    flat = [t for sent in tagged for t in sent]
    if len(flat) != len(spans):
        return []
    out: list[Chunk] = []
    cur: list[int] = []
    cur_kind = ""

    def close() -> None:
        if cur and cur_kind in kinds:
            a, b = spans[cur[0]][0], spans[cur[-1]][1]
            if any(is_word(tokens[i]) for i in cur):
                out.append(Chunk(a, b, text[a:b], cur_kind, tuple(flat[i][1] for i in cur)))

    for i, tok in enumerate(flat):
        tag = tok[2] if len(tok) > 2 else "O"
        if tag.startswith("B-") or tag == "O" or (tag.startswith("I-") and tag[2:] != cur_kind):
            close()
            cur, cur_kind = ([i], tag[2:]) if tag != "O" else ([], "")
        else:
            cur.append(i)
    close()
    return out


def chunk_spans(text: str, mode: str = "phrases", window: int = 3) -> list[Chunk]:
    if mode == "window":
        return window_chunks(text, window)
    return phrase_chunks(text) or window_chunks(text, window)


SPAN_PRIORITY = {"ADJP": 0, "VP": 1, "ADVP": 2, "NP": 3, "window": 3}


def pick_spans(chunks: Sequence[Chunk], k: int, salient: frozenset[str] = frozenset()) -> list[Chunk]:
    """At most ``k`` spans, in text order: all of them when they fit, else the ones holding a
    ``salient`` word (e.g. a sentiment-lexicon word) first, then the evaluative and predicative
    ones (ADJP, VP, ADVP, then NP), earlier before later."""
    if len(chunks) <= k:
        return list(chunks)

    def rank(i: int) -> tuple[int, int, int]:
        hit = bool(salient and word_set(chunks[i].text) & salient)
        return (0 if hit else 1, SPAN_PRIORITY.get(chunks[i].kind, 4), i)

    ranked = sorted(range(len(chunks)), key=rank)[:k]
    return [chunks[i] for i in sorted(ranked)]


def sentiment_words() -> frozenset[str]:
    """The polarity lexicon's words (both poles): spans holding one are masked first."""
    from generation.ml.lexicons import POLARITY_PAIRS

    return frozenset(w for pair in POLARITY_PAIRS for p in pair for w in p.split() if w not in ("not", "least"))


# -- artifact heuristics -------------------------------------------------------------------------
def word_set(text: str) -> set[str]:
    return {w.lower() for w in re.findall(r"\w+(?:'\w+)?|n't", text.replace("’", "'"))}


def _short_reason(reason: str) -> str:
    if "negation shortcut" in reason:
        return "negation_shortcut"
    if "overlaps the hypothesis" in reason:
        return "overlap_hypothesis"
    if "overlaps the premise" in reason:
        return "overlap_premise"
    if "copies the prompt" in reason:
        return "copies_prompt"
    if "copies" in reason:
        return "copies_other"
    return re.sub(r"\W+", "_", reason.lower()).strip("_")[:40]


def artifact_reasons(
    *,
    original_fields: dict[str, str],
    new_fields: dict[str, str],
    fill: str,
    span: str,
    prompt: str,
    prompt_words: set[str],
    target: str | None,
    shortcut_labels: Sequence[str] = ("contradiction", "negative"),
    hypothesis_jaccard: float = 0.6,
    premise_jaccard: float = 0.35,
) -> list[str]:
    """Why a fill looks like an artifact ([] when it does not), as short codes.

    Our own checks: the fill is empty, unchanged, uses the prompt's own wording (the blank
    marker, instruction words, the label verbalizer) or is far longer than the span. The DISCO
    heuristics come from :func:`generation.ml.filters.artifacts` (copies the prompt or the other
    sentence; introduced words with Jaccard > 0.6 with the hypothesis or > 0.35 with the premise;
    a negation word introduced when aiming at a shortcut label — whole words)."""
    from generation.ml.filters import artifacts

    f_words = word_set(fill)
    if not f_words:
        return ["empty"]
    reasons = []
    if " ".join(fill.lower().split()) == " ".join(span.lower().split()):
        reasons.append("unchanged")
    low = fill.lower()
    if BLANK in low or "<extra_id" in low or f_words & prompt_words:
        reasons.append("copies_prompt")
    if len(f_words) > 2 * len(word_set(span)) + 4:
        reasons.append("too_long")
    shared = artifacts(
        original_fields,
        new_fields,
        prompt=prompt,
        target_label=target.lower() if target else None,
        shortcut_labels=tuple(x.lower() for x in shortcut_labels),
        hypothesis_max=hypothesis_jaccard,
        premise_max=premise_jaccard,
    )
    for r in shared.reasons:
        code = _short_reason(r)
        if code not in reasons:
            reasons.append(code)
    return reasons


def prompt_only_words(prompt: str, masked: str, texts: Sequence[str]) -> set[str]:
    """Content words of the prompt's own wording (instruction, role names, label verbalizer)
    that the texts themselves do not contain: a fill using one copies the prompt."""
    from generation.ml.lexicons import FUNCTION_WORDS

    words = word_set(prompt.replace(masked, " "))
    for t in texts:
        words -= word_set(t)
    return {w for w in words if w not in FUNCTION_WORDS and len(w) > 2} | {"blank"}


def teacher_shift(
    teacher: TextClassifier, before: ClassifierInput, after: Sequence[ClassifierInput], target: str
) -> list[float] | None:
    """p(target | x') − p(target | x) per candidate input; None when the teacher lacks the label."""
    ti = label_index(teacher, target)
    if ti is None:
        return None
    from generation.ml.filters import teacher_shift as filter_teacher_shift

    probs = teacher.predict_proba([before, *after])
    labels = list(teacher.labels)
    res = filter_teacher_shift(np.repeat(probs[:1], len(after), axis=0), probs[1:], labels, [labels[ti]] * len(after))
    return [r.score for r in res]


# -- prompts -----------------------------------------------------------------------------------
def verbalize(task: str, label: str) -> str:
    if task == "nli":
        return NLI_VERBALIZER.get(label.lower(), label)
    return label


def build_prompt(task: str, field: str, masked: str, other_name: str | None, other: str | None, target: str) -> str:
    """The causal-LM prompt: the text with a blank, the other field, the target, "Blank:"."""
    v = verbalize(task, target)
    if task == "nli":
        lines = [
            f"Fill in the blank so that the hypothesis is {v} given the premise.",
            f"Premise: {masked}" if field != "hypothesis" else f"Premise: {other}",
            f"Hypothesis: {other}" if field != "hypothesis" else f"Hypothesis: {masked}",
            f"It is {v} that the hypothesis follows.",
        ]
    elif task == "sentiment":
        lines = [f"Fill in the blank so that the review is {v}.", f"Review: {masked}", f"Sentiment: {v}"]
    else:
        lines = [f"Fill in the blank so that the label is {v}.", f"{field.capitalize()}: {masked}"]
        if other is not None and other_name:
            lines.append(f"{other_name.capitalize()}: {other}")
        lines.append(f"Label: {v}")
    return "\n".join([*lines, "Blank:"])


def clean_fill(raw: str) -> str:
    text = raw.split("\n")[0]
    text = text.replace(BLANK, " ")
    text = re.sub(r"\s+", " ", text).strip().strip("\"'`[]()")
    return text.strip()


# -- the generator -------------------------------------------------------------------------------
class LLMPromptGenerator(PerOriginalGenerator):
    name = NAME

    def __init__(
        self,
        *,
        model_path: str = "",
        causal_lm_path: str = "",
        seq2seq_path: str = "",
        device: str = "cpu",
        teacher_path: str = "",
        teacher: TextClassifier | None = None,
        teacher_threshold: float = 0.25,
        edit_field: str = "",
        span_mode: str = "phrases",
        window: int = 3,
        max_spans: int = 8,
        decoding: str = "sample",
        num_return_sequences: int = 4,
        temperature: float = 0.8,
        top_p: float = 0.9,
        max_new_tokens: int = 12,
        min_words: int = 3,
        hypothesis_jaccard: float = 0.6,
        premise_jaccard: float = 0.35,
        negation_shortcut_labels: Sequence[str] = ("contradiction", "negative"),
        seed: int = 0,
        context: str = "sentence",
        long_text_words: int = 60,
        chat: bool = True,
        combine: int = 3,
        teacher_scope: str = "auto",
        backend: str = "auto",
        endpoint: EndpointConfig | None = None,
    ) -> None:
        from generation.ml import hf

        if backend not in BACKENDS:
            raise GeneratorConfigError(f"backend must be one of {', '.join(BACKENDS)}")
        if backend == "endpoint" and endpoint is None:
            raise GeneratorConfigError(
                "backend 'endpoint' needs a model server: set COUNTERPART_LLM_BASE_URL and COUNTERPART_LLM_MODEL"
            )
        # an OpenAI-compatible model server instead of a model in this process (the service
        # passes ``endpoint`` only when the run's backend resolves to it)
        self.client: EndpointClient | None = None
        self.notes: list[str] = []

        if context not in ("sentence", "text"):
            raise GeneratorConfigError("context must be 'sentence' or 'text'")
        if teacher_scope not in ("auto", "text"):
            raise GeneratorConfigError("teacher_scope must be 'auto' or 'text'")
        # what the teacher compares: the whole text, or the sentence(s) the edit is in (the
        # window the prompt showed and the similarity filter compares); "auto": the window
        # when there is one. On a review of many sentences one phrase moves no classifier
        # judging the whole text by 0.25 (measured: 0.000 for "saw" -> "loved"), while the
        # sentence it is in moves.
        self.teacher_scope = teacher_scope
        # a long text (a review) is shown to the model as the sentence holding the blank only:
        # the prompt stays short (CPU cost) and the filters compare that sentence (meta window)
        self.context, self.long_text_words = context, long_text_words
        self.chat = chat
        # besides one candidate per filled span: one that fills up to ``combine`` spans at once
        # (a long review rarely changes label with a single edit)
        self.combine = combine
        path = model_path or causal_lm_path or seq2seq_path
        if endpoint is not None and backend in ("auto", "endpoint"):
            from generation.ml.endpoint import EndpointClient

            path = ""
            self.client = EndpointClient(endpoint)
            self.notes.append(f"llm-prompt asks {self.client.check()}")
        # An unconfigured model is not an error: every original is skipped with the reason.
        self.unconfigured = (
            ""
            if path or self.client is not None
            else (
                "no language model configured: set COUNTERPART_CAUSAL_LM_PATH or COUNTERPART_SEQ2SEQ_PATH "
                "(or the model_path option)"
            )
        )
        if decoding not in ("sample", "beam"):
            raise GeneratorConfigError("decoding must be 'sample' or 'beam'")
        if span_mode not in ("phrases", "window"):
            raise GeneratorConfigError("span_mode must be 'phrases' or 'window'")
        if num_return_sequences < 1 or max_spans < 1 or max_new_tokens < 1:
            raise GeneratorConfigError("num_return_sequences, max_spans and max_new_tokens must be positive")
        temperature, top_p = float(temperature), float(top_p)  # "0.5" from a form or the API reads as 0.5
        if not 0 <= temperature <= 100:  # 0 decodes greedily; a negative one did so silently
            raise GeneratorConfigError(f"temperature must be between 0 and 100 (0: greedy), got {temperature!r}")
        if not 0 < top_p <= 1:
            raise GeneratorConfigError(f"top_p must be above 0 and at most 1, got {top_p!r}")
        self.lm: LoadedModel | None = hf.load_generator_lm(path, device) if path else None
        if teacher is None and teacher_path:
            teacher = load_classifier(teacher_path, device=device)
        self.teacher = teacher
        self.threshold = teacher_threshold
        self.edit_field = edit_field
        self.span_mode, self.window, self.max_spans = span_mode, window, max_spans
        self.decoding, self.n = decoding, num_return_sequences
        self.temperature, self.top_p, self.max_new_tokens = temperature, top_p, max_new_tokens
        self.min_words = min_words
        self.hj, self.pj = hypothesis_jaccard, premise_jaccard
        self.shortcut_labels = tuple(negation_shortcut_labels)
        self.seed = seed
        self.device = device
        self.sentinel = False
        if self.lm is not None:
            tok = self.lm.tokenizer
            self.sentinel = self.lm.is_encoder_decoder and tok.convert_tokens_to_ids("<extra_id_0>") not in (
                None,
                tok.unk_token_id,
            )

    @property
    def model_name(self) -> str:
        """What answers: the served model's name, or the local model's path."""
        if self.client is not None:
            return f"{self.client.config.model} @ {self.client.config.root}"
        return self._configured_lm().path

    def usage(self) -> dict[str, float] | None:
        """The endpoint's requests, retries, cache hits, tokens and seconds so far (None in-process)."""
        return None if self.client is None else self.client.usage.as_dict()

    def _configured_lm(self) -> LoadedModel:
        """The language model (generate() skips every original while none is configured)."""
        if self.lm is None:
            raise GeneratorConfigError(self.unconfigured)
        return self.lm

    def _one(self, o: Original) -> Iterator[GeneratedCandidate | Skip]:
        field = edit_field_of(o, self.edit_field, nli_default="premise")  # DISCO perturbs the premise
        if field is None:
            yield Skip(o.id, f"missing field {self.edit_field or 'text'!r}")
            return
        text = (o.fields.get(field) or "").strip()
        n_words = sum(1 for s, e in word_spans(text) if is_word(text[s:e]))
        if n_words < self.min_words:
            yield Skip(o.id, f"too short to perturb ({n_words} words in {field!r})")
            return
        others = [n for n in o.fields if n != field]
        other_name = others[0] if others else None
        other = o.fields.get(other_name) if other_name else None
        targets = [lab for lab in o.labels if not o.label or lab.lower() != o.label.lower()]
        if not targets:
            yield Skip(o.id, "the project has no other label to aim for")
            return
        salient = sentiment_words() if o.task == "sentiment" else frozenset()
        spans = pick_spans(chunk_spans(text, self.span_mode, self.window), self.max_spans, salient)
        if not spans:
            yield Skip(o.id, "no span to mask")
            return
        rejected: Counter[str] = Counter()
        pending: list[tuple[str, Chunk, str, dict[str, str], tuple[str, str] | None]] = []
        seen: set[tuple[str, str]] = set()
        windows: dict[int, tuple[int, int]] = {}
        chat = self._chat_lm()
        if (self.context == "sentence" and n_words > self.long_text_words) or chat:
            from generation.ml.rules.tokens import sentence_spans

            # the prompt shows the sentence holding the blank
            sents = sentence_spans(text)
            for si, span in enumerate(spans):
                windows[si] = sentence_around(text, span.start, span.end, sents)
        requests: list[FillRequest] = []
        for si, span in enumerate(spans):
            wa, wb = windows.get(si, (0, len(text)))
            masked = text[wa : span.start] + BLANK + text[span.end : wb]
            for ti, target in enumerate(targets):
                prompt = build_prompt(o.task, field, masked, other_name, other, target)
                requests.append(
                    FillRequest(
                        si, target, prompt, masked, text[wa : span.start], text[span.end : wb], self.seed + 97 * si + ti
                    )
                )
        fills_per_request: list[list[tuple[str, bool] | None]]
        if chat:
            fills_per_request = self._chat_fills(requests, o.task, other, [spans[r.span_index] for r in requests])
        elif self.client is not None:
            fills_per_request = self._endpoint_fills(requests)
        else:
            fills_per_request = [self._fills_between_stops(r, text, spans[r.span_index]) for r in requests]
        for req, fills in zip(requests, fills_per_request, strict=True):
            si, target, prompt = req.span_index, req.target, req.prompt
            wa, wb = windows.get(si, (0, len(text)))
            prompt_words = prompt_only_words(prompt, req.masked, [text, *(v for v in o.fields.values())])
            for item in fills:
                if item is None:
                    rejected["no_join"] += 1
                    continue
                fill, rest = item
                span = spans[si]
                if rest:  # the fill rewrites the span and the rest of its sentence
                    span = Chunk(span.start, wb, text[span.start : wb], f"{span.kind}+rest", span.tags)
                if chat and copies_demo(fill, text):
                    rejected["copies_demo"] += 1
                    continue
                if span.start == 0 and span.text[:1].isupper():
                    fill = fill[:1].upper() + fill[1:]
                new_text = re.sub(r" {2,}", " ", text[: span.start] + fill + text[span.end :]).strip()
                reasons = artifact_reasons(
                    original_fields=dict(o.fields),
                    new_fields={**o.fields, field: new_text},
                    fill=fill,
                    span=span.text,
                    prompt=prompt,
                    prompt_words=prompt_words,
                    target=target,
                    shortcut_labels=self.shortcut_labels,
                    hypothesis_jaccard=self.hj,
                    premise_jaccard=self.pj,
                )
                if reasons:
                    rejected.update(reasons)
                    continue
                if (target, new_text) in seen:
                    continue
                seen.add((target, new_text))
                window = None
                if si in windows and (wa, wb) != (0, len(text)):
                    window = (text[wa:wb], (text[wa : span.start] + fill + text[span.end : wb]).strip())
                pending.append((target, span, fill, {**o.fields, field: new_text}, window))
        shifts: dict[int, float] = {}
        p_new: dict[int, float] = {}
        self._teacher_scores(o, pending, range(len(pending)), shifts, p_new, rejected)
        if self.combine > 1:
            # per target and span, the fill the teacher likes best (with no teacher: the first)
            best: dict[str, dict[int, tuple[float, str]]] = {}
            for i, (target, span, fill, _f, _w) in enumerate(pending):
                if self.teacher is not None and shifts.get(i, -1.0) <= 0:
                    continue
                if span not in spans:  # a rewritten rest of a sentence is not combined
                    continue
                score = shifts.get(i, 0.0)
                cur = best.setdefault(target, {}).get(spans.index(span))
                if cur is None or score > cur[0]:
                    best[target][spans.index(span)] = (score, fill)
            firsts = {t: {si: f for si, (_s, f) in per.items()} for t, per in best.items()}
            start = len(pending)
            pending.extend(self._combined(o, field, text, spans, windows, firsts, seen))
            self._teacher_scores(o, pending, range(start, len(pending)), shifts, p_new, rejected)
        kept = 0
        from generation.ml.rationale_infill import control_code

        for i, (target, span, fill, fields, window) in enumerate(pending):
            scores: dict[str, float] = {}
            if self.teacher is not None:
                if i not in shifts:
                    continue
                if shifts[i] <= self.threshold:
                    rejected["teacher_shift"] += 1
                    continue
                scores = {"teacher_shift": round(shifts[i], 6), "teacher_p_target": round(p_new[i], 6)}
            kept += 1
            yield GeneratedCandidate(
                original_id=o.id,
                fields=fields,
                generator=NAME,
                perturbation=control_code(dict(o.fields), fields),
                target_label=target,
                scores=scores,
                meta={
                    "field": field,
                    "span": span.text,
                    "span_kind": span.kind,
                    "fill": fill,
                    "model": self.model_name,
                    "teacher": self.teacher is not None,
                    **({"window": list(window)} if window else {}),
                },
            )
        if not kept:
            detail = ", ".join(f"{k}={v}" for k, v in sorted(rejected.items())) or "no fills generated"
            yield Skip(o.id, f"no candidate survived the filters ({detail})")

    def _teacher_scores(
        self,
        o: Original,
        pending: Sequence[tuple[str, Chunk, str, dict[str, str], tuple[str, str] | None]],
        which: range,
        shifts: dict[int, float],
        p_new: dict[int, float],
        rejected: Counter[str],
    ) -> None:
        """The teacher's shift p(target | x') - p(target | x) and p(target | x') of the
        candidates ``which`` (indices into ``pending``), into ``shifts``/``p_new``."""
        if self.teacher is None or not which:
            return
        from generation.ml.filters import teacher_shift as filter_teacher_shift

        names = list(o.fields)
        base = _as_input(o.fields, names)
        labels = list(self.teacher.labels)
        befores: list[ClassifierInput] = []
        afters: list[ClassifierInput] = []
        targets: list[str] = []
        scored: list[int] = []
        for i in which:
            target, _span, _fill, fields, window = pending[i]
            t_index = label_index(self.teacher, target)
            if t_index is None:
                rejected["teacher_lacks_label"] += 1
                continue
            if window is not None and self.teacher_scope != "text" and len(names) == 1:
                befores.append(window[0])
                afters.append(window[1])
            else:
                befores.append(base)
                afters.append(_as_input(fields, names))
            targets.append(labels[t_index])
            scored.append(i)
        if not scored:
            return
        # one teacher call: each distinct input once
        inputs = list(dict.fromkeys([*befores, *afters]))
        at = {x: k for k, x in enumerate(inputs)}
        probs = self.teacher.predict_proba(inputs)
        p_before = probs[[at[x] for x in befores]]
        p_after = probs[[at[x] for x in afters]]
        res = filter_teacher_shift(p_before, p_after, labels, targets, threshold=self.threshold)
        for k, (i, r) in enumerate(zip(scored, res, strict=True)):
            shifts[i] = r.score
            p_new[i] = float(p_after[k, labels.index(targets[k])])

    def _chat_lm(self) -> bool:
        """An instruction-tuned causal LM (a tokenizer with a chat template) asked in chat form."""
        lm = self.lm
        if self.client is not None:
            return self.chat
        return bool(
            self.chat and lm is not None and not lm.is_encoder_decoder and getattr(lm.tokenizer, "chat_template", None)
        )

    def _chat_fills(
        self, requests: Sequence[FillRequest], task: str, other: str | None, spans: Sequence[Chunk]
    ) -> list[list[tuple[str, bool] | None]]:
        """All blanks of one original in one batched ``generate`` call (left padding): the chat
        prompt of :mod:`generation.ml.chat_fill` with the answer pre-filled up to the blank;
        ``num_return_sequences`` samples each, as (fill, False) when the answer re-joins the
        text after the blank, (new rest of the sentence, True) when it ends the sentence its
        own way instead, None when it does neither."""
        import torch

        from generation.ml import hf

        if not requests:
            return []
        if self.client is not None:
            return self._endpoint_chat_fills(requests, task, other, spans)
        lm = self._configured_lm()
        tok, model = lm.tokenizer, lm.model
        sources = []
        for r in requests:
            msgs = chat_messages(task, verbalize(task, r.target), r.masked, other)
            head = tok.apply_chat_template(msgs, tokenize=False, add_generation_prompt=True)
            sources.append(head + r.before.rstrip())
        side = tok.padding_side
        tok.padding_side = "left"
        try:
            enc = tok(sources, return_tensors="pt", padding=True, add_special_tokens=False)
        finally:
            tok.padding_side = side
        enc = {k: v.to(self.device) for k, v in enc.items()}
        longest = max(len(sp.text.split()) for sp in spans)
        # the fill plus a few words of the re-joined text (or a new end of the sentence)
        max_new = max(self.max_new_tokens, 2 * longest + 8)
        pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
        out: Any
        if self.decoding == "sample":
            # only the first line of an answer is read: a line break ends a sample
            stops = hf.newline_ids(tok) | ({tok.eos_token_id} if tok.eos_token_id is not None else set())
            out = hf.sample_continuations(
                model,
                enc["input_ids"],
                enc["attention_mask"],
                n=self.n,
                max_new_tokens=max_new,
                temperature=self.temperature,
                top_p=self.top_p,
                stop_ids=frozenset(stops),
                pad_id=pad,
                seed=requests[0].seed,
                should_stop=self.should_stop,
            )
        else:
            torch.manual_seed(requests[0].seed)
            with torch.inference_mode():
                beams = model.generate(
                    **enc,
                    max_new_tokens=max_new,
                    num_return_sequences=self.n,
                    pad_token_id=pad,
                    do_sample=False,
                    num_beams=max(self.n, 2),
                    stopping_criteria=hf.stop_criteria(self.should_stop),
                )
            stop_point(self.should_stop)
            out = beams[:, enc["input_ids"].shape[1] :].tolist()
        res: list[list[tuple[str, bool] | None]] = []
        for i, (r, sp) in enumerate(zip(requests, spans, strict=True)):
            fills: list[tuple[str, bool] | None] = []
            for seq in out[i * self.n : (i + 1) * self.n]:
                fills.append(_read_fill(tok.decode(seq, skip_special_tokens=True), r, sp))
            res.append(fills)
        return res

    def _endpoint_chat_fills(
        self, requests: Sequence[FillRequest], task: str, other: str | None, spans: Sequence[Chunk]
    ) -> list[list[tuple[str, bool] | None]]:
        """:meth:`_chat_fills` through the model server: the same few-shot chat, all blanks of
        the original sent at once (``concurrency`` in flight). A server cannot be given the
        pre-filled answer, so the model writes the whole sentence and the fill is read after
        the text before the blank (:func:`generation.ml.chat_fill.continuation_after`)."""
        from generation.ml.chat_fill import continuation_after
        from generation.ml.endpoint import ChatRequest

        assert self.client is not None
        self.client.should_stop = self.should_stop
        longest = max(len(sp.text.split()) for sp in spans)
        asks = []
        for r in requests:
            msgs = chat_messages(task, verbalize(task, r.target), r.masked, other)
            shown = len(r.before.split()) + len(r.after.split())
            asks.append(
                ChatRequest(
                    messages=tuple((m["role"], m["content"]) for m in msgs),
                    n=self.n,
                    temperature=self.temperature if self.decoding == "sample" else 0.0,
                    top_p=self.top_p if self.decoding == "sample" else 1.0,
                    # the sentence again, with the fill (tokens ~ 1.5 x words)
                    max_tokens=max(self.max_new_tokens, 2 * longest + 8) + int(1.5 * shown) + 4,
                    seed=r.seed,
                    stop=("\n",),
                )
            )
        answers = self.client.complete_many(asks)
        res: list[list[tuple[str, bool] | None]] = []
        for r, sp, replies in zip(requests, spans, answers, strict=True):
            fills: list[tuple[str, bool] | None] = []
            for reply in replies:
                cont = continuation_after(reply, r.before)
                fills.append(None if cont is None else _read_fill(cont, r, sp))
            res.append(fills)
        return res

    def _endpoint_fills(self, requests: Sequence[FillRequest]) -> list[list[tuple[str, bool] | None]]:
        """The plain blank-filling prompt through the model server (as the user's turn, as for
        an instruction-tuned local model), every blank of the original at once."""
        from generation.ml.endpoint import ChatRequest

        assert self.client is not None
        self.client.should_stop = self.should_stop
        asks = [
            ChatRequest(
                messages=(("user", r.prompt.rsplit("\nBlank:", 1)[0] + "\nReply with only the words for the blank."),),
                n=self.n,
                temperature=self.temperature if self.decoding == "sample" else 0.0,
                top_p=self.top_p if self.decoding == "sample" else 1.0,
                max_tokens=self.max_new_tokens,
                seed=r.seed,
                stop=("\n",),
            )
            for r in requests
        ]
        return [[(clean_fill(a), False) for a in answers] for answers in self.client.complete_many(asks)]

    def _combined(
        self,
        o: Original,
        field: str,
        text: str,
        spans: Sequence[Chunk],
        windows: dict[int, tuple[int, int]],
        firsts: dict[str, dict[int, str]],
        seen: set[tuple[str, str]],
    ) -> list[tuple[str, Chunk, str, dict[str, str], tuple[str, str] | None]]:
        """Per target, one candidate with the first surviving fill of up to ``combine`` spans
        applied together (each fill passed the artifact checks on its own)."""
        out: list[tuple[str, Chunk, str, dict[str, str], tuple[str, str] | None]] = []
        for target, per_span in firsts.items():
            chosen = sorted(per_span.items())[: self.combine]
            if len(chosen) < 2:
                continue
            wa = min(windows.get(si, (0, len(text)))[0] for si, _ in chosen)
            wb = max(windows.get(si, (0, len(text)))[1] for si, _ in chosen)
            new_text, new_window = text, text[wa:wb]
            for si, fill in sorted(chosen, reverse=True):  # right to left: offsets stay valid
                sp = spans[si]
                new_text = new_text[: sp.start] + fill + new_text[sp.end :]
                new_window = new_window[: sp.start - wa] + fill + new_window[sp.end - wa :]
            new_text = re.sub(r" {2,}", " ", new_text).strip()
            if (target, new_text) in seen:
                continue
            seen.add((target, new_text))
            window = None
            if (wa, wb) != (0, len(text)):
                window = (text[wa:wb], re.sub(r" {2,}", " ", new_window).strip())
            multi = Chunk(
                spans[chosen[0][0]].start,
                spans[chosen[-1][0]].end,
                " … ".join(spans[si].text for si, _ in chosen),
                "multi",
            )
            out.append((target, multi, " … ".join(f for _, f in chosen), {**o.fields, field: new_text}, window))
        return out

    def _fills_between_stops(self, r: FillRequest, text: str, span: Chunk) -> list[tuple[str, bool] | None]:
        stop_point(self.should_stop)  # one generate call per blank and target
        return [(f, False) for f in self._fills(r.prompt, text, span, r.target, seed=r.seed)]

    def _fills(self, prompt: str, text: str, span: Chunk, target: str, seed: int) -> list[str]:
        import torch

        from generation.ml import hf

        lm = self._configured_lm()
        tok, model = lm.tokenizer, lm.model
        source = prompt.replace(BLANK, "<extra_id_0>").rsplit("\nBlank:", 1)[0] if self.sentinel else prompt
        templated = bool(self.chat and not lm.is_encoder_decoder and getattr(tok, "chat_template", None))
        if templated:
            # an instruction-tuned model (the bundled SmolLM2): the prompt as the user's turn
            instruction = source.rsplit("\nBlank:", 1)[0] + "\nReply with only the words for the blank."
            source = tok.apply_chat_template(
                [{"role": "user", "content": instruction}], tokenize=False, add_generation_prompt=True
            )
        enc = tok(source, return_tensors="pt", truncation=True, max_length=1024, add_special_tokens=not templated)
        enc = {k: v.to(self.device) for k, v in enc.items()}
        kw: dict[str, object] = {
            "max_new_tokens": self.max_new_tokens,
            "num_return_sequences": self.n,
            "pad_token_id": tok.pad_token_id,
        }
        if self.decoding == "sample":
            kw.update(do_sample=True, temperature=self.temperature, top_p=self.top_p)
        else:
            kw.update(do_sample=False, num_beams=max(self.n, 2))
        torch.manual_seed(seed)
        with torch.no_grad():
            out = model.generate(**enc, **kw, stopping_criteria=hf.stop_criteria(self.should_stop))
        stop_point(self.should_stop)
        if not lm.is_encoder_decoder:
            out = out[:, enc["input_ids"].shape[1] :]
        fills = []
        for seq in out:
            if self.sentinel:
                raw = tok.decode(seq.tolist(), skip_special_tokens=False)
                for t in (tok.pad_token, tok.eos_token):
                    if t:
                        raw = raw.replace(t, " ")
                parts = re.split(r"<extra_id_\d+>", raw)
                raw = parts[1] if len(parts) > 1 else parts[0]
            else:
                raw = tok.decode(seq.tolist(), skip_special_tokens=True)
            fills.append(clean_fill(raw))
        return fills


def _read_fill(continuation: str, r: FillRequest, span: Chunk) -> tuple[str, bool] | None:
    """(fill, False) when the continuation re-joins the text after the blank, (new rest of the
    sentence, True) when it ends the sentence its own way, None when it does neither."""
    fill = join_fill(continuation, r.after, max_words=len(span.text.split()) + 4)
    if fill is not None:
        return (fill, False)
    rest = rest_fill(continuation, r.after, max_words=len(span.text.split()) + len(r.after.split()) + 4)
    return (rest, True) if rest is not None else None


def _as_input(fields: dict[str, str], names: Sequence[str]) -> ClassifierInput:
    vals = [fields[n] for n in names]
    return vals[0] if len(vals) == 1 else (vals[0], vals[1])
