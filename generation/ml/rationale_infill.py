"""``rationale-infill``: mask the words the base classifier relies on, infill them for each
other label, keep what the classifier then labels as the target (the idea of AutoCAD).

Per original:
1. the base classifier must predict the gold label with p > ``min_confidence`` (0.8), else skip;
2. word saliency for that label (gradients for torch models, |w·x| for linear bag-of-words
   models, leave-one-out otherwise — :mod:`generation.ml.saliency`); the rationale is the top
   ``top_fraction`` (30%) of words whose score is at least ``min_saliency`` × the top score;
3. for each other label, infill the masked words, label-controlled:
   * ``seq2seq`` (T5-style): ``"<target>: <text with <extra_id_k> per masked span>"``, sampled
     with nucleus sampling (top-p 0.9, temperature 0.7);
   * ``mlm``: ``"<target> : <text with [MASK] per masked word>"``, filled left to right
     (the first candidate greedily, the others sampled from the top 20);
   * ``causal`` (a causal LM, e.g. the bundled SmolLM2; ``causal_lm_path``): the text after a
     fill-in prompt naming the target (``"A <target> <field>, with words changed:"``) in one
     forward pass; each masked word is filled from the LM's next-word distribution at its
     position (whole words WordNet knows, never the original word; the first candidate
     greedily, the others sampled from the top 20), candidates ranked by their LM log-probability;
   * ``lexical`` (no model): WordNet + a small label-word lexicon — antonyms of salient
     adjectives/verbs/adverbs towards a polarity label or "contradiction", hypernyms towards
     "entailment", hyponyms towards "neutral";
4. consistency filter: a candidate is kept only if the classifier predicts its target label;
   ``scores["p_target"]`` holds p(target | candidate).
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from generation.ml.base import (
    GeneratedCandidate,
    GeneratorConfigError,
    Original,
    PerOriginalGenerator,
    Skip,
    stop_point,
)
from generation.ml.lexicons import POLARITY_PAIRS
from generation.ml.saliency import (
    ClassifierInput,
    TextClassifier,
    is_word,
    label_index,
    load_classifier,
    select_rationale,
    word_saliency,
    word_spans,
)

if TYPE_CHECKING:
    import torch

    from generation.ml.hf import LoadedModel
    from generation.ml.rules.wordnet import WordNet

NAME = "rationale-infill"
MARKUP_RE = re.compile(r"<[^<>]{1,40}>")  # <br /> in IMDb reviews: never a rationale
DEFAULT_NLTK_DATA = str(Path(__file__).resolve().parents[2] / "var" / "nltk_data")

# A small label-word lexicon (``lexicons.POLARITY_PAIRS``): polarity pairs (positive, negative).
POSITIVE_WORDS = tuple(p for p, _ in POLARITY_PAIRS)
NEGATIVE_WORDS = tuple(n for _, n in POLARITY_PAIRS)
NEGATIONS = frozenset({"not", "no", "never", "n't", "nothing", "nobody", "none", "hardly", "barely"})
POSITIVE_LABELS = frozenset({"positive", "pos", "good", "favorable", "favourable"})
NEGATIVE_LABELS = frozenset({"negative", "neg", "bad", "unfavorable", "unfavourable"})


# -- WordNet ------------------------------------------------------------------------------------
def wordnet(nltk_data: str = "") -> WordNet:
    """The project's WordNet reader (``projects.ml.wordnet``) with NLTK_DATA on the search path."""
    path = nltk_data or os.environ.get("NLTK_DATA") or DEFAULT_NLTK_DATA
    from projects.ml.wordnet import english_wordnet

    try:
        wn: WordNet = english_wordnet(path)
    except LookupError as exc:
        raise GeneratorConfigError(f"WordNet not found under NLTK_DATA={path}: {exc}") from exc
    return wn


def _wn_pos(tag: str) -> str | None:
    return {"J": "a", "V": "v", "R": "r", "N": "n"}.get(tag[:1])


