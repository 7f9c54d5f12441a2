"""The CAD-trained sentence rewriter and the written review flip (issue 31): the sentence pairs
it learns from, the adapter (trained, saved, merged) on a tiny random llama, the flip's checks
with a rewriter standing in, and the rules generator's option."""

from __future__ import annotations

from pathlib import Path

import pytest

from generation.ml import rewriter
from generation.ml.rules import apply_edits, coherent, rewritten, sentiment_codes
from generation.ml.rules.tokens import sentence_spans
from tests.generation._tiny_hf import save_llama, torch_single_thread  # noqa: F401 - autouse fixture

CAD_PAIRED = (
    "Sentiment\tText\tbatch_id\n"
    "Positive\tThe plot is incredible. I saw it on Sunday. I really loved this movie.\t1\n"
    "Negative\tThe plot is implausible. I saw it on Sunday. I really hated this movie.\t1\n"
    "Negative\tA dull film. Nobody will remember it.\t2\n"
    "Positive\tHere is a wholly different text about cooking pasta at home. Nobody will remember it.\t2\n"
    "Positive\tA batch of one row.\t3\n"
)


def test_cad_sentence_pairs_are_the_sentences_an_annotator_rewrote(tmp_path: Path) -> None:
    f = tmp_path / "train_paired.tsv"
    f.write_text(CAD_PAIRED, encoding="utf-8")
    pairs = rewriter.cad_sentence_pairs(f, sentence_spans)
    assert [(p.source, p.original, p.revised) for p in pairs] == [
        ("positive", "The plot is incredible.", "The plot is implausible."),
        ("positive", "I really loved this movie.", "I really hated this movie."),
    ]  # the unchanged sentence, a sentence written anew (batch 2) and a batch of one are no pair
    f.write_text("Label\tReview\n", encoding="utf-8")
    with pytest.raises(ValueError, match="not a CAD paired file"):
        rewriter.cad_sentence_pairs(f, sentence_spans)


PAIRS = [
    rewriter.RevisionPair("positive", "the acting was great .", "the acting was terrible ."),
    rewriter.RevisionPair("negative", "the plot is boring .", "the plot is clever ."),
    rewriter.RevisionPair("positive", "i loved it !", "i hated it !"),
]


def test_train_saves_an_adapter_the_rewriter_merges_into_the_weights(tmp_path: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    base = str(save_llama(tmp_path / "base"))
    meta = rewriter.train(PAIRS, base, tmp_path / "adapter", rank=2, alpha=4.0, lr=0.05, batch_size=2, epochs=2)
    assert meta["steps"] == 4 and meta["pairs"] == 3 and meta["rank"] == 2
    assert rewriter.read_meta(tmp_path / "adapter") == meta
    assert rewriter.fits(base, tmp_path / "adapter") and not rewriter.fits(tmp_path, tmp_path / "adapter")
    # the shipped adapter is SmolLM2's: a run with another LM gets no written flip, and asking
    # for one is refused at start
    assert not rewriter.fits(base)
    from generation.ml.base import GeneratorConfigError
    from generation.ml.rules import RulesGenerator

    assert RulesGenerator(causal_lm_path=base)._rewriter() is None
    with pytest.raises(GeneratorConfigError, match="trained on smollm2-135m-instruct"):
        RulesGenerator(rewriter="on", causal_lm_path=base)
    state = torch.load(tmp_path / "adapter" / rewriter.ADAPTER_FILE, weights_only=True)
    assert any(float(v.abs().sum()) > 0 for k, v in state.items() if k.endswith("lora_b"))  # it learnt
    # the merged weights compute what the base model with the adapter beside it computes
    wrapped = AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32)
    params = rewriter.add_adapter(wrapped, 2, 4.0)
    with torch.no_grad():
        for name, p in params.items():
            p.copy_(state[name].float())
    rw = rewriter.Rewriter(base, tmp_path / "adapter")
    ids = torch.tensor([[5, 12, 13, 14]])
    with torch.no_grad():
        assert torch.allclose(rw.model(ids).logits, wrapped(ids).logits, atol=1e-3)
    out = rw.rewrite(["the acting was great .", "the plot is boring ."], "positive", "negative")
    assert len(out) == 2 and all(isinstance(s, str) and "\n" not in s for s in out)
    with pytest.raises(ValueError, match="labels are"):
        rw.rewrite(["x"], "positive", "neutral")


