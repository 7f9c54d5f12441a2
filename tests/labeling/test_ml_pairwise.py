"""h on synthetic pairs: no database, no MiniLM."""

import numpy as np
import pytest

from labeling.ml import baselines
from labeling.ml.active import diverse_uncertain, margin_uncertainty, select_active
from labeling.ml.base_classifier import (
    EmbeddingClassifier,
    TfidfClassifier,
    TooFewLabels,
)
from labeling.ml.edits import edit_features, field_edit, n_edit_features
from labeling.ml.metrics import scores
from labeling.ml.pairwise import (
    MIN_FOLDS_RICH,
    LabelingModel,
    PairwiseClassifier,
    apply_temperature,
    check_labels,
    fit_temperature,
    prepare_inputs,
)
from tests.conftest import need

from .conftest import FIELDS, LABELS, fake_embed, synthetic_pairs


def _inputs(pairs, base=None):
    return prepare_inputs(pairs, labels=LABELS, fields=FIELDS, embed=fake_embed, base=base)


def _f(pairs):
    origs = {p.group: p for p in pairs}
    return EmbeddingClassifier(LABELS, FIELDS, fake_embed).fit(
        [p.original for p in origs.values()], [p.y for p in origs.values()]
    )


def test_field_edit_finds_inserted_and_replaced_words():
    e = field_edit("A man rides a horse.", "A man does not ride a horse.")
    assert "not" in e.inserted and "rides" in e.deleted
    assert e.changed
    assert not field_edit("same text", "Same text").changed
    x = edit_features({"premise": "a b", "hypothesis": "c"}, {"premise": "a b", "hypothesis": "c not"}, FIELDS)
    assert x.shape == (n_edit_features(2),)


@pytest.mark.parametrize("mode", ["pc", "capc"])
def test_h_learns_the_edit_rule_and_beats_the_baselines(mode):
    pairs, ys = synthetic_pairs(360, seed=1)
    f = _f(pairs) if mode == "capc" else None
    inp = _inputs(pairs, base=f)
    train, test = np.arange(120), np.arange(120, 360)
    h = PairwiseClassifier(LABELS, FIELDS, mode=mode).fit(inp.subset(train), [ys[i] for i in train])
    y_test = np.array([LABELS.index(ys[i]) for i in test])
    proba = h.predict_proba(inp.subset(test))
    s = scores(y_test, proba)
    assert s["accuracy"] >= 0.9
    assert scores(y_test, baselines.invariant(inp.enc.y[test], 3))["accuracy"] == 0.0
    assert h.cv is not None and h.cv.n == 120 and h.cv.accuracy >= 0.85
    assert np.allclose(proba.sum(1), 1.0)


def test_random_pairs_baseline_is_worse_than_real_pairs():
    pairs, ys = synthetic_pairs(360, seed=2)
    train, test = np.arange(120), np.arange(120, 360)
    y_test = np.array([LABELS.index(ys[i]) for i in test])
    real = _inputs(pairs)
    shuffled = _inputs(baselines.random_pairing(pairs, np.random.default_rng(0)))
    acc = {}
    for name, inp in (("real", real), ("random", shuffled)):
        h = PairwiseClassifier(LABELS, FIELDS, mode="pc").fit(inp.subset(train), [ys[i] for i in train])
        acc[name] = scores(y_test, h.predict_proba(inp.subset(test)))["accuracy"]
    assert acc["real"] > acc["random"] + 0.3


def test_too_few_labels_and_a_missing_class_are_refused():
    pairs, ys = synthetic_pairs(40)
    inp = _inputs(pairs)
    with pytest.raises(TooFewLabels, match="need at least 10"):
        PairwiseClassifier(LABELS, FIELDS, mode="pc").fit(inp.subset(range(5)), ys[:5])
    only_two = [i for i, y in enumerate(ys) if y != "neutral"]
    with pytest.raises(TooFewLabels, match="no human-labelled pair with label neutral"):
        PairwiseClassifier(LABELS, FIELDS, mode="pc").fit(inp.subset(only_two), [ys[i] for i in only_two])
    with pytest.raises(ValueError, match="not in the label set"):
        check_labels(["entailment", "bogus"], LABELS, minimum=1)


def test_base_classifier_refuses_a_class_without_originals():
    with pytest.raises(TooFewLabels, match="none for: contradiction"):
        EmbeddingClassifier(LABELS, FIELDS, fake_embed).fit(
            [{"premise": "a", "hypothesis": "b"}] * 4, ["entailment", "neutral"] * 2
        )


