"""The validity dev fixture's scoring (issue 27): candidates identical to judged ones are scored
by their judgement; the pool's figures weight each code by its share; the shipped fixture is
well formed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from generation.ml.base import GeneratedCandidate, Original
from generation.services import validity_fixture as vf

FIXTURE = Path(__file__).resolve().parents[1] / "fixtures" / "generation-validity"


def pooled(oid: str, text: str, code: str) -> vf.Pooled:
    o = Original(oid, {"premise": "A man walks.", "hypothesis": "x"}, "neutral", (), "nli")
    c = GeneratedCandidate(oid, {"premise": text, "hypothesis": "x"}, "rules", code, None, {"field": "premise"})
    return vf.Pooled(o, c, vf.candidate_key(oid, c.fields), "A man walks.", text)


def test_identical_candidates_are_scored_by_their_judgement() -> None:
    pool = [
        pooled("a", "A woman walks.", "resemantic"),
        pooled("a", "A man runs.", "resemantic"),
        pooled("b", "No man walks.", "negation"),
        pooled("b", "A man does not walk.", "negation"),
    ]
    judged = {
        pool[0].key: {"valid": True, "flip": True},
        pool[1].key: {"valid": False, "flip": False},
        pool[2].key: {"valid": True, "flip": True},
    }
    r = vf.score(pool, judged, n_candidates=10)
    assert r["pooled"] == 4 and r["judged"] == 3 and r["candidates"] == 10
    assert r["by_code"]["resemantic"] == {
        "pooled": 2,
        "share": 0.5,
        "judged": 2,
        "valid": 0.5,
        "flips": 0.5,
        "valid_flips": 0.5,
    }
    assert r["by_code"]["negation"]["valid"] == 1.0 and r["by_code"]["negation"]["judged"] == 1
    assert r["pool_valid"] == 0.75  # 0.5 x 0.5 + 0.5 x 1.0
    assert vf.reasons(pool, {pool[1].key: {"valid": False, "reason": "verb swap"}}) == [
        ("resemantic", "A man runs.", "verb swap")
    ]
    # the same text from another original is another candidate
    assert vf.candidate_key("a", pool[0].cand.fields) != vf.candidate_key("z", pool[0].cand.fields)
    # issue 31.4: the words the edits introduced (the generator's meta, else the word diff)
    assert r["introduced_tokens"] == 6 and r["introduced_distinct_1"] == 1.0  # woman, runs, no, does, not, walk
    assert r["introduced_max_share"] == round(1 / 6, 4)
    pool[0].cand.meta["introduced"] = ["woman"]
    pool[1].cand.meta["introduced"] = ["woman"]
    r = vf.score(pool, judged, n_candidates=10)
    assert r["introduced_top"] == "woman" and r["introduced_max_share"] == round(2 / 6, 4)
    assert r["introduced_distinct_1"] == round(5 / 6, 4)
    rows = vf.dump_unjudged(pool, judged, per_code=5)
    assert [r["candidate"] for r in rows] == ["A man does not walk."] and rows[0]["valid"] is None


def test_the_shipped_fixture_is_well_formed() -> None:
    for task in ("nli", "sentiment"):
        rows = [json.loads(line) for line in (FIXTURE / f"{task}.jsonl").read_text(encoding="utf-8").splitlines()]
        assert len(rows) >= 150
        assert len({r["key"] for r in rows}) == len(rows)
        for r in rows:
            assert r["code"] and r["judged_on"]
            if task == "nli":
                assert isinstance(r["valid"], bool) and isinstance(r["flip"], bool)
                assert r["valid"] or r["reason"], r  # every invalid candidate says why
                if "readers" in r:  # issue 31.4's blind batches: valid only when both readers said so
                    assert len(r["readers"]) == 2 and r["valid"] == all(x["valid"] for x in r["readers"]), r
                continue
            # sentiment (issue 31): whole reviews, two readers each, judgements are their shares
            assert len(r["readers"]) == 2 and r["original"] != r["candidate"]
            assert vf.candidate_key(r["original_id"], {"text": r["candidate"]}) == r["key"]
            assert r["valid"] == sum(x["valid"] for x in r["readers"]) / 2
            assert r["flip"] == sum(x["label"] != r["label"] for x in r["readers"]) / 2
    assert set(json.loads((FIXTURE / "baseline.json").read_text(encoding="utf-8"))) == {"nli", "sentiment"}
    # the one-sentence texts of round 13 (``--unit sentences``): judged the same way
    rows = [json.loads(line) for line in (FIXTURE / "sentences" / "sentiment.jsonl").read_text().splitlines()]
    assert len(rows) >= 100 and len({r["key"] for r in rows}) == len(rows)
    for r in rows:
        assert len(r["readers"]) == 2 and r["judged_on"] == "i31-readers-13"
        assert r["valid"] == sum(x["valid"] for x in r["readers"]) / 2


def test_whole_review_judgements_score_as_reader_shares() -> None:
    o = Original("r", {"text": "Good film. I loved it."}, "positive", ("negative", "positive"), "sentiment")
    c = GeneratedCandidate("r", {"text": "Bad film. I hated it."}, "rules", "lexical", "negative", {"field": "text"})
    p = vf.Pooled(o, c, vf.candidate_key("r", c.fields), o.fields["text"], c.fields["text"])
    row = {
        "label": "positive",
        "readers": [{"label": "negative", "valid": True}, {"label": "negative", "valid": False}],
        "valid": 0.5,
        "flip": 1.0,
    }
    r = vf.score([p], {p.key: row}, n_candidates=1)
    assert r["by_code"]["lexical"]["valid"] == 0.5 and r["by_code"]["lexical"]["flips"] == 1.0
    assert r["valid_flips"] == 0.5 and r["pool_valid_flips"] == 0.5


def test_a_code_is_also_scored_by_the_label_it_aims_at() -> None:
    o = Original("r", {"text": "Good film. Dull plot. I loved it."}, "positive", ("negative", "positive"), "sentiment")
    flip = GeneratedCandidate("r", {"text": "Dull plot."}, "rules", "delete", "negative", {"field": "text"})
    keep = GeneratedCandidate("r", {"text": "Film. Dull plot. I loved it."}, "rules", "delete", "positive", {})
    ps = [vf.Pooled(o, c, vf.candidate_key("r", c.fields), o.fields["text"], c.fields["text"]) for c in (flip, keep)]
    judged = {ps[0].key: {"label": "positive", "valid": 1.0, "flip": 1.0}, ps[1].key: {"valid": 1.0, "flip": 0.0}}
    r = vf.score(ps, judged, n_candidates=2)
    assert r["by_code"]["delete"]["pooled"] == 2 and r["by_code"]["delete"]["flips"] == 0.5
    assert r["by_aim"]["delete:flip"] == {"pooled": 1, "judged": 1, "valid": 1.0, "flips": 1.0, "valid_flips": 1.0}
    assert r["by_aim"]["delete:keep"]["flips"] == 0.0 and r["by_aim"]["delete:keep"]["valid_flips"] == 0.0


def _judged(oid: str, code: str, key: str, readers: list[tuple[str, bool]]) -> dict[str, object]:
    rs = [{"label": lab, "valid": ok} for lab, ok in readers]
    return {
        "key": key,
        "original_id": oid,
        "label": "positive",
        "code": code,
        "readers": rs,
        "valid": sum(ok for _, ok in readers) / len(readers),
        "flip": sum(lab != "positive" for lab, _ in readers) / len(readers),
    }


def test_the_selection_ceiling_is_the_best_pool_of_everything_judged() -> None:
    judged = {
        "a1": _judged("a", "lexical", "a1", [("negative", True), ("negative", True)]),
        "a2": _judged("a", "delete", "a2", [("negative", True), ("positive", True)]),
        "b1": _judged("b", "insert", "b1", [("positive", True), ("positive", True)]),
        "b2": _judged("b", "lexical", "b2", [("negative", False), ("negative", False)]),
        "z1": _judged("z", "lexical", "z1", [("negative", True), ("negative", True)]),  # not asked for
    }
    c = vf.selection_ceiling(judged, ["a", "b", "c"], per_review=1.0)
    assert (c["originals"], c["originals_judged"], c["judged"]) == (3, 2, 4)
    assert c["valid_flips"] == 1.5 and c["valid_flips_per_original"] == 0.5
    assert c["originals_with_a_sure_valid_flip"] == 1
    # the best 3 of the four: 1.0 + 0.5 + 0.0
    assert c["oracle_pool"] == 3 and c["oracle_pool_valid_flips"] == 0.5
    assert c["by_code"] == {
        "delete": {"judged": 1, "valid_flips": 0.5},
        "insert": {"judged": 1, "valid_flips": 0.0},
        "lexical": {"judged": 2, "valid_flips": 1.0},
    }
    # a smaller pool can be all valid flips
    assert vf.selection_ceiling(judged, ["a", "b"], per_review=0.5)["oracle_pool_valid_flips"] == 1.0


CAD_DEV = (
    "Sentiment\tText\tbatch_id\n"
    "Negative\tI saw this film in 1990. The plot is implausible. I would avoid this movie.\t1\n"
    "Positive\tI saw this film in 1990. The plot is incredible. I really loved this movie.\t1\n"
    "Positive\tA fine film. I loved it.\t2\n"
    "Negative\tA poor film. I hated it.\t2\n"
)


def test_bench_rules_validity_ceiling_reads_the_fixture_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cad = tmp_path / "cad" / "sentiment" / "combined" / "paired"
    cad.mkdir(parents=True)
    (cad / "dev_paired.tsv").write_text(CAD_DEV, encoding="utf-8")
    fixture = tmp_path / "fixture"
    fixture.mkdir()
    rows = [
        _judged("imdb-dev-1", "lexical", "k1", [("negative", True), ("negative", True)]),
        _judged("imdb-dev-2", "insert", "k2", [("positive", True), ("positive", True)]),
        _judged("imdb-dev-9", "lexical", "k3", [("negative", True), ("negative", True)]),
    ]
    (fixture / "sentiment.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    args = ["--task", "sentiment", "--data", str(tmp_path / "cad"), "--fixture", str(fixture), "--originals", "2"]
    call_command("bench_rules_validity", *args, "--ceiling", "1", "--json")
    out = capsys.readouterr().out.strip().splitlines()
    assert "best pool of 1 per original (2): valid & flip at most 0.5" in out[1]
    c = json.loads(out[-1])["sentiment"]
    assert (c["originals"], c["judged"], c["valid_flips"]) == (2, 2, 1.0)
    with pytest.raises(CommandError, match="must be > 0"):
        call_command("bench_rules_validity", *args, "--ceiling", "0")
    with pytest.raises(CommandError, match="is missing"):
        call_command(
            "bench_rules_validity", *args[:-4], "--fixture", str(tmp_path), "--originals", "2", "--ceiling", "1"
        )


def test_bench_rules_validity_refuses_a_fixture_folder_that_is_not_there(tmp_path: Path) -> None:
    """``--fixture`` naming a folder that does not exist scored the run against no judgement: a
    JSON object of ``"judged": 0`` and null validity for every code, exit 0. It is now refused
    before anything is generated."""
    cad = tmp_path / "cad" / "sentiment" / "combined" / "paired"
    cad.mkdir(parents=True)
    (cad / "dev_paired.tsv").write_text(CAD_DEV, encoding="utf-8")
    missing = tmp_path / "no-such-fixture"
    args = ["--task", "sentiment", "--data", str(tmp_path / "cad"), "--fixture", str(missing), "--originals", "2"]
    with pytest.raises(CommandError, match=f"--fixture {missing}: folder not found"):
        call_command("bench_rules_validity", *args, "--json")
    # an explicit --gold file that is not there was left out of the figures without a word
    args[args.index(str(missing))] = str(tmp_path)
    with pytest.raises(CommandError, match=f"--gold {missing}: file not found"):
        call_command("bench_rules_validity", *args, "--gold", str(missing), "--json")
