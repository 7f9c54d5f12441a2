"""Readers and writers in projects.formats (pure Python: no database)."""

from __future__ import annotations

import io
import json
from collections import Counter
from pathlib import Path

import pytest

from projects import formats
from projects.formats import FormatError, OriginalRecord, PairRecord, Problem, read


def kinds(records) -> Counter:
    return Counter(type(r).__name__ for r in records)


def problems(records) -> list[str]:
    return [str(r) for r in records if isinstance(r, Problem)]


def write_lines(path: Path, lines: list[str | bytes]) -> Path:
    with open(path, "wb") as fh:
        for line in lines:
            fh.write(line if isinstance(line, bytes) else line.encode("utf-8"))
            fh.write(b"\n")
    return path


# --- CAD, real data ---------------------------------------------------------------------


@pytest.mark.slow
def test_cad_nli_dev_real(shared_data: Path) -> None:
    recs = list(read("cad-nli", [str(shared_data / "cad")], task="nli", split="dev"))
    assert kinds(recs) == Counter({"PairRecord": 800, "OriginalRecord": 200})
    originals = {r.id: r for r in recs if isinstance(r, OriginalRecord)}
    pairs = [r for r in recs if isinstance(r, PairRecord)]
    assert set(originals) == {f"snli-dev-{i}" for i in range(200)}
    per_original = Counter(p.group for p in pairs)
    assert set(per_original.values()) == {4}
    for p in pairs:
        assert p.group == p.original.id and p.original == originals[p.group]
        assert p.label_source == "gold" and p.perturbation == "" and p.target_label is None
        assert p.cf_label in {"entailment", "neutral", "contradiction"} and p.cf_label != p.original.label
        revised = p.meta["revised"]
        kept = "hypothesis" if revised == "premise" else "premise"
        assert p.cf_fields[kept] == p.original.fields[kept]
    first = originals["snli-dev-0"]
    assert first.fields == {
        "premise": "The little boy in jean shorts kicks the soccer ball.",
        "hypothesis": "A little boy is playing soccer outside.",
    }
    assert first.label == "neutral" and first.split == "dev"


@pytest.mark.slow
def test_cad_nli_train_reports_the_one_real_misalignment(shared_data: Path) -> None:
    """Of the published train split's odd rows, 8 differ from their original only in
    whitespace (warnings, kept as published); one (revised_premise/train.tsv:1619) rewrites
    the hypothesis it should keep: a warning too, and that row is skipped. No problem."""
    warnings: list[object] = []
    recs = list(read("cad-nli", [str(shared_data / "cad")], task="nli", split="train", warn=warnings.append))
    assert problems(recs) == []
    misaligned = [str(w) for w in warnings if "misaligned, skipped" in str(w)]
    assert len(misaligned) == 1
    assert misaligned[0].split(":")[1] == "1619" and "A child uses a blender." in misaligned[0]
    assert len(warnings) == 9 and sum("differs only in whitespace" in str(w) for w in warnings) == 8
    assert kinds(recs)["OriginalRecord"] == 1666
    assert kinds(recs)["PairRecord"] == 4 * 1666 - 1


@pytest.mark.slow
def test_cad_sentiment_dev_real(shared_data: Path) -> None:
    recs = list(read("cad-sentiment", [str(shared_data / "cad")], task="sentiment", split="dev"))
    assert kinds(recs) == Counter({"PairRecord": 245})
    for p in recs:
        assert {p.original.label, p.cf_label} == {"negative", "positive"}
        assert p.label_source == "gold" and p.group == p.original.id
        assert p.original.meta["batch_id"] == p.meta["batch_id"]
    assert recs[0].id == "imdb-dev-122-cf" and recs[0].original.label == "negative"
    assert "how good this movie is" in recs[0].cf_fields["text"]


# --- CAD, small hand-made layouts ------------------------------------------------------------

HEADER = "sentence1\tsentence2\tgold_label"


def make_cad_nli(root: Path, original: list, premise: list, hypothesis: list, split: str = "dev") -> Path:
    for part, rows in (("original", original), ("revised_premise", premise), ("revised_hypothesis", hypothesis)):
        d = root / "NLI" / part
        d.mkdir(parents=True, exist_ok=True)
        write_lines(d / f"{split}.tsv", [HEADER, *rows])
    return root


