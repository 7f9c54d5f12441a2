"""bench_generation smoke test: a tiny data file, the JSON shape of docs/formats.md §3 on the last
line, no database."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.postgres_too

ROWS = [
    ("Negative", "The plot is thin and the acting is weak. I would not watch it again.", "1"),
    ("Positive", "The plot is rich and the acting is strong. I would watch it again.", "1"),
    ("Positive", "A charming film with a clever script. The cast is wonderful.", "2"),
    ("Negative", "A tedious film with a clumsy script. The cast is dreadful.", "2"),
    ("Positive", "The music is lovely and the photography is stunning. A man rides a horse across the plain.", "3"),
    ("Negative", "The music is grating and the photography is dull. A man rides a horse across the plain.", "3"),
]


@pytest.fixture
def tiny_sentiment(tmp_path):
    path = tmp_path / "dev_paired.tsv"
    path.write_text("Sentiment\tText\tbatch_id\n" + "".join(f"{a}\t{b}\t{c}\n" for a, b, c in ROWS))
    return path


@pytest.mark.slow  # loads the real MiniLM
def test_bench_generation_json_last_line(tiny_sentiment) -> None:
    out = StringIO()
    call_command(
        "bench_generation",
        "--json",
        "--originals",
        "5",
        "--format",
        "cad-sentiment",
        "--data",
        str(tiny_sentiment),
        stdout=out,
    )
    lines = out.getvalue().strip().splitlines()
    result = json.loads(lines[-1])
    assert result["originals"] == 5  # 3 in the file, cycled with fresh ids
    assert result["minilm_sentences_per_s"] > 0
    rules = result["generators"]["rules"]
    sim = result["generators"]["rules+similarity"]
    assert rules["candidates"] > 0 and rules["candidates_per_s"] > 0
    assert sim["candidates_per_s"] > 0 and 0 <= sim["accepted"] <= sim["candidates"] == rules["candidates"]
    assert result["task"] == "sentiment" and result["band"] == [0.65, 0.98]
    assert any(line.startswith("MiniLM:") for line in lines[:-1])


def test_bench_generation_bad_arguments(tmp_path) -> None:
    with pytest.raises(CommandError, match="data not found"):
        call_command("bench_generation", "--data", str(tmp_path / "missing"), stdout=StringIO())
    # a generic format without --data read the shared CAD folder as its file: "…/cad: file not found"
    with pytest.raises(CommandError, match="--format pairs-jsonl needs --data PATH"):
        call_command("bench_generation", "--format", "pairs-jsonl", "--task", "nli", stdout=StringIO())
    with pytest.raises(CommandError, match="originals"):
        call_command("bench_generation", "--originals", "0", "--data", str(tmp_path), stdout=StringIO())


@pytest.mark.slow  # loads the real MiniLM
def test_bench_generation_perplexity_and_quality_table(tiny_sentiment, settings, tmp_path) -> None:
    from tests.generation._tiny_hf import save_gpt2

    lm = save_gpt2(tmp_path / "gpt2")
    settings.COUNTERPART = {**settings.COUNTERPART, "PERPLEXITY_LM_PATH": str(lm), "CAUSAL_LM_PATH": str(lm)}
    out = StringIO()
    call_command(
        "bench_generation",
        "--json",
        "--originals",
        "3",
        "--format",
        "cad-sentiment",
        "--data",
        str(tiny_sentiment),
        "--lm-originals",
        "3",
        "--generators",
        "rules",
        "--quality-originals",
        "3",
        stdout=out,
    )
    lines = out.getvalue().strip().splitlines()
    result = json.loads(lines[-1])
    rp = result["generators"]["rules+perplexity"]
    assert rp["candidates"] > 0 and rp["candidates_per_s"] > 0 and 0 <= rp["accepted"] <= rp["candidates"]
    assert result["perplexity_over_minilm"] > 0
    q = result["quality"]["rules"]
    assert q["originals"] == 3 and 0 <= q["yield"] <= 1 and "perplexity" in q["acceptance_by_filter"]
    assert q["seconds_per_original"] >= 0 and "self_bleu" in q and "distinct_2" in q
    assert any(line.startswith("rules+perplexity:") for line in lines[:-1])


def test_load_originals_takes_each_label_in_turn(tmp_path) -> None:
    """A file sorted by label (as the CAD files are) still gives both labels in the first N:
    a flip judge trained on the first 400 CAD-sentiment originals once saw 398 negatives."""
    from generation.management.commands.bench_generation import load_originals

    rows = [("negative", f"bad film number {i}") for i in range(5)] + [("positive", f"good film {i}") for i in range(2)]
    path = tmp_path / "sorted.csv"
    path.write_text("id,label,text\n" + "".join(f"r{i},{lab},{text}\n" for i, (lab, text) in enumerate(rows)))
    got = load_originals("csv", str(path), "sentiment", "", 4)
    assert [o.label for o in got] == ["negative", "positive", "negative", "positive"]
    assert [o.fields["text"] for o in got][:2] == ["bad film number 0", "good film 0"]  # file order within a label
    everything = load_originals("csv", str(path), "sentiment", "", 100)
    assert len(everything) == 7 and [o.label for o in everything][4:] == ["negative"] * 3


def test_bench_generation_pipeline_stages_and_pooled_compare(tiny_sentiment, tmp_path) -> None:
    """--pipeline: originals/s and wall/CPU per stage; --pooled-out then --compare on the same
    fixed sample and seed finds the same pooled set (the check a speed change must pass)."""
    pooled = tmp_path / "pooled.jsonl"
    args = ["bench_generation", "--pipeline", "--json", "--originals", "3", "--format", "cad-sentiment"]
    args += ["--data", str(tiny_sentiment), "--filters", "dedup,artifacts"]
    out = StringIO()
    call_command(*args, "--pooled-out", str(pooled), stdout=out)
    first = json.loads(out.getvalue().strip().splitlines()[-1])
    assert first["originals"] == 3 and first["originals_per_s"] > 0 and first["filters"] == ["dedup", "artifacts"]
    assert set(first["stages"]) == {"model loading", "generation", "dedup", "artifacts"}
    assert all(row["wall_s"] >= 0 and row["cpu_s"] >= 0 for row in first["stages"].values())
    assert abs(sum(row["wall_share"] for row in first["stages"].values()) - 1) < 0.01
    # issue 31.5: originals/s per stage, MiniLM's sentences/s in the same run, the load average
    assert all(row["originals_per_s"] is None or row["originals_per_s"] > 0 for row in first["stages"].values())
    assert first["minilm_sentences_per_s"] > 0 and first["originals_per_s_over_minilm"] > 0
    assert set(first["load_average"]) == {"before", "after"}
    rows = [json.loads(line) for line in pooled.read_text().splitlines()]
    assert len(rows) == first["pooled_count"] > 0 and {"original", "perturbation", "fields"} <= set(rows[0])
    out = StringIO()
    call_command(*args, "--compare", str(pooled), stdout=out)
    again = json.loads(out.getvalue().strip().splitlines()[-1])
    assert again["compare"] == {"both": len(rows), "only_here": 0, "only_there": 0}
    assert "stage" in out.getvalue() and "CPU s" in out.getvalue()
    # a --pooled-out folder that does not exist yet is made; a --compare file that does not
    # exist is refused before the run, not after it
    deep = tmp_path / "new" / "folder" / "pooled.jsonl"
    call_command(*args, "--pooled-out", str(deep), stdout=StringIO())
    assert deep.read_text() == pooled.read_text()
    with pytest.raises(CommandError, match="--compare: no file"):
        call_command(*args, "--compare", str(tmp_path / "missing.jsonl"), stdout=StringIO())


def test_bench_generation_pipeline_packed_rows_pool_as_padded_batches(tiny_sentiment, settings, tmp_path) -> None:
    """--padded runs MiniLM and the perplexity LM on padded batches: the speed change of packed
    rows must leave the pooled candidates as they were (a tiny BERT as MiniLM, a tiny llama)."""
    import torch
    from transformers import BertModel

    from tests.generation._tiny_hf import _bert_config, save_llama, wordlevel_tokenizer

    torch.manual_seed(0)
    BertModel(_bert_config()).save_pretrained(tmp_path / "bert")
    wordlevel_tokenizer(pair_template=True).save_pretrained(tmp_path / "bert")
    lm = save_llama(tmp_path / "llama")
    settings.COUNTERPART = {
        **settings.COUNTERPART,
        "MINILM_PATH": str(tmp_path / "bert"),
        "PERPLEXITY_LM_PATH": str(lm),
        "PERPLEXITY_MAX_RATIO": 1.0,  # keeps a candidate only as fluent as its original: about half
    }
    args = ["bench_generation", "--pipeline", "--json", "--originals", "6", "--format", "cad-sentiment"]
    args += ["--data", str(tiny_sentiment), "--band=-1,1", "--filters", "similarity,dedup,perplexity"]
    pooled = tmp_path / "packed.jsonl"
    out = StringIO()
    call_command(*args, "--pooled-out", str(pooled), stdout=out)
    packed = json.loads(out.getvalue().strip().splitlines()[-1])
    assert packed["packed_rows"] is True and "packed rows" in out.getvalue()
    assert {"similarity", "perplexity"} <= set(packed["stages"])
    out = StringIO()
    call_command(*args, "--padded", "--compare", str(pooled), stdout=out)
    padded = json.loads(out.getvalue().strip().splitlines()[-1])
    assert padded["packed_rows"] is False and "padded batches" in out.getvalue()
    assert padded["compare"] == {"both": packed["pooled_count"], "only_here": 0, "only_there": 0}
    # the perplexity filter decided something: some candidates dropped, some kept
    assert 0 < packed["pooled_count"] < packed["candidates"]


def test_bench_generation_unreadable_data_is_a_command_error(tmp_path, tiny_sentiment) -> None:
    """A split the folder lacks (held-out data: ``--split test``), an unknown task or a format of
    another task: the reader's message as a CommandError, no traceback (and no model loaded)."""
    cad = tmp_path / "cad"
    (cad / "NLI" / "original").mkdir(parents=True)
    with pytest.raises(CommandError, match="split 'test'"):
        call_command("bench_generation", "--data", str(cad), "--split", "test", "--no-lm", stdout=StringIO())
    with pytest.raises(CommandError, match="unknown task"):
        call_command(
            "bench_generation", "--data", str(tiny_sentiment), "--format", "cad-sentiment", "--task", "bogus",
            "--no-lm", stdout=StringIO(),
        )  # fmt: skip
    pairs = tmp_path / "coco.jsonl"
    pairs.write_text('{"id": "1", "caption_0": "a cat", "caption_1": "a dog", "image_0": "a", "image_1": "b"}\n')
    with pytest.raises(CommandError, match="image-caption data, not nli"):
        call_command("bench_generation", "--data", str(pairs), "--format", "coco-cf", "--no-lm", stdout=StringIO())


