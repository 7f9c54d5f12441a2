"""h's sibling stage (labeling/ml/siblings.py) on synthetic pairs: no database, no MiniLM."""

import numpy as np

from labeling.ml.bench import fit_h, pool_proba
from labeling.ml.pairwise import PairwiseClassifier, prepare_inputs
from labeling.ml.siblings import sibling_keys, sibling_lists

from .conftest import FIELDS, LABELS, fake_embed, sibling_pairs, synthetic_pairs


def _inputs(pairs):
    return prepare_inputs(pairs, labels=LABELS, fields=FIELDS, embed=fake_embed)


def test_sibling_keys_group_the_edits_of_one_original_by_edited_fields():
    pairs, _ = sibling_pairs(3, seed=0)
    o = pairs[0].original
    premise_edit = type(pairs[0])(o, {**o, "premise": o["premise"] + " today"}, pairs[0].y)
    keys = sibling_keys([*pairs, premise_edit], FIELDS)
    sibs = sibling_lists(keys)
    assert sibs[0] == [1] and sibs[1] == [0] and sibs[2] == [3]
    assert sibs[6] == []  # the same original, but the other field edited: not a sibling


def test_labelled_siblings_label_their_siblings():
    pairs, ys = sibling_pairs(300, seed=3, noise=0.3)
    yi = np.array([LABELS.index(v) for v in ys])
    inputs, keys = _inputs(pairs), sibling_keys(pairs, FIELDS)
    rng = np.random.default_rng(0)
    train = np.sort(rng.permutation(len(pairs))[:240])
    test = np.setdiff1d(np.arange(len(pairs)), train)
    args = {"labels": LABELS, "fields": FIELDS, "seed": 0, "threshold": 0.7}
    first = fit_h("pc", inputs, train, ys, **args)
    both = fit_h("pc", inputs, train, ys, keys=keys, **args)
    assert first.sibling_stage is None and both.sibling_stage is not None
    assert "siblings" in both.feature_set_name
    p1 = first.predict_proba(inputs.subset(test))
    p2 = pool_proba(both, inputs, keys, train, ys)[test]
    acc1 = (p1.argmax(1) == yi[test]).mean()
    acc2 = (p2.argmax(1) == yi[test]).mean()
    assert acc1 < 0.8  # the marker alone is right 70 % of the time
    # a test pair whose sibling a human labelled has one label left: the other one
    sib = sibling_lists(keys)
    with_known = np.array([sib[i][0] in set(train.tolist()) for i in test])
    assert with_known.sum() >= 20
    assert (p2.argmax(1) == yi[test])[with_known].mean() >= 0.95
    assert acc2 >= acc1 + 0.1
    # the reported cross-validation is the second stage's, calibrated
    assert both.cv is not None and both.cv.accuracy > first.cv.accuracy and both.cv.ece < 0.1
    assert np.allclose(p2.sum(1), 1.0)


def test_pairs_without_siblings_keep_the_first_stage():
    pairs, ys = synthetic_pairs(200, seed=4)  # one counterfactual per original
    inputs, keys = _inputs(pairs), sibling_keys(pairs, FIELDS)
    train = np.arange(80)
    h = fit_h("pc", inputs, train, ys, labels=LABELS, fields=FIELDS, seed=0, threshold=0.7, keys=keys)
    assert h.sibling_stage is None
    assert np.allclose(pool_proba(h, inputs, keys, train, ys), h.predict_proba(inputs))


def test_uninformative_siblings_do_not_hurt():
    """Random "siblings" (their labels say nothing about each other): the stage is
    dropped, or it does not make h worse."""
    pairs, ys = sibling_pairs(200, seed=5, noise=0.1)
    rng = np.random.default_rng(1)
    yi = np.array([LABELS.index(v) for v in ys])
    inputs, keys = _inputs(pairs), [str(rng.integers(0, 150)) for _ in pairs]  # random "siblings"
    train = np.sort(rng.permutation(len(pairs))[:120])
    test = np.setdiff1d(np.arange(len(pairs)), train)
    args = {"labels": LABELS, "fields": FIELDS, "seed": 0, "threshold": 0.7}
    first = fit_h("pc", inputs, train, ys, **args)
    both = fit_h("pc", inputs, train, ys, keys=keys, **args)
    acc1 = (first.predict_proba(inputs.subset(test)).argmax(1) == yi[test]).mean()
    acc2 = (pool_proba(both, inputs, keys, train, ys)[test].argmax(1) == yi[test]).mean()
    assert acc2 >= acc1 - 0.03


def test_each_cv_row_is_scored_by_the_fold_model_that_did_not_train_on_it():
    """What keeps the sibling stage's training features leak-free: ``fold_index`` names the
    held-out model, whose calibrated output is exactly the out-of-fold prediction."""
    pairs, ys = synthetic_pairs(120, seed=6)
    h = PairwiseClassifier(LABELS, FIELDS, mode="pc", reverse_weight=0.0).fit(_inputs(pairs), ys)
    learner = h.learner
    X = h.matrix(_inputs(pairs))
    per_fold = learner.fold_proba(X)
    own = np.stack([per_fold[f][t] for t, f in enumerate(learner.fold_index)])
    assert np.allclose(own, learner.oof_proba, atol=1e-6)
    assert len(set(learner.fold_index.tolist())) == len(learner.fold_models)
