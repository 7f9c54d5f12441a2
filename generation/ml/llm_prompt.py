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
from typing import TYPE_CHECKING

import numpy as np

from generation.ml.base import (
    GeneratedCandidate,
    GeneratorConfigError,
    Original,
    PerOriginalGenerator,
    Skip,
    edit_field_of,
)
from generation.ml.saliency import ClassifierInput, TextClassifier, is_word, label_index, load_classifier, word_spans

if TYPE_CHECKING:
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


def pick_spans(chunks: Sequence[Chunk], k: int) -> list[Chunk]:
    """At most ``k`` spans, in text order: all of them when they fit, else the evaluative and
    predicative ones first (ADJP, VP, ADVP, then NP), earlier before later."""
    if len(chunks) <= k:
        return list(chunks)
    ranked = sorted(range(len(chunks)), key=lambda i: (SPAN_PRIORITY.get(chunks[i].kind, 4), i))[:k]
    return [chunks[i] for i in sorted(ranked)]


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
        max_spans: int = 6,
        decoding: str = "sample",
        num_return_sequences: int = 3,
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
    ) -> None:
        from generation.ml import hf

        if context not in ("sentence", "text"):
            raise GeneratorConfigError("context must be 'sentence' or 'text'")
        # a long text (a review) is shown to the model as the sentence holding the blank only:
        # the prompt stays short (CPU cost) and the filters compare that sentence (meta window)
        self.context, self.long_text_words = context, long_text_words
        self.chat = chat
        path = model_path or causal_lm_path or seq2seq_path
        # An unconfigured model is not an error: every original is skipped with the reason.
        self.unconfigured = (
            ""
            if path
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
        spans = pick_spans(chunk_spans(text, self.span_mode, self.window), self.max_spans)
        if not spans:
            yield Skip(o.id, "no span to mask")
            return
        rejected: Counter[str] = Counter()
        pending: list[tuple[str, Chunk, str, dict[str, str], tuple[str, str] | None]] = []
        seen: set[tuple[str, str]] = set()
        windows: dict[int, tuple[int, int]] = {}
        if self.context == "sentence" and n_words > self.long_text_words:
            from generation.ml.rules.tokens import sentence_spans

            sents = sentence_spans(text)
            for si, span in enumerate(spans):
                windows[si] = next(((a, b) for a, b in sents if a <= span.start and span.end <= b), (0, len(text)))
        for si, span in enumerate(spans):
            wa, wb = windows.get(si, (0, len(text)))
            masked = text[wa : span.start] + BLANK + text[span.end : wb]
            for ti, target in enumerate(targets):
                prompt = build_prompt(o.task, field, masked, other_name, other, target)
                prompt_words = prompt_only_words(prompt, masked, [text, *(v for v in o.fields.values())])
                for fill in self._fills(prompt, text, span, target, seed=self.seed + 97 * si + ti):
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
                    if si in windows:
                        window = (text[wa:wb], (text[wa : span.start] + fill + text[span.end : wb]).strip())
                    pending.append((target, span, fill, {**o.fields, field: new_text}, window))
        kept = 0
        names = list(o.fields)
        by_target: dict[str, list[int]] = {}
        for i, (target, *_rest) in enumerate(pending):
            by_target.setdefault(target, []).append(i)
        shifts: dict[int, float] = {}
        p_new: dict[int, float] = {}
        if self.teacher is not None:
            from generation.ml.filters import teacher_shift as filter_teacher_shift

            base = _as_input(o.fields, names)
            for target, idx in by_target.items():
                t_index = label_index(self.teacher, target)
                if t_index is None:
                    rejected["teacher_lacks_label"] += len(idx)
                    continue
                probs = self.teacher.predict_proba([base, *(_as_input(pending[i][3], names) for i in idx)])
                labels = list(self.teacher.labels)
                res = filter_teacher_shift(
                    np.repeat(probs[:1], len(idx), axis=0),
                    probs[1:],
                    labels,
                    [labels[t_index]] * len(idx),
                    threshold=self.threshold,
                )
                for i, p, r in zip(idx, probs[1:], res, strict=True):
                    shifts[i] = r.score
                    p_new[i] = float(p[t_index])
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
                    "model": self._configured_lm().path,
                    "teacher": self.teacher is not None,
                    **({"window": list(window)} if window else {}),
                },
            )
        if not kept:
            detail = ", ".join(f"{k}={v}" for k, v in sorted(rejected.items())) or "no fills generated"
            yield Skip(o.id, f"no candidate survived the filters ({detail})")

    def _fills(self, prompt: str, text: str, span: Chunk, target: str, seed: int) -> list[str]:
        import torch

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
            out = model.generate(**enc, **kw)
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


def _as_input(fields: dict[str, str], names: Sequence[str]) -> ClassifierInput:
    vals = [fields[n] for n in names]
    return vals[0] if len(vals) == 1 else (vals[0], vals[1])