def _inflect(lemma: str, word: str, tag: str) -> str:
    """Crudely give ``lemma`` the inflection ``word`` has (tag: Penn POS)."""
    if lemma == word or " " in lemma:
        return lemma
    if tag in ("NNS", "VBZ"):
        return lemma + ("es" if lemma.endswith(("s", "sh", "ch", "x")) else "s")
    if tag in ("VBD", "VBN"):
        return lemma + ("d" if lemma.endswith("e") else "ed")
    if tag == "VBG":
        return (lemma[:-1] if lemma.endswith("e") and not lemma.endswith("ee") else lemma) + "ing"
    return lemma


def _clean(name: str) -> str:
    return name.replace("_", " ")


def label_substitutes(word: str, tag: str, target: str, wn: WordNet, limit: int = 4) -> list[str]:
    """Replacement words that push ``word`` towards ``target`` (most plausible first)."""
    low = word.lower()
    t = target.lower()
    out: list[str] = []
    pos = _wn_pos(tag)
    lemma = (wn.morphy(low, pos) if pos else None) or low

    def antonyms(kinds: tuple[str, ...] = ("a", "v", "r")) -> list[str]:
        if pos not in kinds:
            return []
        res = []
        for syn_pos in ("a", "s") if pos == "a" else (pos,):
            for lem in wn.lemmas(lemma, pos=syn_pos):
                for ant in lem.antonyms():
                    res.append(_inflect(_clean(ant.name()), low, tag))
        return res

    def related(kind: str) -> list[str]:
        if pos not in ("n", "v"):
            return []
        scored: list[tuple[int, int, str]] = []
        for si, syn in enumerate(wn.synsets(lemma, pos=pos)[:2]):
            if kind == "hyper":
                nbrs = syn.hypernyms()
            elif kind == "hypo":
                nbrs = syn.hyponyms()
            else:  # co-hyponyms
                nbrs = [h for hyper in syn.hypernyms() for h in hyper.hyponyms() if h != syn]
            for n in nbrs:
                lem = n.lemmas()[0]
                name = _clean(lem.name())
                if name.lower() != lemma and len(name.split()) <= 2:
                    scored.append((si, -lem.count(), name))  # first sense first, then frequent words
        return [_inflect(name, low, tag) for _, _, name in sorted(scored)[:6]]

    if t in POSITIVE_LABELS or t in NEGATIVE_LABELS:
        to_pos = t in POSITIVE_LABELS
        src, dst = (NEGATIVE_WORDS, POSITIVE_WORDS) if to_pos else (POSITIVE_WORDS, NEGATIVE_WORDS)
        out += [dst[i] for i, w in enumerate(src) if w == low]
        if low in NEGATIONS:
            out.append("")  # dropping a negation flips polarity without adding a shortcut word
        elif re.fullmatch(r"\w+n['’]t", low):
            base = low[:-3]
            out.append({"won": "will", "ca": "can", "sha": "shall"}.get(base, base))
        elif low not in dst:
            out += antonyms(("a", "r"))  # antonyms of nouns/verbs rarely carry polarity
            if tag.startswith("JJ") and not out:
                h = sum(map(ord, low))
                out += [dst[(h + k) % len(dst)] for k in range(2)]
    elif t.startswith("contradict"):
        out += antonyms() + related("co")
    elif low in NEGATIONS:
        out.append("")
    elif t.startswith("entail"):
        out += related("hyper")
    elif t.startswith("neutral"):
        out += related("hypo")
    else:
        out += antonyms()
    seen: set[str] = set()
    res = []
    for w in out:
        if w.lower() != low and w.lower() not in seen and (w or low in NEGATIONS):
            seen.add(w.lower())
            res.append(w)
    return res[:limit]


def _match_case(new: str, old: str) -> str:
    return new[:1].upper() + new[1:] if old[:1].isupper() else new


def _pos_tags(tokens: Sequence[str]) -> list[str]:
    try:
        from textblob.en.taggers import PatternTagger

        tagged = PatternTagger().tag(" ".join(tokens), tokenize=False)
        if len(tagged) == len(tokens):
            return [t for _, t in tagged]
    except Exception:  # noqa: BLE001 - tagging is best effort
        pass
    return ["NN"] * len(tokens)


# -- helpers ------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Slot:
    """One masked word: field name, character span in that field, its text and POS tag."""

    field: str
    start: int
    end: int
    text: str
    tag: str