def test_cad_nli_rows_aligned_up_to_whitespace_are_kept_as_published_with_a_warning(tmp_path: Path) -> None:
    root = make_cad_nli(
        tmp_path,
        ["A man sleeps.\tA person  rests.\tentailment"],
        ["A man runs.\tA person rests.\tcontradiction", "A man sits.\tA person  rests. \tneutral"],
        ["A man sleeps.\tA person runs.\tcontradiction", "A  man sleeps.\tA person dreams.\tneutral"],
    )
    warnings: list[Problem] = []
    recs = list(read("cad-nli", [str(root)], task="nli", split="dev", warn=warnings.append))
    assert kinds(recs) == Counter({"OriginalRecord": 1, "PairRecord": 4})
    pairs = {r.id: r for r in recs if isinstance(r, PairRecord)}
    assert pairs["snli-dev-0-rp0"].cf_fields["hypothesis"] == "A person rests."  # as published
    prem = str(root / "NLI" / "revised_premise" / "dev.tsv")
    hyp = str(root / "NLI" / "revised_hypothesis" / "dev.tsv")
    assert [(w.path, w.line) for w in warnings] == [(prem, 2), (prem, 3), (hyp, 3)]
    assert all("differs only in whitespace" in w.message for w in warnings)


def test_cad_nli_alignment_labels_columns_and_encoding(tmp_path: Path) -> None:
    root = make_cad_nli(
        tmp_path,
        ["A man sleeps.\tA person rests.\tentailment", "Two dogs run.\tAnimals move.\tEntailment"],
        [
            "A man runs.\tA person rests.\tcontradiction",
            "A man sits.\tA person rests.\tneutral",
            "Two dogs sit.\tAnimals eat.\tcontradiction",  # misaligned
            "Two dogs walk.\tAnimals move.\tmaybe",  # unknown label
        ],
        [
            "A man sleeps.\tA person runs.\tcontradiction",
            "A man sleeps.\tA person dreams.\tneutral",
            b"Two dogs run.\tAnimals \xff sleep.\tcontradiction",  # bad UTF-8
            "Two dogs run.\tneutral",  # wrong column count
        ],
    )
    warnings: list[Problem] = []
    recs = list(read("cad-nli", [str(root)], task="nli", split="dev", warn=warnings.append))
    assert kinds(recs) == Counter({"OriginalRecord": 2, "PairRecord": 4, "Problem": 3})
    found = problems(recs)
    prem = str(root / "NLI" / "revised_premise" / "dev.tsv")
    hyp = str(root / "NLI" / "revised_hypothesis" / "dev.tsv")
    # a misaligned row is skipped and reported as a warning, not a problem
    assert [str(w) for w in warnings if w.line == 4 and w.path == prem] == [str(warnings[0])]
    assert str(warnings[0]).startswith(f"{prem}:4: misaligned, skipped")
    assert "'Animals eat.' is not the hypothesis" in warnings[0].message
    assert found[0].startswith(f"{prem}:5: unknown label 'maybe'")
    assert found[1].startswith(f"{hyp}:4: not valid UTF-8")
    assert found[2] == f"{hyp}:5: expected 3 tab-separated columns, found 2"
    # Labels are matched case-insensitively to the project's names.
    assert [r.label for r in recs if isinstance(r, OriginalRecord)] == ["entailment", "entailment"]
    assert [r.id for r in recs if isinstance(r, PairRecord)] == [
        "snli-dev-0-rp0",
        "snli-dev-0-rp1",
        "snli-dev-0-rh0",
        "snli-dev-0-rh1",
    ]


def test_cad_nli_needs_split_and_files(tmp_path: Path) -> None:
    with pytest.raises(FormatError, match="--split"):
        list(read("cad-nli", [str(tmp_path)], task="nli"))
    with pytest.raises(FormatError, match="file not found"):
        list(read("cad-nli", [str(tmp_path)], task="nli", split="test"))
    with pytest.raises(FormatError, match="holds nli data"):
        list(read("cad-nli", [str(tmp_path)], task="sentiment", split="dev"))


