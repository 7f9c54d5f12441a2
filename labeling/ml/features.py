"""Pair features for the pairwise classifier h. No Django.

Per pair (x, x', y): for every text field, MiniLM embeddings of x' and the difference x'-x
and |x'-x|; for multi-field tasks the classic sentence-pair features of the counterfactual
(|u'-v'|, u'*v') and their change from the original; embeddings of the inserted words, the
deleted words and the unedited context, and their cosines; numeric word-level edit features
(``edits.py``); a hashed bag of inserted and deleted words (field-tagged); the perturbation
type; y one-hot; and the interaction of y with the low-dimensional features (so h can learn
*how* an edit moves the label from each y). Two-field tasks add how the fields relate in x'
and its change from x: word-level relation features (``edits.relation_features``) and, with
the MiniLM encoder, soft word alignment from its token vectors (``Encoder.alignment``). CAPC
adds f's probabilities on x and x'. ``PairEncoding.reversed`` reads the pairs backwards
(x' -> x), which h also trains on.

The expensive part (embeddings, diffs) is done once in :func:`encode_pairs`; the matrix for
any subset of pairs is then cheap (:func:`pair_matrix`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar

import numpy as np
from numpy.typing import NDArray

from labeling.ml.edits import edit_bags, edit_features, edit_spans, relation_features

Floats = NDArray[np.float32]  # every feature block is float32
LabelIndex = NDArray[np.intp]  # label indices, one per pair
Embed = Callable[[Sequence[str]], NDArray[np.floating]]  # texts -> (n, d) vectors
Aligner = Callable[[Sequence[tuple[str, str]]], NDArray[np.floating]]  # text pairs -> (n, N_ALIGN)
_S = TypeVar("_S", bound=np.generic)


@dataclass(frozen=True)
class Pair:
    """One original (fields + its label ``y``) and one counterfactual of it."""

    original: dict[str, str]
    counterfactual: dict[str, str]
    y: str
    perturbation: str = ""
    group: str = ""
    generator: str = ""  # who wrote the counterfactual (``human`` for CAD; h's strata, issue 26)


@dataclass
class PairEncoding:
    """Everything about a list of pairs that costs time to compute, aligned by row."""

    fields: list[str]
    emb_o: Floats  # (n, n_fields, d)
    emb_c: Floats  # (n, n_fields, d)
    edits: Floats  # (n, n_edit)
    bag: Floats  # (n, 2 * hash_features)
    y: LabelIndex  # (n,) index of the original label
    perturbation: list[str] = field(default_factory=list)
    # embeddings of the words inserted / deleted by the edit and of the other (unedited)
    # field: what the edit means, and how it relates to the rest of the input
    emb_ins: Floats | None = None  # (n, d)
    emb_del: Floats | None = None
    emb_other: Floats | None = None
    # two-field tasks: how the fields relate (``edits.relation_features``) in x and in x'
    rel_o: Floats | None = None  # (n, n_rel)
    rel_c: Floats | None = None
    # the edit features of the reversed pair (x' -> x), for training on reversed pairs
    edits_rev: Floats | None = None
    # two-field tasks with a MiniLM encoder: soft word alignment of the fields in x and in x'
    # (``Encoder.alignment``)
    align_o: NDArray[np.floating] | None = None  # (n, N_ALIGN), as the aligner gives them
    align_c: NDArray[np.floating] | None = None

    def __len__(self) -> int:
        return len(self.y)

    def reversed(self, y_prime: LabelIndex) -> PairEncoding:
        """The pairs read backwards: x' is the original (with its label ``y_prime``) and x the
        counterfactual. Every block swaps sides; the unedited context is the same both ways
        (it is the untouched field), and a pair whose every field changed keeps its context."""
        if self.edits_rev is None:
            raise ValueError("this encoding has no reversed edit features")
        half = self.bag.shape[1] // 2
        bag = np.hstack([self.bag[:, half:], self.bag[:, :half]]) if half else self.bag
        return PairEncoding(
            self.fields,
            self.emb_c,
            self.emb_o,
            self.edits_rev,
            bag,
            np.asarray(y_prime, dtype=int),
            list(self.perturbation),
            self.emb_del,
            self.emb_ins,
            self.emb_other,
            self.rel_c,
            self.rel_o,
            self.edits,
            self.align_c,
            self.align_o,
        )

    @staticmethod
    def concat(a: PairEncoding, b: PairEncoding) -> PairEncoding:
        def cat(x: NDArray[_S] | None, y: NDArray[_S] | None) -> NDArray[_S] | None:
            return None if x is None or y is None else np.concatenate([x, y])

        return PairEncoding(
            a.fields,
            np.concatenate([a.emb_o, b.emb_o]),
            np.concatenate([a.emb_c, b.emb_c]),
            np.concatenate([a.edits, b.edits]),
            np.concatenate([a.bag, b.bag]),
            np.concatenate([a.y, b.y]),
            a.perturbation + b.perturbation,
            cat(a.emb_ins, b.emb_ins),
            cat(a.emb_del, b.emb_del),
            cat(a.emb_other, b.emb_other),
            cat(a.rel_o, b.rel_o),
            cat(a.rel_c, b.rel_c),
            cat(a.edits_rev, b.edits_rev),
            cat(a.align_o, b.align_o),
            cat(a.align_c, b.align_c),
        )

    def subset(self, idx: NDArray[np.integer] | Sequence[int]) -> PairEncoding:
        idx = np.asarray(idx, dtype=int)

        def sub(a: NDArray[_S] | None) -> NDArray[_S] | None:
            return None if a is None else a[idx]

        return PairEncoding(
            self.fields,
            self.emb_o[idx],
            self.emb_c[idx],
            self.edits[idx],
            self.bag[idx],
            self.y[idx],
            [self.perturbation[i] for i in idx],
            sub(self.emb_ins),
            sub(self.emb_del),
            sub(self.emb_other),
            sub(self.rel_o),
            sub(self.rel_c),
            sub(self.edits_rev),
            sub(self.align_o),
            sub(self.align_c),
        )


def embed_fields(records: Sequence[dict[str, str]], fields: Sequence[str], embed: Embed | None) -> Floats:
    """(n, n_fields, d) embeddings; ``embed=None`` gives a zero-width array (no embeddings)."""
    n = len(records)
    if embed is None:
        return np.zeros((n, len(fields), 0), dtype=np.float32)
    texts = [r.get(f, "") or "" for r in records for f in fields]
    vecs = np.asarray(embed(texts), dtype=np.float32)
    return vecs.reshape(n, len(fields), -1)


def encode_pairs(
    pairs: Sequence[Pair],
    *,
    labels: Sequence[str],
    fields: Sequence[str],
    embed: Embed | None,
    hash_features: int = 512,
    spans: bool = True,
) -> PairEncoding:
    from sklearn.feature_extraction.text import HashingVectorizer

    index = {lab: i for i, lab in enumerate(labels)}
    unknown = sorted({p.y for p in pairs if p.y not in index})
    if unknown:
        raise ValueError(f"original labels not in the label set: {', '.join(map(str, unknown))}")
    fields = list(fields)
    emb_o = embed_fields([p.original for p in pairs], fields, embed)
    emb_c = embed_fields([p.counterfactual for p in pairs], fields, embed)
    edits = (
        np.stack([edit_features(p.original, p.counterfactual, fields) for p in pairs])
        if pairs
        else np.zeros((0, 0), dtype=np.float32)
    )
    edits_rev = (
        np.stack([edit_features(p.counterfactual, p.original, fields) for p in pairs])
        if pairs
        else np.zeros((0, 0), dtype=np.float32)
    )
    if hash_features:
        hv = HashingVectorizer(
            n_features=hash_features, alternate_sign=False, token_pattern=r"\S+", lowercase=False, norm=None
        )
        bags = [edit_bags(p.original, p.counterfactual, fields) for p in pairs]
        ins = hv.transform([b[0] for b in bags]).toarray()
        dele = hv.transform([b[1] for b in bags]).toarray()
        bag = np.minimum(np.hstack([ins, dele]), 1.0).astype(np.float32)
    else:
        bag = np.zeros((len(pairs), 0), dtype=np.float32)
    y = np.asarray([index[p.y] for p in pairs], dtype=int)
    emb_ins = emb_del = emb_other = None
    if embed is not None and pairs and spans:
        ins, dele, other = zip(*(edit_spans(p.original, p.counterfactual, fields) for p in pairs), strict=True)
        vecs = np.asarray(embed(list(ins) + list(dele) + list(other)), dtype=np.float32)
        n = len(pairs)
        emb_ins, emb_del, emb_other = vecs[:n], vecs[n : 2 * n], vecs[2 * n :]
    rel_o = rel_c = align_o = align_c = None
    if len(fields) >= 2 and pairs:
        rel_o = np.stack([relation_features(p.original, fields) for p in pairs])
        rel_c = np.stack([relation_features(p.counterfactual, fields) for p in pairs])
        aligner = alignment_of(embed)
        if aligner is not None:
            a, b = fields[0], fields[1]
            both = aligner(
                [(p.original.get(a, "") or "", p.original.get(b, "") or "") for p in pairs]
                + [(p.counterfactual.get(a, "") or "", p.counterfactual.get(b, "") or "") for p in pairs]
            )
            align_o, align_c = np.asarray(both[: len(pairs)]), np.asarray(both[len(pairs) :])
    return PairEncoding(
        fields,
        emb_o,
        emb_c,
        edits,
        bag,
        y,
        [p.perturbation or "" for p in pairs],
        emb_ins,
        emb_del,
        emb_other,
        rel_o,
        rel_c,
        edits_rev,
        align_o,
        align_c,
    )


def alignment_of(embed: Embed | None) -> Aligner | None:
    """The word-alignment function that comes with ``embed``: the ``alignment`` method of the
    encoder (``embed`` is the encoder or its bound ``encode``), or None (e.g. a stand-in)."""
    owner = getattr(embed, "__self__", embed)
    aligner = getattr(owner, "alignment", None)
    return aligner if callable(aligner) else None


@dataclass(frozen=True)
class FeatureConfig:
    embeddings: bool = True
    cross_field: bool = True
    edits: bool = True
    bag: bool = True
    # two-field tasks: the relation between the fields in x' and its change from x (word
    # overlap, negations, antonyms, numbers; the cosine of the fields' embeddings)
    relations: bool = True
    # two-field tasks: soft word alignment of the fields from MiniLM token vectors, in x' and
    # its change from x (when the encoder provides it)
    alignment: bool = True
    y_interactions: bool = True
    # only y and the extra columns (a warm-start model's log-probabilities): the stacking
    # model that needs the fewest labels
    stack_only: bool = False
    # the warm-start model's log-probabilities alone (recalibrated by a temperature)
    warm_only: bool = False
    # "nothing flips" as a model: y' = y with a probability fitted on the project's labels
    # (recalibrated by a temperature), so h's cross-validation can choose it
    invariant_only: bool = False
    # CAPC's f (the base classifier on the originals) as features; False: the PC candidate that
    # a CAPC h also tries in its cross-validation
    base_f: bool = True
    # the task model's block (``task_block``) when the inputs carry the task model's
    # probabilities (issue 26); False: a candidate without it
    task: bool = True
    # "f alone": the task model's log-probabilities on x' (recalibrated by a temperature), the
    # teacher of DISCO, as a candidate of h's cross-validation
    task_only: bool = False
    # y one-hot and the task model's block only (no edit features): the few-label recipe that
    # beat "nothing flips" by 0.03-0.06 at 10 % labels (issue 26)
    task_stack: bool = False
    C_grid: tuple[float, ...] = (0.003, 0.01, 0.03)


def _onehot(idx: LabelIndex, k: int) -> Floats:
    out = np.zeros((len(idx), k), dtype=np.float32)
    if len(idx):
        out[np.arange(len(idx)), idx] = 1.0
    return out


def task_block(task_o: NDArray[np.floating], task_c: NDArray[np.floating], y: LabelIndex, n_labels: int) -> Floats:
    """What the task model says about a pair (issue 26): its probabilities on x', their change
    from x, its confidence on x' (and on x), its probability of the original's label on x'
    (f(x')·y one-hot), and whether its label for x' agrees with y."""
    y1 = _onehot(y, n_labels)
    conf = np.stack([task_c.max(axis=1), task_o.max(axis=1)], axis=1)
    agrees = (task_c.argmax(axis=1) == y).astype(np.float32)[:, None]
    return np.hstack([task_c, task_c - task_o, conf, task_c * y1, agrees]).astype(np.float32)


def pair_matrix(
    enc: PairEncoding,
    *,
    n_labels: int,
    perturbations: Sequence[str],
    config: FeatureConfig,
    f_proba_o: NDArray[np.floating] | None = None,
    f_proba_c: NDArray[np.floating] | None = None,
    extra: NDArray[np.floating] | None = None,
    task_o: NDArray[np.floating] | None = None,
    task_c: NDArray[np.floating] | None = None,
) -> Floats:
    """The design matrix of h. ``f_proba_*`` (CAPC) are f's probabilities on x and x';
    ``extra`` are further per-pair columns (e.g. a warm-start model's log-probabilities);
    ``task_*`` the task model's probabilities on x and x' (``task_block``)."""
    n = len(enc)
    blocks: list[NDArray[np.floating]] = []
    small: list[NDArray[np.floating]] = []  # low-dimensional blocks that also interact with y
    if vars(config).get("invariant_only", False):
        # log-probability-like scores: 0 for y, -1 for every other label
        return (_onehot(enc.y, n_labels) - 1.0).astype(np.float32)
    has_task = task_o is not None and task_c is not None
    if vars(config).get("task_only", False):
        if task_c is None:
            raise ValueError("the f-alone candidate needs the task model's probabilities")
        log_f: Floats = np.log(np.clip(np.asarray(task_c, dtype=np.float32), 1e-6, 1.0))
        return log_f
    if vars(config).get("task_stack", False):
        if task_o is None or task_c is None:
            raise ValueError("the task-model stack needs the task model's probabilities")
        return np.hstack([_onehot(enc.y, n_labels), task_block(task_o, task_c, enc.y, n_labels)]).astype(np.float32)
    if config.warm_only:
        if extra is None:
            raise ValueError("a warm-only feature set needs the warm-start columns")
        return extra.astype(np.float32)
    if config.stack_only:
        if extra is None:
            raise ValueError("a stack-only feature set needs the extra (warm-start) columns")
        y1 = _onehot(enc.y, n_labels)
        return np.hstack([y1, extra, (y1[:, :, None] * extra[:, None, :]).reshape(n, -1)]).astype(np.float32)
    if config.embeddings and enc.emb_c.shape[2]:
        diff = enc.emb_c - enc.emb_o
        blocks += [enc.emb_c.reshape(n, -1), diff.reshape(n, -1), np.abs(diff).reshape(n, -1)]
        if config.cross_field and len(enc.fields) >= 2:
            u_c, v_c = enc.emb_c[:, 0], enc.emb_c[:, 1]
            u_o, v_o = enc.emb_o[:, 0], enc.emb_o[:, 1]
            blocks += [np.abs(u_c - v_c), u_c * v_c, u_c * v_c - u_o * v_o]
            small.append(np.stack([np.einsum("ij,ij->i", u_c, v_c), np.einsum("ij,ij->i", u_o, v_o)], axis=1))
        small.append(np.einsum("nfd,nfd->nf", enc.emb_o, enc.emb_c))  # cosine x vs x' per field
        if enc.emb_ins is not None and enc.emb_del is not None and enc.emb_other is not None:
            ei, ed, eo = enc.emb_ins, enc.emb_del, enc.emb_other
            blocks += [ei, ed, ei - ed]
            small.append(
                np.stack(
                    [np.einsum("ij,ij->i", ei, eo), np.einsum("ij,ij->i", ed, eo), np.einsum("ij,ij->i", ei, ed)],
                    axis=1,
                )
            )
    # vars(): a FeatureConfig pickled before ``relations`` existed must keep its old width
    if vars(config).get("relations", False) and enc.rel_c is not None and enc.rel_o is not None:
        small += [enc.rel_c, enc.rel_c - enc.rel_o]
        if enc.emb_c.shape[2] and len(enc.fields) >= 2:
            cos_c = np.einsum("ij,ij->i", enc.emb_c[:, 0], enc.emb_c[:, 1])
            cos_o = np.einsum("ij,ij->i", enc.emb_o[:, 0], enc.emb_o[:, 1])
            small.append(np.stack([cos_c, cos_c - cos_o], axis=1))
    if vars(config).get("alignment", False) and enc.align_c is not None and enc.align_o is not None:
        small += [enc.align_c, enc.align_c - enc.align_o]
    if config.edits:
        small.append(enc.edits)
    if config.bag and enc.bag.shape[1]:
        blocks.append(enc.bag)
    pvocab = list(perturbations)
    if pvocab:
        pidx = {p: i for i, p in enumerate(pvocab)}
        pmat = np.zeros((n, len(pvocab)), dtype=np.float32)
        for i, p in enumerate(enc.perturbation):
            if p in pidx:
                pmat[i, pidx[p]] = 1.0
        small.append(pmat)
    if vars(config).get("task", True) and has_task:
        assert task_o is not None and task_c is not None
        small.append(task_block(task_o, task_c, enc.y, n_labels))
    if f_proba_o is not None and f_proba_c is not None and vars(config).get("base_f", True):
        small += [
            f_proba_o,
            f_proba_c,
            f_proba_c - f_proba_o,
            (f_proba_o * f_proba_c) / np.maximum((f_proba_o * f_proba_c).sum(1, keepdims=True), 1e-9),
        ]
    if extra is not None:
        small.append(extra)
    y1 = _onehot(enc.y, n_labels)
    small_m = np.hstack(small) if small else np.zeros((n, 0), dtype=np.float32)
    out = [y1, small_m, *blocks]
    if config.y_interactions and small_m.shape[1]:
        out.append((y1[:, :, None] * small_m[:, None, :]).reshape(n, -1))
    return np.hstack(out).astype(np.float32)
