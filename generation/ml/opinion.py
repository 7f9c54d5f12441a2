"""A small sentence-level opinion model: which way a sentence of a review leans (issue 31.2).

The review-wide flip (:mod:`generation.ml.rules.verdicts`) flips the verdict words a lexicon and
a parse can find; what they cannot find — "I'm surprised he did not beg the crocodile to eat
him", "the acting is beyond terrible" where the flip left one side — stays and argues the
original's way, and a reader sees a self-contradictory review. AutoCAD locates the words that
carry a label with a classifier rather than a lexicon; this is that idea at the size of a rules
generator: a logistic regression over word and word-pair features (with negation scope marked,
``not good`` -> ``NOT_good``) trained on public movie-review snippets and reviews, shipped with
the code (``opinion_model/opinion.json.gz``, a few hundred KB, made by ``python manage.py
train_opinion_model``), scored in microseconds per sentence, no torch.

No Django. :func:`load` reads the shipped model once per process; :func:`lean` gives the
probability that a text is positive.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import random
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache
from itertools import pairwise
from pathlib import Path
from typing import Any

MODEL_DIR = Path(__file__).parent / "opinion_model"
MODEL_FILE = "opinion.json.gz"
# texts of these sources are sentences or snippets (the unit the model scores); the rest are
# whole reviews, kept for vocabulary and weighted down
SNIPPET_SOURCES = frozenset({"rt-polarity", "sst2", "uci-imdb", "cad-sentences"})

_WORD_RE = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|[!?]")
_NEGATORS = frozenset({"not", "no", "never", "nothing", "nobody", "none", "neither", "nor", "hardly", "without"})
_SCOPE_END = re.compile(r"[.,;:!?()]")
_MARKUP_RE = re.compile(r"<[^>]{0,40}>")


def tokens(text: str) -> list[str]:
    """Lower-cased words with negation scope marked: after a negator (or ``n't``) up to the next
    punctuation, words are ``NOT_word``."""
    out: list[str] = []
    for piece in _SCOPE_END.split(_MARKUP_RE.sub(" . ", text.lower().replace("’", "'"))):
        neg = False
        for w in _WORD_RE.findall(piece):
            if w.endswith("n't"):
                out.append(w)
                neg = True
                continue
            out.append("NOT_" + w if neg else w)
            if w in _NEGATORS:
                neg = True
    return out


def features(text: str) -> set[str]:
    """Binary features of a text: its marked words and pairs of neighbouring words."""
    toks = tokens(text)
    feats = set(toks)
    feats.update(f"{a} {b}" for a, b in pairwise(toks))
    return feats


@dataclass(frozen=True)
class OpinionModel:
    weights: dict[str, float]
    bias: float
    meta: dict[str, Any]

    def lean(self, text: str) -> float:
        """P(positive) of ``text``."""
        z = self.bias + sum(self.weights.get(f, 0.0) for f in features(text))
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))

    def save(self, folder: str | os.PathLike[str]) -> Path:
        path = Path(folder) / MODEL_FILE
        path.parent.mkdir(parents=True, exist_ok=True)
        body = {"bias": round(self.bias, 4), "meta": self.meta, "weights": self.weights}
        with gzip.open(path, "wt", encoding="utf-8", compresslevel=9) as fh:
            json.dump(body, fh, sort_keys=True, separators=(",", ":"))
        return path


def read(folder: str | os.PathLike[str]) -> OpinionModel:
    path = Path(folder) / MODEL_FILE
    try:
        with gzip.open(path, "rt", encoding="utf-8") as fh:
            body = json.load(fh)
    except (OSError, ValueError) as exc:
        raise ValueError(f"cannot read the opinion model at {path}: {exc}") from exc
    return OpinionModel({str(k): float(v) for k, v in body["weights"].items()}, float(body["bias"]), body["meta"])


@lru_cache(maxsize=1)
def load() -> OpinionModel | None:
    """The shipped model, or None when it is missing (the flip then keeps every sentence)."""
    if not (MODEL_DIR / MODEL_FILE).exists():
        return None
    return read(MODEL_DIR)


def lean(text: str) -> float | None:
    model = load()
    return None if model is None else model.lean(text)


def read_rows(path: str | os.PathLike[str]) -> list[dict[str, str]]:
    """``{"text", "label", "source"}`` rows of a JSON-lines file (``sentiment-public/train.jsonl``);
    a row without a positive/negative label or text is an error that names its line."""
    rows = []
    with open(path, encoding="utf-8") as fh:
        for n, line in enumerate(fh, 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except ValueError as exc:
                raise ValueError(f"{path}:{n}: not JSON ({exc})") from exc
            if row.get("label") not in ("positive", "negative") or not str(row.get("text") or "").strip():
                raise ValueError(f"{path}:{n}: needs a text and a label positive/negative")
            rows.append({"text": str(row["text"]), "label": row["label"], "source": str(row.get("source", ""))})
    return rows


def cad_batches(path: str | os.PathLike[str]) -> list[list[tuple[str, str]]]:
    """The batches of a CAD sentiment ``{split}_paired.tsv`` (``Sentiment \\t Text \\t
    batch_id``): each a list of ``(label, text)`` rows, an original and its revision when the
    batch is whole. A file without that header raises ``ValueError``."""
    import csv

    batches: dict[str, list[tuple[str, str]]] = {}
    with open(path, encoding="utf-8", newline="") as fh:
        reader = csv.reader(fh, delimiter="\t")
        header = next(reader, None)
        if not header or [h.strip().lower() for h in header[:3]] != ["sentiment", "text", "batch_id"]:
            raise ValueError(f"{path}: not a CAD paired file (header Sentiment, Text, batch_id)")
        for row in reader:
            if len(row) >= 3 and row[0].strip().lower() in ("positive", "negative"):
                batches.setdefault(row[2], []).append((row[0].strip().lower(), row[1]))
    return list(batches.values())


def cad_changed_runs(
    path: str | os.PathLike[str], sentence_spans: Callable[[str], Sequence[tuple[int, int]]]
) -> Iterator[tuple[str, str, str, list[str], list[str]]]:
    """Per whole batch of a CAD paired file (:func:`cad_batches`: an original and its revision),
    each run of sentences the revision changed: ``(original label, revision label, difflib op,
    the original's sentences, the revision's)``. ``sentence_spans`` splits a review
    (``rules.tokens.sentence_spans``; passed in, as the rules package reads this module)."""
    import difflib

    for pair in cad_batches(path):
        if len(pair) != 2:
            continue
        (l1, t1), (l2, t2) = pair
        s1 = [t1[a:b].strip() for a, b in sentence_spans(t1)]
        s2 = [t2[a:b].strip() for a, b in sentence_spans(t2)]
        for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=s1, b=s2, autojunk=False).get_opcodes():
            if op != "equal":
                yield l1, l2, op, s1[i1:i2], s2[j1:j2]


def cad_sentences(
    path: str | os.PathLike[str], sentence_spans: Callable[[str], Sequence[tuple[int, int]]]
) -> list[dict[str, str]]:
    """The sentences a CAD sentiment revision changed (:func:`cad_changed_runs`), each with the
    label of the review it stands in (source ``cad-sentences``): review sentences that carry
    the label, in the words reviewers use, and the same sentence on both sides where the edit
    was small ("Incredible plot." / "Implausible plot."). A batch without two rows is skipped."""
    out: list[dict[str, str]] = []
    for l1, l2, _, old, new in cad_changed_runs(path, sentence_spans):
        out += [{"text": s, "label": l1, "source": "cad-sentences"} for s in old if s]
        out += [{"text": s, "label": l2, "source": "cad-sentences"} for s in new if s]
    return out


def accuracy(model: OpinionModel, rows: Sequence[dict[str, str]]) -> float:
    """Share of ``rows`` whose label the model gives (lean >= 0.5 is positive)."""
    hits = sum((model.lean(r["text"]) >= 0.5) == (r["label"] == "positive") for r in rows)
    return round(hits / len(rows), 4) if rows else 0.0


def train(
    rows: Sequence[dict[str, str]],
    *,
    seed: int = 0,
    held_out: float = 0.1,
    c: float = 0.5,
    min_count: int = 5,
    min_weight: float = 0.05,
    review_weight: float = 0.3,
) -> tuple[OpinionModel, dict[str, float]]:
    """Fit the model on ``rows``; returns it and its held-out accuracy on snippets and reviews.
    Whole reviews weigh ``review_weight`` of a snippet (the unit scored is a sentence)."""
    import numpy as np
    from scipy.sparse import csr_matrix
    from sklearn.linear_model import LogisticRegression

    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    n_test = int(len(order) * held_out)
    test, fit = order[:n_test], order[n_test:]
    feats = [features(r["text"]) for r in rows]
    counts: dict[str, int] = {}
    for i in fit:
        for f in feats[i]:
            counts[f] = counts.get(f, 0) + 1
    vocab = {f: j for j, f in enumerate(sorted(f for f, n in counts.items() if n >= min_count))}

    def matrix(idx: Iterable[int]) -> Any:
        indptr, cols = [0], []
        for i in idx:
            cols.extend(sorted(vocab[f] for f in feats[i] if f in vocab))
            indptr.append(len(cols))
        return csr_matrix((np.ones(len(cols)), cols, indptr), shape=(len(indptr) - 1, len(vocab)))

    y = np.array([1 if rows[i]["label"] == "positive" else 0 for i in fit])
    w = np.array([1.0 if rows[i]["source"] in SNIPPET_SOURCES else review_weight for i in fit])
    clf = LogisticRegression(C=c, max_iter=2000, solver="liblinear", random_state=seed)
    clf.fit(matrix(fit), y, sample_weight=w)
    names = sorted(vocab, key=vocab.__getitem__)
    weights = {f: round(float(v), 3) for f, v in zip(names, clf.coef_[0], strict=True) if abs(v) >= min_weight}
    model = OpinionModel(weights, float(clf.intercept_[0]), {})
    scores: dict[str, float] = {}
    kind_of = {"cad-sentences": "cad_sentences", **dict.fromkeys(SNIPPET_SOURCES - {"cad-sentences"}, "snippets")}
    for kind in ("snippets", "cad_sentences", "reviews"):
        held = [rows[i] for i in test if kind_of.get(rows[i]["source"], "reviews") == kind]
        if held:
            scores[f"held_out_{kind}"] = accuracy(model, held)
            scores[f"held_out_{kind}_n"] = len(held)
    meta = {
        "trained_on": len(fit),
        "features": len(weights),
        "c": c,
        "min_count": min_count,
        "review_weight": review_weight,
        "seed": seed,
        **scores,
    }
    return OpinionModel(weights, model.bias, meta), scores


__all__ = [
    "OpinionModel",
    "accuracy",
    "cad_sentences",
    "features",
    "lean",
    "load",
    "read",
    "read_rows",
    "tokens",
    "train",
]
