"""Which words does a classifier rely on? Word-level saliency for rationale masking (AutoCAD).

A classifier is any object with ``labels`` and ``predict_proba(inputs) -> (n, len(labels))``,
where an input is one text or a ``(text_a, text_b)`` pair (NLI). It may also have a
``word_saliency(input, label_index)`` method; :func:`word_saliency` uses it when present and
otherwise falls back to leave-one-out (drop in p(label) when the word is removed).

Three ways to score words:

* torch models — :func:`gradient_token_saliency`: the L2 norm of the gradient of the label's
  logit w.r.t. each input token embedding, renormalised over the tokens; a word's score is the
  max over its sub-tokens (:func:`word_scores_from_tokens`).
* linear bag-of-words models (scikit-learn vectoriser + linear model) —
  :func:`linear_word_saliency`: |w_label · x| restricted to the features the word produces.
* anything else — :func:`leave_one_out_saliency`.

Adapters: :class:`HFClassifier` (a local ``AutoModelForSequenceClassification``) and
:class:`SklearnClassifier` (a fitted pipeline, or a joblib file holding one).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

import numpy as np
from numpy.typing import NDArray

from generation.ml.base import GeneratorConfigError

ClassifierInput = str | tuple[str, str]
Proba = NDArray[np.floating]  # (n, len(labels)) class probabilities

# Models, tokenizers and scikit-learn pipelines are Any below: scikit-learn is untyped, and
# transformers types model.to(device) wrongly and its Auto* loaders and tokenizer calls as Any.

WORD_RE = re.compile(r"\w+(?:[-'’]\w+)*|[^\w\s]")


def word_spans(text: str) -> list[tuple[int, int]]:
    """Character spans of the words and punctuation marks of ``text``."""
    return [(m.start(), m.end()) for m in WORD_RE.finditer(text)]


def is_word(token: str) -> bool:
    return bool(token) and (token[0].isalnum() or token[0] == "_")


@runtime_checkable
class TextClassifier(Protocol):
    labels: tuple[str, ...]

    def predict_proba(self, inputs: Sequence[ClassifierInput]) -> Proba: ...


@runtime_checkable
class WordSalient(Protocol):
    """A classifier with its own word saliency (per segment of the input, one score per
    :func:`word_spans` entry)."""

    def word_saliency(self, inp: ClassifierInput, label_index: int) -> list[list[float]]: ...


def label_index(classifier: TextClassifier, label: str) -> int | None:
    """Index of ``label`` in the classifier's labels (case-insensitive), or None."""
    low = [str(x).lower() for x in classifier.labels]
    try:
        return low.index(label.lower())
    except ValueError:
        return None


# -- word scores from token scores ---------------------------------------------------------
def word_scores_from_tokens(
    token_scores: Sequence[float],
    token_offsets: Sequence[tuple[int, int] | None],
    spans: Sequence[tuple[int, int]],
) -> list[float]:
    """Word score = max over the sub-tokens whose character offsets overlap the word.

    ``token_offsets[i]`` is None for special tokens (and tokens of another segment)."""
    out = [0.0] * len(spans)
    if not spans:
        return out
    starts = [s for s, _ in spans]
    import bisect

    for score, off in zip(token_scores, token_offsets, strict=True):
        if off is None:
            continue
        a, b = off
        if b <= a:
            continue
        i = max(0, bisect.bisect_right(starts, a) - 1)
        while i < len(spans) and spans[i][0] < b:
            s, e = spans[i]
            if s < b and a < e:
                out[i] = max(out[i], float(score))
            i += 1
    return out


# -- gradient saliency (torch) -------------------------------------------------------------
@dataclass(frozen=True)
class TokenSaliency:
    """Per-token scores of one input, with each token's segment (0 = first text, 1 = second)
    and character offsets inside that segment (None for special tokens)."""

    scores: list[float]
    segments: list[int | None]
    offsets: list[tuple[int, int] | None]
    logits: list[float]