def test_cad_sentiment_pairs_and_problems(tmp_path: Path) -> None:
    f = write_lines(
        tmp_path / "dev_paired.tsv",
        [
            "Sentiment\tText\tbatch_id",
            'Negative\t"A ""bad"" film."\t1',
            "Positive\tA good film.\t1",
            "Positive\tLovely.\t2",
            "Meh\tAwful.\t2",  # unknown label
            "Negative\tAlone.\t3",  # no partner
        ],
    )
    recs = list(read("cad-sentiment", [str(f)], task="sentiment", split="dev"))
    pairs = [r for r in recs if isinstance(r, PairRecord)]
    assert len(pairs) == 1
    assert pairs[0].original.fields == {"text": 'A "bad" film.'} and pairs[0].original.label == "negative"
    assert pairs[0].cf_fields == {"text": "A good film."} and pairs[0].cf_label == "positive"
    found = problems(recs)
    assert found[0].startswith(f"{f}:5: unknown label 'Meh'")
    assert found[1].startswith(f"{f}:6: batch_id 3 has only one row")


# --- pairs-jsonl ---------------------------------------------------------------------------------


def pair_obj(i: int, **cf: object) -> dict:
    return {
        "id": f"p{i}",
        "group": f"o{i}",
        "original": {"fields": {"text": f"good {i}"}, "label": "positive"},
        "counterfactual": {"fields": {"text": f"bad {i}"}, **cf},
    }


def test_pairs_jsonl_reads_and_reports_each_bad_row(tmp_path: Path) -> None:
    good = json.dumps(pair_obj(1, label="negative", label_source="human", confidence=0.9, perturbation="negation"))
    lines: list[str | bytes] = [
        good,
        good[:-7],  # truncated
        json.dumps(pair_obj(3, label="bogus")),
        b'{"id": "p4", "original": {"fields": {"text": "\xe9"}}}',
        json.dumps({**pair_obj(5), "counterfactual": {"fields": {"txt": "x"}}}),
        json.dumps(pair_obj(6, label="negative", label_source="robot")),
        json.dumps(pair_obj(7, confidence=1.5)),
        json.dumps(pair_obj(8, image="missing.jpg")),
        json.dumps({k: v for k, v in pair_obj(9).items() if k != "id"}),
        "",
        json.dumps(pair_obj(10)),
    ]
    f = write_lines(tmp_path / "pairs.jsonl", lines)
    recs = list(read("pairs-jsonl", [str(f)], task="sentiment", labels=["negative", "positive"], text_fields=["text"]))
    pairs = [r for r in recs if isinstance(r, PairRecord)]
    assert [p.id for p in pairs] == ["p1", "p10"]
    p1 = pairs[0]
    assert p1.original.id == "o1"  # no original.id: the group is the original's id
    assert (p1.cf_label, p1.label_source, p1.confidence, p1.perturbation) == ("negative", "human", 0.9, "negation")
    found = problems(recs)
    assert len(found) == 8
    assert found[0].startswith(f"{f}:2: not valid JSON") and "truncated" in found[0]
    assert found[1].startswith(f"{f}:3: counterfactual.label: unknown label 'bogus'")
    assert found[2].startswith(f"{f}:4: not valid UTF-8")
    assert found[3].startswith(f"{f}:5: counterfactual.fields (txt) must have the same names")
    assert found[4].startswith(f"{f}:6: counterfactual.label_source 'robot'")
    assert found[5].startswith(f"{f}:7: counterfactual.confidence must be a number between 0 and 1")
    assert found[6].startswith(f"{f}:8: counterfactual.image not found")
    assert found[7] == f"{f}:9: id is missing"


def test_pairs_jsonl_field_names_must_be_the_projects(tmp_path: Path) -> None:
    f = write_lines(tmp_path / "p.jsonl", [json.dumps(pair_obj(1))])
    found = problems(read("pairs-jsonl", [str(f)], task="nli", text_fields=["premise", "hypothesis"]))
    assert len(found) == 1 and "missing field(s) premise, hypothesis" in found[0]


