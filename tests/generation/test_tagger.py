"""The control-code tagger on hand-made pairs (one per code), on multi-field pairs, on the
rules generator's own output, and (slow) on the CAD pairs: "other" under 10%."""

from __future__ import annotations

from collections import Counter

import pytest

from generation.ml.base import GeneratedCandidate, Original
from generation.ml.rules import RulesGenerator
from generation.ml.tagger import CODES, distribution, tag_edit, tag_pair


@pytest.mark.parametrize(
    ("original", "counterfactual", "code"),
    [
        ("A man is riding a bike.", "A man is not riding a bike.", "negation"),
        ("The dog doesn't bark.", "The dog barks.", "negation"),
        ("There is nobody in the room.", "There is somebody in the room.", "negation"),
        ("A man is riding a bike.", "Three men are riding a bike.", "quantifier"),
        ("Some kids are playing soccer.", "All kids are playing soccer.", "quantifier"),
        ("There are 3 cats on the sofa.", "There are 4 cats on the sofa.", "quantifier"),
        ("The tall man is happy.", "The short man is happy.", "lexical"),
        ("A woman sings into a mic.", "A man sings into a mic.", "lexical"),
        ("The water is cold.", "The liquid is cold.", "lexical"),
        ("A man sleeps in the park.", "A man sleeps at the park.", "lexical"),
        ("A man is riding a red motorcycle.", "A man is riding a blue truck.", "resemantic"),
        ("Two men haul scrap wood and metal.", "Two men sew a woolen blanket.", "resemantic"),
        ("A woman sings into a mic.", "A tall woman sings into a mic.", "insert"),
        ("A man sits on a bench.", "A man sits on a bench in the rain.", "insert"),
        ("A man is riding a red motorcycle.", "A man is riding a motorcycle.", "delete"),
        (
            "A man in a blue shirt is building a sand castle at the beach.",
            "A man in a blue shirt is at the beach.",
            "delete",
        ),
        ("A man is riding a bike.", "A bike is being ridden by a man.", "restructure"),
        ("He left early because he was tired.", "Because he was tired, he left early.", "restructure"),
        (
            "A boy on a skateboard grinding down a handrail.",
            "A boy is on a skateboard grinding down a handrail.",
            "restructure",
        ),
        ("The cat chased the dog.", "The dog chased the cat.", "shuffle"),
        ("A man dressed as a woman is laughing.", "A woman dressed as a man is laughing.", "shuffle"),
        ("A man is riding a bike.", "A man is riding a bike!", "other"),
    ],
)
def test_tag_edit(original: str, counterfactual: str, code: str) -> None:
    assert tag_edit(original, counterfactual).code == code


def test_rewrite_is_other() -> None:
    t = tag_edit(
        "Two construction workers cutting a piece of concrete road.",
        "Somebody was having coffee while sitting at his desk at work.",
    )
    assert t.code == "other" and "rewrite" in t.detail


def test_identical_and_punctuation_only_are_other() -> None:
    assert tag_edit("A dog runs.", "A dog runs.").code == "other"
    assert tag_pair({"text": "A dog runs."}, {"text": "A dog runs."}).code == "other"


def test_tag_pair_reports_the_changed_field() -> None:
    o = {"premise": "A man is riding a bike.", "hypothesis": "A person rides."}
    t = tag_pair(o, {"premise": "A man is riding a bike.", "hypothesis": "A person never rides."})
    assert (t.code, t.field) == ("negation", "hypothesis")
    t = tag_pair(o, {"premise": "A man is riding a red bike.", "hypothesis": "A person rides."})
    assert (t.code, t.field) == ("insert", "premise")


def test_majority_operation_wins() -> None:
    # two antonym swaps and one negated verb: lexical is the majority
    t = tag_edit("The good actor was cheap and I liked it.", "The bad actor was expensive and I did not like it.")
    assert t.code == "lexical"
    # a tie between negation and another operation goes to negation (CODES order)
    assert tag_edit("A man is riding a bike.", "A man is not riding a car.").code == "negation"


def test_distribution_sums_to_one() -> None:
    tags = [tag_edit("A dog runs.", "A dog never runs."), tag_edit("A dog runs.", "A cat runs.")]
    d = distribution(tags)
    assert set(d) == set(CODES) and abs(sum(d.values()) - 1) < 1e-9


def test_tagger_mostly_agrees_with_the_rules_generator() -> None:
    originals = [
        Original(
            "a",
            {"premise": "A man is riding a bike because he is late.", "hypothesis": "Two dogs run in the park."},
            None,
            (),
            "nli",
        ),
        Original(
            "b",
            {
                "premise": "The little boy in jean shorts kicks the soccer ball.",
                "hypothesis": "A little boy is playing soccer outside.",
            },
            None,
            (),
            "nli",
        ),
        Original(
            "c",
            {"premise": "A woman sits on a bench in the park.", "hypothesis": "Some people watch a tall man."},
            None,
            (),
            "nli",
        ),
    ]
    by_id = {o.id: o for o in originals}
    cands = [c for c in RulesGenerator(seed=0, max_per_code=3).generate(originals) if isinstance(c, GeneratedCandidate)]
    agree = Counter(tag_pair(by_id[c.original_id].fields, c.fields).code == c.perturbation for c in cands)
    assert agree[True] / len(cands) >= 0.6, agree


