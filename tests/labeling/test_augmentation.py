"""The augmentation evaluation (labeling/ml/augmentation.py): its arithmetic on data where the
answer is known, and a fast run with the fake encoder."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from labeling.ml.augmentation import (
    VARIANTS,
    EvalSet,
    classifier_factory,
    drop_training_overlap,
    eval_sets_from_records,
    gain_share,
    mean_ci95,
    paired_bootstrap_p,
    run_augmentation,
    summarise,
)
from labeling.ml.bench import human_split
from labeling.ml.pairs import LabelledPairs, mixed_pool, trivial_edit
from projects.formats import OriginalRecord, PairRecord, Problem
from projects.ml.textkeys import normalize_text, text_hash
from tests.labeling.conftest import FIELDS, LABELS, fake_embed, synthetic_pairs


def test_mean_ci95_is_the_t_interval():
    m, ci = mean_ci95([0.70, 0.72, 0.74])
    assert m == pytest.approx(0.72)
    # sd 0.02, n 3: half width t(0.975, 2) * 0.02 / sqrt(3) = 4.3027 * 0.011547 = 0.049683
    assert ci == pytest.approx([0.72 - 0.049683, 0.72 + 0.049683], abs=1e-5)
    assert mean_ci95([0.5]) == (0.5, None)
    m, ci = mean_ci95([0.6, 0.6, 0.6])
    assert ci == pytest.approx([0.6, 0.6])
    # two far-apart seeds: the t-interval (t 12.7) leaves [0, 1]; a share's interval stays in it
    m, ci = mean_ci95([0.2, 0.9])
    assert m == pytest.approx(0.55) and ci == [0.0, 1.0]
    m, ci = mean_ci95([-0.4, 0.5], bounds=(-1.0, 1.0))  # a gain: a difference of two shares
    assert ci == [-1.0, 1.0]
    assert mean_ci95([0.70, 0.72, 0.74], bounds=(-1.0, 1.0))[1] == pytest.approx(mean_ci95([0.70, 0.72, 0.74])[1])


def test_gain_share():
    assert gain_share(0.09, 0.10) == pytest.approx(0.9)
    assert gain_share(-0.02, 0.10) == pytest.approx(-0.2)
    assert gain_share(0.05, None) is None
    assert gain_share(0.05, 0.0) is None  # no gold gain to share
    assert gain_share(0.05, -0.01) is None


def test_paired_bootstrap_p_known_answers():
    same = np.asarray([1, 0, 1, 1, 0, 1], dtype=float)
    assert paired_bootstrap_p(same, same) == 1.0
    # a is right on 200 examples where b is wrong and never the other way: p at its floor
    a, b = np.ones(400), np.r_[np.zeros(200), np.ones(200)]
    assert paired_bootstrap_p(a, b, n_boot=999) == pytest.approx(2 / 1000)
    assert paired_bootstrap_p(b, a, n_boot=999) == pytest.approx(2 / 1000)
    # one discordant example out of 400: no evidence
    c = np.ones(400)
    c[0] = 0
    assert paired_bootstrap_p(c, np.ones(400)) > 0.5
    with pytest.raises(ValueError):
        paired_bootstrap_p(np.ones(3), np.ones(4))


def test_summarise_gain_share_and_p():
    n = 100
    y = np.zeros(n, dtype=bool)

    def right(k: int) -> np.ndarray:  # the first k examples correct
        out = y.copy()
        out[:k] = True
        return out

    correct = {
        "originals": [right(60), right(60), right(60)],
        "gold": [right(80), right(80), right(80)],
        "capc": [right(78), right(76), right(77)],
        "invariant": [right(60), right(60), right(60)],
    }
    f1 = {v: [0.5, 0.5, 0.5] for v in correct}
    sizes = {v: [10, 10, 10] for v in correct}
    out = summarise(correct, f1, sizes, n_boot=500)
    assert out["originals"]["accuracy"] == 0.6 and "gain" not in out["originals"]
    assert out["gold"]["gain"] == pytest.approx(0.2)
    assert "share_of_gold_gain" not in out["gold"] and "p_vs_gold" not in out["gold"]
    assert out["capc"]["gain"] == pytest.approx(0.17)
    assert out["capc"]["share_of_gold_gain"] == pytest.approx(0.85)
    lo, hi = out["capc"]["gain_ci95"]
    assert lo < 0.17 < hi
    assert out["capc"]["p_vs_originals"] < 0.01
    assert out["invariant"]["gain"] == 0.0 and out["invariant"]["share_of_gold_gain"] == 0.0
    assert out["invariant"]["p_vs_originals"] == 1.0
    assert out["invariant"]["p_vs_gold"] < 0.01
    assert out["originals"]["ci95"] == [0.6, 0.6]
    assert "p_vs_random" not in out["capc"]  # no random floor in this comparison


def test_summarise_says_whether_the_labels_beat_random_labels():
    """A gain over originals that random labels match is the extra text, not the labels:
    every variant but the floor and originals gets a paired p against ``random``."""
    n = 100
    right = {k: np.arange(n) < k for k in (60, 75, 76, 90)}
    correct = {
        "originals": [right[60]] * 3,
        "random": [right[75]] * 3,
        "capc": [right[76]] * 3,  # one example better than random: chance
        "export": [right[90]] * 3,  # fifteen better: the labels matter
    }
    out = summarise(correct, {v: [0.5] * 3 for v in correct}, {v: [10] * 3 for v in correct}, n_boot=500)
    assert "p_vs_random" not in out["random"] and "p_vs_random" not in out["originals"]
    assert out["capc"]["p_vs_random"] > 0.5
    assert out["export"]["p_vs_random"] < 0.01


def test_eval_sets_from_records_splits_pair_formats():
    o1 = OriginalRecord("o1", {"text": "good film"}, "Positive")
    o2 = OriginalRecord("o2", {"text": "bad film"}, "Negative")
    recs = [
        o1,
        PairRecord("p1", o1, {"text": "bad film"}, cf_label="Negative"),
        PairRecord("p2", o1, {"text": "awful film"}, cf_label="Negative"),
        PairRecord("p3", o2, {"text": "good film"}, cf_label=None),
        Problem("f", 3, "broken"),
    ]
    sets, problems = eval_sets_from_records("x:y:dev", recs, ["Negative", "Positive"])
    assert [s.name for s in sets] == ["x:y:dev/original", "x:y:dev/counterfactual"]
    assert sets[0].y == ["Positive", "Negative"] and len(sets[1].records) == 2
    assert problems == ["f:3: broken"]
    only, _ = eval_sets_from_records("csv:z", [o1, o2], ["Negative", "Positive"])
    assert [s.name for s in only] == ["csv:z"] and len(only[0].records) == 2


def test_human_split_is_bench_pairwise_split():
    train, rest, _perm = human_split(50, 0.1, np.random.default_rng(3))
    assert len(train) == 5 and len(rest) == 45
    assert sorted(np.r_[train, rest].tolist()) == list(range(50))
    again, _, _ = human_split(50, 0.1, np.random.default_rng(3))
    assert (again == train).all()


def _evals(n: int = 60) -> list[EvalSet]:
    pairs, ys = synthetic_pairs(n, seed=7)
    return [
        EvalSet("syn/original", [p.original for p in pairs], [p.y for p in pairs]),
        EvalSet("syn/counterfactual", [p.counterfactual for p in pairs], ys),
    ]


def _run(pool, evals, **kw):
    """``run_augmentation`` with the fake encoder and TF-IDF f' (one seed unless told)."""
    options = {"budget": 0.2, "seeds": 1, "classifier": "tfidf-lr", "n_boot": 50, **kw}
    return run_augmentation(pool, evals, task="nli", labels=LABELS, fields=FIELDS, embed=fake_embed, **options)