def test_over_long_line_is_a_problem_when_reading(tmp_path: Path) -> None:
    f = write_lines(tmp_path / "p.jsonl", [json.dumps(pair_obj(1)), "x" * 5000, json.dumps(pair_obj(2))])
    recs = list(read("pairs-jsonl", [str(f)], task="sentiment", max_line_bytes=1000))
    assert [r.id for r in recs if isinstance(r, PairRecord)] == ["p1", "p2"]
    assert problems(recs) == [f"{f}:2: line is longer than 1000 bytes"]


# --- csv -----------------------------------------------------------------------------------


def test_csv_pairs_and_originals(tmp_path: Path) -> None:
    pairs_csv = tmp_path / "pairs.csv"
    pairs_csv.write_text(
        "id,original.text,original.label,counterfactual.text,counterfactual.label,counterfactual.label_source,meta\n"
        'p1,"good, really",positive,bad,negative,auto,"{""k"": 1}"\n'
        "p2,good,positive,bad\n"
        "p3,good,neutral,bad,,,\n",
        encoding="utf-8",
    )
    recs = list(read("csv", [str(pairs_csv)], task="sentiment", labels=["negative", "positive"], text_fields=["text"]))
    pairs = [r for r in recs if isinstance(r, PairRecord)]
    assert len(pairs) == 1
    assert pairs[0].original.fields == {"text": "good, really"} and pairs[0].meta == {"k": 1}
    assert (pairs[0].cf_label, pairs[0].label_source) == ("negative", "auto")
    assert problems(recs) == [
        f"{pairs_csv}:3: expected 7 columns (as in the header), found 4",
        f"{pairs_csv}:4: original.label: unknown label 'neutral' (expected one of negative, positive)",
    ]
    orig_csv = tmp_path / "originals.csv"
    orig_csv.write_text("id,text,label\na,nice,Positive\nb,awful,\n", encoding="utf-8")
    recs = list(read("csv", [str(orig_csv)], task="sentiment", labels=["negative", "positive"], text_fields=["text"]))
    assert recs == [
        OriginalRecord(id="a", fields={"text": "nice"}, label="positive"),
        OriginalRecord(id="b", fields={"text": "awful"}, label=None),
    ]


def test_csv_header_must_name_id_and_the_fields(tmp_path: Path) -> None:
    f = tmp_path / "x.csv"
    f.write_text("text,label\nnice,positive\n", encoding="utf-8")
    with pytest.raises(FormatError, match="no id column"):
        list(read("csv", [str(f)], task="sentiment"))
    f.write_text("id,body,label\na,nice,positive\n", encoding="utf-8")
    with pytest.raises(FormatError, match="missing field"):
        list(read("csv", [str(f)], task="sentiment", text_fields=["text"]))


# --- COCO ----------------------------------------------------------------------------------


def test_coco_captions(tmp_path: Path) -> None:
    f = write_lines(tmp_path / "captions.tsv", ["179765_0\tA black Honda motorcycle.", "bad line", "179765_1\tA bike."])
    recs = list(read("coco-captions", [str(f)], task="image-caption", split="val"))
    assert [r.id for r in recs if isinstance(r, OriginalRecord)] == ["179765_0", "179765_1"]
    assert recs[0].fields == {"caption": "A black Honda motorcycle."} and recs[0].meta == {"image_id": "179765"}
    assert problems(recs) == [f"{f}:2: expected 2 tab-separated columns (<imageid>_<n>, caption), found 1"]


def make_image(path: Path) -> None:
    from PIL import Image

    Image.new("RGB", (4, 4), (200, 10, 10)).save(path)