def gradient_token_saliency(
    model: Any, tokenizer: Any, inp: ClassifierInput, label_index: int, device: str = "cpu", max_length: int = 512
) -> TokenSaliency:
    """Gradient-norm saliency of every input token for the logit of ``label_index``
    (Li et al. 2016 as used by AutoCAD): s_t = ||d logit / d e_t||_2, renormalised to sum 1."""
    import torch

    a, b = (inp, None) if isinstance(inp, str) else inp
    enc = tokenizer(a, b, return_tensors="pt", truncation=True, max_length=max_length, return_offsets_mapping=True)
    offsets_t = enc.pop("offset_mapping")[0].tolist()
    seq_ids = enc.sequence_ids(0)
    enc = {k: v.to(device) for k, v in enc.items()}
    emb_layer = model.get_input_embeddings()
    was_training = model.training
    model.eval()
    with torch.enable_grad():
        embeds = emb_layer(enc["input_ids"]).detach().clone().requires_grad_(True)
        kwargs = {k: v for k, v in enc.items() if k != "input_ids"}
        out = model(inputs_embeds=embeds, **kwargs)
        logits = out.logits[0]
        model.zero_grad(set_to_none=True)
        logits[label_index].backward()
        grad = embeds.grad[0].detach()
    if was_training:
        model.train()
    norms = grad.norm(dim=-1).float().cpu().numpy()
    special = tokenizer.all_special_ids
    ids = enc["input_ids"][0].tolist()
    offsets: list[tuple[int, int] | None] = []
    segments: list[int | None] = []
    for tid, off, sid in zip(ids, offsets_t, seq_ids, strict=True):
        if sid is None or tid in special or off[1] <= off[0]:
            offsets.append(None)
            segments.append(None)
        else:
            offsets.append((int(off[0]), int(off[1])))
            segments.append(int(sid))
    mask = np.array([o is not None for o in offsets], dtype=bool)
    total = float(norms[mask].sum()) if mask.any() else 0.0
    scores = (norms / total).tolist() if total > 0 else norms.tolist()
    return TokenSaliency(
        scores=[float(s) for s in scores],
        segments=segments,
        offsets=offsets,
        logits=logits.detach().float().cpu().tolist(),
    )


def _segments(inp: ClassifierInput) -> list[str]:
    return [inp] if isinstance(inp, str) else [inp[0], inp[1]]


def gradient_word_saliency(
    model: Any, tokenizer: Any, inp: ClassifierInput, label_index: int, device: str = "cpu"
) -> list[list[float]]:
    """Per segment, one score per :func:`word_spans` entry (max over its sub-tokens)."""
    ts = gradient_token_saliency(model, tokenizer, inp, label_index, device=device)
    out = []
    for seg_i, text in enumerate(_segments(inp)):
        offs = [o if s == seg_i else None for o, s in zip(ts.offsets, ts.segments, strict=True)]
        out.append(word_scores_from_tokens(ts.scores, offs, word_spans(text)))
    return out


