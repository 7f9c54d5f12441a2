"""Candidate filters. Each is a plain function returning, per candidate, a ``FilterResult``
(a score the caller stores on ``candidate.scores[name]`` and a keep/drop decision).

- ``similarity_band``: MiniLM cosine of original vs candidate inside a band (COCO used (0.8, 0.91]
  for captions; ``DEFAULT_BANDS`` holds the per-task defaults, see docs/readme/generation-rules.md).
- ``dedupe``: exact duplicates (normalised text) of the original or a sibling, and near
  duplicates among siblings (Jaccard of their word edits against the original >= 0.9).
- ``perplexity`` (``PerplexityScorer``): a causal LM from a local path; keep when the candidate's
  perplexity is at most ``max_ratio`` times the original's (scored on the edited window, batched,
  cached per text; the score is the ratio).
- ``artifacts``: the DISCO heuristics (copies the prompt or the other sentence; introduced text
  with word-set Jaccard > 0.6 with the hypothesis or > 0.35 with the premise; negation words as
  a shortcut to contradiction, whole-word matching).
- ``consistency`` and ``teacher_shift``: on probability arrays from a classifier / teacher.

No Django imports; torch/transformers only inside ``PerplexityScorer``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from generation.ml import lexicons as lx
from generation.ml.rules.tokens import introduced_removed, words


@dataclass(frozen=True)
class FilterResult:
    score: float
    keep: bool
    reasons: tuple[str, ...] = field(default_factory=tuple)


# -- similarity band ---------------------------------------------------------------------------
COCO_BAND: tuple[float, float] = (0.8, 0.91)
# (low, high]: measured on CAD dev with rules candidates (docs/readme/generation-rules.md).
DEFAULT_BANDS: dict[str, tuple[float, float]] = {
    "image-caption": COCO_BAND,
    "nli": (0.7, 0.985),
    "paraphrase": (0.7, 0.985),
    "boolean-qa": (0.7, 0.985),
    "sentiment": (0.65, 0.98),  # compared on the edited sentence(s), not the whole review
}


def band_for(task: str, override: tuple[float, float] | None = None) -> tuple[float, float]:
    if override is not None:
        lo, hi = override
        if not (-1.0 <= lo < hi <= 1.0):
            raise ValueError(f"similarity band must satisfy -1 <= low < high <= 1, got {override}")
        return (float(lo), float(hi))
    return DEFAULT_BANDS.get(task, COCO_BAND)


def comparison_texts(
    original_fields: Mapping[str, str], candidate_fields: Mapping[str, str], meta: Mapping[str, object] | None = None
) -> tuple[str, str]:
    """What the similarity band compares: the edited window of a long text when the generator
    recorded one (``meta["window"] = [old, new]``), else the changed field(s), else all fields."""
    meta = meta or {}
    window = meta.get("window")
    if isinstance(window, (list, tuple)) and len(window) == 2:
        return str(window[0]), str(window[1])
    changed = [k for k in candidate_fields if candidate_fields.get(k) != original_fields.get(k)]
    if isinstance(meta.get("field"), str) and meta["field"] in candidate_fields:
        changed = [str(meta["field"])]
    keys = changed or list(candidate_fields)
    return (
        " ".join(str(original_fields.get(k, "")) for k in keys),
        " ".join(str(candidate_fields.get(k, "")) for k in keys),
    )


class SimilarityEncoder(Protocol):
    """What the similarity band needs of an encoder (``generation.ml.embeddings.Encoder``)."""

    def cosine(self, a: Sequence[str], b: Sequence[str]) -> NDArray[np.floating]:
        """Row-wise cosine similarity of a[i] and b[i]."""
        ...


def similarity_band(
    encoder: SimilarityEncoder,
    originals: Sequence[str],
    candidates: Sequence[str],
    band: tuple[float, float] = COCO_BAND,
) -> list[FilterResult]:
    """Row-wise cosine of ``originals[i]`` and ``candidates[i]`` (one batched encode each;
    the encoder caches repeated originals); keep when ``low < sim <= high``."""
    if len(originals) != len(candidates):
        raise ValueError("originals and candidates must have the same length")
    if not candidates:
        return []
    lo, hi = band
    # rounded: float32 cosines must not fall on the wrong side of a band edge (0.8 -> 0.80000001)
    sims = np.round(np.asarray(encoder.cosine(list(originals), list(candidates)), dtype=np.float64), 6)
    return [
        FilterResult(
            float(s), bool(lo < s <= hi), () if lo < s <= hi else (f"similarity {s:.3f} outside ({lo}, {hi}]",)
        )
        for s in sims
    ]


# -- duplicates --------------------------------------------------------------------------------
_PUNCT = re.compile(r"[^\w\s']+")


def normalise(text: str) -> str:
    text = text.lower().replace("’", "'")
    text = re.sub(r"<br\s*/?>", " ", text)
    return " ".join(_PUNCT.sub(" ", text).split())


def jaccard(a: set[str] | frozenset[str], b: set[str] | frozenset[str]) -> float:
    if not a and not b:
        return 1.0
    return len(a & b) / len(a | b)


def edit_signature(original: str, candidate: str) -> frozenset[str]:
    intro, rem = introduced_removed(original, candidate)
    return frozenset([f"+{w}" for w in intro] + [f"-{w}" for w in rem])


def dedupe(
    original: str,
    candidates: Sequence[str],
    threshold: float = 0.9,
    windows: Sequence[tuple[str, str] | None] | None = None,
) -> list[FilterResult]:
    """Siblings of one original, in order. Drop exact duplicates (normalised text equal to the
    original or an earlier kept sibling) and near duplicates: a candidate whose word edit
    (introduced/removed words against the original) has Jaccard >= ``threshold`` with an earlier
    kept sibling's edit — or that changes no word at all. Score: the highest such Jaccard."""
    norm_orig = normalise(original)
    kept_norm: set[str] = set()
    kept_sigs: list[frozenset[str]] = []
    out = []
    for i, cand in enumerate(candidates):
        win = windows[i] if windows is not None else None
        a, b = win if win else (original, cand)
        norm = normalise(cand)
        sig = edit_signature(a, b)
        if norm == norm_orig or not sig:
            out.append(FilterResult(1.0, False, ("same text as the original",)))
            continue
        if norm in kept_norm:
            out.append(FilterResult(1.0, False, ("exact duplicate of a sibling",)))
            continue
        best = max((jaccard(sig, s) for s in kept_sigs), default=0.0)
        if best >= threshold:
            out.append(FilterResult(best, False, (f"near duplicate of a sibling (edit Jaccard {best:.2f})",)))
            continue
        kept_norm.add(norm)
        kept_sigs.append(sig)
        out.append(FilterResult(best, True))
    return out