def test_run_augmentation_end_to_end_with_the_fake_encoder():
    pairs, ys = synthetic_pairs(200)
    progress: list[tuple[int, int]] = []
    out = _run(LabelledPairs(pairs, ys), _evals(), seeds=2, n_boot=200, progress=lambda d, t: progress.append((d, t)))
    assert out["task"] == "nli" and out["n_pairs"] == 200 and out["seeds"] == 2 and out["classifier"] == "tfidf-lr"
    assert set(out["eval"]) == {"syn/original", "syn/counterfactual"}
    cf = out["eval"]["syn/counterfactual"]
    assert cf["n"] == 60
    assert list(cf["variants"]) == list(VARIANTS)
    for v, m in cf["variants"].items():
        assert "error" not in m, (v, m)
        assert 0 <= m["accuracy"] <= 1 and len(m["ci95"]) == 2
    assert cf["variants"]["gold"]["n_train"] == 200 + 200
    assert cf["variants"]["human"]["n_train"] == 200 + 40
    assert cf["variants"]["originals"]["n_train"] == 200
    assert progress[-1] == (2 * len(VARIANTS), 2 * len(VARIANTS))
    json.dumps(out)  # JSON-clean (no NaN objects)


def test_minilm_lr_factory_shares_features_across_fits():
    make = classifier_factory("minilm-lr", labels=LABELS, fields=FIELDS, embed=fake_embed)
    pairs, _ = synthetic_pairs(60)
    recs, ys = [p.original for p in pairs], [p.y for p in pairs]
    a = make(0).fit(recs, ys)
    b = make(1)
    assert b.memo is a.memo and len(a.memo) == 60  # type: ignore[attr-defined]
    assert np.allclose(a.predict_proba(recs), b.fit(recs, ys).predict_proba(recs))
    with pytest.raises(ValueError, match="unknown classifier"):
        classifier_factory("nope", labels=LABELS, fields=FIELDS, embed=fake_embed)


