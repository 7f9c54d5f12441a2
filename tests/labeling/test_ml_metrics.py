import numpy as np
import pytest

from labeling.ml.metrics import accuracy, ece, macro_f1, scores


def test_ece_perfectly_calibrated_is_zero():
    # 10 items at confidence 0.8, 8 correct -> |0.8 - 0.8| = 0
    assert ece([0.8] * 10, [True] * 8 + [False] * 2) == pytest.approx(0.0)


def test_ece_equal_width_bins_weighted_by_size():
    conf = [0.95, 0.95, 0.55, 0.55]
    correct = [True, False, True, True]
    # bin 9: acc 0.5 vs conf 0.95 -> 0.45; bin 5: acc 1 vs 0.55 -> 0.45; each half the items
    assert ece(conf, correct) == pytest.approx(0.45)


def test_ece_confidence_one_goes_to_last_bin():
    assert ece([1.0, 1.0], [True, False]) == pytest.approx(0.5)


def test_macro_f1_and_accuracy():
    t = np.array([0, 0, 1, 1, 2])
    p = np.array([0, 1, 1, 1, 0])
    assert accuracy(t, p) == pytest.approx(0.6)
    # f1: class0 tp1 fp1 fn1 -> 0.5; class1 tp2 fp1 fn0 -> 0.8; class2 tp0 fn1 -> 0
    assert macro_f1(t, p, 3) == pytest.approx((0.5 + 0.8 + 0.0) / 3)


def test_scores_uses_argmax_and_max_confidence():
    proba = np.array([[0.9, 0.1], [0.4, 0.6]])
    s = scores(np.array([0, 0]), proba)
    assert s["accuracy"] == 0.5
    assert s["ece"] == pytest.approx(0.5 * abs(1 - 0.9) + 0.5 * abs(0 - 0.6))