def apply_fills(fields: dict[str, str], slots: Sequence[Slot], fills: Sequence[str]) -> dict[str, str]:
    """Replace each slot's characters by its fill (spans applied right to left per field)."""
    out = dict(fields)
    for name in fields:
        pairs = sorted(
            ((s, f) for s, f in zip(slots, fills, strict=True) if s.field == name), key=lambda x: -x[0].start
        )
        text = fields[name]
        for s, f in pairs:
            text = text[: s.start] + f + text[s.end :]
        out[name] = re.sub(r" {2,}", " ", text).strip()
    return out


def as_input(fields: dict[str, str], names: Sequence[str]) -> ClassifierInput:
    vals = [fields[n] for n in names]
    return vals[0] if len(vals) == 1 else (vals[0], vals[1])


def consistency_filter(
    classifier: TextClassifier, inputs: Sequence[ClassifierInput], targets: Sequence[str]
) -> list[tuple[bool, float]]:
    """(kept, p(target)) per input: kept when the classifier's prediction is the target
    (:func:`generation.ml.filters.consistency`; project label names matched case-insensitively)."""
    from generation.ml.filters import consistency

    if not inputs:
        return []
    idx = [label_index(classifier, t) for t in targets]
    probs = classifier.predict_proba(list(inputs))
    known = [(i, ti) for i, ti in enumerate(idx) if ti is not None]
    out: list[tuple[bool, float]] = [(False, 0.0)] * len(targets)
    if known:
        labels = list(classifier.labels)
        rows = [i for i, _ in known]
        res = consistency(probs[rows], labels, [labels[ti] for _, ti in known])
        for i, r in zip(rows, res, strict=True):
            out[i] = (r.keep, r.score)
    return out


def control_code(original_fields: dict[str, str], new_fields: dict[str, str]) -> str:
    """The pair's control code from the shared tagger (:mod:`generation.ml.tagger`); a rough
    local rule (:func:`edit_code`) when the tagger cannot be used."""
    try:
        from generation.ml.tagger import tag_pair

        return tag_pair(original_fields, new_fields).code
    except Exception:  # noqa: BLE001 - the tagger is another module's; never fail a run over a code
        return edit_code(" ".join(original_fields.values()), " ".join(new_fields.values()))


def edit_code(old: str, new: str) -> str:
    """A rough control code for a word-substitution edit."""
    from generation.ml.lexicons import NEGATION_WORDS, QUANTIFIERS

    a = [w.lower() for w in re.findall(r"\w+(?:'\w+)?", old)]
    b = [w.lower() for w in re.findall(r"\w+(?:'\w+)?", new)]
    changed = set(a) ^ set(b)
    if changed & NEGATION_WORDS:
        return "negation"
    if changed and changed <= QUANTIFIERS:
        return "quantifier"
    if len(b) > len(a):
        return "insert"
    if len(b) < len(a):
        return "delete"
    return "lexical"


def parse_sentinels(text: str, n: int) -> dict[int, str] | None:
    """``"<extra_id_0> a <extra_id_1> b"`` -> {0: "a", 1: "b"}; None unless spans 0..n-1 are all there."""
    text = re.sub(r"</s>.*$|<pad>|\[PAD\]", " ", text, flags=re.S)
    parts = re.split(r"<extra_id_(\d+)>", text)
    spans: dict[int, str] = {}
    for k in range(1, len(parts) - 1, 2):
        spans.setdefault(int(parts[k]), re.sub(r"\s+", " ", parts[k + 1]).strip())
    if any(g not in spans for g in range(n)):
        return None
    return spans


