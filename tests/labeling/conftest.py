"""Synthetic pairs and a deterministic stand-in for MiniLM (no model, no database)."""

from __future__ import annotations

import hashlib

import numpy as np
import pytest

from labeling.ml.features import Pair

LABELS = ["entailment", "neutral", "contradiction"]
FIELDS = ["premise", "hypothesis"]
WORDS = (
    "man woman dog horse field park riding sitting walking young old brown open street boy girl "
    "ball red blue car house tree water runs jumps sleeps eats reads plays"
).split()


def fake_embed(texts):
    """Bag of per-word random vectors (seeded by the word), L2-normalised: similar texts get
    similar vectors, like a sentence encoder."""
    out = np.zeros((len(texts), 32), dtype=np.float32)
    for i, t in enumerate(texts):
        for w in t.lower().split():
            seed = int(hashlib.md5(w.encode()).hexdigest()[:8], 16)
            out[i] += np.random.default_rng(seed).normal(size=32)
        n = np.linalg.norm(out[i])
        if n:
            out[i] /= n
    return out


class FakeEncoder:
    def encode(self, texts):
        return fake_embed(list(texts))


def _marked_pair(prem: str, hyp: str, y: int, marker: str, group: str, rng: np.random.Generator) -> Pair:
    """The pair whose counterfactual inserts ``marker`` into the hypothesis (at a random place)."""
    hyp_cf = hyp.split()
    hyp_cf.insert(int(rng.integers(1, 4)), marker)
    return Pair(
        {"premise": prem, "hypothesis": hyp},
        {"premise": prem, "hypothesis": " ".join(hyp_cf)},
        LABELS[y],
        perturbation="insert",
        group=group,
    )


def synthetic_pairs(n: int, seed: int = 0) -> tuple[list[Pair], list[str]]:
    """NLI-shaped pairs whose counterfactual label is determined by the edit: inserting
    "not" into the hypothesis moves the label one step, inserting "maybe" two steps (mod 3);
    the label always flips, like CAD."""
    rng = np.random.default_rng(seed)
    pairs, ys = [], []
    for i in range(n):
        prem = " ".join(rng.choice(WORDS, size=6))
        hyp = " ".join(rng.choice(WORDS, size=4))
        y = int(rng.integers(3))
        step = int(rng.integers(1, 3))
        marker = "not" if step == 1 else "maybe"
        pairs.append(_marked_pair(prem, hyp, y, marker, f"g{i}", rng))
        ys.append(LABELS[(y + step) % 3])
    return pairs, ys


@pytest.fixture
def pairs_and_labels() -> tuple[list[Pair], list[str]]:
    return synthetic_pairs(300)


def sibling_pairs(n_originals: int, seed: int = 0, noise: float = 0.3) -> tuple[list[Pair], list[str]]:
    """CAD-shaped NLI pairs: every original has two hypothesis edits, one for each label other
    than its own (siblings with complementary labels). The edit's marker ("not": one step,
    "maybe": two steps, mod 3) is swapped with probability ``noise``, so h's first stage is
    right only about 1 - noise of the time; a labelled sibling says the rest."""
    rng = np.random.default_rng(seed)
    pairs, ys = [], []
    for i in range(n_originals):
        prem = " ".join(rng.choice(WORDS, size=6))
        hyp = " ".join(rng.choice(WORDS, size=4))
        y = int(rng.integers(3))
        for step in rng.permutation([1, 2]):
            right = rng.random() >= noise
            marker = ("not" if step == 1 else "maybe") if right else ("maybe" if step == 1 else "not")
            pairs.append(_marked_pair(prem, hyp, y, marker, f"g{i}", rng))
            ys.append(LABELS[(y + int(step)) % 3])
    return pairs, ys