def test_merge_refuses_an_adapter_of_another_model(tmp_path: Path) -> None:
    import torch
    from transformers import AutoModelForCausalLM

    base = str(save_llama(tmp_path / "base"))
    model = AutoModelForCausalLM.from_pretrained(base)
    bad = {"0.self_attn.q_proj.lora_a": torch.zeros(2, 99), "0.self_attn.q_proj.lora_b": torch.zeros(16, 2)}
    with pytest.raises(ValueError, match="the model's is"):
        rewriter.merge_adapter(model, bad, 2, 4.0)
    stray = {"7.mlp.up_proj.lora_a": torch.zeros(2, 16), "7.mlp.up_proj.lora_b": torch.zeros(32, 2)}
    with pytest.raises(ValueError, match="names 1 layers, the model has 0"):
        rewriter.merge_adapter(model, stray, 2, 4.0)
    with pytest.raises(FileNotFoundError, match="train_rewriter"):
        rewriter.Rewriter(base, tmp_path / "no-adapter")
    with pytest.raises(ValueError, match="no sentence pairs"):
        rewriter.train([], base, tmp_path / "a")


REVIEW = (
    "This is a wonderful film. The acting is brilliant and the story is moving. "
    "It was shot in Ohio over a summer. I loved every minute of it."
)
FLIPS = {
    "This is a wonderful film.": "This is a dreadful film.",
    "The acting is brilliant and the story is moving.": "The acting is wooden and the story is dull.",
    "I loved every minute of it.": "I hated every minute of it.",
}


def _rewrite(table: dict[str, str]) -> rewritten.Rewrite:
    def rewrite(sentences, source, target):  # type: ignore[no-untyped-def]
        assert (source, target) == ("positive", "negative")
        return [table.get(s, "") for s in sentences]

    return rewrite


def test_written_flip_rewrites_every_sentence_of_the_original_side() -> None:
    flip = rewritten.written_flip(REVIEW, "positive", _rewrite(FLIPS))
    assert flip.blocked == "" and flip.dropped == ()
    new = apply_edits(REVIEW, list(flip.edits))
    assert new == (
        "This is a dreadful film. The acting is wooden and the story is dull. "
        "It was shot in Ohio over a summer. I hated every minute of it."
    )
    assert flip.toward_target >= coherent.WHOLE
    prop = sentiment_codes.written_flip(REVIEW, _rewrite(FLIPS), label="positive")
    assert prop is not None and prop.code == "resemantic"
    assert set(prop.introduced) >= {"dreadful", "wooden", "hated"} and "wonderful" in prop.removed
    # words as the rest of the pool counts them (tokens.words): "dull", not "dull."
    assert "dull" in prop.introduced and not any(w[-1] in ".,!?" for w in prop.introduced + prop.removed)


def test_a_sentence_whose_rewrite_fails_is_left_out() -> None:
    table = dict(FLIPS)
    table["The acting is brilliant and the story is moving."] = "Cooking pasta takes ten minutes."  # not an edit
    flip = rewritten.written_flip(REVIEW, "positive", _rewrite(table))
    assert flip.blocked == ""
    new = apply_edits(REVIEW, list(flip.edits))
    assert "pasta" not in new and "brilliant" not in new and "dreadful" in new
    assert len(flip.dropped) == 1
    # a rewrite that keeps the original's side is no rewrite
    assert not rewritten.acceptable("I loved it.", "I really loved it.", _model(), True)
    # nothing the rewriter wrote is usable: no flip
    assert rewritten.written_flip(REVIEW, "positive", _rewrite({})).blocked
    assert sentiment_codes.written_flip(REVIEW, _rewrite({}), label="positive") is None


def _model():  # type: ignore[no-untyped-def]
    from generation.ml import opinion

    model = opinion.load()
    assert model is not None
    return model