def word_set(text: str) -> set[str]:
    """Lower-cased words of ``text`` (punctuation dropped)."""
    return {w for w in words(text) if any(c.isalnum() for c in w)}


def token_jaccard(a: str, b: str) -> float:
    return jaccard(word_set(a), word_set(b))


# -- perplexity --------------------------------------------------------------------------------
class PerplexityScorer:
    """Perplexity under a causal LM loaded from a local directory (or given model+tokenizer).

    Texts are scored in batches (mean token NLL over each text's own tokens) and cached per
    text (``cache_size`` texts, oldest dropped first), so an original is scored once however
    many candidates it has.

    **Packed rows** (the default where the model allows it): several texts share one row of
    at least ``pack_width`` tokens, each attending only to its own tokens and to one BOS at
    the row's start, with its positions counted from 1 as if it stood alone. The BOS (the
    same computation for every text) runs once per row instead of once per text, and a row
    holds almost no padding, where length-sorted padded batches computed every window to the
    length of the longest in its batch. The scores are the
    padded batches' up to float rounding; the first call checks that on two texts and falls
    back to padded batches for a model that does not honour ``position_ids`` and a 4-D
    attention mask (``packed`` tells which path runs)."""

    def __init__(
        self,
        path: str | None = None,
        *,
        # transformers objects: Any, as transformers types model.to(device) wrongly and its
        # Auto* loaders and tokenizer calls as Any
        model: Any = None,
        tokenizer: Any = None,
        device: str = "cpu",
        max_length: int = 256,
        batch_size: int = 16,
        cache_size: int = 50_000,
        pack: bool = True,
        pack_width: int = 64,
    ) -> None:
        if model is None or tokenizer is None:
            import os

            if not path or not os.path.isdir(path):
                raise FileNotFoundError(f"perplexity LM directory not found: {path!r}")
            from transformers import AutoModelForCausalLM, AutoTokenizer

            tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
            model = AutoModelForCausalLM.from_pretrained(path, local_files_only=True)
        self.model = model.to(device).eval()
        self.tokenizer = tokenizer
        self.device = device
        self.max_length = max_length
        self.batch_size = batch_size
        self.cache_size = cache_size
        self.pack_width = pack_width
        self._cache: dict[str, float] = {}
        bos = getattr(tokenizer, "bos_token_id", None)
        # a BOS token in front (when the tokenizer does not add one) gives the first word a context
        self._prefix: list[int] = [int(bos)] if bos is not None else []
        # None: not checked yet (the first call compares packed with padded scores)
        self._packed: bool | None = None if pack and self._split_model() is not None else False

    @property
    def packed(self) -> bool | None:
        """Whether texts are scored in packed rows (None until the first score checked it)."""
        return self._packed

    def _split_model(self) -> tuple[Any, Any] | None:
        """(body, output head) of the LM, or None when it cannot be split."""
        head = self.model.get_output_embeddings()
        body = getattr(self.model, getattr(self.model, "base_model_prefix", ""), None)
        if head is None or body is None or body is self.model:
            return None
        return body, head

    def _ids(self, text: str) -> list[int]:
        ids = list(self.tokenizer(text, truncation=True, max_length=self.max_length)["input_ids"])
        if self._prefix and (not ids or ids[0] != self._prefix[0]):
            ids = self._prefix + ids
        return ids[: self.max_length]

    def _score_uncached(self, texts: Sequence[str]) -> list[float]:
        if self._packed is None:
            self._packed = self._packing_agrees()
        if self._packed:
            return self._score_packed(texts)
        return self._score_padded(texts)

    def _packing_agrees(self) -> bool:
        """Packed rows give the padded batches' scores on two short texts of this tokenizer (the
        second packed behind the first, so ignored position ids or mask show): to 1e-3 relative
        in float32, to 3e-2 in a half-precision model (bfloat16 rounds each product to about
        0.4 %, so two summation orders differ by about 1 % of a perplexity)."""
        import torch

        probe = ["The man is riding a horse in the field.", "A dog sits."]
        try:
            packed, padded = self._score_packed(probe), self._score_padded(probe)
        except Exception:  # noqa: BLE001 - any architecture that rejects the inputs falls back
            return False
        full = next(self.model.parameters()).dtype in (torch.float32, torch.float64)
        tolerance = 1e-3 if full else 3e-2
        return all(
            (math.isinf(a) and math.isinf(b)) or abs(a - b) <= tolerance * max(abs(b), 1.0)
            for a, b in zip(packed, padded, strict=True)
        )

    def _score_padded(self, texts: Sequence[str]) -> list[float]:
        import torch

        encoded_all = [self._ids(t) for t in texts]
        # batches of similar length (sorted by token count): little padding is computed
        order = sorted(range(len(texts)), key=lambda i: len(encoded_all[i]))
        out = [float("inf")] * len(texts)
        for b in range(0, len(order), self.batch_size):
            idx = order[b : b + self.batch_size]
            encoded = [encoded_all[i] for i in idx]
            width = max(len(ids) for ids in encoded)
            pad = 0
            input_ids = torch.full((len(encoded), width), pad, dtype=torch.long)
            mask = torch.zeros((len(encoded), width), dtype=torch.long)
            for i, ids in enumerate(encoded):
                input_ids[i, : len(ids)] = torch.tensor(ids, dtype=torch.long)
                mask[i, : len(ids)] = 1
            with torch.inference_mode():
                nll = self._token_nll(input_ids.to(self.device), mask.to(self.device))
                m = mask[:, 1:].to(nll.device).float()
                counts = m.sum(dim=1)
                mean = (nll * m).sum(dim=1) / counts.clamp(min=1)
            for j, i in enumerate(idx):
                out[i] = math.exp(min(float(mean[j]), 50.0)) if float(counts[j]) >= 1 else float("inf")
        return out

    def _score_packed(self, texts: Sequence[str]) -> list[float]:
        import torch

        from projects.ml.packing import packed_batches

        split = self._split_model()
        assert split is not None
        body_model, head = split
        prefix = self._prefix
        n_pre = len(prefix)
        # _ids puts the prefix in front of every text; the row carries it once instead
        bodies = [self._ids(t)[n_pre:] for t in texts]
        # the tokens of a text that are predicted: all after a BOS; without one, all but the first
        n_pred = [len(b) if n_pre else len(b) - 1 for b in bodies]
        out = [float("inf")] * len(texts)
        todo = [i for i in range(len(texts)) if n_pred[i] >= 1]
        if not todo:
            return out
        sums = dict.fromkeys(todo, 0.0)
        batches = packed_batches(
            [bodies[i] for i in todo],
            width=self.pack_width,
            causal=True,
            dtype=next(self.model.parameters()).dtype,
            prefix=prefix,
            # the output head's log-probabilities (a row of the vocabulary per position) bound this
            max_tokens=self.batch_size * 16,
        )
        for batch in batches:
            src: list[int] = []  # flat (row * width + column) of the position that predicts
            targets: list[int] = []
            owner: list[int] = []
            for k, r, s, n in batch.spans:
                seq = bodies[todo[k]]
                # token j of a text is predicted by the position before it: the prefix's last
                # token for j = 0 (when there is a prefix)
                for j in range(0 if n_pre else 1, n):
                    src.append(r * batch.width + (s + j - 1 if j else n_pre - 1))
                    targets.append(seq[j])
                    owner.append(todo[k])
            with torch.inference_mode():
                hidden = body_model(
                    input_ids=batch.input_ids.to(self.device),
                    attention_mask=batch.attention_mask.to(self.device),
                    position_ids=batch.position_ids.to(self.device),
                ).last_hidden_state
                # the output head once per predicting position (a row's BOS predicts the first
                # token of each of its texts)
                where, back = torch.unique(torch.tensor(src), return_inverse=True)
                states = hidden.reshape(-1, hidden.shape[-1])[where.to(hidden.device)]
                logp = torch.log_softmax(head(states).float(), dim=-1)
                nll = -logp[back.to(logp.device), torch.tensor(targets, device=logp.device)]
            for i, v in zip(owner, nll.double().cpu().tolist(), strict=True):
                sums[i] += v
        for i in todo:
            out[i] = math.exp(min(sums[i] / n_pred[i], 50.0))
        return out

    def _token_nll(self, input_ids: Any, mask: Any) -> Any:
        """NLL of tokens 1..n-1 of each row (0 at padding). The output head (a 49k-word
        vocabulary for SmolLM2: a fifth of the model's work per token) runs only on the
        positions that predict a real token, not on padding."""
        import torch

        keep = mask[:, 1:].bool()
        target = input_ids[:, 1:]
        split = self._split_model()
        if split is None:
            logits = self.model(input_ids=input_ids, attention_mask=mask).logits[:, :-1]
            logp = torch.log_softmax(logits.float(), dim=-1)
            return -logp.gather(-1, target.unsqueeze(-1)).squeeze(-1) * keep
        body, head = split
        hidden = body(input_ids=input_ids, attention_mask=mask).last_hidden_state[:, :-1]
        logp = torch.log_softmax(head(hidden[keep]).float(), dim=-1)
        nll = torch.zeros(target.shape, dtype=logp.dtype, device=logp.device)
        nll[keep] = -logp.gather(-1, target[keep].unsqueeze(-1)).squeeze(-1)
        return nll

    def clear_cache(self) -> None:
        self._cache.clear()

    def score(self, texts: Sequence[str]) -> NDArray[np.float64]:
        todo = [t for t in dict.fromkeys(texts) if t not in self._cache]
        if todo:
            for t, p in zip(todo, self._score_uncached(todo), strict=True):
                if len(self._cache) >= self.cache_size:
                    self._cache.pop(next(iter(self._cache)))
                self._cache[t] = p
        return np.array([self._cache[t] for t in texts], dtype=np.float64)


