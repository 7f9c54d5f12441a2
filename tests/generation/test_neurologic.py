"""The constrained beam search, deterministically with fake models whose log-probs we set, and
with tiny random GPT-2 / T5 models loaded through the real local-path loaders."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np
import pytest

from generation.ml.neurologic import (
    CausalStepModel,
    Clause,
    Hypothesis,
    SearchConfig,
    Seq2SeqStepModel,
    constrained_beam_search,
    progress_reward,
    satisfied_in,
    select,
    tokens_needed,
)
from tests.generation._tiny_hf import torch_single_thread  # noqa: F401 - autouse fixture

V = 8
EOS = 0


class FakeModel:
    """Next-token log-probs from a function of the prefix; records every call."""

    eos_token_id = EOS

    def __init__(self, scores: Callable[[Sequence[int]], dict[int, float]], default: float = -6.0) -> None:
        self.scores = scores
        self.default = default
        self.calls: list[list[tuple[int, ...]]] = []

    def step_logprobs(self, prefixes: Sequence[Sequence[int]]) -> np.ndarray:
        self.calls.append([tuple(p) for p in prefixes])
        out = np.full((len(prefixes), V), self.default)
        for i, p in enumerate(prefixes):
            for tok, lp in self.scores(p).items():
                out[i, tok] = lp
        return out


def contains(seq: Sequence[int], sub: Sequence[int]) -> bool:
    return any(tuple(seq[i : i + len(sub)]) == tuple(sub) for i in range(len(seq) - len(sub) + 1))


def test_constraints_get_satisfied_even_when_the_model_dislikes_them() -> None:
    model = FakeModel(lambda p: {1: -0.1, 2: -0.3, EOS: -0.5})
    clauses = [Clause(((3, 4),), "three four"), Clause(((6,), (7,)), "six|seven")]
    plain = constrained_beam_search(model, [], SearchConfig(beam_size=4, max_new_tokens=6, no_repeat_ngram=0))
    assert not contains(plain[0].tokens, (3, 4))
    hyps = constrained_beam_search(model, clauses, SearchConfig(beam_size=4, max_new_tokens=6, no_repeat_ngram=0))
    best = hyps[0]
    assert best.n_satisfied() == 2
    assert contains(best.tokens, (3, 4))
    assert 6 in best.tokens or 7 in best.tokens
    assert satisfied_in(best.tokens, clauses) == frozenset({0, 1})


def test_beams_that_cannot_satisfy_the_constraints_are_pruned() -> None:
    # The model wants to stop at once; the constraints need exactly 3 tokens of a 3-token budget.
    model = FakeModel(lambda p: {EOS: -0.01, 1: -1.0})
    clauses = [Clause(((2, 3),)), Clause(((5,),))]
    unpruned = constrained_beam_search(
        model, clauses, SearchConfig(beam_size=3, max_new_tokens=3, prune=False, no_repeat_ngram=0)
    )
    assert any(h.n_satisfied() < 2 for h in unpruned)
    model = FakeModel(lambda p: {EOS: -0.01, 1: -1.0})
    hyps = constrained_beam_search(model, clauses, SearchConfig(beam_size=3, max_new_tokens=3, no_repeat_ngram=0))
    assert hyps, "a satisfying hypothesis exists and must be found"
    assert all(h.n_satisfied() == 2 for h in hyps)
    assert all(len(h.tokens) == 3 for h in hyps)
    # no live beam ever carried a prefix that could no longer fit the constraints in the budget
    for step, prefixes in enumerate(model.calls):
        for p in prefixes:
            assert tokens_needed(p, clauses, satisfied_in(p, clauses)) <= 3 - step


def test_tokens_needed_counts_in_progress_matches() -> None:
    clauses = [Clause(((2, 3, 4),)), Clause(((5,), (6, 7)))]
    assert tokens_needed((), clauses, frozenset()) == 3 + 1
    assert tokens_needed((1, 2), clauses, frozenset()) == 2 + 1
    assert tokens_needed((2, 3), clauses, frozenset({1})) == 1


def test_grouping_keeps_the_best_of_each_satisfied_count() -> None:
    def h(tokens: tuple[int, ...], sat: set[int], score: float) -> Hypothesis:
        return Hypothesis(tokens=tokens, logprob=score, satisfied=frozenset(sat), score=score)

    cands = [
        h((1,), set(), -0.1),
        h((2,), set(), -0.2),
        h((3,), set(), -0.3),
        h((4,), {0}, -5.0),
        h((5,), {0, 1}, -9.0),
        h((6,), {0}, -6.0),
    ]
    top3_by_score = sorted(cands, key=lambda c: -c.score)[:3]
    assert all(c.n_satisfied() == 0 for c in top3_by_score)
    chosen = select(cands, 3)
    assert [c.tokens for c in chosen] == [(5,), (4,), (1,)]  # best of groups 2, 1, 0
    chosen5 = select(cands, 5)
    assert [c.tokens for c in chosen5] == [(5,), (4,), (1,), (6,), (2,)]  # then second-best of each


def test_partial_progress_reward_changes_the_ranking() -> None:
    clauses = [Clause(((2, 3),))]
    assert progress_reward((1, 2), clauses, frozenset()) == pytest.approx(0.5)
    assert progress_reward((2, 1), clauses, frozenset()) == 0.0
    assert progress_reward((2, 3), clauses, frozenset({0})) == 0.0

    # step 1: token 4 slightly beats token 2 (the start of the constraint); afterwards the model
    # is indifferent. With beam size 1, only the reward makes the search start the constraint.
    def scores(p: Sequence[int]) -> dict[int, float]:
        if not p:
            return {4: -1.0, 2: -1.2}
        return dict.fromkeys(range(1, V), -2.0)

    cfg = {"beam_size": 1, "max_new_tokens": 4, "no_repeat_ngram": 0, "candidate_k": 3}
    without = constrained_beam_search(FakeModel(scores), clauses, SearchConfig(progress_weight=0.0, **cfg))
    with_reward = constrained_beam_search(FakeModel(scores), clauses, SearchConfig(progress_weight=1.0, **cfg))
    assert without[0].tokens[0] == 4
    assert with_reward[0].tokens[:2] == (2, 3)
    assert with_reward[0].n_satisfied() == 1 and without[0].n_satisfied() == 1


def test_tiny_gpt2_output_contains_the_constraint_tokens(tmp_path) -> None:
    from generation.ml import hf
    from tests.generation._tiny_hf import save_gpt2

    lm = hf.load_causal_lm(str(save_gpt2(tmp_path / "gpt2")))
    tok = lm.tokenizer
    horse = tuple(tok("horse", add_special_tokens=False)["input_ids"])
    brown_dog = tuple(tok("brown dog", add_special_tokens=False)["input_ids"])
    clauses = [Clause((horse,), "horse"), Clause((brown_dog,), "brown dog")]
    model = CausalStepModel(lm.model, tok("the man", add_special_tokens=False)["input_ids"], tok.eos_token_id)
    hyps = constrained_beam_search(model, clauses, SearchConfig(beam_size=4, max_new_tokens=8, candidate_k=5))
    best = hyps[0]
    assert best.n_satisfied() == 2
    text = tok.decode(list(best.tokens))
    assert "horse" in text and "brown dog" in text


def test_tiny_t5_step_adapter(tmp_path) -> None:
    from generation.ml import hf
    from tests.generation._tiny_hf import save_t5

    lm = hf.load_seq2seq(str(save_t5(tmp_path / "t5")))
    tok = lm.tokenizer
    park = tuple(tok("park", add_special_tokens=False)["input_ids"])
    model = Seq2SeqStepModel(lm.model, tok("positive : the park")["input_ids"], tok.eos_token_id)
    logp = model.step_logprobs([(), ()])
    assert logp.shape == (2, len(tok)) or logp.shape[0] == 2
    assert np.allclose(np.exp(logp).sum(-1), 1.0, atol=1e-4)
    hyps = constrained_beam_search(model, [Clause((park,), "park")], SearchConfig(beam_size=3, max_new_tokens=5))
    assert park[0] in hyps[0].tokens


def test_causal_step_model_cache_reuse_gives_the_same_log_probs(tmp_path) -> None:
    import torch

    from generation.ml import hf
    from tests.generation._tiny_hf import save_gpt2

    lm = hf.load_causal_lm(str(save_gpt2(tmp_path / "g")))
    prompt = [3, 4, 5, 6]

    def full(prefixes: Sequence[Sequence[int]]) -> np.ndarray:
        ids = torch.tensor([prompt + list(p) for p in prefixes])
        with torch.no_grad():
            return torch.log_softmax(lm.model(input_ids=ids).logits[:, -1].float(), dim=-1).numpy()

    step = CausalStepModel(lm.model, prompt, eos_token_id=None)
    steps: list[list[tuple[int, ...]]] = [[()], [(7,), (8,)], [(8, 9), (7, 9), (7, 10)], [(7, 10, 11)], [(12, 13)]]
    for prefixes in steps:  # the last one extends no earlier prefix: re-run after the prompt
        np.testing.assert_allclose(step.step_logprobs(prefixes), full(prefixes), atol=1e-4)
