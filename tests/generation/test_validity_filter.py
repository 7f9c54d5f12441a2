"""The optional validity filter (issue 19): synthetic corruptions, the MiniLM-style
discriminator (a tiny random BERT stands in), its calibration, and the filter in a run's chain."""

from __future__ import annotations

import random

import pytest

from generation.ml import corruptions
from generation.ml import validity as ml_validity
from generation.ml.base import GeneratedCandidate, Original
from generation.services import run_quality
from tests.generation._tiny_hf import save_bert_classifier, torch_single_thread  # noqa: F401

pytestmark = pytest.mark.postgres_too

SENTENCES = [
    "A woman washes dishes in the river while camping.",
    "Two hikers walk along a path adjacent to an old wall.",
    "A man is riding a red motorcycle with a small child sitting in front of him.",
    "The little boy in jean shorts kicks the soccer ball.",
]


def test_every_corruption_kind_changes_some_sentence():
    rng = random.Random(0)
    vocab = ["banana", "quietly", "the"]
    for kind in corruptions.KINDS:
        outs = [corruptions.corrupt(s, kind, rng, vocab) for s in SENTENCES for _ in range(3)]
        changed = [o for o in outs if o]
        assert changed, kind
        assert all(o not in SENTENCES for o in changed), kind


def test_specific_corruptions():
    rng = random.Random(1)
    s = "A woman washes dishes in the river while camping."
    quant = corruptions.corrupt(s, "pp_quantifier", rng)
    assert quant is not None and any(
        f" {q} " in quant or quant.startswith(q.capitalize()) for q in corruptions.ODD_QUANTIFIERS
    )
    swapped = corruptions.corrupt("Two hikers walk along a path adjacent to an old wall.", "np_swap", rng)
    assert swapped is not None and sorted(swapped.lower().rstrip(".").split()) == sorted(
        "two hikers walk along a path adjacent to an old wall".split()
    )


def test_safe_edit_swaps_one_word():
    assert (
        corruptions.safe_edit("The little boy kicks the ball.", random.Random(0)) == "The little girl kicks the ball."
    )
    assert corruptions.safe_edit("Nothing to swap here.", random.Random(0)) is None


def test_training_pairs_mix_human_safe_and_invalid():
    edits = [(s, s.replace("A ", "One ", 1)) for s in SENTENCES]
    data = ml_validity.training_pairs(edits, n_human=4, n_safe=2, n_invalid=8, seed=0)
    assert data.kinds.count("human") == 4
    assert 1 <= data.kinds.count("safe") <= 2
    invalid = [k for k, y in zip(data.kinds, data.valid, strict=True) if y == 0]
    assert len(invalid) == 8 and set(invalid) <= set(corruptions.KINDS)
    assert all(y == 1 for k, y in zip(data.kinds, data.valid, strict=True) if k in ("human", "safe"))
    assert len(data.originals) == len(data.edited) == len(data.valid)


def test_calibrate_passes_the_share_of_human_edits():
    scores = [i / 100 for i in range(100)]
    t = ml_validity.calibrate(scores, 0.9)
    assert sum(s >= t for s in scores) / len(scores) >= 0.9
    assert sum(s >= t + 0.011 for s in scores) / len(scores) < 0.9
    with pytest.raises(ValueError):
        ml_validity.calibrate([])


def test_figures():
    f = ml_validity.figures([0.1, 0.2, 0.8, 0.9], [False, False, True, True], [0.7, 0.95], threshold=0.5)
    assert f.auc == 1.0 and f.invalid_removed == 1.0 and f.valid_kept == 1.0 and f.human_pass == 1.0
    assert f.n == 4 and f.n_invalid == 2
    with pytest.raises(ValueError):
        ml_validity.figures([0.1], [True], [], threshold=0.5)


@pytest.fixture
def tiny_discriminator(tmp_path):
    base = save_bert_classifier(tmp_path / "base", labels=("invalid", "valid"))
    data = ml_validity.TrainingSet(
        originals=["the man is riding a horse ."] * 4,
        edited=[
            "the woman is riding a horse .",
            "the man is sitting a horse .",
            "the dog is riding a horse .",
            "the man the .",
        ],
        valid=[1, 0, 1, 0],
        kinds=["human", "odd_noun", "human", "delete_word"],
    )
    return ml_validity.ValidityDiscriminator.train(data, encoder_path=str(base), max_length=32)


def test_discriminator_scores_saves_and_reloads_with_its_threshold(tiny_discriminator, tmp_path):
    d = tiny_discriminator
    a = ["the man is riding a horse .", "a dog is in the park ."]
    b = ["the woman is riding a horse .", "a dog park the in ."]
    p = d.score(a, b)
    assert p.shape == (2,) and ((p >= 0) & (p <= 1)).all()
    d.threshold = 0.42
    d.save(str(tmp_path / "m"), seed=3)
    again = ml_validity.ValidityDiscriminator(str(tmp_path / "m"))
    assert again.threshold == 0.42 and again.meta["seed"] == 3 and again.encoder_path == d.encoder_path
    assert again.score(a, b) == pytest.approx(p, abs=1e-5)
    with pytest.raises(FileNotFoundError):
        ml_validity.ValidityDiscriminator(str(tmp_path / "missing"))
    with pytest.raises(ValueError):
        d.score(a, b[:1])
    # the head separates its own training edits: valid ones score higher
    train_p = d.score(["the man is riding a horse ."] * 2, ["the woman is riding a horse .", "the man the ."])
    assert train_p[0] > train_p[1]