def shared_ends(a: Sequence[Any], b: Sequence[Any]) -> tuple[int, int]:
    """How many items ``a`` and ``b`` share at the start, and then at the end (not overlapping)."""
    p = 0
    while p < min(len(a), len(b)) and a[p] == b[p]:
        p += 1
    s = 0
    while s < min(len(a), len(b)) - p and a[len(a) - 1 - s] == b[len(b) - 1 - s]:
        s += 1
    return p, s


def edit_windows(original: str, candidate: str, context_words: int = 12) -> tuple[str, str]:
    """The edited part of ``original`` and ``candidate`` with ``context_words`` words of shared
    context either side (the same context for both): what the perplexity filter scores, so its
    cost does not grow with the length of a review."""
    a, b = original.split(), candidate.split()
    p, s = shared_ends(a, b)
    lo = max(0, p - context_words)
    return (
        " ".join(a[lo : max(lo, len(a) - s + context_words)]),
        " ".join(b[lo : max(lo, len(b) - s + context_words)]),
    )


# the default of COUNTERPART_PERPLEXITY_MAX_RATIO: what 90 % of the human sentence edits of
# CAD-sentiment dev (84 % of CAD-NLI dev's) stay under, on a 4-word-context window
PERPLEXITY_MAX_RATIO = 2.5


