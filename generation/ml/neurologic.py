"""Constrained beam search in the spirit of NeuroLogic decoding (Lu et al., 2021) — our own.

Constraints are in conjunctive normal form over *positive* predicates: a :class:`Clause` is an
OR of token-id sequences and is satisfied once any of them appears contiguously in the
generated tokens. At each step the search

1. expands every live beam with its top-k next tokens plus the tokens that start or continue
   an unsatisfied constraint (so a constraint the model finds unlikely can still be reached);
2. prunes candidates that can no longer satisfy every clause: those that end (EOS) with a
   clause unsatisfied, and those whose remaining length is shorter than the tokens still
   needed (the sum over unsatisfied clauses of the shortest remaining completion);
3. scores each candidate as ``log p(y≤t | x) + λ · max_c (matched_c / len_c)`` where the max
   runs over unsatisfied multi-token constraints that are in progress (the partial-progress
   reward of NeuroLogic's Eq. 2);
4. groups candidates by the number of satisfied clauses and fills the beam round-robin from the
   groups, most-satisfied group first, best score first within a group — so each group keeps
   its best candidate before any group gets a second one.

The model is any :class:`StepModel`: ``step_logprobs(prefixes) -> (batch, vocab)`` next-token
log-probabilities for generated-so-far prefixes that all have the same length. Adapters for
causal and encoder-decoder transformers are :class:`CausalStepModel` and :class:`Seq2SeqStepModel`.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
from numpy.typing import NDArray

from generation.ml.base import StopHook, stop_point


@dataclass(frozen=True)
class Clause:
    """OR of token-id sequences (e.g. the variants " Movie" / " movie" of one concept)."""

    alternatives: tuple[tuple[int, ...], ...]
    text: str = ""

    def __post_init__(self) -> None:
        if not self.alternatives or any(len(a) == 0 for a in self.alternatives):
            raise ValueError("a clause needs at least one non-empty token sequence")


class StepModel(Protocol):
    eos_token_id: int | None

    def step_logprobs(self, prefixes: Sequence[Sequence[int]]) -> NDArray[np.floating]: ...


@dataclass(frozen=True)
class Hypothesis:
    tokens: tuple[int, ...]
    logprob: float
    satisfied: frozenset[int]
    finished: bool = False
    score: float = 0.0

    def n_satisfied(self) -> int:
        return len(self.satisfied)


# -- constraint bookkeeping ------------------------------------------------------------------
def _suffix_prefix(tokens: Sequence[int], alt: Sequence[int]) -> int:
    """Longest k < len(alt) with tokens[-k:] == alt[:k] (an in-progress match)."""
    n = min(len(alt) - 1, len(tokens))
    for k in range(n, 0, -1):
        if tuple(tokens[-k:]) == tuple(alt[:k]):
            return k
    return 0


def update_satisfied(tokens: Sequence[int], clauses: Sequence[Clause], satisfied: frozenset[int]) -> frozenset[int]:
    """Clauses satisfied after the last token of ``tokens`` was appended."""
    new = set(satisfied)
    for ci, clause in enumerate(clauses):
        if ci in new:
            continue
        for alt in clause.alternatives:
            if len(tokens) >= len(alt) and tuple(tokens[-len(alt) :]) == alt:
                new.add(ci)
                break
    return frozenset(new)


def satisfied_in(tokens: Sequence[int], clauses: Sequence[Clause]) -> frozenset[int]:
    """Clauses satisfied anywhere in ``tokens`` (not incremental)."""
    sat: frozenset[int] = frozenset()
    for i in range(1, len(tokens) + 1):
        sat = update_satisfied(tokens[:i], clauses, sat)
    return sat


def tokens_needed(tokens: Sequence[int], clauses: Sequence[Clause], satisfied: frozenset[int]) -> int:
    """A lower bound on the tokens still needed to satisfy every clause (clauses assumed not to
    share tokens): per unsatisfied clause, the shortest remaining completion."""
    need = 0
    for ci, clause in enumerate(clauses):
        if ci in satisfied:
            continue
        need += min(len(a) - _suffix_prefix(tokens, a) for a in clause.alternatives)
    return need


def progress_reward(tokens: Sequence[int], clauses: Sequence[Clause], satisfied: frozenset[int]) -> float:
    """max over unsatisfied multi-token alternatives of matched/len (0 when none in progress)."""
    best = 0.0
    for ci, clause in enumerate(clauses):
        if ci in satisfied:
            continue
        for alt in clause.alternatives:
            if len(alt) > 1:
                k = _suffix_prefix(tokens, alt)
                if k:
                    best = max(best, k / len(alt))
    return best


def next_constraint_tokens(tokens: Sequence[int], clauses: Sequence[Clause], satisfied: frozenset[int]) -> set[int]:
    """Tokens that start or continue an unsatisfied constraint."""
    out: set[int] = set()
    for ci, clause in enumerate(clauses):
        if ci in satisfied:
            continue
        for alt in clause.alternatives:
            out.add(alt[_suffix_prefix(tokens, alt)])
    return out


def select(candidates: Sequence[Hypothesis], beam_size: int) -> list[Hypothesis]:
    """Fill the beam round-robin over groups of equal satisfied-clause count (most satisfied
    group first), best score first within each group."""
    groups: dict[int, list[Hypothesis]] = {}
    for c in candidates:
        groups.setdefault(c.n_satisfied(), []).append(c)
    ordered = [sorted(groups[k], key=lambda h: -h.score) for k in sorted(groups, reverse=True)]
    out: list[Hypothesis] = []
    rank = 0
    while len(out) < beam_size and any(rank < len(g) for g in ordered):
        for g in ordered:
            if rank < len(g) and len(out) < beam_size:
                out.append(g[rank])
        rank += 1
    return out


def _repeats_ngram(tokens: Sequence[int], tok: int, n: int) -> bool:
    if n <= 0 or len(tokens) < n - 1:
        return False
    new = (*tokens[len(tokens) - n + 1 :], tok)
    return any(tuple(tokens[i : i + n]) == new for i in range(len(tokens) - n + 1))


@dataclass
class SearchConfig:
    beam_size: int = 8
    max_new_tokens: int = 32
    min_new_tokens: int = 0
    candidate_k: int = 16  # top-k expansions per beam (constraint tokens are always added)
    progress_weight: float = 1.0  # λ of the partial-progress reward (0: off)
    length_penalty: float = 1.0  # final ranking: logprob / len ** length_penalty
    no_repeat_ngram: int = 3
    prune: bool = True
    banned_ids: frozenset[int] = field(default_factory=frozenset)


def constrained_beam_search(
    model: StepModel,
    clauses: Sequence[Clause],
    config: SearchConfig | None = None,
    should_stop: StopHook | None = None,
) -> list[Hypothesis]:
    """Finished hypotheses, best first: more satisfied clauses first, then length-normalised
    log-probability. ``should_stop`` is checked before each step (a cancelled run)."""
    cfg = config or SearchConfig()
    clauses = list(clauses)
    eos = model.eos_token_id
    beams = [Hypothesis(tokens=(), logprob=0.0, satisfied=frozenset())]
    finished: list[Hypothesis] = []
    for step in range(cfg.max_new_tokens):
        stop_point(should_stop)
        if not beams:
            break
        logp = np.asarray(model.step_logprobs([b.tokens for b in beams]), dtype=np.float64)
        remaining_after = cfg.max_new_tokens - (step + 1)
        pool: dict[tuple[int, ...], Hypothesis] = {}
        for bi, beam in enumerate(beams):
            row = logp[bi].copy()
            for b in cfg.banned_ids:
                if b != eos and b < row.shape[0]:
                    row[b] = -np.inf
            k = min(cfg.candidate_k, row.shape[0])
            top = np.argpartition(-row, k - 1)[:k]
            cand_tokens = {int(t) for t in top if np.isfinite(row[t])}
            cand_tokens |= next_constraint_tokens(beam.tokens, clauses, beam.satisfied)
            if eos is not None and np.isfinite(row[eos]):
                cand_tokens.add(int(eos))
            for tok in cand_tokens:
                if not np.isfinite(row[tok]):
                    continue
                if _repeats_ngram(beam.tokens, tok, cfg.no_repeat_ngram):
                    continue
                is_eos = eos is not None and tok == eos
                if is_eos and step < cfg.min_new_tokens:
                    continue
                tokens = beam.tokens if is_eos else (*beam.tokens, tok)
                sat = beam.satisfied if is_eos else update_satisfied(tokens, clauses, beam.satisfied)
                if cfg.prune:
                    if is_eos and len(sat) < len(clauses):
                        continue  # ending now irreversibly violates a clause
                    if not is_eos and tokens_needed(tokens, clauses, sat) > remaining_after:
                        continue  # not enough length left to satisfy every clause
                lp = beam.logprob + float(row[tok])
                score = lp + cfg.progress_weight * progress_reward(tokens, clauses, sat)
                key = tokens + ((-1,) if is_eos else ())
                hyp = Hypothesis(tokens=tokens, logprob=lp, satisfied=sat, finished=is_eos, score=score)
                if key not in pool or pool[key].score < score:
                    pool[key] = hyp
        done = [h for h in pool.values() if h.finished]
        live = [h for h in pool.values() if not h.finished]
        finished.extend(select(done, cfg.beam_size))
        beams = select(live, cfg.beam_size)
    finished.extend(Hypothesis(b.tokens, b.logprob, b.satisfied, True, b.score) for b in beams)

    def rank(h: Hypothesis) -> tuple[int, float]:
        length = max(1, len(h.tokens) + 1)
        return (h.n_satisfied(), h.logprob / (length**cfg.length_penalty))

    uniq: dict[tuple[int, ...], Hypothesis] = {}
    for h in finished:
        if h.tokens not in uniq or rank(h) > rank(uniq[h.tokens]):
            uniq[h.tokens] = h
    return sorted(uniq.values(), key=rank, reverse=True)


# -- adapters for transformers ---------------------------------------------------------------
# Models and tokenizers are Any: transformers types model.to(device) wrongly and its Auto*
# loaders and tokenizer calls as Any.
def special_ids(tokenizer: Any, keep: Iterable[int | None] = ()) -> frozenset[int]:
    keep_set = {k for k in keep if k is not None}
    return frozenset(int(i) for i in tokenizer.all_special_ids if i not in keep_set)


class CausalStepModel:
    """A decoder-only LM continuing ``prompt_ids``. The prompt is run once and its key/value
    cache reused (copied for the live beams); when every prefix of a step extends one of the
    previous step's prefixes by a token (beam search), that beam's cache is reordered and only
    the new token is run, otherwise the prefixes are re-run after the prompt's cache."""

    def __init__(self, model: Any, prompt_ids: Sequence[int], eos_token_id: int | None, device: str = "cpu") -> None:
        import torch

        self.model = model
        self.device = device
        self.eos_token_id = eos_token_id
        self.prompt = torch.tensor([list(prompt_ids)], dtype=torch.long, device=device)
        if self.prompt.shape[1] == 0:
            raise ValueError("a causal LM needs a non-empty prompt")
        self._cache: Any = None
        self._last: Any = None  # log-probs after the prompt alone
        self._beams: Any = None  # the cache after the last call's prefixes (one row each)
        self._keys: list[tuple[int, ...]] = []

    def _prompt_cache(self) -> Any:
        import torch

        if self._cache is None:
            with torch.inference_mode():
                out = self.model(input_ids=self.prompt, use_cache=True)
            self._cache = out.past_key_values
            self._last = torch.log_softmax(out.logits[:, -1, :].float(), dim=-1)
        return self._cache

    def step_logprobs(self, prefixes: Sequence[Sequence[int]]) -> NDArray[np.floating]:
        import copy

        import torch

        b = len(prefixes)
        cache = self._prompt_cache()
        if all(len(p) == 0 for p in prefixes):
            first: NDArray[np.floating] = self._last.expand(b, -1).cpu().numpy()
            return first
        keys = [tuple(p) for p in prefixes]
        parents = self._parents(keys)
        if parents is not None:
            # every prefix extends one of the last call's by a token: reuse that beam's cache
            past = self._beams
            past.reorder_cache(torch.tensor(parents, dtype=torch.long, device=self.device))
            gen = torch.tensor([[k[-1]] for k in keys], dtype=torch.long, device=self.device)
        else:
            gen = torch.tensor([list(k) for k in keys], dtype=torch.long, device=self.device).reshape(b, -1)
            past = copy.deepcopy(cache)
            if b > 1:
                past.batch_repeat_interleave(b)
        with torch.inference_mode():
            logits = self.model(input_ids=gen, past_key_values=past, use_cache=True).logits[:, -1, :].float()
        self._beams, self._keys = past, keys
        return torch.log_softmax(logits, dim=-1).cpu().numpy()

    def _parents(self, keys: Sequence[tuple[int, ...]]) -> list[int] | None:
        """Index in the last call's prefixes of each prefix minus its last token, or None."""
        if self._beams is None or not keys or any(len(k) != len(self._keys[0]) + 1 for k in keys):
            return None
        where = {k: i for i, k in enumerate(self._keys)}
        out = [where.get(k[:-1]) for k in keys]
        return None if any(i is None for i in out) else [int(i) for i in out if i is not None]


