"""The n-gram fluency scorer (generation/ml/fluency.py): a proper distribution, the shipped model,
its distilled thresholds, and how a run picks it."""

from __future__ import annotations

import math

import numpy as np
import pytest

from generation.ml import filters as ml_filters
from generation.ml import fluency

pytestmark = pytest.mark.postgres_too

CORPUS = [
    "The movie was great and the acting was superb.",
    "The movie was terrible and the plot was thin.",
    "I loved the movie and the music was great.",
    "A man is riding a horse in the field.",
    "A woman is riding a bike in the park.",
    "The acting was great but the plot was thin.",
    "Two dogs are playing in the park.",
] * 3


@pytest.fixture(scope="module")
def small() -> fluency.NgramLM:
    return fluency.NgramLM.train(CORPUS, min_count=1, min_trigram=1)


def test_words_lower_cases_and_splits_punctuation() -> None:
    assert fluency.words("The film's END, truly!") == ["the", "film's", "end", ",", "truly", "!"]


def test_every_order_is_a_distribution_over_the_vocabulary(small: fluency.NgramLM) -> None:
    every = np.arange(small.V, dtype=np.int64)
    assert small.p1.sum() == pytest.approx(1.0)
    the, movie = small.index["the"], small.index["movie"]
    p2 = small._p2(np.full(small.V, the), every, small.p1[every])
    assert p2.sum() == pytest.approx(1.0)
    after_movie = small._p2(np.full(small.V, movie), every, small.p1[every])
    p3 = small._p3(np.full(small.V, the), np.full(small.V, movie), every, after_movie)
    assert p3.sum() == pytest.approx(1.0)
    # what was seen after "the movie" is far likelier than what was not
    assert p3[small.index["was"]] > 10 * p3[small.index["horse"]]


def test_a_broken_edit_is_more_perplexing_than_its_original(small: fluency.NgramLM) -> None:
    assert small.perplexity("the movie was great") < small.perplexity("the movie was was great")
    assert small.perplexity("a man is riding a horse") < small.perplexity("a man is riding a the horse")
    assert math.isinf(small.perplexity("   "))


def test_save_and_load_give_the_same_scores(small: fluency.NgramLM, tmp_path) -> None:
    small.meta["max_ratio"] = {"sentiment": 3.5}
    small.save(tmp_path)
    again = fluency.NgramLM.load(tmp_path)
    texts = ["the movie was great", "a dog is riding a park", "unseen words entirely"]
    assert [again.perplexity(t) for t in texts] == pytest.approx([small.perplexity(t) for t in texts])
    scorer = fluency.NgramScorer(folder=tmp_path, task="sentiment")
    assert scorer.max_ratio == 3.5
    assert fluency.NgramScorer(folder=tmp_path, task="nli").max_ratio is None
    with pytest.raises(FileNotFoundError):
        fluency.NgramLM.load(tmp_path / "missing")


def test_best_threshold_finds_the_agreeing_cut() -> None:
    ratios = [0.8, 1.0, 1.4, 2.0, 3.0, 5.0]
    lm_keep = [True, True, True, False, False, False]
    best = fluency.best_threshold(ratios, lm_keep)
    assert best["max_ratio"] == 1.4
    assert best["agreement"] == 1.0 and best["kappa"] == 1.0
    with pytest.raises(ValueError):
        fluency.best_threshold([], [])


def test_the_shipped_model_drops_what_smollm2_drops() -> None:
    """The shipped model (train_fluency_model) with its distilled thresholds: an intensifier before
    "own" (what the round 18 readers and SmolLM2 both rejected) is dropped, a plain one kept."""
    scorer = fluency.NgramScorer(task="sentiment")
    assert scorer.max_ratio is not None and scorer.max_ratio > 1.0
    verdicts = ml_filters.perplexity(
        scorer,
        ["passed it off as their own work .", "it was a good film to watch ."],
        ["passed it off as their truly own work .", "it was a truly good film to watch ."],
        max_ratio=scorer.max_ratio,
    )
    assert [v.keep for v in verdicts] == [False, True]
    assert fluency.NgramScorer(task="nli").max_ratio is not None


