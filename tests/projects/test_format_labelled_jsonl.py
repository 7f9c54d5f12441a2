"""``labelled-jsonl`` (issue 26): flat labelled examples such as nli-public's lines."""

from __future__ import annotations

import json

import pytest

from projects.formats import FormatError, OriginalRecord, Problem, read


def _write(path, rows):
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def test_reads_nli_public_lines_and_reports_bad_rows(tmp_path):
    f = _write(
        tmp_path / "train.jsonl",
        [
            {"premise": "A man runs.", "hypothesis": "A person moves.", "label": "Entailment", "source": "snli-dev"},
            {"premise": "A man runs.", "hypothesis": "Nobody moves.", "label": "contradiction", "id": "x7"},
            {"premise": "A man runs.", "hypothesis": "He is late."},
            {"premise": "A man runs.", "hypothesis": "He is late.", "label": "maybe"},
            {"premise": "A man runs.", "label": "neutral"},
            "{not json",
            "",
        ],
    )
    out = list(read("labelled-jsonl", [str(f)], task="nli", labels=["entailment", "neutral", "contradiction"]))
    recs = [r for r in out if isinstance(r, OriginalRecord)]
    probs = [str(r) for r in out if isinstance(r, Problem)]
    assert [(r.id, r.label, r.source) for r in recs][:2] == [
        ("train-1", "entailment", "snli-dev"),
        ("x7", "contradiction", ""),
    ]
    assert recs[0].fields == {"premise": "A man runs.", "hypothesis": "A person moves."}
    assert len(recs) == 3 and len(probs) == 3  # unlabelled, unknown label, not JSON (fields unchecked: no text_fields)
    assert any("label is missing" in p for p in probs) and any("unknown label" in p for p in probs)
    strict = list(read("labelled-jsonl", [str(f)], task="nli", text_fields=["premise", "hypothesis"]))
    assert any(isinstance(r, Problem) and ":5:" in str(r) for r in strict)


def test_a_missing_file_is_a_format_error(tmp_path):
    with pytest.raises(FormatError, match="file not found"):
        list(read("labelled-jsonl", [str(tmp_path / "nope.jsonl")], task="nli"))