class FluencyScorer(Protocol):
    """What the perplexity filter scores with: :class:`PerplexityScorer` (a causal LM) or
    ``fluency.NgramScorer`` (the n-gram model)."""

    def score(self, texts: Sequence[str]) -> NDArray[np.float64]: ...


def perplexity(
    scorer: FluencyScorer,
    originals: Sequence[str],
    candidates: Sequence[str],
    max_ratio: float = PERPLEXITY_MAX_RATIO,
    context_words: int | None = None,
) -> list[FilterResult]:
    """Keep a candidate whose perplexity is at most ``max_ratio`` x its original's (score: the
    ratio candidate / original). Relative, because absolute perplexity depends on the text.
    With ``context_words`` only the edited window (:func:`edit_windows`) of both is scored."""
    if context_words is not None:
        pairs = [edit_windows(o, c, context_words) for o, c in zip(originals, candidates, strict=True)]
        originals, candidates = [o for o, _ in pairs], [c for _, c in pairs]
    judge = getattr(scorer, "judge", None)
    decided = judge(originals, candidates) if callable(judge) else None
    if decided is not None:  # a scorer that decides by its own classifier (fluency.NgramScorer)
        return [FilterResult(score, keep, (reason,) if reason else ()) for score, keep, reason in decided]
    ppl = scorer.score(list(originals) + list(candidates))
    n = len(originals)
    out = []
    for i in range(len(candidates)):
        base, p = float(ppl[i]), float(ppl[n + i])
        ratio = p / base if base > 0 and math.isfinite(base) else (1.0 if p == base else float("inf"))
        keep = bool(ratio <= max_ratio)
        reason = () if keep else (f"perplexity {p:.1f} > {max_ratio} x {base:.1f} (the original's)",)
        out.append(FilterResult(ratio if math.isfinite(ratio) else 1e9, keep, reason))
    return out


