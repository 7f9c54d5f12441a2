"""f, the base classifier trained on a project's originals. No Django; torch imported lazily.

Three backbones, one interface (``fit(records, labels)``, ``predict_proba(records)``, where a
record is a ``{field: text}`` dict):

- ``EmbeddingClassifier`` (default): MiniLM sentence embeddings per field ([u, v, |u-v|, u*v]
  for two fields) and a logistic regression.
- ``TfidfClassifier``: word and bigram TF-IDF of the field-tagged text and a logistic regression.
- ``HFSequenceClassifier``: a Hugging Face sequence-classification model from a local path
  (already trained; not fitted here). Its ``id2label`` names must be the project's labels, or
  its number of labels must equal the project's (then mapped by position).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from labeling.ml.features import Embed, Floats, LabelIndex, embed_fields
from labeling.ml.runtime import blas_threads

Proba = NDArray[np.floating]  # (n, n_labels) class probabilities (float32 from torch models)


class TooFewLabels(ValueError):
    """Not enough labelled data to train (or a label class with none)."""


class BaseClassifier(Protocol):
    labels: list[str]

    def fit(self, records: Sequence[dict[str, str]], y: Sequence[str]) -> BaseClassifier: ...

    def predict_proba(self, records: Sequence[dict[str, str]]) -> Proba: ...


class SklearnClassifier(Protocol):
    """What is used of a scikit-learn classifier (here a ``Pipeline`` ending in a logistic
    regression); scikit-learn itself is untyped."""

    classes_: LabelIndex  # the label indices seen in fit, in the order of the probability columns

    def fit(self, X: ArrayLike, y: LabelIndex, **fit_params: object) -> SklearnClassifier: ...

    def predict_proba(self, X: ArrayLike) -> Proba: ...

    def predict_log_proba(self, X: ArrayLike) -> Proba: ...


def _check_fit_data(y: Sequence[str], labels: Sequence[str], minimum: int = 2) -> LabelIndex:
    index = {lab: i for i, lab in enumerate(labels)}
    bad = sorted({v for v in y if v not in index})
    if bad:
        raise ValueError(f"labels not in the label set: {', '.join(bad)}")
    yi = np.asarray([index[v] for v in y], dtype=int)
    missing = [labels[i] for i in range(len(labels)) if not np.any(yi == i)]
    if len(yi) < minimum or missing:
        raise TooFewLabels(
            f"the base classifier needs labelled originals of every label; have {len(yi)}"
            + (f", none for: {', '.join(missing)}" if missing else "")
        )
    return yi


def _trained(model: SklearnClassifier | None) -> SklearnClassifier:
    if model is None:
        raise RuntimeError("the base classifier is not trained")
    return model


def _full_proba(model: SklearnClassifier, X: Floats, n_labels: int) -> Proba:
    p = model.predict_proba(X)
    out = np.zeros((len(X), n_labels), dtype=np.float64)
    out[:, model.classes_] = p
    return out


def sentence_pair_matrix(emb: Floats) -> Floats:
    """(n, fields, d) -> per-record features: the embeddings, plus |u-v| and u*v of the first two."""
    n = emb.shape[0]
    parts = [emb.reshape(n, -1)]
    if emb.shape[1] >= 2:
        u, v = emb[:, 0], emb[:, 1]
        parts += [np.abs(u - v), u * v]
    return np.hstack(parts)


class EmbeddingClassifier:
    def __init__(
        self,
        labels: Sequence[str],
        fields: Sequence[str],
        embed: Embed | None = None,
        C: float = 1.0,
        relations: bool = True,
    ) -> None:
        self.labels = list(labels)
        self.fields = list(fields)
        self.embed = embed
        self.C = C
        # two-field tasks: also the word-level relation of the fields (edits.relation_features)
        self.relations = relations
        self.model: SklearnClassifier | None = None

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state["embed"] = None  # the encoder is re-attached after loading
        return state

    def _X(self, records: Sequence[dict[str, str]]) -> Floats:
        if self.embed is None:
            raise RuntimeError("EmbeddingClassifier needs an embed function (attach .embed after loading)")
        X = sentence_pair_matrix(embed_fields(records, self.fields, self.embed))
        # models pickled before the relation features existed have no ``relations`` attribute
        if getattr(self, "relations", False) and len(self.fields) >= 2:
            from labeling.ml.edits import relation_features

            X = np.hstack([X, np.stack([relation_features(r, self.fields) for r in records])])
        return X

    def fit(self, records: Sequence[dict[str, str]], y: Sequence[str]) -> EmbeddingClassifier:
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline
        from sklearn.preprocessing import StandardScaler

        yi = _check_fit_data(y, self.labels)
        self.model = make_pipeline(StandardScaler(), LogisticRegression(C=self.C * 0.01, max_iter=2000))
        X = self._X(records)
        with blas_threads():
            self.model.fit(X, yi)
        return self

    def predict_proba(self, records: Sequence[dict[str, str]]) -> Proba:
        model = _trained(self.model)
        X = self._X(records)
        with blas_threads():
            return _full_proba(model, X, len(self.labels))


class TfidfClassifier:
    def __init__(self, labels: Sequence[str], fields: Sequence[str], C: float = 4.0) -> None:
        self.labels = list(labels)
        self.fields = list(fields)
        self.C = C
        self.model: SklearnClassifier | None = None

    def _texts(self, records: Sequence[dict[str, str]]) -> list[str]:
        return [
            " ".join(
                " ".join(f"{k}_{w}" for w in (r.get(f, "") or "").lower().split()) for k, f in enumerate(self.fields)
            )
            for r in records
        ]

    def fit(self, records: Sequence[dict[str, str]], y: Sequence[str]) -> TfidfClassifier:
        from sklearn.feature_extraction.text import TfidfVectorizer
        from sklearn.linear_model import LogisticRegression
        from sklearn.pipeline import make_pipeline

        yi = _check_fit_data(y, self.labels)
        self.model = make_pipeline(
            TfidfVectorizer(ngram_range=(1, 2), min_df=1, sublinear_tf=True),
            LogisticRegression(C=self.C, max_iter=2000),
        )
        with blas_threads():
            self.model.fit(self._texts(records), yi)
        return self

    def predict_proba(self, records: Sequence[dict[str, str]]) -> Proba:
        model = _trained(self.model)
        p = model.predict_proba(self._texts(records))
        out = np.zeros((len(records), len(self.labels)))
        out[:, model.classes_] = p
        return out


class HFSequenceClassifier:
    """Inference with a local sequence-classification model; ``fit`` only checks the labels."""

    def __init__(
        self,
        labels: Sequence[str],
        fields: Sequence[str],
        model_path: str,
        device: str = "cpu",
        batch_size: int = 32,
        max_length: int = 256,
    ) -> None:
        self.labels = list(labels)
        self.fields = list(fields)
        self.model_path = model_path
        self.device = device
        self.batch_size = batch_size
        self.max_length = max_length
        # transformers objects, loaded in _load: Any, as transformers types model.to(device)
        # wrongly and its Auto* loaders and tokenizer calls as Any
        self._model: Any = None
        self._tokenizer: Any = None
        self._order: list[int] | None = None

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state["_model"] = None
        state["_tokenizer"] = None
        return state

    def _load(self) -> None:
        if self._model is not None:
            return
        from pathlib import Path

        if not Path(self.model_path).is_dir():
            raise FileNotFoundError(f"base classifier model directory not found: {self.model_path}")
        from transformers import AutoModelForSequenceClassification, AutoTokenizer

        self._tokenizer = AutoTokenizer.from_pretrained(self.model_path, local_files_only=True)
        self._model = AutoModelForSequenceClassification.from_pretrained(self.model_path, local_files_only=True)
        self._model.to(self.device).eval()
        id2label = {int(k): str(v).lower() for k, v in (self._model.config.id2label or {}).items()}
        n = int(self._model.config.num_labels)
        names = [id2label.get(i, "") for i in range(n)]
        wanted = [lab.lower() for lab in self.labels]
        if sorted(names) == sorted(wanted):
            self._order = [names.index(lab) for lab in wanted]
        elif n == len(self.labels):
            self._order = list(range(n))
        else:
            raise ValueError(
                f"model at {self.model_path} has {n} labels ({', '.join(names)}); the project has "
                f"{len(self.labels)} ({', '.join(self.labels)})"
            )

    def fit(self, records: Sequence[dict[str, str]], y: Sequence[str]) -> HFSequenceClassifier:
        self._load()
        return self

    def predict_proba(self, records: Sequence[dict[str, str]]) -> Proba:
        import torch

        self._load()
        assert self._order is not None
        out = []
        with torch.no_grad():
            for i in range(0, len(records), self.batch_size):
                batch = records[i : i + self.batch_size]
                cols = [[r.get(f, "") or "" for r in batch] for f in self.fields[:2]]
                enc = self._tokenizer(
                    *cols, truncation=True, max_length=self.max_length, padding=True, return_tensors="pt"
                ).to(self.device)
                logits = self._model(**enc).logits
                out.append(torch.softmax(logits.float(), dim=-1).cpu().numpy())
        p: Proba = np.vstack(out) if out else np.zeros((0, len(self.labels)))
        return p[:, self._order]


def make_base_classifier(
    kind: str,
    *,
    labels: Sequence[str],
    fields: Sequence[str],
    embed: Embed | None = None,
    model_path: str = "",
    device: str = "cpu",
) -> BaseClassifier:
    if kind == "minilm":
        return EmbeddingClassifier(labels, fields, embed)
    if kind == "tfidf":
        return TfidfClassifier(labels, fields)
    if kind == "hf":
        if not model_path:
            raise ValueError("the 'hf' base classifier needs a local model path")
        return HFSequenceClassifier(labels, fields, model_path, device=device)
    raise ValueError(f"unknown base classifier {kind!r}; choose minilm, tfidf or hf")


def fold_of(key: str, k: int) -> int:
    import hashlib

    return int(hashlib.sha1(key.encode("utf-8")).hexdigest()[:8], 16) % k


def record_key(record: dict[str, str]) -> str:
    return "\x1f".join(f"{f}={v}" for f, v in sorted(record.items()))


class CrossFitted:
    """k copies of f, copy j trained on the originals outside fold j (folds by a hash of the
    original's text). Each pair is scored by the copy that never saw its original, so f(x)
    is an honest prediction rather than a memorised label, on training pairs and on new
    pairs alike (the same original always falls in the same fold)."""

    def __init__(self, factory: Callable[[], BaseClassifier] | None, k: int = 5) -> None:
        self.factory = factory  # None once pickled
        self.k = k
        self.models: list[BaseClassifier] = []
        self.labels: list[str] = []

    def fit(self, records: Sequence[dict[str, str]], y: Sequence[str]) -> CrossFitted:
        folds = np.asarray([fold_of(record_key(r), self.k) for r in records])
        if self.factory is None:
            raise RuntimeError("a loaded CrossFitted has no factory to train new copies with")
        self.models = []
        for j in range(self.k):
            rows = np.flatnonzero(folds != j)
            m = self.factory()
            m.fit([records[int(i)] for i in rows], [y[int(i)] for i in rows])
            self.models.append(m)
        self.labels = list(self.models[0].labels)
        return self

    def __getstate__(self) -> dict[str, object]:
        state = dict(self.__dict__)
        state["factory"] = None  # a closure; the fitted copies are all that is needed later
        return state

    def predict_proba(self, records: Sequence[dict[str, str]], keys: Sequence[dict[str, str]] | None = None) -> Proba:
        """``keys``: the record whose fold decides the copy (the pair's original); default the
        record itself."""
        keys = records if keys is None else keys
        folds = np.asarray([fold_of(record_key(r), self.k) for r in keys], dtype=int)
        out = np.zeros((len(records), len(self.labels)))
        for j in range(self.k):
            rows = np.flatnonzero(folds == j)
            if len(rows):
                out[rows] = self.models[j].predict_proba([records[int(i)] for i in rows])
        return out

    def attach_embed(self, embed: Embed | None) -> None:
        for m in self.models:
            if hasattr(m, "embed"):
                m.embed = embed
