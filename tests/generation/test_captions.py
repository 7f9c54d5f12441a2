"""COCO-Counterfactuals-style caption pairs (generation/ml/captions.py): one noun replaced,
number and article kept consistent, MiniLM band, the generator interface."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from generation.ml import filters as ml_filters
from generation.ml.base import GeneratedCandidate, GeneratorConfigError, Original, Skip
from generation.ml.captions import (
    CaptionSwap,
    CocoCounterfactualGenerator,
    caption_swaps,
    noun_indices,
    realise,
    select_in_band,
    wordnet_candidates,
)
from generation.ml.rules.tokens import tag, words
from tests.conftest import need_module


def _orig(caption: str, oid: str = "c1") -> Original:
    return Original(id=oid, fields={"caption": caption}, label=None, labels=(), task="image-caption")


class ScriptedEncoder:
    """Cosine by rule: ``fn(original, candidate)``."""

    def __init__(self, fn) -> None:
        self.fn = fn
        self.calls = 0

    def cosine(self, a, b):
        self.calls += 1
        return [self.fn(x, y) for x, y in zip(a, b, strict=True)]


# -- nouns and replacements ---------------------------------------------------------------------
def test_nouns_are_found_and_proper_nouns_left_alone():
    toks = tag("A black Honda motorcycle parked in front of a garage.")
    assert [toks[i].text for i in noun_indices(toks)] == ["motorcycle", "garage"]  # not Honda, not front
    toks = tag("A man riding an elephant in the river.")
    assert [toks[i].text for i in noun_indices(toks)] == ["man", "elephant", "river"]


@pytest.mark.parametrize(
    "caption, noun, new, expected",
    [
        ("A man riding an elephant in the river.", "elephant", "horse", "A man riding a horse in the river."),
        ("A man riding a horse in the river.", "horse", "elephant", "A man riding an elephant in the river."),
        ("An elephant in the river.", "elephant", "horse", "A horse in the river."),
        ("A horse in the river.", "horse", "owl", "An owl in the river."),
        ("Two dogs sit on an old couch.", "dogs", "cat", "Two cats sit on an old couch."),
        ("Dogs sit on an old couch.", "Dogs", "wolf", "Wolves sit on an old couch."),
        (
            "A large elephant in the river.",
            "elephant",
            "horse",
            "A large elephant in the river.".replace("elephant", "horse"),
        ),
    ],
)
def test_realise_keeps_number_case_and_article(caption, noun, new, expected):
    toks = tag(caption)
    i = next(k for k, t in enumerate(toks) if t.text == noun)
    text, word = realise(caption, toks, i, new)
    assert text == expected
    assert word.lower() in expected.lower().split() or word in expected


def test_wordnet_candidates_are_sisters_not_kinds_of_the_noun():
    cands = wordnet_candidates("woman")
    assert "man" in cands[:3]
    for bad in ("adult", "female", "girl", "woman", "women"):  # hypernyms, a hyponym, the noun itself
        assert bad not in cands
    assert "truck" in wordnet_candidates("motorcycle") or "car" in wordnet_candidates("motorcycle")
    assert wordnet_candidates("qwxzzy") == []


def test_every_swap_changes_exactly_one_noun():
    caption = "A woman is cutting into a cake with a large knife."
    swaps = caption_swaps(caption, k=5)
    assert {s.replaced for s in swaps} == {"woman", "cake", "knife"}
    assert len(swaps) <= 15 and len({s.counterfactual for s in swaps}) == len(swaps)
    for s in swaps:
        a, b = words(caption), words(s.counterfactual)
        assert len(a) == len(b)
        diff = [(x, y) for x, y in zip(a, b, strict=True) if x != y]
        # one noun, plus at most the article in front of it
        assert diff[-1] == (s.replaced.lower(), s.by.lower())
        assert len(diff) == 1 or (len(diff) == 2 and {diff[0][0], diff[0][1]} == {"a", "an"})


def test_select_in_band_prefers_best_ranked_then_most_similar_one_per_noun():
    def sw(noun_index, rank, by):
        return CaptionSwap("x", f"x {by}", "n", by, noun_index, rank, "wordnet")

    swaps = [sw(1, 0, "a"), sw(1, 1, "b"), sw(4, 0, "c"), sw(4, 2, "d")]
    sims = [ml_filters.FilterResult(s, 0.8 < s <= 0.91) for s in (0.95, 0.85, 0.82, 0.90)]
    chosen = select_in_band(swaps, sims, n=3)
    assert [c[0].by for c in chosen] == ["c", "b", "d"]  # "a" is out of band
    assert chosen[0][1] == 0.82
    ppl = [1.0, 9.0, 5.0, 2.0]
    assert [c[0].by for c in select_in_band(swaps, sims, n=1, perplexities=ppl)] == ["d"]


# -- the generator --------------------------------------------------------------------------------
def test_generator_yields_text_only_pairs_in_the_band():
    # a caption pair is "in band" here when the replacement is "man"
    enc = ScriptedEncoder(lambda a, b: 0.88 if " man " in f" {b.lower()} " else 0.95)
    gen = CocoCounterfactualGenerator(encoder=enc)
    assert gen.candidate_source == "wordnet" and not gen.images
    assert any("text-only" in n for n in gen.notes)
    out = list(
        gen.generate(
            [
                _orig("A woman is cutting into a cake with a large knife."),
                _orig("Some clouds.", "c2"),
                Original("c3", {"text": "x"}, None, (), "image-caption"),
            ]
        )
    )
    cands = [o for o in out if isinstance(o, GeneratedCandidate)]
    skips = {o.original_id: o.reason for o in out if isinstance(o, Skip)}
    assert len(cands) == 1 and enc.calls == 1  # one batched similarity call
    c = cands[0]
    assert c.fields == {"caption": "A man is cutting into a cake with a large knife."}
    assert c.generator == "coco-cf" and c.perturbation == "lexical" and c.target_label is None
    assert c.meta["replaced"] == "woman" and c.meta["by"] == "man" and c.meta["images"] == "not generated"
    assert c.scores["similarity"] == 0.88
    assert "band" in skips["c2"] or "nothing to swap" in skips["c2"]
    assert skips["c3"] == "missing field 'caption'"


def test_generator_options_and_configuration_errors():
    enc = ScriptedEncoder(lambda a, b: 0.85)
    gen = CocoCounterfactualGenerator(encoder=enc, per_original="3", band="0.8,0.9")
    out = list(gen.generate([_orig("A woman is cutting into a cake with a large knife.")]))
    assert len(out) == 3 and len({c.meta["replaced"] for c in out}) == 3  # one per noun first
    assert gen.band == (0.8, 0.9)
    with pytest.raises(GeneratorConfigError, match="MLM_PATH"):
        CocoCounterfactualGenerator(candidates="mlm")
    with pytest.raises(GeneratorConfigError, match="DIFFUSION_PATH"):
        CocoCounterfactualGenerator(images=True)
    with pytest.raises(ValueError):
        CocoCounterfactualGenerator(band="0.9")
    assert "images off" in CocoCounterfactualGenerator(images="false", diffusion_path="/nowhere").notes[0]


def test_masked_lm_candidates(tmp_path):
    need_module("torch")
    from tests.generation._tiny_hf import WORDS, save_bert_mlm

    path = save_bert_mlm(tmp_path / "mlm")
    enc = ScriptedEncoder(lambda a, b: 0.85)
    gen = CocoCounterfactualGenerator(mlm_path=str(path), encoder=enc, per_original=5)
    assert gen.candidate_source == "mlm"
    out = list(gen.generate([_orig("A man riding a horse in a field.")]))
    cands = [o for o in out if isinstance(o, GeneratedCandidate)]
    assert cands, out
    for c in cands:
        assert c.meta["source"] == "mlm" and 0 < c.scores["mlm_prob"] <= 1
        assert c.meta["by"].lower() in WORDS and c.meta["by"].lower() != c.meta["replaced"].lower()


# -- real MiniLM ----------------------------------------------------------------------------------
@pytest.mark.slow
def test_real_minilm_keeps_only_pairs_in_the_band(shared_data):
    from projects.ml.embeddings import Encoder

    path = Path(shared_data) / "coco_cf" / "captions_val2017.tsv"
    with path.open(encoding="utf-8") as fh:
        rows = [r for _, r in zip(range(12), csv.reader(fh, delimiter="\t"), strict=False)]
    enc = Encoder()
    gen = CocoCounterfactualGenerator(encoder=enc, per_original=2)
    out = list(gen.generate([_orig(cap, cid) for cid, cap in rows]))
    cands = [o for o in out if isinstance(o, GeneratedCandidate)]
    assert len({c.original_id for c in cands}) >= 6  # most COCO captions yield a pair
    originals = dict(rows)
    sims = enc.cosine([originals[c.original_id] for c in cands], [c.fields["caption"] for c in cands])
    for c, s in zip(cands, sims, strict=True):
        assert 0.8 < round(float(s), 6) <= 0.91
        assert abs(c.scores["similarity"] - float(s)) < 1e-4
    # the same caption with an unrelated noun swap lands outside the band
    far = ml_filters.similarity_band(
        enc, ["A man riding a horse in a field."], ["A man riding a horse in a field."], ml_filters.COCO_BAND
    )
    assert not far[0].keep  # identical: 1.0 > 0.91


# -- bench_coco_cf ----------------------------------------------------------------------------------
def test_published_swap_finds_the_one_replaced_word():
    from generation.management.commands.bench_coco_cf import published_swap

    assert published_swap("A woman is cutting a cake.", "A baker is cutting a cake.") == ("woman", "baker")
    assert published_swap("A horse in a field.", "An owl in a field.") == ("horse", "owl")
    assert published_swap("A horse in a field.", "A horse in the big field.") is None


@pytest.mark.slow
def test_bench_coco_cf_command_prints_figures(tmp_path):
    import json

    from django.core.management import call_command

    (tmp_path / "captions_val2017.tsv").write_text(
        "1_0\tA woman is cutting into a cake with a large knife.\n2_0\tA man riding a horse in a field.\n"
    )
    (tmp_path / "metadata.jsonl").write_text(
        "\n".join(
            json.dumps(o)
            for o in [
                {
                    "id": "1_0",
                    "caption_0": "A woman is cutting into a cake with a large knife.",
                    "caption_1": "A man is cutting into a cake with a large knife.",
                    "image_0": "a",
                    "image_1": "b",
                },
                {
                    "id": "2_0",
                    "caption_0": "A man riding a horse in a field.",
                    "caption_1": "A man riding a cow in a field.",
                    "image_0": "c",
                    "image_1": "d",
                },
            ]
        )
        + "\n"
    )
    from io import StringIO

    out = StringIO()
    call_command("bench_coco_cf", data=str(tmp_path), captions=2, json=True, stdout=out)
    result = json.loads(out.getvalue().strip().splitlines()[-1])
    assert result["captions"] == 2 and result["published_one_word_swaps"] == 2
    # Both captions give swaps, and ours replace the same noun as the published one for at
    # least one of the two (measured: yield 1.0, same noun 0.5).
    assert result["yield_share"] == 1.0 and result["same_noun"] >= 0.5


def test_object_parameters_are_not_run_options():
    with pytest.raises(ValueError, match="not a run option"):
        CocoCounterfactualGenerator(encoder="minilm")
    from generation.ml.captions import _safe_name

    assert _safe_name("179765_0") == "179765_0"
    assert _safe_name("a/b") != _safe_name("a:b") and "/" not in _safe_name("a/b")


def test_bench_coco_cf_refuses_data_that_gives_no_figures(tmp_path):
    """Held-out files whose pairs match none of the captions (or --captions 0) gave a JSON line of
    0.0 shares that read as measurements: now a CommandError, before any model loads."""
    import json
    from io import StringIO

    from django.core.management import CommandError, call_command

    (tmp_path / "captions_val2017.tsv").write_text("1_0\tA man riding a horse in a field.\n")
    row = {"id": "9_0", "caption_0": "A cat on a mat.", "caption_1": "A dog on a mat.", "image_0": "a", "image_1": "b"}
    (tmp_path / "metadata.jsonl").write_text(json.dumps(row) + "\n")
    with pytest.raises(CommandError, match=r"no pair of .* has its caption_0"):
        call_command("bench_coco_cf", data=str(tmp_path), captions=5, json=True, stdout=StringIO())
    with pytest.raises(CommandError, match="--captions must be >= 1"):
        call_command("bench_coco_cf", data=str(tmp_path), captions=0, json=True, stdout=StringIO())
    (tmp_path / "metadata.jsonl").write_text("not json\n")
    with pytest.raises(CommandError, match=r"metadata.jsonl:1: not a COCO-Counterfactuals row"):
        call_command("bench_coco_cf", data=str(tmp_path), captions=5, json=True, stdout=StringIO())


def test_bench_coco_cf_names_a_file_that_is_not_utf8(tmp_path):
    """A held-out captions file saved as UTF-16 (Excel's "Unicode text") or a Latin-1 metadata
    file ended in a UnicodeDecodeError traceback; each is now a one-line CommandError naming the
    file (and the line and byte for Latin-1), before any model loads."""
    import json
    from io import StringIO

    from django.core.management import CommandError, call_command

    caption = "A man riding a horse in a café."
    row = {"id": "1_0", "caption_0": caption, "caption_1": "A man riding a cow in a café.", "image_0": "a"}
    (tmp_path / "captions_val2017.tsv").write_text(f"1_0\t{caption}\n", encoding="utf-16")
    (tmp_path / "metadata.jsonl").write_text(json.dumps(row, ensure_ascii=False) + "\n", encoding="latin-1")
    with pytest.raises(CommandError, match=r"captions_val2017.tsv: this file is UTF-16"):
        call_command("bench_coco_cf", data=str(tmp_path), captions=1, json=True, stdout=StringIO())
    (tmp_path / "captions_val2017.tsv").write_text(f"1_0\t{caption}\n", encoding="utf-8")
    with pytest.raises(CommandError, match=r"metadata.jsonl:1: this file is not UTF-8"):
        call_command("bench_coco_cf", data=str(tmp_path), captions=1, json=True, stdout=StringIO())
