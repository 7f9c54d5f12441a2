"""f' = a fine-tuned sequence classifier (MiniLM by default) for the augmentation evaluation.
No Django; torch and transformers imported lazily.

CPU-feasible by caps: ``max_length`` word pieces per input (two-field tasks are encoded as a
text pair), ``epochs`` passes, AdamW with linear decay. Runs on ``device`` (``cuda`` where
``COUNTERPART_DEVICE`` says so). The encoder weights come from a local path; the
classification head is new (initialised from ``seed``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from labeling.ml.base_classifier import Proba, _check_fit_data


class FineTunedClassifier:
    def __init__(
        self,
        labels: Sequence[str],
        fields: Sequence[str],
        model_path: str,
        *,
        device: str = "cpu",
        seed: int = 0,
        epochs: int = 1,
        max_length: int = 128,
        batch_size: int = 16,
        learning_rate: float = 5e-5,
    ) -> None:
        self.labels = list(labels)
        self.fields = list(fields)
        self.model_path = model_path
        self.device = device
        self.seed = seed
        self.epochs = epochs
        self.max_length = max_length
        self.batch_size = batch_size
        self.learning_rate = learning_rate
        self._model: Any = None
        self._tokenizer: Any = None

    def _encode(self, records: Sequence[dict[str, str]]) -> Any:
        cols = [[r.get(f, "") or "" for r in records] for f in self.fields[:2]]
        return self._tokenizer(
            *cols, truncation=True, max_length=self.max_length, padding=True, return_tensors="pt"
        ).to(self.device)

    def fit(self, records: Sequence[dict[str, str]], y: Sequence[str]) -> FineTunedClassifier:
        import torch
        from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup

        yi = _check_fit_data(y, self.labels)
        torch.manual_seed(self.seed)
        self._tokenizer = AutoTokenizer.from_pretrained(self.model_path, local_files_only=True)
        self._model = AutoModelForSequenceClassification.from_pretrained(
            self.model_path,
            local_files_only=True,
            num_labels=len(self.labels),
            id2label=dict(enumerate(self.labels)),
            label2id={lab: i for i, lab in enumerate(self.labels)},
            ignore_mismatched_sizes=True,
            dtype=torch.float32,  # fine-tuned in fp32 whatever the checkpoint's dtype
        ).to(self.device)
        model = self._model
        opt = torch.optim.AdamW(model.parameters(), lr=self.learning_rate)
        steps_per_epoch = (len(records) + self.batch_size - 1) // self.batch_size
        sched = get_linear_schedule_with_warmup(
            opt, int(0.1 * steps_per_epoch * self.epochs), steps_per_epoch * self.epochs
        )
        rng = np.random.default_rng(self.seed)
        model.train()
        for _ in range(self.epochs):
            order = rng.permutation(len(records))
            for s in range(0, len(order), self.batch_size):
                rows = order[s : s + self.batch_size]
                enc = self._encode([records[int(i)] for i in rows])
                target = torch.as_tensor(yi[rows], device=self.device)
                loss = model(**enc, labels=target).loss
                loss.backward()
                torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
                opt.step()
                sched.step()
                opt.zero_grad()
        model.eval()
        return self

    def predict_proba(self, records: Sequence[dict[str, str]]) -> Proba:
        import torch

        if self._model is None:
            raise RuntimeError("the fine-tuned classifier is not trained")
        out = []
        with torch.no_grad():
            for s in range(0, len(records), 64):
                logits = self._model(**self._encode(records[s : s + 64])).logits
                out.append(torch.softmax(logits.float(), dim=-1).cpu().numpy())
        p: Proba = np.vstack(out) if out else np.zeros((0, len(self.labels)))
        return p
