"""The coherent review-wide flip (issue 31.2): the sentence-level opinion model it reads, the
sentences it leaves out, and the training command of the shipped model."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from generation.ml import opinion
from generation.ml.rules import apply_edits, coherent, sentiment_codes, verdicts
from generation.ml.rules.tokens import sentence_spans

ROWS = [
    {"text": t, "label": lab, "source": "rt-polarity"}
    for t, lab in [
        ("a wonderful, moving film", "positive"),
        ("brilliant acting and a great story", "positive"),
        ("I loved every minute", "positive"),
        ("a delight from start to finish", "positive"),
        ("a dull, tedious mess", "negative"),
        ("terrible acting and a boring story", "negative"),
        ("I hated every minute", "negative"),
        ("not good at all", "negative"),
    ]
    * 6
]


def test_tokens_mark_negation_scope_up_to_punctuation() -> None:
    assert opinion.tokens("It is not good, but fun") == ["it", "is", "not", "NOT_good", "but", "fun"]
    assert opinion.tokens("I didn't like it.<br />Great") == ["i", "didn't", "NOT_like", "NOT_it", "great"]


def test_train_learns_the_direction_and_round_trips(tmp_path: Path) -> None:
    model, scores = opinion.train(ROWS, held_out=0.25, min_count=1, min_weight=0.0, c=10.0)
    assert model.lean("a wonderful story") > 0.5 > model.lean("a tedious story")
    assert model.lean("good") > model.lean("not good")  # the negation is a feature of its own
    assert 0.0 <= scores["held_out_snippets"] <= 1.0 and scores["held_out_snippets_n"] == 12
    path = model.save(tmp_path)
    back = opinion.read(tmp_path)
    assert path.name == opinion.MODEL_FILE and back.weights == model.weights
    assert back.lean("a wonderful story") == pytest.approx(model.lean("a wonderful story"), abs=1e-3)


def test_read_rows_names_the_bad_line(tmp_path: Path) -> None:
    f = tmp_path / "d.jsonl"
    f.write_text('{"text": "fine", "label": "positive"}\n{"text": "x", "label": "meh"}\n', encoding="utf-8")
    with pytest.raises(ValueError, match=r"d.jsonl:2: needs a text and a label"):
        opinion.read_rows(f)
    f.write_text("{not json\n", encoding="utf-8")
    with pytest.raises(ValueError, match=r"d.jsonl:1: not JSON"):
        opinion.read_rows(f)
    with pytest.raises(ValueError, match="cannot read the opinion model"):
        opinion.read(tmp_path)


def test_the_shipped_model_reads_sentences_both_ways() -> None:
    model = opinion.load()
    assert model is not None and model.meta["held_out_snippets"] > 0.75 and model.meta["held_out_reviews"] > 0.85
    # review sentences a CAD dev revision changed, both sides (0.69 without CAD train's)
    assert model.meta["cad_dev_sentences"] > 0.74
    assert model.lean("It is a wonderful, moving film with a great cast.") > 0.8
    assert model.lean("The acting is beyond terrible and the plot is a dull mess.") < 0.2


def test_train_opinion_model_command(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS * 2), encoding="utf-8")
    call_command("train_opinion_model", data=str(data), out=str(tmp_path / "m"), cad="none")
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["trained_on"] == 87 and out["data"] == f"{tmp_path.name}/train.jsonl"  # 10 % of 96 held out
    assert "cad_dev_sentences" not in out
    with gzip.open(tmp_path / "m" / opinion.MODEL_FILE, "rt", encoding="utf-8") as fh:
        assert json.load(fh)["weights"]
    with pytest.raises(CommandError, match="no training data"):
        call_command("train_opinion_model", data=str(tmp_path / "missing.jsonl"), out=str(tmp_path / "m"))
    with pytest.raises(CommandError, match=r"no CAD train_paired\.tsv"):
        call_command("train_opinion_model", data=str(data), out=str(tmp_path / "m"), cad=str(tmp_path))
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "x", "label": "meh"}\n', encoding="utf-8")
    with pytest.raises(CommandError, match=r"bad\.jsonl:1"):
        call_command("train_opinion_model", data=str(bad), out=str(tmp_path / "m"))


CAD_PAIRED = (
    "Sentiment\tText\tbatch_id\n"
    "Negative\tI saw this film in 1990. The plot is implausible. I would avoid this movie.\t1\n"
    "Positive\tI saw this film in 1990. The plot is incredible. I really loved this movie.\t1\n"
    "Positive\tA lone row with no revision.\t2\n"
)


def test_cad_sentences_are_the_sentences_a_revision_changed(tmp_path: Path) -> None:
    f = tmp_path / "train_paired.tsv"
    f.write_text(CAD_PAIRED, encoding="utf-8")
    rows = opinion.cad_sentences(f, sentence_spans)
    assert {(r["text"], r["label"]) for r in rows} == {
        ("The plot is implausible.", "negative"),
        ("I would avoid this movie.", "negative"),
        ("The plot is incredible.", "positive"),
        ("I really loved this movie.", "positive"),
    }  # the unchanged sentence and the batch of one row are no part of it
    assert all(r["source"] == "cad-sentences" for r in rows)
    f.write_text("Label\tReview\n", encoding="utf-8")
    with pytest.raises(ValueError, match="not a CAD paired file"):
        opinion.cad_sentences(f, sentence_spans)


def test_train_opinion_model_command_adds_cad_train_sentences(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in ROWS * 2), encoding="utf-8")
    (tmp_path / "train_paired.tsv").write_text(CAD_PAIRED, encoding="utf-8")
    (tmp_path / "dev_paired.tsv").write_text(CAD_PAIRED, encoding="utf-8")
    call_command("train_opinion_model", data=str(data), out=str(tmp_path / "m"), cad=str(tmp_path))
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["data"].endswith("+ CAD train") and out["cad_dev_sentences_n"] == 4
    assert out["trained_on"] == 90  # 10 % of 96 + 4 held out
    (tmp_path / "train_paired.tsv").write_text("Label\tReview\n", encoding="utf-8")
    with pytest.raises(CommandError, match="not a CAD paired file"):
        call_command("train_opinion_model", data=str(data), out=str(tmp_path / "m"), cad=str(tmp_path))


REVIEW = (
    "The plot is implausible and the acting is weak. I saw it in the summer of 1990 with my brother. "
    "The whole thing is a dull, tedious and pointless mess that insults its audience. "
    "The music is forgettable."
)


def test_coherent_flip_leaves_out_what_still_argues_the_original_side() -> None:
    flip = coherent.coherent_flip(REVIEW, "negative")
    assert flip.blocked == "", flip
    new = apply_edits(REVIEW, list(flip.edits))
    assert "believable" in new and "strong" in new
    # the sentence no verdict rule flips ("a dull, tedious and pointless mess") is left out, the
    # narrative one and the flipped "forgettable" -> "memorable" (which the model reads flipped) stay
    assert "pointless mess" not in new and "summer of 1990" in new
    assert [REVIEW[a:b] for a, b in flip.dropped] == [
        "The whole thing is a dull, tedious and pointless mess that insults its audience."
    ]
    assert new.endswith("with my brother. The music is memorable.")
    assert flip.toward_target >= coherent.WHOLE
    # the label given or read by the model: the same flip
    assert coherent.coherent_flip(REVIEW, None).edits == flip.edits
    assert coherent.coherent_flip(REVIEW, "Negative").edits == flip.edits


def test_coherent_flip_refuses_when_too_much_would_be_left_out() -> None:
    review = (
        "The acting is weak. This is a dull, tedious and pointless mess. I hated every awful minute of it. "
        "A boring, stupid waste of two hours. Dreadful, lifeless and ugly from start to finish."
    )
    flip = coherent.coherent_flip(review, "negative")
    assert flip.edits == () and flip.blocked
    assert sentiment_codes.review_flip(review, label="negative") is None


def test_read_review_with_drop_leaves_an_unsafe_sentence_out() -> None:
    review = "The acting is weak. It is a waste of time, I say. The plot is boring."
    blocked = verdicts.read_review(review)
    assert blocked.blocked  # "a waste of" has no safe flip: without drop nothing is flipped
    reading = verdicts.read_review(review, drop=True)
    assert reading.blocked == ""
    assert [review[a:b] for a, b in reading.dropped] == ["It is a waste of time, I say."]
    assert {e.old for e in reading.edits} == {"weak", "boring"}


def test_changed_sentences_leave_out_the_sentences_left_out() -> None:
    text = "The acting is weak. It is a mess. I saw it in 1990."
    new = "The acting is strong. I saw it in 1990."
    assert sentiment_codes.changed_sentences(text, new) == ("The acting is weak.", "The acting is strong.")
    assert sentiment_codes.changed_sentences(text, "The acting is weak. I saw it in 1990.") is None


MIXED = (
    "The dialogue is clumsy and the plot is a dull, tedious mess. "
    "Still, the photography is stunning and the lead gives a wonderful, moving performance. "
    "The score is beautiful too. I saw it with my brother last week."
)


def test_side_flip_keeps_the_reviewers_own_sentences_of_the_other_side() -> None:
    flip = coherent.side_flip(MIXED, "negative")
    assert flip.blocked == "" and flip.verdicts == ()  # no word swapped
    new = apply_edits(MIXED, list(flip.edits))
    assert new.startswith("Still, the photography is stunning") and "tedious" not in new
    assert flip.toward_target >= coherent.WHOLE
    # nothing on the other side to keep: no flip
    assert coherent.side_flip(REVIEW, "negative").blocked
    prop = sentiment_codes.side_flip(MIXED, "negative")
    assert prop is not None and prop.code == "delete" and "tedious" in prop.removed and prop.introduced == ()


def test_the_generator_pools_a_side_flip_aimed_at_the_other_label() -> None:
    from generation.ml.base import GeneratedCandidate, Original
    from generation.ml.rules import RulesGenerator

    o = Original("m1", {"text": MIXED}, "negative", ("negative", "positive"), "sentiment")
    cands = [c for c in RulesGenerator(seed=0).generate([o]) if isinstance(c, GeneratedCandidate)]
    side = [c for c in cands if str(c.meta["detail"]).startswith("review flip by leaving out")]
    assert len(side) == 1 and side[0].perturbation == "delete" and side[0].target_label == "positive"
    keep = [c for c in cands if c.perturbation in ("delete", "insert") and c not in side]
    assert keep and all(c.target_label == "negative" for c in keep)


def test_a_sentence_leaning_on_one_left_out_goes_with_it() -> None:
    assert coherent._leans_back("That's mainly because it is brave.")
    assert coherent._leans_back("Then, he gets a chance.") and coherent._leans_back("The first is the cast.")
    assert not coherent._leans_back("The cast is great.") and not coherent._leans_back("It is a film about a war.")
    assert not coherent._leans_back("Still, the photography is stunning.")  # a contrast, not a reference
    review = MIXED.replace("The score is beautiful too.", "The score is beautiful too. I saw it with friends.")
    review = review.replace(
        "The dialogue is clumsy and the plot is a dull, tedious mess. ",
        "The dialogue is clumsy and the plot is a dull, tedious mess. That is mostly the writer's fault. ",
    )
    flip = coherent.side_flip(review, "negative")
    assert flip.blocked == "", flip
    new = apply_edits(review, list(flip.edits))
    # "That is mostly the writer's fault." would answer a sentence no longer there
    assert "tedious" not in new and "writer's fault" not in new and new.startswith("Still, the photography")