def test_apply_filters_keeps_at_the_scorers_own_ratio(small: fluency.NgramLM) -> None:
    """A scorer with a ``max_ratio`` of its own (the n-gram model's distilled threshold) is used
    at that ratio, not at the caller's (the LM's 2.5)."""
    from generation.ml.base import GeneratedCandidate, Original
    from generation.services import run_quality

    o = Original(
        "o",
        {"text": "the movie was great and the acting was superb ."},
        "positive",
        ("negative", "positive"),
        "sentiment",
    )
    c = GeneratedCandidate(
        "o", {"text": "the movie was was great and the acting was superb ."}, "rules", "insert", "positive"
    )
    scorer = fluency.NgramScorer(small, task="sentiment")

    def keep(own: float | None, caller: float) -> bool:
        scorer.max_ratio = own
        (v,) = run_quality.apply_filters(
            [(o, c)], filters=["perplexity"], band=(0, 1), encoder=None, scorer=scorer, max_ratio=caller
        )
        return v.keep

    assert keep(1e9, 1.0) and not keep(1.0, 1e9)
    assert keep(None, 1e9) and not keep(None, 1.0)


def test_a_run_picks_its_fluency_scorer_by_task_and_setting(settings, monkeypatch, tmp_path) -> None:
    from generation.ml.base import GeneratorConfigError
    from generation.services import run_quality, runs

    monkeypatch.setitem(settings.COUNTERPART, "FLUENCY_SCORER", "auto")
    monkeypatch.setattr(run_quality, "NGRAM_FLUENCY", {"sentiment": "ngram"})
    assert runs.fluency_choice("sentiment") == "ngram" and runs.fluency_choice("nli") == "lm"
    assert runs.fluency_choice("sentiment", "lm") == "lm" and runs.fluency_choice("nli", "ngram") == "ngram"
    scorer = runs.perplexity_scorer("sentiment")
    assert isinstance(scorer, fluency.NgramScorer) and scorer.max_ratio == scorer.model.meta["max_ratio"]["sentiment"]
    monkeypatch.setitem(settings.COUNTERPART, "FLUENCY_SCORER", "lm")
    assert runs.fluency_choice("sentiment") == "lm"
    monkeypatch.setitem(settings.COUNTERPART, "FLUENCY_SCORER", "fast")
    with pytest.raises(GeneratorConfigError, match="auto, lm, ngram, ngram-classifier"):
        runs.fluency_choice("sentiment")
    monkeypatch.setitem(settings.COUNTERPART, "FLUENCY_SCORER", "ngram")
    monkeypatch.setitem(settings.COUNTERPART, "FLUENCY_MODEL_PATH", "/nonexistent/fluency")
    with pytest.raises(GeneratorConfigError, match="cannot be loaded"):
        runs.perplexity_scorer("sentiment")
    # a corrupt file, and a classifier the model does not have, fail the same way
    (tmp_path / fluency.MODEL_FILE).write_bytes(b"not a zip")
    monkeypatch.setitem(settings.COUNTERPART, "FLUENCY_MODEL_PATH", str(tmp_path))
    with pytest.raises(GeneratorConfigError, match="cannot be loaded"):
        runs.perplexity_scorer("sentiment")
    monkeypatch.setitem(settings.COUNTERPART, "FLUENCY_MODEL_PATH", "")
    with pytest.raises(GeneratorConfigError, match="no classifier for 'paraphrase'"):
        runs.perplexity_scorer("paraphrase", "ngram-classifier")