def test_capc_needs_f_probabilities():
    pairs, ys = synthetic_pairs(40)
    with pytest.raises(ValueError, match="CAPC needs"):
        PairwiseClassifier(LABELS, FIELDS, mode="capc").fit(_inputs(pairs), ys)


def test_temperature_scaling_fixes_overconfidence():
    rng = np.random.default_rng(0)
    y = rng.integers(0, 3, 2000)
    logits = rng.normal(size=(2000, 3))
    logits[np.arange(2000), y] += 1.0
    log_p = 4.0 * logits  # 4x too sharp
    log_p = log_p - np.log(np.exp(log_p).sum(1, keepdims=True))
    t = fit_temperature(log_p, y)
    assert 3.0 < t < 5.5
    before = scores(y, np.exp(log_p))["ece"]
    after = scores(y, apply_temperature(log_p, t))["ece"]
    assert after < before / 2 and after < 0.05


def test_abstains_below_the_threshold_and_saves_and_loads(tmp_path):
    pairs, ys = synthetic_pairs(200, seed=3)
    f = _f(pairs)
    inp = _inputs(pairs, base=f)
    h = PairwiseClassifier(LABELS, FIELDS, mode="capc", threshold=0.999).fit(inp.subset(range(100)), ys[:100])
    labels, conf = h.predict(inp.subset(range(100, 200)))
    assert all((lab is None) == (c < 0.999) for lab, c in zip(labels, conf, strict=True))
    bundle = LabelingModel(LABELS, FIELDS, "capc", h, base=f)
    bundle.save(str(tmp_path / "m.joblib"))
    loaded = LabelingModel.load(str(tmp_path / "m.joblib"), embed=fake_embed)
    assert np.allclose(loaded.predict_proba(pairs[100:]), h.predict_proba(inp.subset(range(100, 200))))


def test_warm_start_stacks_the_warm_model():
    warm_pairs, warm_ys = synthetic_pairs(400, seed=4)
    pairs, ys = synthetic_pairs(200, seed=5)
    warm = PairwiseClassifier(LABELS, FIELDS, mode="pc").fit_warm(_inputs(warm_pairs), warm_ys, C=0.03)
    h = PairwiseClassifier(LABELS, FIELDS, mode="pc").with_warm(warm)
    inp = _inputs(pairs)
    h.fit(inp.subset(range(30)), ys[:30])
    y_test = np.array([LABELS.index(v) for v in ys[30:]])
    stacked = scores(y_test, h.predict_proba(inp.subset(range(30, 200))))["accuracy"]
    alone = scores(y_test, warm.predict_proba(inp.subset(range(30, 200))))["accuracy"]
    assert stacked >= 0.85 and stacked >= alone
    with pytest.raises(ValueError, match="same mode"):
        PairwiseClassifier(LABELS, FIELDS, mode="capc").with_warm(warm)


def test_tfidf_base_classifier():
    recs = [{"premise": "good fun", "hypothesis": ""}, {"premise": "bad awful", "hypothesis": ""}] * 5
    ys = ["entailment", "contradiction"] * 5
    f = TfidfClassifier(["entailment", "contradiction"], FIELDS).fit(recs, ys)
    p = f.predict_proba([{"premise": "fun", "hypothesis": ""}])
    assert p.shape == (1, 2) and p[0, 0] > 0.5


def test_active_selection_picks_uncertain_and_diverse():
    rng = np.random.default_rng(0)
    feats = np.vstack([rng.normal(loc=c, size=(50, 2)) for c in (0, 10, 20)])
    unc = np.zeros(150)
    unc[[5, 60, 120]] = 1.0
    picked = diverse_uncertain(feats, unc, np.arange(150), 3, seed=0)
    assert sorted(picked.tolist()) == [5, 60, 120]
    assert margin_uncertainty(np.array([[0.5, 0.5], [1.0, 0.0]])).tolist() == [1.0, 0.0]
    calls = []

    def proba_fn(sel):
        calls.append(len(sel))
        return np.tile([0.6, 0.4], (150, 1))

    chosen = select_active(150, 30, features=feats, proba_fn=proba_fn, rng=np.random.default_rng(0))
    assert len(chosen) == 30 and len(set(chosen.tolist())) == 30
    assert calls  # a model was trained between rounds


def test_active_selection_prefers_dense_uncertain_pairs_to_outliers():
    rng = np.random.default_rng(1)
    # one cluster: a dense core and a far outlier, equally uncertain
    feats = np.vstack([rng.normal(scale=0.1, size=(40, 2)), [[8.0, 8.0]]])
    unc = np.full(41, 0.9)
    unc[:40] = np.linspace(0.5, 0.89, 40)  # the outlier is the most uncertain row
    picked = diverse_uncertain(feats, unc, np.arange(41), 1, seed=0)
    assert picked.tolist() != [40]  # density weighting: the outlier is not the pick
    plain = diverse_uncertain(feats, unc, np.arange(41), 1, seed=0, density=False)
    assert plain.tolist() == [40]  # pure uncertainty takes it