# -- DISCO artifact heuristics -----------------------------------------------------------------
NEGATION_TOKENS = lx.NEGATION_WORDS | lx.NEGATED_CONTRACTIONS

# -- malformed text an edit left behind (issue 27) -------------------------------------------
# A clause may not end on these: "...black swimming suit while.", "...with instruments are.",
# "...in the." (particles such as "up", "down", "out", "off" may: "He stood up.")
DANGLING_END: frozenset[str] = (
    frozenset({"a", "an", "the", "every", "each", "no", "its", "their", "my", "your", "our"})
    | frozenset({"and", "or", "but", "nor", "while", "because", "although", "though", "whereas", "if", "than"})
    | frozenset({"is", "are", "was", "were", "am", "has", "have", "had", "does", "do", "did", "will", "would"})
    | frozenset({"can", "could", "should", "must", "might", "may", "shall", "being", "been", "to", "who", "which"})
    | (lx.PREPOSITIONS - frozenset({"up", "down", "along", "around", "inside", "outside", "before", "after"}))
    | frozenset({"very", "quite", "rather", "extremely", "so", "too", "not"})
)
# a determiner cannot be followed by these (its noun is lost): "a the", "the is", "a with"
# ("a not very good film" is English: "not" may follow)
_HEADLESS_NEXT: frozenset[str] = (
    lx.PREPOSITIONS | frozenset({"a", "an", "the", "is", "are", "was", "were", "and", "or", "but", "while"})
) - frozenset({"up", "down", "while", "after", "before", "inside", "outside"})
_ARTICLES = frozenset({"a", "an", "the", "every", "each"})
_WORD_OR_PUNCT = re.compile(r"<[^<>]*>|[A-Za-z]+(?:['’][a-z]+)?|[0-9]+|[^\w\s]")
_CLAUSE_END = frozenset({".", "!", "?", ";", ":"})
_PAIRS = (("(", ")"), ("[", "]"), ("{", "}"))