class Seq2SeqStepModel:
    """An encoder-decoder LM: the source is encoded once; prefixes are decoder inputs."""

    def __init__(self, model: Any, input_ids: Sequence[int], eos_token_id: int | None, device: str = "cpu") -> None:
        import torch

        self.model = model
        self.device = device
        self.eos_token_id = eos_token_id
        src = torch.tensor([list(input_ids)], dtype=torch.long, device=device)
        self.attention = torch.ones_like(src)
        with torch.no_grad():
            self.encoded = model.get_encoder()(input_ids=src, attention_mask=self.attention).last_hidden_state
        start = getattr(model.config, "decoder_start_token_id", None)
        if start is None:
            start = getattr(getattr(model, "generation_config", None), "decoder_start_token_id", None)
        if start is None:
            start = model.config.pad_token_id
        self.start = int(start)

    def step_logprobs(self, prefixes: Sequence[Sequence[int]]) -> NDArray[np.floating]:
        import torch
        from transformers.modeling_outputs import BaseModelOutput

        b = len(prefixes)
        dec = torch.tensor([[self.start, *p] for p in prefixes], dtype=torch.long, device=self.device)
        enc = BaseModelOutput(last_hidden_state=self.encoded.expand(b, -1, -1))
        with torch.no_grad():
            logits = (
                self.model(encoder_outputs=enc, attention_mask=self.attention.expand(b, -1), decoder_input_ids=dec)
                .logits[:, -1, :]
                .float()
            )
        return torch.log_softmax(logits, dim=-1).cpu().numpy()