def test_relation_features_read_how_the_two_fields_relate():
    from labeling.ml.edits import N_RELATION_FEATURES, relation_features

    def rel(p, h):
        return relation_features({"premise": p, "hypothesis": h}, FIELDS)

    same = rel("A man is sitting in a park.", "A man is sitting in a park.")
    new = rel("A man is sitting in a park.", "A woman eats an apple quickly.")
    assert same.shape == (N_RELATION_FEATURES,)
    assert same[0] == pytest.approx(1.0) and same[1] == pytest.approx(1.0)  # Jaccard, hypothesis covered
    assert new[0] < 0.3 and new[3] > same[3]  # more new content words
    neg = rel("A man is sitting.", "A man is not sitting.")
    assert neg[5] == 1 and neg[6] == 1 and same[6] == 0  # hypothesis negation, mismatch
    assert rel("Two dogs run.", "Three dogs run.")[8] == 1 and same[8] == 0  # a number not in the premise
    # one-field tasks: nothing to relate
    assert not relation_features({"text": "good film"}, ["text"]).any()


def test_relation_features_find_wordnet_antonyms_and_broader_terms():
    from labeling.ml.edits import antonyms, relation_features

    need(bool(antonyms("tall")), "WordNet (NLTK_DATA) not available")
    tall = relation_features({"premise": "The man is tall.", "hypothesis": "The man is short."}, FIELDS)
    assert tall[7] >= 1  # tall / short
    dog = relation_features({"premise": "A dog runs.", "hypothesis": "An animal runs."}, FIELDS)
    assert dog[10] == 1 and dog[11] == 0 and dog[7] == 0  # "animal" is a broader term of "dog"
    car = relation_features({"premise": "A dog runs.", "hypothesis": "A car runs."}, FIELDS)
    assert car[10] == 0 and car[11] > 0  # "car" is new information


def test_pair_matrix_relation_block_two_fields_only_and_old_configs_keep_their_width():
    from dataclasses import replace

    from labeling.ml.features import FeatureConfig, encode_pairs, pair_matrix
    from labeling.ml.pairwise import DEFAULT_CONFIGS, LEAN

    pairs, _ = synthetic_pairs(20, seed=3)
    enc = encode_pairs(pairs, labels=LABELS, fields=FIELDS, embed=fake_embed)
    on = pair_matrix(enc, n_labels=3, perturbations=[], config=LEAN)
    off = pair_matrix(enc, n_labels=3, perturbations=[], config=replace(LEAN, relations=False))
    assert on.shape[1] > off.shape[1]
    # a config pickled before the field existed (no "relations" in its __dict__) adds nothing
    old = replace(LEAN, relations=False)
    del old.__dict__["relations"]
    assert pair_matrix(enc, n_labels=3, perturbations=[], config=old).shape == off.shape
    assert DEFAULT_CONFIGS[0] == LEAN and not LEAN.bag and not LEAN.embeddings
    one = [
        p.__class__({"text": p.original["hypothesis"]}, {"text": p.counterfactual["hypothesis"]}, p.y) for p in pairs
    ]
    enc1 = encode_pairs(one, labels=LABELS, fields=["text"], embed=fake_embed)
    assert enc1.rel_c is None
    a = pair_matrix(enc1, n_labels=3, perturbations=[], config=FeatureConfig(bag=False))
    b = pair_matrix(enc1, n_labels=3, perturbations=[], config=FeatureConfig(bag=False, relations=False))
    assert a.shape == b.shape


def test_probabilities_never_reach_certainty():
    p = apply_temperature(np.array([[0.0, -60.0, -60.0]]), 1.0)
    assert p.max() < 1.0 and p.min() > 0.0 and p.sum() == pytest.approx(1.0)


def test_base_classifier_adds_relation_features_but_old_pickles_keep_their_width():
    pairs, _ = synthetic_pairs(60, seed=5)
    recs, ys = [p.original for p in pairs], [p.y for p in pairs]
    new = EmbeddingClassifier(LABELS, FIELDS, fake_embed).fit(recs, ys)
    plain = EmbeddingClassifier(LABELS, FIELDS, fake_embed, relations=False)
    assert new._X(recs).shape[1] > plain._X(recs).shape[1]
    old = EmbeddingClassifier(LABELS, FIELDS, fake_embed, relations=False)
    del old.__dict__["relations"]  # as unpickled from before the attribute existed
    assert old._X(recs).shape == plain._X(recs).shape
    assert new.predict_proba(recs).shape == (60, 3)