def test_coco_cf_with_images_and_a_missing_one(tmp_path: Path) -> None:
    images = tmp_path / "images"
    images.mkdir()
    for name in ("1_0_img_0", "1_0_img_1", "2_0_img_0"):
        make_image(images / f"{name}.jpg")
    meta = write_lines(
        tmp_path / "metadata.jsonl",
        [
            json.dumps(
                {
                    "id": "1_0",
                    "caption_0": "A cat.",
                    "caption_1": "A dog.",
                    "image_0": "1_0_img_0",
                    "image_1": "1_0_img_1",
                }
            ),
            json.dumps(
                {
                    "id": "2_0",
                    "caption_0": "A cup.",
                    "caption_1": "A mug.",
                    "image_0": "2_0_img_0",
                    "image_1": "2_0_img_1",
                }
            ),
        ],
    )
    recs = list(read("coco-cf", [str(meta), str(images)], task="image-caption"))
    pair = recs[0]
    assert isinstance(pair, PairRecord)
    assert pair.original.fields == {"caption": "A cat."} and pair.cf_fields == {"caption": "A dog."}
    assert pair.original.image == str(images / "1_0_img_0.jpg") and pair.cf_image == str(images / "1_0_img_1.jpg")
    assert problems(recs) == [f"{meta}:2: image not found: {images / '2_0_img_1.jpg'}"]
    # Without a folder argument, images/ beside the metadata file is used.
    assert kinds(read("coco-cf", [str(meta)], task="image-caption"))["PairRecord"] == 1


# --- writers -------------------------------------------------------------------------------


def sample_pairs(tmp_path: Path) -> list[PairRecord]:
    img = tmp_path / "a.jpg"
    make_image(img)
    o = OriginalRecord(
        id="o1",
        fields={"premise": 'P, "q"', "hypothesis": "H\nnext"},
        label="neutral",
        source="snli",
        split="dev",
        meta={"n": 1},
    )
    return [
        PairRecord(
            id="p1",
            original=o,
            cf_fields={"premise": "P2", "hypothesis": "H"},
            group="o1",
            cf_label="entailment",
            target_label="entailment",
            generator="rules",
            perturbation="negation",
            label_source="human",
            confidence=0.75,
            meta={"x": [1, 2]},
            gold_label="contradiction",
            scores={"similarity": 0.91},
        ),
        PairRecord(id="p2", original=o, cf_fields={"premise": "P3", "hypothesis": "H"}, group="o1"),
        PairRecord(
            id="p3",
            original=OriginalRecord(id="o2", fields={"premise": "ü", "hypothesis": "ß"}, label=None, image=str(img)),
            cf_fields={"premise": "ü2", "hypothesis": "ß"},
            cf_label="neutral",
            label_source="gold",
            cf_image=str(img),
        ),
    ]


def test_pairs_jsonl_writer_round_trips(tmp_path: Path) -> None:
    recs = sample_pairs(tmp_path)
    buf = io.StringIO()
    assert formats.write_pairs_jsonl(recs, buf) == 3
    f = tmp_path / "out.jsonl"
    f.write_text(buf.getvalue(), encoding="utf-8")
    back = list(read("pairs-jsonl", [str(f)], task="nli"))
    assert back == recs
    first = json.loads(buf.getvalue().splitlines()[0])
    assert first["counterfactual"]["label"] == "entailment" and first["counterfactual"]["label_source"] == "human"
    assert first["original"]["label"] == "neutral" and first["group"] == "o1"


def test_csv_writer_round_trips(tmp_path: Path) -> None:
    recs = sample_pairs(tmp_path)
    f = tmp_path / "out.csv"
    with open(f, "w", encoding="utf-8", newline="") as fh:
        assert formats.write_csv(recs, fh, text_fields=["premise", "hypothesis"]) == 3
    back = list(read("csv", [str(f)], task="nli", text_fields=["premise", "hypothesis"]))
    assert back == recs


# --- whole-input checks -------------------------------------------------------------------------


def test_check_inputs_refuses_a_2gb_file_without_reading_it(tmp_path: Path) -> None:
    big = tmp_path / "big.jsonl"
    with open(big, "wb") as fh:
        fh.truncate(2 * 1024**3)  # sparse: costs no disk
    with pytest.raises(FormatError, match=r"2\.0 GiB, larger than the limit of 512\.0 MiB"):
        formats.check_inputs("pairs-jsonl", [str(big)], max_file_bytes=512 * 1024**2, max_line_bytes=1024**2)