def malformations(text: str, tags: Sequence[tuple[str, str]] | None = None) -> dict[str, int]:
    """Counts of patterns of malformed text in ``text``: a clause that ends on a function word
    (``end:while``), a determiner with no noun after it (``headless:a->the``, and with POS
    ``tags`` — (word, Penn tag) pairs from the rules tagger — a determiner, modifiers and then a
    verb with no noun: ``headless:a->VBZ``), a word doubled (``double:the``), brackets, quotes
    or markup out of balance (``unbalanced:(``, ``unbalanced:<``). A candidate is judged by the
    patterns it has that its original does not (:func:`introduced_malformations`)."""
    out: dict[str, int] = {}

    def add(key: str) -> None:
        out[key] = out.get(key, 0) + 1

    toks = [m.group(0) for m in _WORD_OR_PUNCT.finditer(text)]
    low = [t.lower() for t in toks]
    for i, w in enumerate(low):
        nxt = low[i + 1] if i + 1 < len(low) else None
        if w.isalpha() and (nxt is None or nxt in _CLAUSE_END) and w in DANGLING_END:
            add(f"end:{w}")
        if w in _ARTICLES and nxt is not None and (nxt in _HEADLESS_NEXT or nxt in _CLAUSE_END or nxt == ","):
            add(f"headless:{w}->{nxt}")
        if nxt is not None and w.isalpha() and w == nxt and w not in ("that", "had", "very", "so", "no", "really"):
            add(f"double:{w}")
    if tags:
        words_ = [(w.lower(), t) for w, t in tags]
        for i, (w, _) in enumerate(words_):
            if w not in ("a", "an"):
                continue
            j = i + 1
            while j < len(words_) and words_[j][1] in ("JJ", "JJR", "JJS", "NN", "RB"):
                j += 1
            if j == i + 1:
                continue
            nxt_tag = words_[j][1] if j < len(words_) else "END"
            last = words_[j - 1]
            # "a tall is", "a tennis glowers", "with a tennis.": the noun is missing
            if nxt_tag in ("VBZ", "VBD", "VBP", "MD", "IN", "END", ".", ",") and (
                last[1] not in ("NN", "NNS") or last[0] in lx.ADJECTIVE_LIKE_NOUNS
            ):
                add(f"headless:{w}->{nxt_tag if nxt_tag.isupper() else 'END'}")
            # "a tennis glowers" (tagged NNS), "a red shoes": "a" with a plural head
            elif (
                nxt_tag == "NNS"
                and (last[1] != "NN" or last[0] in lx.ADJECTIVE_LIKE_NOUNS)
                and words_[i + 1][0] not in ("few", "lot", "couple", "dozen", "number", "hundred", "thousand", "pair")
                and (j + 1 >= len(words_) or words_[j + 1][1] not in ("NN", "NNS", "NNP"))
            ):
                add(f"headless:{w}->NNS")
    for a, b in _PAIRS:
        if text.count(a) != text.count(b):
            add(f"unbalanced:{a}")
    if text.count('"') % 2:
        add('unbalanced:"')
    bare = re.sub(r"<[^<>]*>", "", text)
    if "<" in bare or ">" in bare or re.search(r"<[^<>]*$", text):
        add("unbalanced:<")
    return out


def changed_part(original: str, candidate: str) -> tuple[str, str]:
    """The sentences an edit touched: both texts less the sentences they share at the start
    and at the end (a review keeps its other sentences byte-identical)."""
    from generation.ml.rules.tokens import sentence_spans

    a = [original[x:y] for x, y in sentence_spans(original)]
    b = [candidate[x:y] for x, y in sentence_spans(candidate)]
    i = 0
    while i < min(len(a), len(b)) and a[i] == b[i]:
        i += 1
    j = 0
    while j < min(len(a), len(b)) - i and a[len(a) - 1 - j] == b[len(b) - 1 - j]:
        j += 1
    return " ".join(a[i : len(a) - j]), " ".join(b[i : len(b) - j])


def introduced_malformations(original: str, candidate: str, *, tagged: bool = True) -> list[str]:
    """The malformation patterns (:func:`malformations`) that ``candidate`` has more often than
    ``original``: what the edit broke. With ``tagged`` the rules' POS tagger also reads the
    changed sentences for a determiner whose noun was lost before a verb."""
    before = malformations(original)
    after = malformations(candidate)
    if tagged:
        from generation.ml.rules.tokens import tag

        pa, pb = changed_part(original, candidate)
        for part, into in ((pa, before), (pb, after)):
            tagged_only = {
                k: n
                for k, n in malformations(part, [(t.text, t.pos) for t in tag(part)]).items()
                if k.startswith("headless:") and k.split("->")[1].isupper()
            }
            for k, n in tagged_only.items():
                into[k] = into.get(k, 0) + n
    return sorted(k for k, n in after.items() if n > before.get(k, 0))