def test_a_pair_read_backwards_swaps_every_side():
    pairs, ys = synthetic_pairs(12, seed=5)
    f = _f(synthetic_pairs(60, seed=6)[0])
    inp = _inputs(pairs, base=f)
    y_prime = np.array([LABELS.index(v) for v in ys])
    rev = inp.enc.reversed(y_prime)
    assert np.array_equal(rev.emb_o, inp.enc.emb_c) and np.array_equal(rev.emb_c, inp.enc.emb_o)
    assert np.array_equal(rev.y, y_prime)
    assert np.array_equal(rev.emb_ins, inp.enc.emb_del) and np.array_equal(rev.rel_c, inp.enc.rel_o)
    # the backward edit features are those of (x', x), computed from the texts
    p = pairs[0]
    assert np.allclose(rev.edits[0], edit_features(p.counterfactual, p.original, FIELDS))
    half = inp.enc.bag.shape[1] // 2
    assert np.array_equal(rev.bag[:, :half], inp.enc.bag[:, half:])
    # read backwards twice: the pairs as they were
    again = rev.reversed(inp.enc.y)
    assert np.array_equal(again.edits, inp.enc.edits) and np.array_equal(again.bag, inp.enc.bag)
    both = inp.with_reversed(y_prime)
    assert len(both.enc) == 24
    assert np.array_equal(both.f_o[12:], inp.f_c) and np.array_equal(both.f_c[12:], inp.f_o)


def test_cross_validation_never_trains_on_the_backward_copy_of_a_held_out_pair():
    from labeling.ml.pairwise import LinearH

    # no signal at all: only a leak of the held-out rows (their exact copies) can beat chance
    rng = np.random.default_rng(0)
    X = rng.normal(size=(90, 40))
    y = rng.integers(0, 3, size=90)
    X2, y2 = np.vstack([X, X]), np.concatenate([y, y])
    mask = np.arange(180) < 90
    tied = np.concatenate([np.full(90, -1), np.arange(90)])
    leaky = LinearH(3, C_grid=(100.0,), calibrate=False).fit(X2, y2, cv_mask=mask)
    honest = LinearH(3, C_grid=(100.0,), calibrate=False).fit(X2, y2, cv_mask=mask, tied=tied)
    assert leaky.report(0.0).accuracy > 0.7  # the copies are memorised when they leak
    assert honest.report(0.0).accuracy < 0.55
    assert honest.report(0.0).n == 90


def test_h_trains_on_pairs_both_ways_but_scores_only_forwards():
    pairs, ys = synthetic_pairs(120, seed=7)
    inp = _inputs(pairs)
    both = PairwiseClassifier(LABELS, FIELDS, mode="pc").fit(inp, ys)
    forward = PairwiseClassifier(LABELS, FIELDS, mode="pc", reverse_weight=0).fit(inp, ys)
    assert both.cv.n == forward.cv.n == 120
    # each fold model was fitted on 4/5 of the pairs and their backward copies
    assert [m[0].n_samples_seen_ for m in both.learner.fold_models] == [192] * 5
    assert [m[0].n_samples_seen_ for m in forward.learner.fold_models] == [96] * 5


def test_alignment_features_come_with_an_encoder_that_has_them_and_old_configs_keep_their_width():
    from dataclasses import replace

    from labeling.ml.features import alignment_of, encode_pairs, pair_matrix
    from labeling.ml.pairwise import LEAN

    calls = []

    class AligningEncoder:
        def encode(self, texts):
            return fake_embed(list(texts))

        def alignment(self, pairs):
            calls.append(len(pairs))
            return np.asarray([[len(a), len(b), 0, 0, 0, 0, 0] for a, b in pairs], dtype=np.float32)

    encoder = AligningEncoder()
    assert alignment_of(encoder.encode) == encoder.alignment and alignment_of(fake_embed) is None
    pairs, _ = synthetic_pairs(20, seed=9)
    enc = encode_pairs(pairs, labels=LABELS, fields=FIELDS, embed=encoder.encode)
    assert calls == [40] and enc.align_c.shape == (20, 7)
    assert enc.align_c[0, 1] == len(pairs[0].counterfactual["hypothesis"])
    rev = enc.reversed(enc.y)
    assert np.array_equal(rev.align_o, enc.align_c)
    on = pair_matrix(enc, n_labels=3, perturbations=[], config=LEAN)
    off = pair_matrix(enc, n_labels=3, perturbations=[], config=replace(LEAN, alignment=False))
    assert on.shape[1] == off.shape[1] + 2 * 7 * 4  # x', x' - x, and both times y
    old = replace(LEAN, alignment=False)
    del old.__dict__["alignment"]  # pickled before the field existed
    assert pair_matrix(enc, n_labels=3, perturbations=[], config=old).shape == off.shape
    plain = encode_pairs(pairs, labels=LABELS, fields=FIELDS, embed=fake_embed)
    assert plain.align_c is None
    assert pair_matrix(plain, n_labels=3, perturbations=[], config=LEAN).shape == off.shape