def test_train_fluency_model_counts_the_public_files_and_leaves_the_held_out_rows(settings, tmp_path) -> None:
    import json

    from django.core.management import CommandError, call_command

    shared = tmp_path / "shared"
    (shared / "sentiment-public").mkdir(parents=True)
    (shared / "nli-public").mkdir(parents=True)
    with open(shared / "sentiment-public" / "train.jsonl", "w", encoding="utf-8") as fh:
        for i, t in enumerate(CORPUS):
            # row 0 of every 4 is held out: "zebra" appears only there
            text = "the zebra was great ." if i % 4 == 0 else t
            fh.write(json.dumps({"text": text, "label": "positive", "source": "test"}) + "\n")
    with open(shared / "nli-public" / "train.jsonl", "w", encoding="utf-8") as fh:
        for t in CORPUS:
            fh.write(json.dumps({"premise": t, "hypothesis": "A dog sits .", "label": "neutral"}) + "\n")
    settings.COUNTERPART = {**settings.COUNTERPART, "SHARED_DATA_DIR": str(shared)}
    out = tmp_path / "model"
    call_command("train_fluency_model", "--out", str(out), "--holdout", "4", "--distill", "0")
    model = fluency.NgramLM.load(out)
    assert model.meta["holdout"] == 4 and model.meta["documents"] > 0
    assert "zebra" not in model.index and "movie" in model.index
    # the classifiers alone, from a dump of distilled windows (no generation, no LM)
    dump = tmp_path / "dump.jsonl"
    with open(dump, "w", encoding="utf-8") as fh:
        for i in range(20):
            broken = i % 2 == 1
            fh.write(
                json.dumps(
                    {
                        "task": "sentiment",
                        "code": "insert",
                        "before": "the movie was great",
                        "after": "the movie was was great" if broken else "the movie was truly great",
                        "lm_ratio": 4.0 if broken else 1.2,
                    }
                )
                + "\n"
            )
    call_command("train_fluency_model", "--out", str(out), "--classifier-from", str(dump))
    assert fluency.NgramLM.load(out).meta["classifier"]["sentiment"]["heldout_kappa"] == 1.0
    with pytest.raises(CommandError, match="no file"):
        call_command("train_fluency_model", "--out", str(out), "--classifier-from", str(tmp_path / "none.jsonl"))
    with pytest.raises(CommandError, match="--holdout"):
        call_command("train_fluency_model", "--out", str(out), "--holdout", "1", "--distill", "0")
    # files with no words at all: a clear error, not a crash
    for name in ("sentiment-public", "nli-public"):
        (shared / name / "train.jsonl").write_text(json.dumps({"text": "", "premise": "", "hypothesis": ""}) + "\n")
    with pytest.raises(CommandError, match="no words to count"):
        call_command("train_fluency_model", "--out", str(tmp_path / "none"), "--distill", "0")
    (shared / "nli-public" / "train.jsonl").unlink()
    with pytest.raises(CommandError, match="no training data"):
        call_command("train_fluency_model", "--out", str(out), "--distill", "0")


def test_a_classifier_of_the_lms_decisions_decides_in_the_filter(small: fluency.NgramLM) -> None:
    """``fit_classifier`` learns the LM's keep decisions from the window's features; an
    ``NgramScorer`` in classifier mode then decides the perplexity filter by it (its score stays
    the n-gram perplexity ratio), and ratio mode leaves the decision to ``max_ratio``."""
    good = [("the movie was great", "the movie was superb"), ("a man is riding a horse", "a woman is riding a horse")]
    bad = [
        ("the movie was great", "the movie was was great"),
        ("a man is riding a horse", "a man is riding a the horse"),
    ]
    pairs = (good + bad) * 10
    keep = ([True] * len(good) + [False] * len(bad)) * 10
    x = np.array([fluency.window_features(small, a, b) for a, b in pairs])
    assert x.shape == (len(pairs), len(fluency.FEATURES))
    c = fluency.fit_classifier(x, keep)
    assert c["heldout_kappa"] == 1.0 and c["features"] == list(fluency.FEATURES)
    small.meta["classifier"] = {"sentiment": c}
    scorer = fluency.NgramScorer(small, task="sentiment", mode="classifier")
    results = ml_filters.perplexity(scorer, [a for a, _ in good + bad], [b for _, b in good + bad], max_ratio=1e-9)
    assert [r.keep for r in results] == [True, True, False, False]
    assert "fluency classifier" in results[2].reasons[0]
    ratio = small.perplexity(bad[0][1]) / small.perplexity(bad[0][0])
    assert results[2].score == pytest.approx(ratio)
    assert fluency.NgramScorer(small, task="sentiment").judge(["a"], ["b"]) is None
    with pytest.raises(ValueError, match="no classifier for 'nli'"):
        fluency.NgramScorer(small, task="nli", mode="classifier")
    with pytest.raises(ValueError, match="ratio or classifier"):
        fluency.NgramScorer(small, task="sentiment", mode="fast")
    with pytest.raises(ValueError, match="all the same"):
        fluency.fit_classifier(x, [True] * len(pairs))