# -- the generator ------------------------------------------------------------------------------
class RationaleInfillGenerator(PerOriginalGenerator):
    name = NAME

    def __init__(
        self,
        *,
        base_classifier_path: str = "",
        classifier: TextClassifier | None = None,
        infiller: str = "auto",
        mlm_path: str = "",
        seq2seq_path: str = "",
        causal_lm_path: str = "",
        device: str = "cpu",
        top_fraction: float = 0.3,
        min_saliency: float = 0.1,
        min_confidence: float = 0.8,
        candidates_per_label: int = 3,
        edit_fields: Sequence[str] | None = None,
        min_words: int = 3,
        consistency: bool = True,
        seed: int = 0,
        nltk_data: str = "",
    ) -> None:
        if not 0 < top_fraction <= 1:
            raise GeneratorConfigError("top_fraction must be in (0, 1]")
        if not 0 <= min_confidence < 1:
            raise GeneratorConfigError("min_confidence must be in [0, 1)")
        if candidates_per_label < 1:
            raise GeneratorConfigError("candidates_per_label must be at least 1")
        # An unconfigured classifier is not an error: every original is skipped with the reason.
        self.unconfigured = ""
        if classifier is None:
            if base_classifier_path:
                classifier = load_classifier(base_classifier_path, device=device)
            else:
                self.unconfigured = (
                    "no base classifier configured: set COUNTERPART_BASE_CLASSIFIER_PATH (a local "
                    "sequence-classification model directory or a joblib scikit-learn pipeline)"
                )
        self.classifier = classifier
        self.top_fraction = top_fraction
        self.min_saliency = min_saliency
        self.min_confidence = min_confidence
        self.n = candidates_per_label
        self.edit_fields = tuple(edit_fields) if edit_fields else None
        self.min_words = min_words
        self.consistency = consistency
        self.seed = seed
        self.device = device
        self.nltk_data = nltk_data
        self.lm: LoadedModel | None = None
        self._mlm_vocab: tuple[list[str], torch.Tensor] | None = None  # vocabulary, banned ids
        if infiller == "auto":
            infiller = "seq2seq" if seq2seq_path else ("mlm" if mlm_path else "lexical")
        if infiller not in ("seq2seq", "mlm", "lexical", "causal"):
            raise GeneratorConfigError(f"infiller must be auto, seq2seq, mlm, causal or lexical, not {infiller!r}")
        self.infiller = infiller
        from generation.ml import hf

        if infiller == "seq2seq":
            self.lm = hf.load_seq2seq(seq2seq_path, device)
            tok = self.lm.tokenizer
            if tok.convert_tokens_to_ids("<extra_id_0>") in (None, tok.unk_token_id):
                raise GeneratorConfigError(f"the seq2seq model at {seq2seq_path} has no <extra_id_0> sentinel token")
        elif infiller == "mlm":
            self.lm = hf.load_masked_lm(mlm_path, device)
            if self.lm.tokenizer.mask_token_id is None:
                raise GeneratorConfigError(f"the masked LM at {mlm_path} has no mask token")
        elif infiller == "causal":
            self.lm = hf.load_causal_lm(causal_lm_path, device)
            if not getattr(self.lm.tokenizer, "is_fast", False):
                raise GeneratorConfigError(f"the causal LM at {causal_lm_path} needs a fast tokenizer (offsets)")
            self._wn = wordnet(nltk_data)
        else:
            self._wn = wordnet(nltk_data)

    # -- per original -------------------------------------------------------------------------
    def _configured_classifier(self) -> TextClassifier:
        """The base classifier (generate() skips every original while none is configured)."""
        if self.classifier is None:
            raise GeneratorConfigError(self.unconfigured)
        return self.classifier

    def _configured_lm(self) -> LoadedModel:
        """The infilling model (set unless the infiller is lexical)."""
        if self.lm is None:
            raise GeneratorConfigError(f"the {self.infiller} infiller has no model")
        return self.lm

    def _one(self, o: Original) -> Iterator[GeneratedCandidate | Skip]:
        classifier = self._configured_classifier()
        names = list(o.fields)
        if not names or len(names) > 2:
            yield Skip(o.id, f"expected one or two text fields, got {len(names)}")
            return
        for n in self.edit_fields or ():
            if n not in o.fields:
                yield Skip(o.id, f"missing field {n!r}")
                return
        empty = [n for n in names if not (o.fields.get(n) or "").strip()]
        if empty:
            yield Skip(o.id, f"empty field {empty[0]!r}")
            return
        editable_words = sum(
            1
            for n in names
            if self.edit_fields is None or n in self.edit_fields
            for a, b in word_spans(o.fields[n])
            if is_word(o.fields[n][a:b])
        )
        if editable_words < self.min_words:
            yield Skip(o.id, f"too short to perturb ({editable_words} words, needs {self.min_words})")
            return
        if not o.label:
            yield Skip(o.id, "original has no label")
            return
        gold = label_index(classifier, o.label)
        if gold is None:
            yield Skip(o.id, f"label {o.label!r} is unknown to the base classifier {classifier.labels}")
            return
        inp = as_input(o.fields, names)
        probs = classifier.predict_proba([inp])[0]
        if int(np.argmax(probs)) != gold or float(probs[gold]) <= self.min_confidence:
            yield Skip(
                o.id,
                f"base classifier not right and sure (p({o.label})={float(probs[gold]):.2f}, "
                f"needs > {self.min_confidence})",
            )
            return
        slots = self._rationale(o, names, inp, gold)
        if slots is None:
            yield Skip(o.id, f"too short to perturb (fewer than {self.min_words} words)")
            return
        if not slots:
            yield Skip(o.id, "no salient words found")
            return
        targets = [lab for lab in o.labels if lab.lower() != o.label.lower()]
        if not targets:
            yield Skip(o.id, "the project has no other label to aim for")
            return
        pending: list[tuple[str, dict[str, str]]] = []
        for ti, target in enumerate(targets):
            stop_point(self.should_stop)  # one infill (LM sampling) per target
            seen: set[tuple[str, ...]] = set()
            for fills in self._infill(o, names, slots, target, seed=self.seed + ti):
                new = apply_fills(o.fields, slots, fills)
                key = tuple(new[n] for n in names)
                if key in seen or all(new[n] == o.fields[n] for n in names):
                    continue
                seen.add(key)
                pending.append((target, new))
        if not pending:
            yield Skip(o.id, "the infiller produced no change")
            return
        verdicts = consistency_filter(classifier, [as_input(f, names) for _, f in pending], [t for t, _ in pending])
        kept = 0
        for (target, new), (ok, p) in zip(pending, verdicts, strict=True):
            if self.consistency and not ok:
                continue
            kept += 1
            yield GeneratedCandidate(
                original_id=o.id,
                fields=new,
                generator=NAME,
                perturbation=control_code(dict(o.fields), new),
                target_label=target,
                scores={
                    "p_target": round(p, 6),
                    "consistency": 1.0 if ok else 0.0,
                    "p_original": round(float(probs[gold]), 6),
                },
                meta={
                    "infiller": self.infiller,
                    "rationale": [s.text for s in slots],
                    "rationale_fields": sorted({s.field for s in slots}),
                },
            )
        if not kept:
            yield Skip(o.id, f"no candidate passed the consistency filter ({len(pending)} generated)")

    def _rationale(self, o: Original, names: list[str], inp: ClassifierInput, gold: int) -> list[Slot] | None:
        scores = word_saliency(self._configured_classifier(), inp, gold)
        flat: list[tuple[str, int, int, str, float]] = []
        for name, seg_scores in zip(names, scores, strict=True):
            text = o.fields[name]
            spans = word_spans(text)
            for (s, e), sc in zip(spans, seg_scores, strict=True):
                flat.append((name, s, e, text[s:e], float(sc)))
        markup = {name: [(m.start(), m.end()) for m in MARKUP_RE.finditer(o.fields[name])] for name in names}
        editable = [
            (self.edit_fields is None or f[0] in self.edit_fields) and not any(a <= f[1] < b for a, b in markup[f[0]])
            for f in flat
        ]
        n_words = sum(1 for f, ok in zip(flat, editable, strict=True) if ok and is_word(f[3]))
        if n_words < self.min_words:
            return None
        chosen = select_rationale(
            [f[4] for f in flat], [f[3] for f in flat], self.top_fraction, self.min_saliency, editable
        )
        tags: dict[str, list[str]] = {}
        slots = []
        for i in chosen:
            name, s, e, text, _ = flat[i]
            if name not in tags:
                tags[name] = _pos_tags([o.fields[name][a:b] for a, b in word_spans(o.fields[name])])
            wi = next(k for k, (a, _) in enumerate(word_spans(o.fields[name])) if a == s)
            slots.append(Slot(name, s, e, text, tags[name][wi]))
        return slots

    # -- infillers ----------------------------------------------------------------------------
    def _infill(self, o: Original, names: list[str], slots: list[Slot], target: str, seed: int) -> list[list[str]]:
        if self.infiller == "lexical":
            return self._lexical(slots, target)
        if self.infiller == "mlm":
            return self._mlm(o, names, slots, target, seed)
        if self.infiller == "causal":
            return self._causal(o, names, slots, target, seed)
        return self._seq2seq(o, names, slots, target, seed)

    def _causal(self, o: Original, names: list[str], slots: list[Slot], target: str, seed: int) -> list[list[str]]:
        import torch

        lm = self._configured_lm()
        tok, model = lm.tokenizer, lm.model
        prompt = f"A {target} {names[0] if len(names) == 1 else 'pair'}, with words changed:\n"
        starts: dict[str, int] = {}
        body = ""
        for n in names:
            head = "" if len(names) == 1 else f"{n.capitalize()}: "
            starts[n] = len(prompt) + len(body) + len(head)
            body += head + o.fields[n] + "\n"
        text = prompt + body
        enc = tok(text, return_offsets_mapping=True, truncation=True, max_length=1024, add_special_tokens=False)
        ids, offsets = list(enc["input_ids"]), [tuple(x) for x in enc["offset_mapping"]]
        bos = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
        if bos is not None:
            ids, offsets = [bos, *ids], [(0, 0), *offsets]
        positions: list[int] = []
        for sl in slots:
            at = starts[sl.field] + sl.start
            pos = next((i for i, (a, b) in enumerate(offsets) if i and b > at), None)
            if pos is None:
                return []  # truncated away
            positions.append(pos)
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids], device=self.device)).logits[0].float().cpu()
        options: list[tuple[list[str], torch.Tensor]] = []
        for sl, pos in zip(slots, positions, strict=True):
            # byte-level BPE marks a word start with a leading space: then a fill must have one
            spaced = tok.decode([ids[pos]])[:1].isspace()
            logp = torch.log_softmax(logits[pos - 1], dim=-1)
            top = torch.topk(logp, k=min(200, logp.shape[0]))
            words: list[str] = []
            scores: list[float] = []
            for lp, i in zip(top.values.tolist(), top.indices.tolist(), strict=True):
                piece = tok.decode([i])
                w = piece.strip()
                if (
                    (piece[:1].isspace() or not spaced)
                    and w.isalpha()
                    and len(w) > 1
                    and w.lower() != sl.text.lower()
                    and w.lower() not in (x.lower() for x in words)
                    and self._wn.synsets(w.lower())
                ):
                    words.append(_match_case(w, sl.text))
                    scores.append(lp)
                if len(words) >= 20:
                    break
            options.append((words, torch.tensor(scores)))
        if not any(words for words, _ in options):
            return []
        gen = torch.Generator().manual_seed(seed)
        ranked: list[tuple[float, list[str]]] = []
        for v in range(self.n):
            fills, total = [], 0.0
            for sl, (words, sc) in zip(slots, options, strict=True):
                if not words:
                    fills.append(sl.text)
                    continue
                j = 0 if v == 0 else int(torch.multinomial(torch.softmax(sc / 0.7, dim=-1), 1, generator=gen))
                fills.append(words[j])
                total += float(sc[j])
            if fills not in [f for _, f in ranked]:
                ranked.append((total, fills))
        return [f for _, f in sorted(ranked, key=lambda x: -x[0])]

    def _lexical(self, slots: list[Slot], target: str) -> list[list[str]]:
        options = [label_substitutes(s.text, s.tag, target, self._wn) for s in slots]
        out: list[list[str]] = []
        for v in range(self.n):
            fills = []
            for s, opts in zip(slots, options, strict=True):
                fills.append(_match_case(opts[v % len(opts)], s.text) if opts else s.text)
            out.append(fills)
        # one candidate that changes only the most useful single word (a minimal edit)
        for s, opts in zip(slots, options, strict=True):
            if opts:
                out.append([_match_case(opts[0], x.text) if x is s else x.text for x in slots])
                break
        return out

    def _mlm(self, o: Original, names: list[str], slots: list[Slot], target: str, seed: int) -> list[list[str]]:
        import torch

        lm = self._configured_lm()
        tok, model = lm.tokenizer, lm.model
        mask = tok.mask_token
        masked = apply_fills(o.fields, slots, [mask] * len(slots))
        segs = [masked[n] for n in names]
        segs[0] = f"{target} : {segs[0]}"
        enc = tok(segs[0], segs[1] if len(segs) > 1 else None, return_tensors="pt", truncation=True, max_length=512)
        enc = {k: v.to(self.device) for k, v in enc.items()}
        positions = (enc["input_ids"][0] == tok.mask_token_id).nonzero().flatten().tolist()
        if len(positions) != len(slots):  # truncated away
            return []
        if self._mlm_vocab is None:  # computed once: whole-word, alphabetic, non-special tokens only
            vocab_tokens = tok.convert_ids_to_tokens(list(range(len(tok))))
            banned = set(tok.all_special_ids) | {
                i
                for i, t in enumerate(vocab_tokens)
                if t is None or t.startswith("##") or not re.search(r"[A-Za-z]", t)
            }
            self._mlm_vocab = (
                vocab_tokens,
                torch.tensor(sorted(b for b in banned if b < model.config.vocab_size), dtype=torch.long),
            )
        vocab_tokens, banned_t = self._mlm_vocab
        gen = torch.Generator().manual_seed(seed)
        out: list[list[str]] = []
        for v in range(self.n):
            ids = enc["input_ids"].clone()
            fills = []
            for pos, slot in zip(positions, slots, strict=True):
                with torch.no_grad():
                    logits = model(**{**enc, "input_ids": ids}).logits[0, pos].float().cpu()
                logits[banned_t] = -float("inf")
                for own in tok(slot.text.lower(), add_special_tokens=False)["input_ids"][:1]:
                    logits[own] = -float("inf")
                if v == 0:
                    choice = int(torch.argmax(logits))
                else:
                    top = torch.topk(logits, k=min(20, int(torch.isfinite(logits).sum())))
                    probs = torch.softmax(top.values / 0.7, dim=-1)
                    choice = int(top.indices[torch.multinomial(probs, 1, generator=gen)])
                ids[0, pos] = choice
                fills.append(_match_case(tok.convert_tokens_to_string([vocab_tokens[choice]]).strip(), slot.text))
            out.append(fills)
        return out

    def _seq2seq(self, o: Original, names: list[str], slots: list[Slot], target: str, seed: int) -> list[list[str]]:
        import torch

        from generation.ml import hf

        lm = self._configured_lm()
        tok, model = lm.tokenizer, lm.model
        # group adjacent masked words (same field, only spaces between) into one sentinel span
        groups: list[list[int]] = []
        for i, s in enumerate(slots):
            prev = slots[i - 1] if i else None
            if prev and prev.field == s.field and not o.fields[s.field][prev.end : s.start].strip():
                groups[-1].append(i)
            else:
                groups.append([i])
        sentinel_fills = [""] * len(slots)
        for g, idx in enumerate(groups):
            sentinel_fills[idx[0]] = f"<extra_id_{g}>"
        masked = apply_fills(o.fields, slots, sentinel_fills)
        body = masked[names[0]] if len(names) == 1 else " ".join(f"{n}: {masked[n]}" for n in names)
        enc = tok(f"{target}: {body}", return_tensors="pt", truncation=True, max_length=512)
        enc = {k: v.to(self.device) for k, v in enc.items()}
        torch.manual_seed(seed)
        with torch.no_grad():
            outs = model.generate(
                **enc,
                do_sample=True,
                top_p=0.9,
                temperature=0.7,
                num_return_sequences=self.n,
                max_new_tokens=8 * len(groups) + 8,
                stopping_criteria=hf.stop_criteria(self.should_stop),
            )
        stop_point(self.should_stop)
        results: list[list[str]] = []
        drop = {t for t in (tok.pad_token, tok.eos_token) if t}
        for seq in outs:
            text = tok.decode(seq.tolist(), skip_special_tokens=False)
            for t in drop:
                text = text.replace(t, " ")
            spans = parse_sentinels(text, len(groups))
            if spans is None:
                continue
            fills = [""] * len(slots)
            for g, idx in enumerate(groups):
                fills[idx[0]] = spans[g]
            results.append(fills)
        return results