def test_mixed_pool_adds_label_preserving_pairs():
    pairs, ys = synthetic_pairs(30)
    # siblings: a second counterfactual with the same label in group g0
    p0 = pairs[0]
    sib = type(p0)(
        p0.original, {**p0.counterfactual, "hypothesis": p0.counterfactual["hypothesis"] + " park"}, p0.y, "", "g0"
    )
    data = LabelledPairs([*pairs, sib], [*ys, ys[0]])
    mixed = mixed_pool(data, seed=0)
    added = list(zip(mixed.pairs[len(data.pairs) :], mixed.y_prime[len(data.pairs) :], strict=True))
    assert any(p.perturbation == "sibling" for p, _ in added)
    assert all(p.y == y2 for p, y2 in added)  # every added pair keeps its label
    assert mixed.pairs[: len(data.pairs)] == data.pairs


def test_trivial_edit_swaps_one_determiner():
    rng = np.random.default_rng(0)
    assert trivial_edit({"text": "The film is fine"}, rng) == {"text": "A film is fine"}
    assert trivial_edit({"text": "no determiners here"}, rng) is None


def test_command_refuses_bad_input(tmp_path):
    with pytest.raises(CommandError, match="--eval"):
        call_command("bench_augmentation", "--task", "nli", "--format", "cad-nli", "--split", "dev", str(tmp_path))


def test_finetune_classifier_learns_with_a_tiny_bert(tmp_path):
    from labeling.ml.augmentation import FineTuneOptions

    from ._tiny_bert import save_tiny_bert

    path = save_tiny_bert(tmp_path / "m", ["a", "b"])  # a 2-label head, replaced by a 3-label one
    make = classifier_factory(
        "finetune",
        labels=LABELS,
        fields=FIELDS,
        embed=None,
        finetune=FineTuneOptions(model_path=str(path), epochs=30, batch_size=8, learning_rate=5e-3),
    )
    recs = [
        {"premise": "a man runs", "hypothesis": "a man runs"},
        {"premise": "a dog sleeps", "hypothesis": "a dog maybe"},
        {"premise": "a girl park", "hypothesis": "a girl is not"},
    ] * 4
    ys = ["entailment", "neutral", "contradiction"] * 4
    f = make(0).fit(recs, ys)
    p = f.predict_proba(recs[:3])
    assert p.shape == (3, 3) and np.allclose(p.sum(1), 1.0)
    assert (p.argmax(1) == [0, 1, 2]).sum() >= 2  # fits (most of) its training data
    # same seed, same model
    assert np.allclose(make(0).fit(recs, ys).predict_proba(recs[:3]), p, atol=1e-5)


@pytest.mark.slow
def test_bench_augmentation_json_on_a_cad_sentiment_slice(shared_data, capsys):
    """The real MiniLM on a slice of CAD-sentiment dev as the pool and CAD-sentiment dev as the
    evaluation (a shape check): the evaluation leaves out the examples the pool holds."""
    spec = f"cad-sentiment:{shared_data / 'cad'}:dev"
    call_command(
        "bench_augmentation",
        "--task",
        "sentiment",
        "--format",
        "cad-sentiment",
        "--split",
        "dev",
        str(shared_data / "cad"),
        "--eval",
        spec,
        "--limit",
        "120",
        "--seeds",
        "2",
        "--budget",
        "0.2",
        "--json",
    )
    result = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert set(result) >= {"task", "n_pairs", "budget", "seeds", "classifier", "eval", "seconds"}
    assert result["n_pairs"] == 120 and result["classifier"] == "minilm-lr"
    assert list(result["eval"]) == [f"{spec}/original", f"{spec}/counterfactual"]
    cf = result["eval"][f"{spec}/counterfactual"]
    assert cf["n"] + cf["excluded"] == 245 and 100 <= cf["excluded"] <= 130  # the slice's own 120 (up to duplicates)
    assert result["excluded"] >= cf["excluded"]
    assert set(cf["variants"]) == set(VARIANTS)
    # every CAD counterfactual flips the label: invariant labels teach the wrong thing
    assert cf["variants"]["invariant"]["accuracy"] < cf["variants"]["gold"]["accuracy"]