def test_bench_rules_validity_data_without_dev_is_a_command_error(tmp_path) -> None:
    (tmp_path / "NLI" / "original").mkdir(parents=True)
    with pytest.raises(CommandError, match="split 'dev'"):
        call_command(
            "bench_rules_validity", "--task", "nli", "--originals", "2", "--filters", "similarity",
            "--data", str(tmp_path), stdout=StringIO(),
        )  # fmt: skip


@pytest.mark.slow  # loads the real MiniLM and a tiny GPT-2
def test_the_flip_judge_never_trains_on_the_originals_it_judges(settings, tmp_path, monkeypatch) -> None:
    """A data file without splits (one CAD file, pairs-jsonl, csv) gives the same originals for
    "train": the quality table's flip judge was trained on the very originals whose candidates it
    judged. It now trains on the others only, and when they hold fewer than two labels there is
    no judge (it raised before: a classifier of one class)."""
    from generation.services import bench_quality
    from tests.generation._tiny_hf import save_gpt2

    data = tmp_path / "dev_paired.tsv"
    rows = ROWS + [(a, b.replace("The ", "This "), "4") for a, b, _ in ROWS[:2]]  # originals: N, P, P, N
    data.write_text("Sentiment\tText\tbatch_id\n" + "".join(f"{a}\t{b}\t{c}\n" for a, b, c in rows))
    lm = save_gpt2(tmp_path / "gpt2")
    settings.COUNTERPART = {**settings.COUNTERPART, "PERPLEXITY_LM_PATH": str(lm), "CAUSAL_LM_PATH": str(lm)}
    seen: list[list[dict[str, str]]] = []
    real = bench_quality.FlipJudge

    def spy(texts, *args, **kwargs):
        seen.append(list(texts))
        return real(texts, *args, **kwargs)

    monkeypatch.setattr(bench_quality, "FlipJudge", spy)
    args = ["--json", "--format", "cad-sentiment", "--data", str(data), "--lm-originals", "1", "--originals", "4"]
    args += ["--generators", "rules", "--human-edits", "0", "--minilm-texts", "5"]
    call_command("bench_generation", *args, "--quality-originals", "2", stdout=StringIO())
    assert len(seen) == 1 and len(seen[0]) == 2, seen  # 4 originals in the file, 2 of them judged
    # the originals in turn by label: N (pair 1), P (pair 2), N (pair 4), P (pair 3); the first two judged
    assert sorted(t["text"] for t in seen[0]) == sorted([rows[6][1], rows[4][1]])
    call_command("bench_generation", *args, "--quality-originals", "3", stdout=StringIO())
    assert len(seen) == 1  # one original left, one label: no judge (no flip rate), no error


