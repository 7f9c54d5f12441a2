"""The validity prior (annotators' "invalid" answers per control code) and the export
simulation of bench_pairwise."""

from __future__ import annotations

import numpy as np
import pytest

from labeling.ml.validity import ValidityPrior, export_shares


def test_validity_prior_is_smoothed_per_code():
    codes = ["shuffle"] * 4 + ["delete"] * 6
    valid = [False] * 4 + [True] * 6
    prior = ValidityPrior().fit(codes, valid)
    assert prior.overall == pytest.approx(7 / 11)
    p = prior.predict(["shuffle", "delete", "unseen"])
    assert p[0] < 0.5 < p[1] < 1.0  # never 0 or 1 from a few judgements
    assert p[2] == pytest.approx(prior.overall)
    assert p[0] == pytest.approx((0 + 2 * 7 / 11) / (4 + 2))
    # no judgement at all: everything counts as valid
    assert ValidityPrior().fit([], []).predict(["x"])[0] == 1.0


def test_export_shares_counts_humans_valid_pairs_and_confident_auto_labels():
    y = np.array([0, 1, 2, 0, 1, 2])
    valid = np.array([True, False, True, True, False, True])
    human, rest = np.array([0, 1]), np.array([2, 3, 4, 5])
    proba = np.array([[0.1, 0.1, 0.8], [0.9, 0.05, 0.05], [0.8, 0.1, 0.1], [0.4, 0.3, 0.3]])
    e = export_shares(y_true=y, valid=valid, human=human, rest=rest, proba=proba, threshold=0.7)
    # human row 0 (row 1 was judged invalid by its annotator), auto rows 2 (right), 3 (right),
    # 4 (wrong and invalid); row 5 abstains
    assert (e.correct, e.invalid, e.coverage) == pytest.approx((3 / 4, 1 / 4, 4 / 6))
    # the validity prior keeps row 4 out
    e = export_shares(
        y_true=y,
        valid=valid,
        human=human,
        rest=rest,
        proba=proba,
        threshold=0.7,
        p_valid=np.array([0.9, 0.9, 0.2, 0.9]),
    )
    assert (e.correct, e.invalid, e.coverage) == pytest.approx((1.0, 0.0, 3 / 6))