# -- a test set must not be training data (issue 19.3) ------------------------------------------
def test_normalized_text_hash():
    assert normalize_text("  The  Cat\tsat. ") == "the cat sat"
    assert normalize_text("\u201cHello,\u201d she said!") == "hello,\u201d she said"  # inner punctuation kept
    assert normalize_text("...") == ""
    a = {"premise": "A man runs.", "hypothesis": "He  moves"}
    b = {"premise": "a man runs", "hypothesis": "“he moves”"}
    assert text_hash(a, FIELDS) == text_hash(b, FIELDS)
    assert text_hash(a, FIELDS) != text_hash({"premise": "a man, runs", "hypothesis": "he moves"}, FIELDS)
    # fields are not interchangeable
    assert text_hash({"premise": "x", "hypothesis": "y"}, FIELDS) != text_hash(
        {"premise": "y", "hypothesis": "x"}, FIELDS
    )


def test_drop_training_overlap_counts_what_it_leaves_out():
    train = [{"premise": "p1", "hypothesis": "h1"}, {"premise": "p2", "hypothesis": "h2"}]
    evals = [
        EvalSet("a", [{"premise": "P1.", "hypothesis": " h1 "}, {"premise": "p3", "hypothesis": "h3"}], ["x", "y"]),
        EvalSet("b", [{"premise": "p2", "hypothesis": "h2"}], ["x"]),
    ]
    kept, excluded = drop_training_overlap(evals, train, FIELDS)
    assert excluded == {"a": 1, "b": 1}
    assert kept[0].records == [{"premise": "p3", "hypothesis": "h3"}] and kept[0].y == ["y"]
    assert kept[1].records == [] and kept[1].y == []


def test_an_evaluation_on_its_own_pool_leaves_it_out_and_reports_it():
    pairs, ys = synthetic_pairs(200)
    own = [EvalSet("own/original", [p.original for p in pairs[:30]], [p.y for p in pairs[:30]])]
    out = _run(LabelledPairs(pairs, ys), own + _evals())
    assert out["eval"]["own/original"] == {"n": 0, "variants": {}, "excluded": 30}
    assert out["eval"]["syn/counterfactual"]["excluded"] == 0 and out["eval"]["syn/counterfactual"]["n"] == 60
    assert out["excluded"] == 30
    # only overlapping sets: refused, with the reason
    with pytest.raises(ValueError, match="also occurs in the training data"):
        _run(LabelledPairs(pairs, ys), own)


def test_your_export_variant_trains_on_the_export():
    pairs, ys = synthetic_pairs(200)
    extra, extra_y = synthetic_pairs(50, seed=3)
    out = _run(LabelledPairs(pairs, ys), _evals(), export=LabelledPairs(extra, extra_y))
    cf = out["eval"]["syn/counterfactual"]["variants"]
    assert list(cf)[:2] == ["originals", "export"]
    assert cf["export"]["n_train"] == 200 + 50 and "gain" in cf["export"]
    assert out["export_pairs"] == 50
    # the export's texts are training data too: a test set holding them is left out
    leak = [EvalSet("leak", [p.counterfactual for p in extra[:5]], extra_y[:5])]
    out = _run(LabelledPairs(pairs, ys), leak + _evals(), export=LabelledPairs(extra, extra_y))
    assert out["eval"]["leak"]["excluded"] == 5
    empty = _run(LabelledPairs(pairs, ys), _evals(), export=LabelledPairs([], []))
    failed = empty["eval"]["syn/original"]["variants"]["export"]
    assert "nothing to export" in failed["error"]
    assert failed["accuracy"] is failed["macro_f1"] is failed["ci95"] is None  # FORMATS.md's keys, null