def test_the_generator_pools_the_written_flip_first_on_texts_it_may_flip_whole() -> None:
    from generation.ml.base import GeneratedCandidate, GeneratorConfigError, Original
    from generation.ml.rules import RulesGenerator

    def written(gen: RulesGenerator, o: Original) -> list[GeneratedCandidate]:
        cands = [c for c in gen.generate([o]) if isinstance(c, GeneratedCandidate)]
        out = [c for c in cands if c.perturbation == "resemantic"]
        assert not out or cands[0] is out[0]  # the lexical slot's first choice
        return out

    labels = ("negative", "positive")
    review = Original("r1", {"text": REVIEW}, "positive", labels, "sentiment")
    snippet = Original("s1", {"text": "I loved every minute of this wonderful film."}, "positive", labels, "sentiment")
    gen = RulesGenerator(seed=0)
    gen.use_rewriter(_rewrite({**FLIPS, snippet.fields["text"]: "I hated every minute of this dreadful film."}))
    # by default only a text of one sentence is flipped whole (round 12: 0.08 of the written
    # flips of CAD's reviews read as a review a person could write)
    assert not written(gen, review)
    [one] = written(gen, snippet)
    assert one.fields["text"] == "I hated every minute of this dreadful film." and one.target_label == "negative"
    longer = RulesGenerator(seed=0, review_flip_sentences=0)
    longer.use_rewriter(_rewrite(FLIPS))
    [whole] = written(longer, review)
    assert whole.fields["text"].startswith("This is a dreadful film.") and whole.target_label == "negative"
    longer.use_rewriter(None)
    assert not written(longer, review)
    assert RulesGenerator(rewriter="off", causal_lm_path="/any")._rewriter() is None
    # a hub name or a missing folder: no written flip (auto), refused at start (on)
    assert RulesGenerator(causal_lm_path="/no/such/model")._rewriter() is None
    with pytest.raises(GeneratorConfigError, match="not on a model folder shaped like"):
        RulesGenerator(rewriter="on", causal_lm_path="/no/such/model")
    with pytest.raises(GeneratorConfigError, match="auto, on or off"):
        RulesGenerator(rewriter="maybe")
    with pytest.raises(GeneratorConfigError, match="rewriter=on needs"):
        RulesGenerator(rewriter="on")  # no language model path


def cad_and_base(tmp_path: Path) -> tuple[Path, str]:
    """A CAD paired folder (train and dev: ``CAD_PAIRED``) and a tiny llama folder."""
    cad = tmp_path / "cad"
    cad.mkdir()
    (cad / "train_paired.tsv").write_text(CAD_PAIRED, encoding="utf-8")
    (cad / "dev_paired.tsv").write_text(CAD_PAIRED, encoding="utf-8")
    return cad, str(save_llama(tmp_path / "base"))


def test_train_rewriter_command_trains_scores_and_refuses_bad_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import json

    from django.core.management import call_command
    from django.core.management.base import CommandError

    cad, base = cad_and_base(tmp_path)
    out = tmp_path / "adapter"
    call_command("train_rewriter", cad=str(cad), base=base, out=str(out), rank=2, dev=2)
    meta = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert meta["pairs"] == 2 and meta["steps"] == 1 and meta["cad_dev"]["sentences"] == 2
    assert 0.0 <= meta["cad_dev"]["accepted"] <= 1.0 and rewriter.read_meta(out) == meta
    call_command("train_rewriter", cad=str(cad), base=base, out=str(out), evaluate=True, dev=1)
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["cad_dev"]["sentences"] == 1
    with pytest.raises(CommandError, match="no adapter in"):
        call_command("train_rewriter", cad=str(cad), base=base, out=str(tmp_path / "none"), evaluate=True)
    with pytest.raises(CommandError, match=r"no CAD train_paired\.tsv"):
        call_command("train_rewriter", cad=str(tmp_path), base=base, out=str(out))
    with pytest.raises(CommandError, match="no causal language model"):
        call_command("train_rewriter", cad=str(cad), base=str(tmp_path / "missing"), out=str(out))
    (cad / "train_paired.tsv").write_text("Label\tReview\n", encoding="utf-8")
    with pytest.raises(CommandError, match="not a CAD paired file"):
        call_command("train_rewriter", cad=str(cad), base=base, out=str(out))


def test_sentence_originals_are_one_sentence_texts_with_their_reviews_label(tmp_path: Path) -> None:
    f = tmp_path / "dev_paired.tsv"
    f.write_text(
        CAD_PAIRED + "Negative\tA dull plot. Bad acting.\t4\nPositive\tA clever plot. Bad acting.\t4\n",
        encoding="utf-8",
    )
    originals = rewriter.sentence_originals(rewriter.cad_sentence_pairs(f, sentence_spans))
    # taken in turn from each label, each a sentence with its review's label and both labels
    assert [(o.label, o.fields["text"]) for o in originals] == [
        ("negative", "A dull plot."),
        ("positive", "The plot is incredible."),
        ("positive", "I really loved this movie."),
    ]
    assert all(o.task == "sentiment" and o.labels == ("negative", "positive") for o in originals)
    assert len({o.id for o in originals}) == 3
    assert rewriter.sentence_originals([]) == []