# -- linear saliency (bag of words) ---------------------------------------------------------
def linear_word_saliency(pipeline: Any, text: str, label_index: int) -> list[float] | None:
    """|w_label · x| per word for a fitted scikit-learn ``Pipeline([vectoriser, linear])``
    (TF-IDF / counts + logistic regression or a linear SVM): each word gets the largest
    |w_label,j · x_j| over the features j it takes part in (its unigram and any n-gram
    containing it). None when the pipeline is not of that shape."""
    steps = getattr(pipeline, "steps", None)
    if not steps or len(steps) < 2:
        return None
    vec, clf = steps[0][1], steps[-1][1]
    coef = getattr(clf, "coef_", None)
    if coef is None or not hasattr(vec, "build_analyzer") or not hasattr(vec, "vocabulary_"):
        return None
    coef = np.asarray(coef)
    # binary: one weight vector, for classes_[1]
    w = (coef[0] if label_index == 1 else -coef[0]) if coef.shape[0] == 1 else coef[label_index]
    x = pipeline[:-1].transform([text]) if len(steps) > 2 else vec.transform([text])
    x = x.tocsr() if hasattr(x, "tocsr") else x
    contrib: dict[str, float] = {}
    inv = {j: term for term, j in vec.vocabulary_.items()}
    for j, val in zip(x.indices, x.data, strict=True):
        contrib[inv[int(j)]] = abs(float(w[int(j)]) * float(val))
    analyzer = vec.build_analyzer()
    part_scores: dict[str, float] = {}
    for term, c in contrib.items():
        for part in term.split(" "):
            part_scores[part] = max(part_scores.get(part, 0.0), c)
    out = []
    for s, e in word_spans(text):
        toks = analyzer(text[s:e])
        out.append(max((part_scores.get(t, 0.0) for t in toks), default=0.0))
    total = sum(out)
    return [v / total for v in out] if total > 0 else out


# -- leave-one-out (any classifier) ---------------------------------------------------------
def leave_one_out_saliency(classifier: TextClassifier, inp: ClassifierInput, label_index: int) -> list[list[float]]:
    """Drop in p(label) when each word is deleted (clipped at 0), per segment."""
    segs = _segments(inp)
    variants: list[ClassifierInput] = []
    index: list[tuple[int, int]] = []
    for si, text in enumerate(segs):
        for wi, (s, e) in enumerate(word_spans(text)):
            new = (text[:s] + text[e:]).replace("  ", " ").strip()
            parts = list(segs)
            parts[si] = new
            variants.append(parts[0] if len(parts) == 1 else (parts[0], parts[1]))
            index.append((si, wi))
    out = [[0.0] * len(word_spans(t)) for t in segs]
    if not variants:
        return out
    base = float(classifier.predict_proba([inp])[0][label_index])
    probs = classifier.predict_proba(variants)[:, label_index]
    for (si, wi), p in zip(index, probs, strict=True):
        out[si][wi] = max(0.0, base - float(p))
    return out


def word_saliency(classifier: TextClassifier, inp: ClassifierInput, label_index: int) -> list[list[float]]:
    """Per segment of ``inp``, one score per :func:`word_spans` entry."""
    if isinstance(classifier, WordSalient) and callable(classifier.word_saliency):
        return classifier.word_saliency(inp, label_index)
    return leave_one_out_saliency(classifier, inp, label_index)


# -- rationale selection ---------------------------------------------------------------------
def select_rationale(
    scores: Sequence[float],
    tokens: Sequence[str],
    top_fraction: float = 0.3,
    min_saliency: float = 0.1,
    eligible: Sequence[bool] | None = None,
) -> list[int]:
    """Indices of the top ``top_fraction`` of the (eligible, non-punctuation) words, keeping
    only those whose score is at least ``min_saliency`` times the largest score."""
    cand = [i for i, t in enumerate(tokens) if is_word(t) and (eligible is None or eligible[i])]
    if not cand:
        return []
    top = max(scores[i] for i in cand)
    if top <= 0:
        return []
    k = max(1, math.ceil(top_fraction * len(cand)))
    ranked = sorted(cand, key=lambda i: (-scores[i], i))[:k]
    return sorted(i for i in ranked if scores[i] >= min_saliency * top)