def _cad_pairs(shared_data, fmt: str, task: str, split: str):
    from projects.formats import read
    from projects.formats.records import PairRecord

    for rec in read(fmt, [str(shared_data / "cad")], task=task, split=split):
        if isinstance(rec, PairRecord):
            yield rec


@pytest.mark.slow  # real CAD data
@pytest.mark.parametrize(("fmt", "task"), [("cad-nli", "nli"), ("cad-sentiment", "sentiment")])
def test_cad_dev_pairs_are_tagged_with_little_other(shared_data, fmt: str, task: str) -> None:
    pairs = list(_cad_pairs(shared_data, fmt, task, "dev"))
    assert len(pairs) >= 200
    tags = [tag_pair(p.original.fields, p.cf_fields) for p in pairs]
    dist = distribution(tags)
    assert dist["other"] < 0.10, dist
    assert sum(1 for c in CODES if dist[c] > 0) >= 6


def test_tag_pairs_command(tmp_path) -> None:
    import json
    from io import StringIO

    from django.core.management import call_command

    path = tmp_path / "dev_paired.tsv"
    path.write_text(
        "Sentiment\tText\tbatch_id\n"
        "Negative\tThe film is not good.\t1\nPositive\tThe film is good.\t1\n"
        "Positive\tA tall man sings.\t2\nNegative\tA man sings.\t2\n"
    )
    out = StringIO()
    call_command("tag_pairs", str(path), "--format", "cad-sentiment", "--task", "sentiment", "--json", stdout=out)
    result = json.loads(out.getvalue().strip().splitlines()[-1])
    assert result["pairs"] == 2
    assert result["distribution"]["negation"] == 0.5 and result["distribution"]["delete"] == 0.5


def test_tag_pairs_counts_the_rows_the_reader_skips_as_warnings(tmp_path) -> None:
    """A CAD-NLI row that does not align with its original is skipped with a warning, not a
    problem (the published train split has one): tag_pairs says so rather than losing it."""
    import json
    from io import StringIO

    from django.core.management import call_command

    from tests.generation.test_formats import make_cad_nli

    root = make_cad_nli(
        tmp_path,
        ["A man sleeps.\tA person rests.\tentailment"],
        ["A man runs.\tA person rests.\tcontradiction", "A man sits.\tA person eats.\tneutral"],  # misaligned
        ["A man sleeps.\tA person runs.\tcontradiction", "A man sleeps.\tA person dreams.\tneutral"],
    )
    out = StringIO()
    call_command("tag_pairs", str(root), "--format", "cad-nli", "--task", "nli", "--split", "dev", "--json", stdout=out)
    result = json.loads(out.getvalue().strip().splitlines()[-1])
    assert (result["pairs"], result["problems"], result["warnings"]) == (3, 0, 1)


def test_tag_pairs_names_the_rows_it_skips_and_refuses_another_tasks_file(tmp_path) -> None:
    """A held-out file's bad rows were only counted ("problems: 2") and a sentiment file read with
    --task nli was tagged as NLI pairs; now each skipped row is a ``problem: FILE:LINE`` line on
    stderr beside what was read, and the other task's file is refused naming its fields."""
    import json
    from io import StringIO

    from django.core.management import CommandError, call_command

    def pair(i: int, fields: dict[str, str], cf: dict[str, str]) -> str:
        return json.dumps({"id": f"p{i}", "original": {"fields": fields, "label": "neutral"},
                           "counterfactual": {"fields": cf}})  # fmt: skip

    nli = {"premise": "A man sleeps.", "hypothesis": "A person rests."}
    path = tmp_path / "held-out.jsonl"
    path.write_text(pair(0, nli, {**nli, "hypothesis": "A person runs."}) + "\n" + '{"id": "cut", ' + "\n")
    err = StringIO()
    call_command("tag_pairs", str(path), "--format", "pairs-jsonl", "--task", "nli", stdout=StringIO(), stderr=err)
    assert f"problem: {path}:2: not valid JSON" in err.getvalue()
    assert f"read pairs-jsonl {path}: 1 pairs, 1 rows skipped (problems above)" in err.getvalue()
    reviews = tmp_path / "reviews.jsonl"
    reviews.write_text("\n".join(pair(i, {"text": "A fine film."}, {"text": "A poor film."}) for i in range(3)))
    with pytest.raises(CommandError, match=f"{reviews}: the first 3 rows all have the text field.s. text, not "):
        call_command("tag_pairs", str(reviews), "--format", "pairs-jsonl", "--task", "nli", stdout=StringIO())