def test_validity_filter_keeps_at_the_threshold(tiny_discriminator):
    a = ["the man is riding a horse .", "a dog is in the park ."]
    b = ["the woman is riding a horse .", "a dog park the in ."]
    p = tiny_discriminator.score(a, b)
    t = float(max(p))
    results = ml_validity.validity(tiny_discriminator, a, b, threshold=t)
    assert [r.keep for r in results] == [bool(x >= t) for x in p]
    assert any(r.keep for r in results)
    dropped = [r for r in results if not r.keep]
    assert all(r.reasons and "validity" in r.reasons[0] for r in dropped)
    assert ml_validity.validity(tiny_discriminator, [], []) == []


def test_validity_is_optional_and_last_in_the_chain(tiny_discriminator):
    assert "validity" in run_quality.FILTER_NAMES
    for task in ("nli", "sentiment", "image-caption"):
        assert "validity" not in run_quality.default_filters(task)
    o = Original(
        "o1",
        {"premise": "the man is riding a horse .", "hypothesis": "a man rides ."},
        "entailment",
        ("entailment", "neutral", "contradiction"),
        "nli",
    )
    cands = [
        GeneratedCandidate("o1", {"premise": "the woman is riding a horse .", "hypothesis": "a man rides ."}, "rules"),
        GeneratedCandidate("o1", {"premise": "the man is riding a horse .", "hypothesis": "a man rides ."}, "rules"),
    ]
    pairs = [(o, c) for c in cands]
    keep_all = run_quality.apply_filters(
        pairs,
        filters=["dedup", "validity"],
        band=(0.0, 1.0),
        encoder=None,
        validity_scorer=tiny_discriminator,
        validity_threshold=0.0,
    )
    # the no-op edit fails dedup and is never scored for validity
    assert keep_all[0].passed == {"dedup": True, "validity": True} and "validity" in keep_all[0].scores
    assert "validity" not in keep_all[1].passed
    drop = run_quality.apply_filters(
        pairs[:1],
        filters=["validity"],
        band=(0.0, 1.0),
        encoder=None,
        validity_scorer=tiny_discriminator,
        validity_threshold=1.0,
    )
    assert drop[0].keep is False and drop[0].reasons
    unused = run_quality.apply_filters(
        pairs[:1],
        filters=["dedup"],
        band=(0.0, 1.0),
        encoder=None,
        validity_scorer=tiny_discriminator,
        validity_threshold=1.0,
    )
    assert unused[0].keep and "validity" not in unused[0].scores


def test_validity_scorer_says_how_to_train_a_missing_model(settings, tmp_path):
    from generation.services import runs

    settings.COUNTERPART = {**settings.COUNTERPART, "VALIDITY_MODEL_PATH": str(tmp_path / "none")}
    with pytest.raises(FileNotFoundError, match="train_validity"):
        runs.validity_scorer()
    settings.COUNTERPART = {**settings.COUNTERPART, "VALIDITY_MODEL_PATH": ""}
    shipped = runs.validity_model_path()
    assert shipped.endswith("generation/ml/validity_model")


# -- in a run ------------------------------------------------------------------------------
@pytest.fixture
def echo_project(db):
    from generation.ml import registry
    from tests.generation.run_fixtures import make_project, register_test_generators

    register_test_generators()
    yield make_project(n=4)
    registry.unregister("test-echo")


def test_a_run_with_the_validity_filter_scores_its_candidates(echo_project, tiny_discriminator, settings, tmp_path):
    from generation.services.runs import run_create, run_execute
    from projects.models import Candidate

    tiny_discriminator.threshold = 0.0
    tiny_discriminator.save(str(tmp_path / "vm"))
    settings.COUNTERPART = {**settings.COUNTERPART, "VALIDITY_MODEL_PATH": str(tmp_path / "vm")}
    run = run_create(project=echo_project, generator="test-echo", options={"filters": ["dedup", "validity"]})
    assert run.options["filters"] == ["dedup", "validity"]
    run = run_execute(run_id=run.pk)
    assert run.status == "succeeded", run.error
    cands = list(Candidate.objects.filter(job_id=run.job_id))
    assert cands and all(0.0 <= c.scores["validity"] <= 1.0 and c.meta["filters"]["validity"] for c in cands)
    # a per-run threshold of 1.0 drops them all, with the reason
    strict = run_create(
        project=echo_project,
        generator="test-echo",
        options={"filters": ["validity"], "validity_threshold": 1.0},
    )
    strict = run_execute(run_id=strict.pk)
    dropped = list(Candidate.objects.filter(job_id=strict.job_id))
    assert dropped and all(c.meta["filters"] == {"validity": False} for c in dropped)
    assert all("validity" in " ".join(c.meta["filter_reasons"]) for c in dropped)


def test_a_run_with_the_validity_filter_and_no_model_fails_at_start(echo_project, settings, tmp_path):
    from django.core.exceptions import ValidationError

    from generation.services.runs import run_create, run_execute

    settings.COUNTERPART = {**settings.COUNTERPART, "VALIDITY_MODEL_PATH": str(tmp_path / "none")}
    run = run_execute(
        run_id=run_create(project=echo_project, generator="test-echo", options={"filters": ["validity"]}).pk
    )
    assert run.status == "failed" and "train_validity" in run.error and run.done == 0
    with pytest.raises(ValidationError, match="validity_threshold"):
        run_create(project=echo_project, generator="test-echo", options={"validity_threshold": 2})