def test_h_is_calibrated_on_held_out_pairs():
    """Temperature scaling is what makes h's confidence match its accuracy on the synthetic
    task (held-out ECE 0.00 with it; about 0.07 with the temperature stuck at 1.0)."""
    pairs, ys = synthetic_pairs(360, seed=1)
    inp = _inputs(pairs)
    train, test = np.arange(120), np.arange(120, 360)
    h = PairwiseClassifier(LABELS, FIELDS, mode="pc").fit(inp.subset(train), [ys[i] for i in train])
    y_test = np.array([LABELS.index(ys[i]) for i in test])
    s = scores(y_test, h.predict_proba(inp.subset(test)))
    assert s["accuracy"] >= 0.95
    assert s["ece"] < 0.03
    assert h.learner.temperature < 0.9  # the CV probabilities were sharpened, not left as they were


def test_invariant_is_a_candidate_model_when_edits_say_nothing():
    """A pool where most edits keep the label and the edit carries no signal (a generated
    pool's lexical noise): h's cross-validation chooses "nothing flips", calibrated, and
    is as accurate as the invariant baseline rather than worse."""
    pairs, _ = synthetic_pairs(300, seed=3)
    rng = np.random.default_rng(0)
    ys = [p.y if rng.random() < 0.85 else LABELS[(LABELS.index(p.y) + 1) % 3] for p in pairs]
    inp = _inputs(pairs)
    train, test = np.arange(60), np.arange(60, 300)
    h = PairwiseClassifier(LABELS, FIELDS, mode="pc").fit(inp.subset(train), [ys[i] for i in train])
    assert h.feature_set_name.startswith("invariant")
    proba = h.predict_proba(inp.subset(test))
    y_test = np.array([LABELS.index(ys[i]) for i in test])
    inv = scores(y_test, baselines.invariant(inp.enc.y[test], 3))["accuracy"]
    assert scores(y_test, proba)["accuracy"] == pytest.approx(inv)
    # calibrated: its confidence is the share of labels kept, not 1
    assert 0.7 < proba.max(1).mean() < 0.95
    # off: the same data gives one of the feature-based models
    h2 = PairwiseClassifier(LABELS, FIELDS, mode="pc", invariant_candidate=False)
    assert not h2.fit(inp.subset(train), [ys[i] for i in train]).feature_set_name.startswith("invariant")


def test_h_still_learns_edits_that_flip_with_the_invariant_candidate():
    pairs, ys = synthetic_pairs(200, seed=4)
    inp = _inputs(pairs)
    h = PairwiseClassifier(LABELS, FIELDS, mode="pc").fit(inp.subset(np.arange(100)), ys[:100])
    assert not h.feature_set_name.startswith("invariant")


def test_h_is_invariant_when_a_label_has_only_two_human_labels():
    """With 2 labels of one class the CV has 2 folds, too few to prefer a richer model over
    "nothing flips" (MIN_FOLDS_RICH), even where the edits do carry the label."""
    pairs, ys = synthetic_pairs(200, seed=4)
    inp = _inputs(pairs)
    by_label = {lab: [i for i in range(200) if ys[i] == lab] for lab in LABELS}
    rare = LABELS[0]
    rows = sorted(by_label[rare][: MIN_FOLDS_RICH - 1] + [i for lab in LABELS[1:] for i in by_label[lab][:30]])
    h = PairwiseClassifier(LABELS, FIELDS, mode="pc").fit(inp.subset(rows), [ys[i] for i in rows])
    assert h.feature_set_name.startswith("invariant")
    # one more label of that class: the richer models are candidates again and win
    rows = sorted(by_label[rare][:MIN_FOLDS_RICH] + [i for lab in LABELS[1:] for i in by_label[lab][:30]])
    h = PairwiseClassifier(LABELS, FIELDS, mode="pc").fit(inp.subset(rows), [ys[i] for i in rows])
    assert not h.feature_set_name.startswith("invariant")