def artifacts(
    original_fields: Mapping[str, str],
    candidate_fields: Mapping[str, str],
    *,
    premise_field: str = "premise",
    hypothesis_field: str = "hypothesis",
    introduced: Sequence[str] | None = None,
    prompt: str | None = None,
    target_label: str | None = None,
    shortcut_labels: Sequence[str] = ("contradiction",),
    hypothesis_max: float = 0.6,
    premise_max: float = 0.35,
) -> FilterResult:
    """The DISCO heuristics for one candidate. Score: the number of heuristics that fire."""
    reasons: list[str] = []
    changed = [k for k in candidate_fields if candidate_fields[k] != original_fields.get(k)]
    if introduced is None:
        introduced = []
        for k in changed:
            introduced += introduced_removed(original_fields.get(k, ""), candidate_fields[k])[0]
    intro_set = {w for w in (x.lower() for x in introduced) if any(c.isalnum() for c in w)}
    for k in changed:
        new = normalise(candidate_fields[k])
        for other, text in original_fields.items():
            if other != k and new and new == normalise(text):
                reasons.append(f"{k} copies {other}")
        if prompt:
            for line in prompt.splitlines():
                seg = normalise(line)
                if len(seg.split()) >= 4 and seg in new:
                    reasons.append(f"{k} copies the prompt")
                    break
        broken = introduced_malformations(str(original_fields.get(k, "")), str(candidate_fields[k]))
        if broken:
            reasons.append(f"{k}: malformed after the edit ({', '.join(broken)})")
    if intro_set:
        hyp = original_fields.get(hypothesis_field)
        prem = original_fields.get(premise_field)
        if hyp is not None and (j := jaccard(intro_set, word_set(hyp))) > hypothesis_max:
            reasons.append(f"introduced text overlaps the hypothesis (Jaccard {j:.2f})")
        if prem is not None and (j := jaccard(intro_set, word_set(prem))) > premise_max:
            reasons.append(f"introduced text overlaps the premise (Jaccard {j:.2f})")
        if target_label is not None and target_label in shortcut_labels:
            negs = sorted(intro_set & NEGATION_TOKENS)
            if negs:
                reasons.append(f"negation shortcut to {target_label}: {', '.join(negs)}")
    return FilterResult(float(len(reasons)), not reasons, tuple(reasons))


# -- classifier-based --------------------------------------------------------------------------
def _target_index(labels: Sequence[str], targets: Sequence[str]) -> NDArray[np.int64]:
    index = {lab: i for i, lab in enumerate(labels)}
    missing = [t for t in targets if t not in index]
    if missing:
        raise ValueError(f"target label(s) not in the label set: {sorted(set(missing))}")
    return np.array([index[t] for t in targets], dtype=np.int64)


def consistency(probs: ArrayLike, labels: Sequence[str], targets: Sequence[str]) -> list[FilterResult]:
    """Keep when the classifier's top label is the target. Score: p(target | x')."""
    p = np.asarray(probs, dtype=np.float64)
    idx = _target_index(labels, targets)
    pt = p[np.arange(len(idx)), idx]
    top = p.argmax(axis=1)
    return [
        FilterResult(float(s), bool(t == i), () if t == i else (f"predicts {labels[t]}",))
        for s, t, i in zip(pt, top, idx, strict=True)
    ]


def teacher_shift(
    p_original: ArrayLike,
    p_candidate: ArrayLike,
    labels: Sequence[str],
    targets: Sequence[str],
    threshold: float = 0.25,
) -> list[FilterResult]:
    """DISCO's distillation filter: keep when p(target|x') - p(target|x) > ``threshold``."""
    po, pc = np.asarray(p_original, dtype=np.float64), np.asarray(p_candidate, dtype=np.float64)
    if po.shape != pc.shape:
        raise ValueError("probability arrays must have the same shape")
    idx = _target_index(labels, targets)
    rows = np.arange(len(idx))
    shift = pc[rows, idx] - po[rows, idx]
    return [
        FilterResult(float(s), bool(s > threshold), () if s > threshold else (f"shift {s:.2f} <= {threshold}",))
        for s in shift
    ]