def test_bench_generation_reads_the_data_with_the_tasks_labels_and_fields(tmp_path) -> None:
    """Pointed at a pair file of another task (``text`` read for --task nli) the benchmark ran
    the NLI rules on review text, and a file whose labels were not the task's ran on them: both
    gave figures without a word; a malformed line vanished silently. The file is now read with
    the task's labels and text fields: the other task's file is refused naming it, every
    skipped row is a ``problem: FILE:LINE`` line on stderr, and what was read is said."""
    from generation.management.commands.bench_generation import load_originals

    def pair(i: int, label: str, fields: dict[str, str]) -> str:
        return json.dumps(
            {"id": f"p{i}", "original": {"id": f"o{i}", "fields": fields, "label": label},
             "counterfactual": {"fields": fields, "label": label}}
        )  # fmt: skip

    reviews = tmp_path / "reviews.jsonl"
    reviews.write_text("".join(pair(i, "positive", {"text": f"a fine film {i}"}) + "\n" for i in range(3)))
    with pytest.raises(CommandError, match=f"{reviews}: the first 3 rows all have the text field.s. text, not "):
        load_originals("pairs-jsonl", str(reviews), "nli", "", 10)
    nli = {"premise": "A man rides a horse.", "hypothesis": "A person is outside."}
    mixed = tmp_path / "mixed.jsonl"
    rows = [pair(0, "entailment", nli), '{"id": "cut", "original": ', pair(2, "yes", {**nli, "premise": "A dog."})]
    mixed.write_text("\n".join(rows) + "\n")
    said: list[str] = []
    got = load_originals("pairs-jsonl", str(mixed), "nli", "", 10, say=said.append)
    assert [(o.id, o.label) for o in got] == [("o0", "entailment")]
    assert said[0].startswith(f"problem: {mixed}:2: not valid JSON")
    assert said[1] == (
        f"problem: {mixed}:3: original.label: unknown label 'yes' (expected one of entailment, neutral, contradiction)"
    )
    assert said[2] == f"read pairs-jsonl {mixed}: 1 records, 2 rows skipped (problems above)"


def test_bench_generation_says_minilm_was_not_measured_on_texts_too_short(tmp_path) -> None:
    """QA: on reviews of one or two words no sentence qualifies for the MiniLM yardstick, and the
    JSON said "minilm_sentences_per_s": 0.0, a rate nobody measured; it is null now, and so is
    the ratio to it (no division by that 0)."""
    path = tmp_path / "dev_paired.tsv"
    rows = [("Positive", "Great!", "1"), ("Negative", "Awful.", "1")]
    path.write_text("Sentiment\tText\tbatch_id\n" + "".join(f"{a}\t{b}\t{c}\n" for a, b, c in rows))
    out = StringIO()
    args = ["bench_generation", "--pipeline", "--json", "--originals", "2", "--format", "cad-sentiment"]
    call_command(*args, "--data", str(path), "--filters", "dedup", stdout=out)
    res = json.loads(out.getvalue().strip().splitlines()[-1])
    assert res["minilm_sentences_per_s"] is None
    assert res["originals_per_s_over_minilm"] is None
