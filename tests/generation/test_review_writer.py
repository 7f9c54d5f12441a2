"""The whole-review writer (issue 31, round 14): CAD's review pairs, the word-level edits a written
review becomes, the checks a written review must pass, the adapter trained from the sentence
rewriter's on a tiny random llama, the rules generator's ``review_writer`` option and the
``train_rewriter --unit review`` command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from generation.ml import rewriter
from generation.ml.rules import apply_edits, coherent, rewritten, sentiment_codes
from tests.generation._tiny_hf import save_llama, torch_single_thread  # noqa: F401 - autouse fixture
from tests.generation.test_rewriter import CAD_PAIRED, PAIRS, REVIEW, cad_and_base

WRITTEN = (
    "This is a dreadful film. The acting is wooden and the story is dull. "
    "It was shot in Ohio over a summer. I hated every minute of it."
)


def _model():  # type: ignore[no-untyped-def]
    from generation.ml import opinion

    model = opinion.load()
    assert model is not None
    return model


def test_cad_review_pairs_are_whole_reviews_beside_their_revisions(tmp_path: Path) -> None:
    f = tmp_path / "train_paired.tsv"
    f.write_text(CAD_PAIRED, encoding="utf-8")
    pairs = rewriter.cad_review_pairs(f)
    assert [(p.source, p.original[:20], p.revised[:20]) for p in pairs] == [
        ("positive", "The plot is incredib", "The plot is implausi"),
        ("negative", "A dull film. Nobody ", "Here is a wholly dif"),
    ]  # the batch of one row is no pair
    assert [p.source for p in rewriter.cad_review_pairs(f, max_words=7)] == ["negative"]  # the longer one is out
    f.write_text("Label\tReview\n", encoding="utf-8")
    with pytest.raises(ValueError, match="not a CAD paired file"):
        rewriter.cad_review_pairs(f)


@pytest.mark.parametrize(
    ("old", "new"),
    [
        (REVIEW, WRITTEN),
        ("A  good film.<br /><br />Loved it.", "A  bad film.<br /><br />Hated it."),
        ("A good film. Loved it.", "Sadly a good film. Loved it, not."),  # inserted first and last
        ("A good film. Loved it. Really.", "A film. Loved it."),  # left out inside and at the end
        ("Good.", "Not good at all."),
    ],
)
def test_text_edits_turn_the_text_into_the_written_one_and_keep_its_spacing(old: str, new: str) -> None:
    edits = rewritten.text_edits(old, new)
    out = apply_edits(old, edits)
    assert out.split() == new.split()
    if "  " in old:
        assert "  " in out  # the original's spacing outside the edits is kept
    assert rewritten.text_edits(old, old) == []


def test_review_problem_names_what_is_wrong_with_a_written_review() -> None:
    model = _model()

    def problem(new: str, old: str = REVIEW) -> str:
        return rewritten.review_problem(old, new, model, True)

    assert problem(WRITTEN) == ""
    assert problem(REVIEW) == "nothing rewritten"
    assert problem("") == "nothing rewritten"
    assert problem(WRITTEN + " " + WRITTEN).startswith("written 2.00 times as long")
    assert problem("Cooking pasta at home takes ten minutes, and a sauce of tomatoes takes forty.") == (
        "written 0.50 times as long"
    )
    pasta = (
        "Cooking pasta at home takes ten minutes. A sauce of ripe tomatoes, garlic and basil takes forty. "
        "Salt the water well. Drain it before it is soft, then serve it hot."
    )
    assert problem(pasta) == "not an edit of the review"
    assert problem(WRITTEN.replace(" summer.", " summer.<br />")) == "markup not kept"
    tail = " The cast came from the stage. The score was recorded in Prague. It runs for two hours."
    assert problem(WRITTEN + tail, REVIEW + tail) == ""
    assert problem(WRITTEN + tail + " I hated every minute of it.", REVIEW + tail) == "a sentence written twice"
    assert problem(REVIEW.replace("I loved every minute", "I loved most minutes")) != ""  # still the original's
    # a half flip: one sentence turned, the rest still arguing the original's side
    half = REVIEW.replace("I loved every minute of it.", "I hated every minute of it.")
    assert problem(half) in (
        "a sentence still argues the original's side",
        "the written review still reads on the original's side",
    )


def _writer(table: dict[str, str]) -> rewritten.Rewrite:
    def write(texts, source, target):  # type: ignore[no-untyped-def]
        assert (source, target) == ("positive", "negative")
        return [table.get(t, t) for t in texts]

    return write


def test_written_review_flip_is_the_writers_review_as_word_edits() -> None:
    flip = rewritten.written_review_flip(REVIEW, "positive", _writer({REVIEW: WRITTEN}))
    assert flip.blocked == "" and flip.dropped == ()
    assert apply_edits(REVIEW, list(flip.edits)) == WRITTEN
    assert flip.toward_target >= coherent.WHOLE
    prop = sentiment_codes.written_review_flip(REVIEW, _writer({REVIEW: WRITTEN}), label="positive")
    assert prop is not None and prop.code == "resemantic"
    assert {"dreadful", "wooden", "hated"} <= set(prop.introduced) and "wonderful" in prop.removed
    # the writer gave the review back unchanged: no flip, and why
    assert rewritten.written_review_flip(REVIEW, "positive", _writer({})).blocked == "nothing rewritten"
    assert sentiment_codes.written_review_flip(REVIEW, _writer({}), label="positive") is None


def test_the_generator_pools_the_written_review_first_on_reviews_of_several_sentences(tmp_path: Path) -> None:
    from generation.ml.base import GeneratedCandidate, GeneratorConfigError, Original
    from generation.ml.rules import RulesGenerator

    labels = ("negative", "positive")
    review = Original("r1", {"text": REVIEW}, "positive", labels, "sentiment")
    gen = RulesGenerator(seed=0, rewriter="off")
    assert gen._review_writer() is None  # off by default
    gen.use_review_writer(_writer({REVIEW: WRITTEN}))
    cands = [c for c in gen.generate([review]) if isinstance(c, GeneratedCandidate)]
    assert cands[0].perturbation == "resemantic" and cands[0].fields["text"] == WRITTEN
    assert cands[0].target_label == "negative"
    gen.use_review_writer(None)
    assert not [c for c in gen.generate([review]) if getattr(c, "perturbation", "") == "resemantic"]
    # a one-sentence text is the sentence rewriter's, not the review writer's
    one = Original("s1", {"text": "I loved every minute of this wonderful film."}, "positive", labels, "sentiment")
    gen.use_review_writer(_writer({one.fields["text"]: "I hated every minute of this dreadful film."}))
    assert not [c for c in gen.generate([one]) if getattr(c, "perturbation", "") == "resemantic"]
    # the option: auto without a fitting LM is no writer, on is refused at start
    base = str(save_llama(tmp_path / "base"))
    assert RulesGenerator(review_writer="auto", causal_lm_path=base)._review_writer() is None
    with pytest.raises(GeneratorConfigError, match="review_writer must be auto, on or off"):
        RulesGenerator(review_writer="yes")
    with pytest.raises(GeneratorConfigError, match="review_writer=on needs"):
        RulesGenerator(review_writer="on")


def test_the_review_writer_trains_from_the_sentence_rewriter_and_writes_reviews(tmp_path: Path) -> None:
    base = str(save_llama(tmp_path / "base"))
    rewriter.train(PAIRS, base, tmp_path / "sentences", rank=2, alpha=4.0, lr=0.05, batch_size=2)
    reviews = [rewriter.RevisionPair("positive", REVIEW, WRITTEN)]
    meta = rewriter.train(
        reviews,
        base,
        tmp_path / "reviews",
        rank=2,
        alpha=4.0,
        batch_size=1,
        unit="review",
        init_dir=tmp_path / "sentences",
    )
    assert meta["unit"] == "review" and meta["started_from"] == "sentences (3 pairs)" and meta["steps"] == 1
    writer = rewriter.Rewriter(base, tmp_path / "reviews")
    assert writer.unit == "review"
    assert rewriter.prompt(REVIEW, "positive", "negative", "review").startswith("Review (positive): This is")
    [out] = writer.rewrite([REVIEW], "positive", "negative")
    assert isinstance(out, str)
    with pytest.raises(ValueError, match="another rank or base model"):
        rewriter.train(reviews, base, tmp_path / "x", rank=4, unit="review", init_dir=tmp_path / "sentences")
    with pytest.raises(ValueError, match="no adapter in"):
        rewriter.train(reviews, base, tmp_path / "x", rank=2, unit="review", init_dir=tmp_path / "none")
    with pytest.raises(ValueError, match="unit is one of"):
        rewriter.train(reviews, base, tmp_path / "x", unit="paragraph")


def test_train_rewriter_unit_review_trains_and_scores_reviews(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from django.core.management import call_command
    from django.core.management.base import CommandError

    cad, base = cad_and_base(tmp_path)
    call_command("train_rewriter", cad=str(cad), base=base, out=str(tmp_path / "s"), rank=2, dev=0)
    capsys.readouterr()
    out = tmp_path / "r"
    call_command(
        "train_rewriter", unit="review", cad=str(cad), base=base, out=str(out), start_from=str(tmp_path / "s"), rank=2
    )
    meta = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert meta["unit"] == "review" and meta["pairs"] == 2 and meta["cad_dev"]["reviews"] == 2
    assert sum(meta["cad_dev"]["problems"].values()) == 2 and rewriter.read_meta(out) == meta
    with pytest.raises(CommandError, match="no adapter in"):
        call_command(
            "train_rewriter", unit="review", cad=str(cad), base=base, out=str(out), start_from=str(tmp_path / "none")
        )


def test_seeded_slice_lets_a_later_run_go_on_with_pairs_the_first_never_saw() -> None:
    pairs = [rewriter.RevisionPair("positive", f"review {i}", f"revised {i}") for i in range(50)]
    first = rewriter.seeded_slice(pairs, 0, limit=20)
    rest = rewriter.seeded_slice(pairs, 0, skip=20)
    assert len(first) == 20 and len(rest) == 30
    assert not set(first) & set(rest) and set(first) | set(rest) == set(pairs)
    assert rewriter.seeded_slice(pairs, 0, skip=20, limit=5) == rest[:5]
    assert first != pairs[:20]  # a random order, not the file's
    assert rewriter.seeded_slice(pairs, 1, limit=20) != first  # the seed picks it


def test_train_rewriter_refuses_a_skip_past_every_pair(tmp_path: Path) -> None:
    from django.core.management import call_command
    from django.core.management.base import CommandError

    cad, base = cad_and_base(tmp_path)
    with pytest.raises(CommandError, match="leaves none of the 2 pairs"):
        call_command("train_rewriter", unit="review", cad=str(cad), base=base, out=str(tmp_path / "r"), skip=2)
    with pytest.raises(CommandError, match="must be >= 0"):
        call_command("train_rewriter", unit="review", cad=str(cad), base=base, out=str(tmp_path / "r"), skip=-1)