def test_check_inputs_refuses_an_over_long_line(tmp_path: Path) -> None:
    f = write_lines(tmp_path / "p.jsonl", ["{}", "y" * 3000])
    with pytest.raises(FormatError, match=r"p\.jsonl:2: line is longer than"):
        formats.check_inputs("pairs-jsonl", [str(f)], max_file_bytes=None, max_line_bytes=2048)
    with pytest.raises(FormatError, match="file not found"):
        formats.check_inputs("pairs-jsonl", [str(tmp_path / "nope")], max_file_bytes=None, max_line_bytes=None)


def _rss_bytes() -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


@pytest.mark.slow
def test_reading_a_million_lines_keeps_memory_flat(tmp_path: Path) -> None:
    """Resident memory after 1,000,000 records is within a few MiB of what it was after
    100,000 (holding the records would take hundreds of MiB)."""
    f = tmp_path / "captions.tsv"
    with open(f, "w", encoding="utf-8") as fh:
        for i in range(1_000_000):
            fh.write(f"{i}_0\tA caption number {i} about a cat on a mat.\n")
    n = 0
    early = 0
    for _ in read("coco-captions", [str(f)], task="image-caption"):
        n += 1
        if n == 100_000:
            early = _rss_bytes()
    late = _rss_bytes()
    assert n == 1_000_000
    assert late - early < 16 * 1024**2, f"RSS grew by {(late - early) / 1024**2:.1f} MiB over 900,000 lines"


def test_cad_nli_unquotes_tsv_fields_from_the_real_files(shared_data: Path) -> None:
    """The real dev files quote fields that hold a double quote (``"… ""Camden""."``); the
    reader unquotes them, so annotators never see the TSV quoting."""
    recs = list(read("cad-nli", [str(shared_data / "cad")], task="nli", split="dev"))
    texts = [v for r in recs for v in (r.fields if isinstance(r, OriginalRecord) else r.cf_fields).values()]
    camden = [t for t in texts if "Camden" in t and "supply company" in t]
    assert camden and all('""' not in t and not t.startswith('"') for t in camden)
    assert 'The man works for the campy supply company "Camden".' in camden


@pytest.mark.parametrize("source", ["human", "auto", "imported"])
def test_a_label_source_without_a_label_is_a_problem(tmp_path: Path, source: str) -> None:
    line = {
        "id": "p1",
        "original": {"fields": {"text": "good"}, "label": "positive"},
        "counterfactual": {"fields": {"text": "bad"}, "label_source": source},
    }
    f = tmp_path / "p.jsonl"
    f.write_text(
        json.dumps(line)
        + "\n"
        + json.dumps({**line, "id": "p2", "counterfactual": {"fields": {"text": "x"}, "label_source": "gold"}})
        + "\n"
    )
    recs = list(read("pairs-jsonl", [str(f)], task="sentiment", labels=["negative", "positive"]))
    assert problems(recs) == [f"{f}:1: counterfactual.label_source is {source!r} but there is no counterfactual.label"]
    assert [r.id for r in recs if isinstance(r, PairRecord)] == ["p2"]  # gold without a label: a known-unknown answer


def test_pairs_jsonl_keeps_valid_and_refuses_a_non_boolean(tmp_path: Path) -> None:
    o = OriginalRecord(id="o1", fields={"premise": "P", "hypothesis": "H"}, label="neutral")
    recs = [
        PairRecord(id=f"p{i}", original=o, cf_fields={"premise": f"P{i}", "hypothesis": "H"}, valid=v)
        for i, v in enumerate((True, False, None))
    ]
    buf = io.StringIO()
    formats.write_pairs_jsonl(recs, buf)
    lines = buf.getvalue().splitlines()
    assert [json.loads(x)["counterfactual"].get("valid") for x in lines] == [True, False, None]
    assert "valid" not in json.loads(lines[2])["counterfactual"]  # unknown: left out
    bad = json.loads(lines[0])
    bad["counterfactual"]["valid"] = "yes"
    f = write_lines(tmp_path / "p.jsonl", [*lines, json.dumps(bad)])
    back = list(read("pairs-jsonl", [str(f)], task="nli"))
    assert back[:3] == recs
    assert "counterfactual.valid must be true, false or null" in str(back[3])
