"""``concept-constrained``: regenerate the edited field from a label-steered language model
while keeping the original's content concepts (the idea of NeuroCounterfactuals).

Per original and other label:
1. concepts = the content noun phrases of the edited field (the noun run of each NP chunk, no
   determiners or evaluative adjectives), at most ``max_concepts``, none contained in another;
2. each concept becomes a clause whose alternatives are its lower-case / capitalised forms, with
   and without a leading space, tokenised by the model's tokenizer;
3. the model is steered to the target label either by a per-label model (``steer_paths``, like
   NeuroCFs' positive/negative steers) or by a prompt that names the label, followed by the
   first word of the original (the "1g" prefix of NeuroCFs);
4. decoding uses our constrained beam search (:mod:`generation.ml.neurologic`) through a step
   adapter for the model's architecture (causal or encoder-decoder).

A hypothesis must satisfy every clause (``min_coverage`` 1.0 by default); optionally a
classifier keeps only candidates it labels as the target (``classifier_path``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from generation.ml.base import (
    GeneratedCandidate,
    GeneratorConfigError,
    Original,
    PerOriginalGenerator,
    Skip,
    edit_field_of,
    stop_point,
)
from generation.ml.llm_prompt import NLI_VERBALIZER, phrase_chunks
from generation.ml.neurologic import (
    CausalStepModel,
    Clause,
    SearchConfig,
    Seq2SeqStepModel,
    StepModel,
    constrained_beam_search,
    special_ids,
)
from generation.ml.saliency import ClassifierInput, TextClassifier, is_word, label_index, load_classifier, word_spans

if TYPE_CHECKING:
    from generation.ml.hf import LoadedModel

NAME = "concept-constrained"


def extract_concepts(text: str, max_concepts: int = 4) -> list[str]:
    """Content concepts: the noun run (NN*) of each noun-phrase chunk, in order of appearance,
    de-duplicated, without concepts contained in a longer one."""
    from generation.ml.lexicons import FUNCTION_WORDS

    found: list[str] = []
    for ch in phrase_chunks(text, kinds=("NP",)):
        spans = word_spans(ch.text)
        tags = list(ch.tags)
        if len(tags) != len(spans):
            continue
        run: list[tuple[int, int]] = []
        for (s, e), tag in zip(spans, tags, strict=True):
            word = ch.text[s:e]
            if tag.startswith("NN") and is_word(word) and word.lower() not in FUNCTION_WORDS:
                run.append((s, e))
            elif run:
                break
        if run:
            found.append(ch.text[run[0][0] : run[-1][1]])
    uniq: list[str] = []
    for c in found:
        if c.lower() not in {u.lower() for u in uniq}:
            uniq.append(c)
    low = [u.lower() for u in uniq]
    kept = [u for u in uniq if not any(u.lower() != o and re.search(rf"\b{re.escape(u.lower())}\b", o) for o in low)]
    return kept[:max_concepts]


def concept_clause(concept: str, tokenizer: Any) -> Clause | None:  # a transformers tokenizer
    variants = {concept, concept.lower(), concept[:1].upper() + concept[1:]}
    alts: set[tuple[int, ...]] = set()
    for v in variants:
        for form in (v, " " + v):
            ids = tuple(tokenizer(form, add_special_tokens=False)["input_ids"])
            if ids and tokenizer.unk_token_id not in ids:
                alts.add(ids)
    if not alts:
        return None
    return Clause(tuple(sorted(alts, key=lambda a: (len(a), a))), text=concept)


def steer_prompt(task: str, field: str, target: str, other_name: str | None, other: str | None) -> str:
    if task == "sentiment":
        return f"A {target} review:\n"
    if task == "nli":
        v = NLI_VERBALIZER.get(target.lower(), target)
        if field == "hypothesis" and other is not None:
            return f"Premise: {other}\nA hypothesis that is {v} given the premise:\n"
        if other is not None:
            return f"Hypothesis: {other}\nA premise that makes the hypothesis {v}:\n"
    head = f"{other_name.capitalize()}: {other}\n" if other_name and other is not None else ""
    return f"{head}A {field} with the label {target}:\n"


def chat_instruction(
    task: str, field: str, target: str, other_name: str | None, other: str | None, concepts: Sequence[str]
) -> str:
    """The user turn for an instruction-tuned model: the label to aim for and the concepts."""
    words = ", ".join(concepts)
    if task == "sentiment":
        return f"Write one sentence of a {target} movie review that uses these words: {words}."
    if task == "nli":
        v = NLI_VERBALIZER.get(target.lower(), target)
        if field == "hypothesis" and other is not None:
            return (
                f"Premise: {other}\nWrite one short hypothesis that is {v} given the premise. Use these words: {words}."
            )
        if other is not None:
            return (
                f"Hypothesis: {other}\nWrite one short premise that makes the hypothesis {v}. Use these words: {words}."
            )
    head = f"{other_name.capitalize()}: {other}\n" if other_name and other is not None else ""
    return f"{head}Write one {field} with the label {target}. Use these words: {words}."


NEAR_COPY = 0.8


class ConceptConstrainedGenerator(PerOriginalGenerator):
    name = NAME

    def __init__(
        self,
        *,
        model_path: str = "",
        causal_lm_path: str = "",
        seq2seq_path: str = "",
        steer_paths: Mapping[str, str] | None = None,
        device: str = "cpu",
        edit_field: str = "",
        max_concepts: int = 4,
        beam_size: int = 6,
        candidate_k: int = 12,
        candidates_per_label: int = 3,
        max_new_tokens: int = 0,
        progress_weight: float = 1.0,
        min_coverage: float = 1.0,
        prefix: str = "1g",
        min_words: int = 3,
        classifier_path: str = "",
        classifier: TextClassifier | None = None,
        context: str = "sentence",
        long_text_words: int = 60,
        max_sentence_words: int = 30,
        chat: bool = True,
        backend: str = "auto",
    ) -> None:
        from generation.ml import hf

        if backend == "endpoint":
            # decoding is steered token by token (label and concept scores added to the
            # next-token logits): an OpenAI-compatible server returns text, not that hook
            raise GeneratorConfigError(
                "concept-constrained steers decoding token by token, which an OpenAI-compatible endpoint "
                "does not expose: it runs only on a local model (backend bundled or local)"
            )
        if backend not in ("auto", "bundled", "local"):
            raise GeneratorConfigError("backend must be auto, bundled or local")
        # an instruction-tuned causal LM (a chat template: the bundled SmolLM2) is asked in chat
        # form for a sentence with the target label that uses the concepts
        self.chat = chat

        if context not in ("sentence", "text"):
            raise GeneratorConfigError("context must be 'sentence' or 'text'")
        # a long text (a review) is rewritten one sentence at a time: the sentence with the most
        # concepts (at most max_sentence_words words) is decoded and spliced back (CPU cost; the
        # filters compare that sentence through meta["window"])
        self.context, self.long_text_words, self.max_sentence_words = context, long_text_words, max_sentence_words

        if prefix not in ("1g", "none"):
            raise GeneratorConfigError("prefix must be '1g' or 'none'")
        if beam_size < 1 or candidates_per_label < 1 or max_concepts < 1:
            raise GeneratorConfigError("beam_size, candidates_per_label and max_concepts must be positive")
        self.steers = {k.lower(): hf.load_generator_lm(v, device) for k, v in (steer_paths or {}).items()}
        path = model_path or causal_lm_path or seq2seq_path
        self.lm = hf.load_generator_lm(path, device) if path else None
        # An unconfigured model is not an error: every original is skipped with the reason.
        self.unconfigured = (
            ""
            if (self.lm is not None or self.steers)
            else (
                "no language model configured: set COUNTERPART_CAUSAL_LM_PATH or COUNTERPART_SEQ2SEQ_PATH "
                "(or the model_path / steer_paths options)"
            )
        )
        if classifier is None and classifier_path:
            classifier = load_classifier(classifier_path, device=device)
        self.classifier = classifier
        self.device = device
        self.edit_field = edit_field
        self.max_concepts, self.n = max_concepts, candidates_per_label
        self.beam_size, self.candidate_k = beam_size, candidate_k
        self.max_new_tokens, self.progress_weight = max_new_tokens, progress_weight
        self.min_coverage, self.prefix, self.min_words = min_coverage, prefix, min_words

    def _one(self, o: Original) -> Iterator[GeneratedCandidate | Skip]:
        field = edit_field_of(o, self.edit_field, nli_default="hypothesis")
        if field is None:
            yield Skip(o.id, f"missing field {self.edit_field or 'text'!r}")
            return
        full = (o.fields.get(field) or "").strip()
        text, (wa, wb) = full, (0, len(full))
        words = [text[s:e] for s, e in word_spans(text) if is_word(text[s:e])]
        if self.context == "sentence" and (len(words) > self.long_text_words or self._one_sentence_asked(full)):
            picked = self._sentence(full)
            if picked is None:
                yield Skip(o.id, f"no sentence of {self.min_words}-{self.max_sentence_words} words with a concept")
                return
            wa, wb = picked
            text = full[wa:wb]
            words = [text[s:e] for s, e in word_spans(text) if is_word(text[s:e])]
        if len(words) < self.min_words:
            yield Skip(o.id, f"too short to perturb ({len(words)} words in {field!r})")
            return
        concepts = extract_concepts(text, self.max_concepts)
        if not concepts:
            yield Skip(o.id, "no content concepts (noun phrases) found")
            return
        others = [n for n in o.fields if n != field]
        other_name = others[0] if others else None
        other = o.fields.get(other_name) if other_name else None
        targets = [lab for lab in o.labels if not o.label or lab.lower() != o.label.lower()]
        if not targets:
            yield Skip(o.id, "the project has no other label to aim for")
            return
        windowed = (wa, wb) != (0, len(full))

        def splice(part: str) -> str:
            return (full[:wa] + part + full[wb:]).strip() if windowed else part

        made: list[tuple[str, str, float, float, list[str]]] = []
        notes: list[str] = []
        for target in targets:
            stop_point(self.should_stop)  # one constrained decode per target
            lm = self.steers.get(target.lower(), self.lm)
            if lm is None:
                notes.append(f"no model for {target!r}")
                continue
            steered_by_model = target.lower() in self.steers
            first = words[0] if self.prefix == "1g" else ""
            results = self._decode(
                lm, o.task, field, target, other_name, other, first, concepts, steered_by_model, len(words)
            )
            if not results:
                notes.append(f"{target}: no hypothesis met the constraints")
            for new_text, coverage, lp, kept_concepts in results:
                if new_text.strip().lower() == text.lower():
                    continue
                made.append((target, new_text, coverage, lp, kept_concepts))
        if self.classifier is not None and made:
            names = list(o.fields)
            inputs = [_as_input({**o.fields, field: splice(t)}, names) for _, t, *_ in made]
            probs = self.classifier.predict_proba(inputs)
            filtered = []
            for row, m in zip(probs, made, strict=True):
                ti = label_index(self.classifier, m[0])
                if ti is not None and int(row.argmax()) == ti:
                    filtered.append((*m, float(row[ti])))
            notes.append(f"consistency filter kept {len(filtered)}/{len(made)}")
            final = filtered
        else:
            final = [(*m, math.nan) for m in made]
        from generation.ml.rationale_infill import control_code

        for target, new_part, coverage, lp, kept_concepts, p in final:
            new_text = splice(new_part)
            scores = {"constraint_coverage": round(coverage, 6), "lm_logprob": round(lp, 6)}
            if not math.isnan(p):
                scores["p_target"] = round(p, 6)
            yield GeneratedCandidate(
                original_id=o.id,
                fields={**o.fields, field: new_text},
                generator=NAME,
                perturbation=control_code(dict(o.fields), {**o.fields, field: new_text}),
                target_label=target,
                scores=scores,
                meta={
                    "field": field,
                    "concepts": concepts,
                    "satisfied": kept_concepts,
                    **({"window": [text, new_part]} if windowed else {}),
                },
            )
        if not final:
            yield Skip(o.id, "; ".join(notes) or "no candidate generated")

    def _one_sentence_asked(self, full: str) -> bool:
        """The chat instruction asks for one sentence: a text of several sentences (a short
        review) is then rewritten one sentence at a time too, not replaced by one sentence."""
        from generation.ml.rules.tokens import sentence_spans

        chat = self.lm is not None and not self.steers and self._chat_form(self.lm, steered_by_model=False)
        return chat and len(sentence_spans(full)) > 1

    def _chat_form(self, lm: LoadedModel, steered_by_model: bool) -> bool:
        """``lm`` is asked in chat form: an instruction-tuned causal LM (a chat template), not a
        per-label steer model."""
        return bool(
            self.chat
            and not steered_by_model
            and not lm.is_encoder_decoder
            and getattr(lm.tokenizer, "chat_template", None)
        )

    def _sentence(self, full: str) -> tuple[int, int] | None:
        """The span of the sentence to rewrite in a long text: the one with the most concepts
        among those of ``min_words``..``max_sentence_words`` words (the first on a tie)."""
        from generation.ml.rules.tokens import sentence_spans

        best: tuple[int, int] | None = None
        best_n = 0
        for a, b in sentence_spans(full):
            sent = full[a:b]
            n = sum(1 for s, e in word_spans(sent) if is_word(sent[s:e]))
            if not (self.min_words <= n <= self.max_sentence_words):
                continue
            k = len(extract_concepts(sent, self.max_concepts))
            if k > best_n:
                best, best_n = (a, b), k
        return best

    def _decode(
        self,
        lm: LoadedModel,
        task: str,
        field: str,
        target: str,
        other_name: str | None,
        other: str | None,
        first: str,
        concepts: list[str],
        steered_by_model: bool,
        n_words: int,
    ) -> list[tuple[str, float, float, list[str]]]:
        from generation.ml import hf

        tok = lm.tokenizer
        clauses = [c for c in (concept_clause(x, tok) for x in concepts) if c is not None]
        if not clauses:
            return []
        prompt = "" if steered_by_model else steer_prompt(task, field, target, other_name, other)
        eos = tok.eos_token_id
        chat = self._chat_form(lm, steered_by_model)
        if chat:
            # the label and the concepts in the instruction, the answer pre-filled with the
            # first word (the NeuroCF "1g" prefix); the constraints are still enforced by the search
            user = chat_instruction(task, field, target, other_name, other, [c.text for c in clauses])
            head = tok.apply_chat_template(
                [{"role": "user", "content": user}], tokenize=False, add_generation_prompt=True
            )
            ids = tok(head + first, add_special_tokens=False)["input_ids"]
            model: StepModel = CausalStepModel(lm.model, ids, eos, self.device)
            lead = first
        elif lm.is_encoder_decoder:
            source = prompt + "Keep: " + ", ".join(c.text for c in clauses) + "."
            model = Seq2SeqStepModel(lm.model, tok(source)["input_ids"], eos, self.device)
            lead = ""
        else:
            prompt_text = prompt + first
            ids = tok(prompt_text, add_special_tokens=False)["input_ids"] if prompt_text else []
            if not ids:
                bos = tok.bos_token_id if tok.bos_token_id is not None else eos
                if bos is None:
                    return []
                ids = [bos]
            model = CausalStepModel(lm.model, ids, eos, self.device)
            lead = first
        need = sum(min(len(a) for a in c.alternatives) for c in clauses)
        max_new = self.max_new_tokens or min(96, max(need + 4, math.ceil(1.5 * n_words) + 4))
        cfg = SearchConfig(
            beam_size=self.beam_size,
            max_new_tokens=max_new,
            candidate_k=self.candidate_k,
            progress_weight=self.progress_weight,
            # one sentence: no line breaks (a concept after one would be cut off with it)
            banned_ids=special_ids(tok, keep=[eos]) | hf.newline_ids(tok),
            min_new_tokens=min(max_new - 1, max(1, n_words // 2)),
        )
        hyps = constrained_beam_search(model, clauses, cfg, should_stop=self.should_stop)
        out: list[tuple[str, float, float, list[str]]] = []
        picked: list[set[str]] = []
        for h in hyps:
            if h.n_satisfied() / len(clauses) + 1e-9 < self.min_coverage:
                continue
            body = tok.decode(list(h.tokens), skip_special_tokens=True)
            body = body.split("\n")[0] if not body.startswith("\n") else body.strip().split("\n")[0]
            text = lead + body if (not lead or body[:1].isspace() or not body) else f"{lead} {body}"
            text = re.sub(r"\s+", " ", text).strip()
            if not text:
                continue
            low = text.lower()
            kept = [c.text for c in clauses if re.search(rf"(?<!\w){re.escape(c.text.lower())}(?!\w)", low)]
            if len(kept) / len(clauses) + 1e-9 < self.min_coverage:
                continue  # a concept was cut off with the text after a line break
            # the beams of one search are often one sentence with another ending: a near copy
            # of a kept one (word-set Jaccard > NEAR_COPY) is passed over for the next beam, as
            # the run's dedup filter would drop it anyway
            words = set(low.split())
            if any(len(words & w) > NEAR_COPY * len(words | w) for w in picked):
                continue
            picked.append(words)
            out.append((text, len(kept) / len(clauses), h.logprob / max(1, len(h.tokens)), kept))
            if len(out) >= self.n:
                break
        return out


def _as_input(fields: dict[str, str], names: Sequence[str]) -> ClassifierInput:
    vals = [fields[n] for n in names]
    return vals[0] if len(vals) == 1 else (vals[0], vals[1])
