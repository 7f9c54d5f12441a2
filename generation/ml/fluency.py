"""A word trigram language model: the cheap fluency scorer of the perplexity filter (issue 31.5).

The perplexity filter keeps a candidate whose edited window is at most ``max_ratio`` times as
perplexing as its original's. SmolLM2-135M does that scoring by default and is most of a
sentiment run's time. :class:`NgramScorer` is a drop-in for ``filters.PerplexityScorer``
(``score(texts)`` gives one perplexity per text): an interpolated Kneser-Ney trigram model over
lower-cased words, looked up with ``numpy.searchsorted`` in sorted tables, microseconds a window.
Its own ``max_ratio`` is not SmolLM2's 2.5: ``train_fluency_model --distill`` chooses it, per task,
as the ratio at which its keep/drop decisions agree best with SmolLM2's on a large pool of
candidates (the LM's decisions distilled into one threshold), and records the agreement.

The model (``fluency_model/ngram.npz`` + ``meta.json``, written by ``train_fluency_model``):

- ``P1(w) = (N1+(. w) + 1) / (N1+(. .) + V)``: Kneser-Ney's continuation unigram, add-one;
- ``P2(w | v) = (max(N1+(. v w) - D2, 0) + D2 N1+(v .) P1(w)) / N1+(. v .)`` (continuation counts);
- ``P3(w | u v) = (max(c(u v w) - D3, 0) + D3 N1+(u v .) P2(w | v)) / c(u v .)``, where trigrams seen
  once are pruned from the stored table (their context's totals are kept, so their mass goes
  to the lower order) and a context with no stored trigram backs off to ``P2`` whole.

Nothing here imports Django.
"""

from __future__ import annotations

import json
import math
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import NDArray

MODEL_DIR = Path(__file__).parent / "fluency_model"
MODEL_FILE = "ngram.npz"
META_FILE = "meta.json"
UNK, BOS, EOS = "<unk>", "<s>", "</s>"
_TOKEN = re.compile(r"[^\W\d_]+(?:['’][^\W\d_]+)?|\d+|[^\w\s]")


def words(text: str) -> list[str]:
    """Lower-cased words, numbers and punctuation marks of ``text`` (what the model counts)."""
    return _TOKEN.findall(text.lower().replace("’", "'"))


def _discount(counts: NDArray[np.int64]) -> float:
    """Absolute discount ``n1 / (n1 + 2 n2)`` of the counts' counts (0.5 where undefined)."""
    n1, n2 = int(np.sum(counts == 1)), int(np.sum(counts == 2))
    return n1 / (n1 + 2 * n2) if n1 + n2 else 0.5


def _lookup(keys: NDArray[np.int64], query: NDArray[np.int64]) -> tuple[NDArray[np.intp], NDArray[np.bool_]]:
    """Index of each of ``query`` in the sorted ``keys`` and whether it is there."""
    if not len(keys):
        return np.zeros(len(query), dtype=np.intp), np.zeros(len(query), dtype=bool)
    idx = np.searchsorted(keys, query)
    idx = np.minimum(idx, len(keys) - 1)
    return idx, keys[idx] == query


