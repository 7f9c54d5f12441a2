import numpy as np
import pytest

from labeling.ml import baselines
from labeling.ml.features import Pair


def test_invariant_copies_the_original_label():
    p = baselines.invariant(np.array([2, 0]), 3)
    assert p.argmax(1).tolist() == [2, 0]
    assert p.max(1).tolist() == [1.0, 1.0]


def test_trust_is_f_on_the_counterfactual():
    f_c = np.array([[0.2, 0.8], [0.7, 0.3]])
    assert np.array_equal(baselines.trust(f_c), f_c)


def test_weighted_trust_is_argmax_of_the_product():
    f_o = np.array([[0.6, 0.3, 0.1]])
    f_c = np.array([[0.2, 0.3, 0.5]])
    p = baselines.weighted_trust(f_o, f_c)
    # products: 0.12, 0.09, 0.05 -> label 0 although f(x') alone says label 2
    assert p.argmax(1).tolist() == [0]
    assert p.sum() == pytest.approx(1.0)
    assert p[0, 0] == pytest.approx(0.12 / 0.26)


def test_random_pairing_changes_every_original_and_keeps_the_counterfactual():
    pairs = [Pair({"t": f"o{i}"}, {"t": f"c{i}"}, "a" if i % 2 else "b") for i in range(20)]
    shuffled = baselines.random_pairing(pairs, np.random.default_rng(0))
    assert [p.counterfactual for p in shuffled] == [p.counterfactual for p in pairs]
    assert all(s.original != p.original for s, p in zip(shuffled, pairs, strict=True))
    # the original label travels with its original
    assert all(s.y == ("a" if int(s.original["t"][1:]) % 2 else "b") for s in shuffled)
