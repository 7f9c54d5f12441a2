"""Issue 30's calibration lever: shrinking h toward the humans' transition prior P(y' | y)."""

import numpy as np

from labeling.ml.calibration import fit_shrinkage, prior_out_of_fold, shrink, transition_prior


def test_the_prior_leaves_each_pair_out_and_the_shrinkage_is_chosen_out_of_fold():
    y = [0, 0, 0, 0, 1, 1]
    y2 = [0, 0, 0, 2, 1, 1]
    m = transition_prior(y, y2, 3)
    assert np.allclose(m.sum(1), 1) and m[0, 0] == (3 + 1) / (4 + 3)
    oof = prior_out_of_fold(y, y2, 3)
    assert oof[3, 2] == (0 + 1) / (3 + 3)  # the pair's own label left out
    # an overconfident h, wrong on a third of the pairs: shrinking helps
    rng = np.random.default_rng(0)
    n = 300
    yy = rng.integers(0, 3, n)
    h = np.full((n, 3), 0.005)
    guess = np.where(rng.random(n) < 0.67, yy, (yy + 1) % 3)
    h[np.arange(n), guess] = 0.99
    prior = np.full((n, 3), 1 / 3)
    lam = fit_shrinkage(h, prior, yy.tolist())
    assert lam > 0.2
    # a perfect h needs none
    perfect = np.full((n, 3), 0.005)
    perfect[np.arange(n), yy] = 0.99
    assert fit_shrinkage(perfect, prior, yy.tolist()) == 0.0
    assert np.allclose(shrink(h, prior, lam).sum(1), 1)