class NgramLM:
    """The trigram tables and their probabilities (see the module's docstring)."""

    def __init__(self, vocab: Sequence[str], arrays: dict[str, NDArray[Any]], meta: dict[str, Any]) -> None:
        self.vocab = list(vocab)
        self.index = {w: i for i, w in enumerate(self.vocab)}
        self.meta = dict(meta)
        self.V = len(self.vocab)
        self.d2 = float(meta["d2"])
        self.d3 = float(meta["d3"])
        self.uni_cont = arrays["uni_cont"].astype(np.int64)
        self.p1: NDArray[np.float64] = ((self.uni_cont + 1.0) / (float(self.uni_cont.sum()) + self.V)).astype(
            np.float64
        )
        self.v_total = arrays["v_total"].astype(np.float64)
        self.v_types = arrays["v_types"].astype(np.float64)
        self.bi_keys = arrays["bi_keys"].astype(np.int64)
        self.bi_cont = arrays["bi_cont"].astype(np.float64)
        self.ctx_keys = arrays["ctx_keys"].astype(np.int64)
        self.ctx_total = arrays["ctx_total"].astype(np.float64)
        self.ctx_types = arrays["ctx_types"].astype(np.float64)
        self.tri_keys = arrays["tri_keys"].astype(np.int64)
        self.tri_count = arrays["tri_count"].astype(np.float64)

    # -- training ----------------------------------------------------------------------------
    @classmethod
    def train(cls, texts: Iterable[str], *, min_count: int = 2, min_trigram: int = 2) -> NgramLM:
        """Count ``texts`` (each one document, between ``<s>`` and ``</s>``): words seen fewer
        than ``min_count`` times are ``<unk>``; trigrams seen fewer than ``min_trigram`` times are
        not stored (their contexts' totals are)."""
        docs = [words(t) for t in texts]
        freq = Counter(w for d in docs for w in d)
        kept = sorted((w for w, c in freq.items() if c >= min_count), key=lambda w: (-freq[w], w))
        vocab = [UNK, BOS, EOS, *kept]
        index = {w: i for i, w in enumerate(vocab)}
        pieces = []
        for d in docs:
            if d:
                pieces.append(np.array([1, *(index.get(w, 0) for w in d), 2], dtype=np.int64))
        if not pieces:
            raise ValueError("no words to count")
        seq = np.concatenate(pieces)
        V = len(vocab)
        if V**3 >= 2**63:  # a trigram's key, (u V + v) V + w, must fit an int64
            raise ValueError(f"a vocabulary of {V:,} words is too large for int64 trigram keys (raise min_count)")
        a, b, c = seq[:-2], seq[1:-1], seq[2:]
        # a trigram inside one document: <s> only first, </s> only last
        ok = (b != 1) & (c != 1) & (a != 2) & (b != 2)
        tri, tri_n = np.unique((a[ok] * V + b[ok]) * V + c[ok], return_counts=True)
        # contexts (u v .): totals and types over every trigram, before pruning
        ctx, ctx_start, ctx_types = np.unique(tri // V, return_index=True, return_counts=True)
        ctx_total = np.add.reduceat(tri_n, ctx_start)
        # Kneser-Ney continuation of the bigram (v w): how many u precede it
        bi, bi_cont = np.unique(tri % (V * V), return_counts=True)
        v_of = bi // V
        v_ids, v_start, v_types = np.unique(v_of, return_index=True, return_counts=True)
        v_total = np.zeros(V, dtype=np.int64)
        v_total[v_ids] = np.add.reduceat(bi_cont, v_start)
        v_type_all = np.zeros(V, dtype=np.int64)
        v_type_all[v_ids] = v_types
        # continuation of the unigram w: how many v precede it (over bigram types)
        uni_cont = np.bincount(bi % V, minlength=V).astype(np.int64)
        d3, d2 = _discount(tri_n), _discount(bi_cont)
        keep = tri_n >= min_trigram
        tri, tri_n = tri[keep], tri_n[keep]
        stored_ctx = np.isin(ctx, np.unique(tri // V))
        arrays: dict[str, NDArray[Any]] = {
            "uni_cont": uni_cont.astype(np.int32),
            "v_total": v_total.astype(np.int32),
            "v_types": v_type_all.astype(np.int32),
            "bi_keys": bi,
            "bi_cont": bi_cont.astype(np.int32),
            "ctx_keys": ctx[stored_ctx],
            "ctx_total": ctx_total[stored_ctx].astype(np.int32),
            "ctx_types": ctx_types[stored_ctx].astype(np.int32),
            "tri_keys": tri,
            "tri_count": tri_n.astype(np.int32),
        }
        meta = {
            "order": 3,
            "d2": round(d2, 6),
            "d3": round(d3, 6),
            "vocab": V,
            "tokens": int(sum(len(d) for d in docs)),
            "documents": len(pieces),
            "min_count": min_count,
            "min_trigram": min_trigram,
            "bigram_types": len(bi),
            "trigrams_stored": len(tri),
        }
        return cls(vocab, arrays, meta)

    # -- saving ------------------------------------------------------------------------------
    def save(self, folder: str | Path) -> Path:
        out = Path(folder)
        out.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(
            out / MODEL_FILE,
            vocab=np.array("\n".join(self.vocab)),
            uni_cont=self.uni_cont.astype(np.int32),
            v_total=self.v_total.astype(np.int32),
            v_types=self.v_types.astype(np.int32),
            bi_keys=self.bi_keys,
            bi_cont=self.bi_cont.astype(np.int32),
            ctx_keys=self.ctx_keys,
            ctx_total=self.ctx_total.astype(np.int32),
            ctx_types=self.ctx_types.astype(np.int32),
            tri_keys=self.tri_keys,
            tri_count=self.tri_count.astype(np.int32),
        )
        (out / META_FILE).write_text(json.dumps(self.meta, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        return out

    @classmethod
    def load(cls, folder: str | Path = MODEL_DIR) -> NgramLM:
        path = Path(folder)
        if not (path / MODEL_FILE).is_file():
            raise FileNotFoundError(f"no n-gram fluency model at {path / MODEL_FILE} (train_fluency_model)")
        meta = json.loads((path / META_FILE).read_text(encoding="utf-8")) if (path / META_FILE).is_file() else {}
        with np.load(path / MODEL_FILE) as z:
            arrays = {k: z[k] for k in z.files}
        vocab = str(arrays.pop("vocab")).split("\n")
        return cls(vocab, arrays, meta)

    # -- scoring -----------------------------------------------------------------------------
    def ids(self, text: str) -> NDArray[np.int64]:
        return np.array([self.index.get(w, 0) for w in words(text)], dtype=np.int64)

    def logprobs(self, ids: NDArray[np.int64]) -> NDArray[np.float64]:
        """Natural log-probability of each token of ``ids`` (one text, no ``<s>``): the first by
        ``P1``, the second by ``P2``, the rest by ``P3``."""
        n = len(ids)
        out = np.zeros(n, dtype=np.float64)
        if not n:
            return out
        p = self.p1[ids].copy()
        if n >= 2:
            v, w = ids[:-1], ids[1:]
            p2 = self._p2(v, w, self.p1[w])
            p[1:] = p2
            if n >= 3:
                u, v3, w3 = ids[:-2], ids[1:-1], ids[2:]
                p[2:] = self._p3(u, v3, w3, p2[1:])
        np.log(p, out=out)
        return out

    def _p2(self, v: NDArray[np.int64], w: NDArray[np.int64], lower: NDArray[np.float64]) -> NDArray[np.float64]:
        total, types = self.v_total[v], self.v_types[v]
        idx, found = _lookup(self.bi_keys, v * self.V + w)
        cont = np.where(found, self.bi_cont[idx], 0.0)
        seen = total > 0
        safe = np.where(seen, total, 1.0)
        p = (np.maximum(cont - self.d2, 0.0) + self.d2 * types * lower) / safe
        return np.where(seen, p, lower)

    def _p3(
        self, u: NDArray[np.int64], v: NDArray[np.int64], w: NDArray[np.int64], lower: NDArray[np.float64]
    ) -> NDArray[np.float64]:
        ci, cfound = _lookup(self.ctx_keys, u * self.V + v)
        total = np.where(cfound, self.ctx_total[ci], 0.0)
        types = np.where(cfound, self.ctx_types[ci], 0.0)
        ti, tfound = _lookup(self.tri_keys, (u * self.V + v) * self.V + w)
        count = np.where(tfound, self.tri_count[ti], 0.0)
        safe = np.where(cfound, total, 1.0)
        p = (np.maximum(count - self.d3, 0.0) + self.d3 * types * lower) / safe
        return np.where(cfound, p, lower)

    def perplexity(self, text: str) -> float:
        """exp of the mean negative log-probability of the text's tokens (inf for none)."""
        return _perplexity(self.logprobs(self.ids(text)))


FEATURES = (
    "log_ratio",  # mean NLL of the candidate's window minus the original's (log of the perplexity ratio)
    "region_nll_diff",  # summed NLL of the changed tokens and the two after them, candidate minus original
    "region_min_cand",  # the least likely of those tokens in the candidate (log-probability)
    "region_min_orig",  # the same in the original
    "region_min_diff",
    "length_diff",  # tokens of the candidate's window minus the original's
    "region_len_cand",
    "region_len_orig",
    "unk_diff",  # out-of-vocabulary tokens, candidate minus original
)


def window_features(model: NgramLM, original: str, candidate: str) -> NDArray[np.float64]:
    """:data:`FEATURES` of one edited window: how the n-gram model reads the change, where a
    whole-window ratio would average a broken word pair away."""
    return _read_window(model, original, candidate)[0]


def _perplexity(lp: NDArray[np.float64]) -> float:
    """:meth:`NgramLM.perplexity` of log-probabilities already computed."""
    return math.exp(min(-float(lp.mean()), 50.0)) if len(lp) else float("inf")


def _read_window(model: NgramLM, original: str, candidate: str) -> tuple[NDArray[np.float64], float, float]:
    """The window's :data:`FEATURES` and the perplexities of its two sides, from one pass of
    log-probabilities."""
    from generation.ml.filters import shared_ends

    ia, ib = model.ids(original), model.ids(candidate)
    la, lb = model.logprobs(ia), model.logprobs(ib)
    p, s = shared_ends(ia.tolist(), ib.tolist())
    # the changed tokens and the two after them (whose contexts the change altered)
    ra, rb = la[p : min(len(la), len(la) - s + 2)], lb[p : min(len(lb), len(lb) - s + 2)]
    mean_a = -float(la.mean()) if len(la) else 0.0
    mean_b = -float(lb.mean()) if len(lb) else 0.0
    min_a = float(ra.min()) if len(ra) else 0.0
    min_b = float(rb.min()) if len(rb) else 0.0
    features = np.array(
        [
            mean_b - mean_a,
            float(-rb.sum() + ra.sum()),
            min_b,
            min_a,
            min_b - min_a,
            float(len(ib) - len(ia)),
            float(len(rb)),
            float(len(ra)),
            float(np.sum(ib == 0) - np.sum(ia == 0)),
        ],
        dtype=np.float64,
    )
    return features, _perplexity(la), _perplexity(lb)


class NgramScorer:
    """``filters.PerplexityScorer``'s interface over :class:`NgramLM`: ``score(texts)`` gives a
    perplexity per text. ``max_ratio`` is the threshold ``train_fluency_model --distill``
    chose for ``task`` (None: the caller's)."""

    name = "ngram"

    def __init__(
        self, model: NgramLM | None = None, *, folder: str | Path = MODEL_DIR, task: str = "", mode: str = "ratio"
    ) -> None:
        if mode not in ("ratio", "classifier"):
            raise ValueError(f"n-gram fluency mode must be ratio or classifier, not {mode!r}")
        self.model = model if model is not None else NgramLM.load(folder)
        ratios = self.model.meta.get("max_ratio") or {}
        value = ratios.get(task, ratios.get("*")) if isinstance(ratios, dict) else None
        self.max_ratio: float | None = float(value) if value is not None else None
        self.task = task
        self.mode = mode
        self.classifier: dict[str, Any] | None = None
        if mode == "classifier":
            found = (self.model.meta.get("classifier") or {}).get(task)
            if not found:
                raise ValueError(f"the n-gram fluency model has no classifier for {task!r} (train_fluency_model)")
            self.classifier = found

    def score(self, texts: Sequence[str]) -> NDArray[np.float64]:
        return np.array([self.model.perplexity(t) for t in texts], dtype=np.float64)

    def keep_probability(self, originals: Sequence[str], candidates: Sequence[str]) -> NDArray[np.float64]:
        """The classifier's probability that the LM keeps each edited window (``mode="classifier"``)."""
        return self._keep_probability(
            [window_features(self.model, a, b) for a, b in zip(originals, candidates, strict=True)]
        )

    def _keep_probability(self, features: Sequence[NDArray[np.float64]]) -> NDArray[np.float64]:
        c = self.classifier
        if c is None:
            raise ValueError("keep_probability needs mode='classifier'")
        x = np.array(features, dtype=np.float64).reshape(len(features), len(FEATURES))
        z = (x - np.asarray(c["mean"])) / np.asarray(c["scale"])
        return np.asarray(1.0 / (1.0 + np.exp(-(z @ np.asarray(c["coef"]) + float(c["intercept"])))), dtype=np.float64)

    def judge(self, originals: Sequence[str], candidates: Sequence[str]) -> list[tuple[float, bool, str]] | None:
        """(score, keep, reason) per edited window where the scorer decides by its classifier
        (score: the n-gram perplexity ratio, as the ratio rule reports it); None in ratio mode
        (the caller applies ``max_ratio``)."""
        if self.classifier is None:
            return None
        read = [_read_window(self.model, a, b) for a, b in zip(originals, candidates, strict=True)]
        probs = self._keep_probability([features for features, _, _ in read])
        cut = float(self.classifier["threshold"])
        out = []
        for (_, ppl_a, ppl_b), p in zip(read, probs, strict=True):
            ratio = float(ppl_b / ppl_a) if ppl_a > 0 and math.isfinite(ppl_a) else 1e9
            keep = bool(p >= cut)
            reason = "" if keep else f"fluency classifier: P(the LM keeps it) {p:.2f} < {cut:.2f}"
            out.append((ratio if math.isfinite(ratio) else 1e9, keep, reason))
        return out

    def clear_cache(self) -> None:  # nothing cached: a window costs microseconds
        return None


def best_threshold(ngram_ratios: Sequence[float], lm_keep: Sequence[bool]) -> dict[str, float]:
    """The n-gram ratio threshold whose keep decisions (ratio <= t) agree best with the LM's
    ``lm_keep`` by Cohen's kappa (the LM keeps most candidates, so raw agreement would favour
    keeping everything), with that kappa and the raw agreement. Ties go to the lowest t."""
    r = np.asarray(ngram_ratios, dtype=np.float64)
    y = np.asarray(lm_keep, dtype=bool)
    if not len(r):
        raise ValueError("no decisions to distil")
    candidates = np.unique(r[np.isfinite(r)])
    best_t, best_k = float("inf"), -2.0
    for t in candidates:
        k = kappa(r <= t, y)
        if k > best_k + 1e-12:
            best_t, best_k = float(t), k
    return {"max_ratio": best_t, "agreement": round(float(np.mean((r <= best_t) == y)), 4), "kappa": round(best_k, 4)}


def fit_classifier(features: NDArray[np.float64], lm_keep: Sequence[bool], *, seed: int = 0) -> dict[str, Any]:
    """A logistic regression (balanced classes) from :func:`window_features` to the LM's keep
    decisions, and the probability cut whose decisions agree best with the LM's by Cohen's kappa,
    chosen on 5-fold out-of-fold probabilities (so the reported kappa and agreement are held out)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold, cross_val_predict

    x = np.asarray(features, dtype=np.float64)
    y = np.asarray(lm_keep, dtype=bool)
    if len(set(y.tolist())) < 2:
        raise ValueError("the LM's decisions are all the same: nothing to distil")
    mean, scale = x.mean(axis=0), x.std(axis=0)
    scale[scale == 0] = 1.0
    z = (x - mean) / scale
    lr = LogisticRegression(max_iter=2000, class_weight="balanced")
    folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=seed)
    oof = cross_val_predict(lr, z, y, cv=folds, method="predict_proba")[:, 1]
    best_t, best_k = 0.5, -2.0
    for t in np.round(np.linspace(0.05, 0.95, 91), 2):
        k = kappa(oof >= t, y)
        if k > best_k + 1e-12:
            best_t, best_k = float(t), k
    lr.fit(z, y)
    return {
        "features": list(FEATURES),
        "mean": [round(float(v), 6) for v in mean],
        "scale": [round(float(v), 6) for v in scale],
        "coef": [round(float(v), 6) for v in lr.coef_[0]],
        "intercept": round(float(lr.intercept_[0]), 6),
        "threshold": best_t,
        "heldout_kappa": round(best_k, 4),
        "heldout_agreement": round(float(np.mean((oof >= best_t) == y)), 4),
        "drop_rate": round(float(np.mean(oof < best_t)), 4),
    }


def kappa(a: Sequence[bool] | NDArray[np.bool_], b: Sequence[bool] | NDArray[np.bool_]) -> float:
    """Cohen's kappa of two keep/drop decisions."""
    x, y = np.asarray(a, dtype=bool), np.asarray(b, dtype=bool)
    po = float(np.mean(x == y))
    pe = float(np.mean(x) * np.mean(y) + np.mean(~x) * np.mean(~y))
    return (po - pe) / (1 - pe) if pe < 1 else 1.0