# -- adapters ------------------------------------------------------------------------------------
class HFClassifier:
    """A local ``AutoModelForSequenceClassification`` as a :class:`TextClassifier`, with true
    gradient saliency. Labels come from ``config.id2label``."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        labels: Sequence[str] | None = None,
        device: str = "cpu",
        batch_size: int = 32,
        max_length: int = 256,
    ) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.device = device
        self.batch_size = batch_size
        self.max_length = max_length
        if labels is None:
            id2label = getattr(model.config, "id2label", None) or {}
            labels = [str(id2label[i]) for i in sorted(id2label)]
        self.labels = tuple(labels)
        if len(self.labels) != int(model.config.num_labels):
            raise GeneratorConfigError(
                f"classifier has {model.config.num_labels} outputs but {len(self.labels)} label names"
            )

    @classmethod
    def from_path(cls, path: str, device: str = "cpu") -> HFClassifier:
        from generation.ml.hf import load_sequence_classifier

        lm = load_sequence_classifier(path, device)
        return cls(lm.model, lm.tokenizer, device=device)

    def predict_proba(self, inputs: Sequence[ClassifierInput]) -> Proba:
        import torch

        out = []
        for i in range(0, len(inputs), self.batch_size):
            chunk = list(inputs[i : i + self.batch_size])
            a = [x if isinstance(x, str) else x[0] for x in chunk]
            b = None if all(isinstance(x, str) for x in chunk) else ["" if isinstance(x, str) else x[1] for x in chunk]
            enc = self.tokenizer(a, b, return_tensors="pt", padding=True, truncation=True, max_length=self.max_length)
            enc = {k: v.to(self.device) for k, v in enc.items()}
            with torch.no_grad():
                logits = self.model(**enc).logits
            out.append(torch.softmax(logits.float(), dim=-1).cpu().numpy())
        if not out:
            return np.zeros((0, len(self.labels)))
        return np.concatenate(out)

    def word_saliency(self, inp: ClassifierInput, label_index: int) -> list[list[float]]:
        return gradient_word_saliency(self.model, self.tokenizer, inp, label_index, device=self.device)


class SklearnClassifier:
    """A fitted scikit-learn pipeline (text in, ``predict_proba`` out) as a
    :class:`TextClassifier`. Pairs are joined with ``joiner``. Linear bag-of-words pipelines
    get |w·x| saliency; other pipelines leave-one-out."""

    def __init__(self, pipeline: Any, joiner: str = " ") -> None:
        if not hasattr(pipeline, "predict_proba"):
            raise GeneratorConfigError("the scikit-learn classifier has no predict_proba")
        self.pipeline = pipeline
        self.joiner = joiner
        self.labels = tuple(str(c) for c in pipeline.classes_)

    @classmethod
    def from_path(cls, path: str) -> SklearnClassifier:
        p = Path(path)
        if not p.is_file():
            raise GeneratorConfigError(f"scikit-learn classifier file not found: {p}")
        try:
            import joblib

            return cls(joblib.load(p))
        except GeneratorConfigError:
            raise
        except Exception as exc:
            raise GeneratorConfigError(f"cannot load the scikit-learn classifier at {p}: {exc}") from exc

    def _text(self, inp: ClassifierInput) -> str:
        return inp if isinstance(inp, str) else self.joiner.join(inp)

    def predict_proba(self, inputs: Sequence[ClassifierInput]) -> Proba:
        if not inputs:
            return np.zeros((0, len(self.labels)))
        return np.asarray(self.pipeline.predict_proba([self._text(x) for x in inputs]), dtype=float)

    def word_saliency(self, inp: ClassifierInput, label_index: int) -> list[list[float]]:
        segs = _segments(inp)
        scores = [linear_word_saliency(self.pipeline, s, label_index) for s in segs]
        if any(s is None for s in scores):
            return leave_one_out_saliency(self, inp, label_index)
        return [s for s in scores if s is not None]


def load_classifier(path: str, device: str = "cpu") -> TextClassifier:
    """A classifier from a local path: a directory is a HF sequence-classification model, a
    file (``.joblib``/``.pkl``) a pickled scikit-learn pipeline."""
    if not path or not str(path).strip():
        raise GeneratorConfigError("no classifier configured (empty path)")
    p = Path(path)
    if p.is_dir():
        return HFClassifier.from_path(str(p), device=device)
    if p.is_file():
        return SklearnClassifier.from_path(str(p))
    raise GeneratorConfigError(f"classifier path does not exist: {p}")
