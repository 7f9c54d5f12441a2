"""labeling.ml.pairs.pairs_from_records: labels match case-insensitively; an unknown label
is a problem that names the accepted labels."""

from __future__ import annotations

from labeling.ml.pairs import pairs_from_records
from projects.formats import OriginalRecord, PairRecord

LABELS = ["false", "true"]


def rec(i: int, y: str, y2: str) -> PairRecord:
    o = OriginalRecord(id=f"o{i}", fields={"passage": "p", "question": "q"}, label=y)
    return PairRecord(id=f"p{i}", original=o, cf_fields={"passage": "p2", "question": "q"}, cf_label=y2)


def test_upper_case_labels_match_the_label_set():
    data, problems = pairs_from_records([rec(1, "FALSE", "True"), rec(2, "false", "true")], LABELS)
    assert problems == []
    assert [p.y for p in data.pairs] == ["false", "false"] and data.y_prime == ["true", "true"]


def test_an_unknown_label_names_the_accepted_labels():
    data, problems = pairs_from_records([rec(1, "maybe", "true")], LABELS)
    assert len(data.pairs) == 0
    assert problems == ["p1: label 'maybe' not in the label set (expected one of false, true; case is ignored)"]
