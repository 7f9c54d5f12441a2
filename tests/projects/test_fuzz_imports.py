"""Property-based tests of the importers: random bytes and random JSON lines give a clear
answer (the import is refused with ``ImportRefused``, or it runs and reports its problems),
never an unexpected exception; a refused import leaves the database as it was, and a
skip-bad-rows import writes exactly what its report counts. Runs on SQLite and, with
``DATABASE_URL=postgres://…``, on PostgreSQL (where NUL and lone surrogates used to fail at
the write)."""

from __future__ import annotations

import itertools
import json
import os
import tempfile
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from projects.models import Candidate, Example, Project
from projects.services.imports import ImportRefused, data_import
from projects.services.projects import project_create

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]

FUZZ = settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    database=None,
)
_names = itertools.count()

# Text with what databases and JSON decoders choke on mixed in.
NASTY = st.sampled_from(["\x00", "a\x00b", "\ud800", "x\udfffy", "é", "\u2028", " ", "", "null", "s" * 40])
TEXT = st.one_of(st.text(max_size=20), NASTY)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | TEXT,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(TEXT, inner, max_size=3),
    max_leaves=12,
)


def pair_like() -> st.SearchStrategy[Any]:
    """Mostly well-formed pairs-jsonl objects with random values in random places."""
    side = st.fixed_dictionaries(
        {"fields": st.one_of(st.fixed_dictionaries({"text": TEXT}), JSON)},
        optional={
            "label": st.one_of(st.sampled_from(["positive", "NEGATIVE", "meh", ""]), JSON),
            "split": TEXT,
            "id": TEXT,
            "image": st.sampled_from(["/etc/passwd", "../../x.jpg", "a.jpg", "\x00"]),
            "meta": JSON,
            "label_source": st.sampled_from(["human", "auto", "gold", "imported", "x"]),
            "confidence": JSON,
        },
    )
    return st.fixed_dictionaries(
        {"id": TEXT, "original": side, "counterfactual": side},
        optional={"group": TEXT, "meta": JSON},
    )


def _state(project: Project) -> tuple:
    return (
        sorted(Example.objects.filter(project=project).values_list("external_id", flat=True)),
        sorted(Candidate.objects.filter(project=project).values_list("external_id", flat=True)),
    )


def _check_import(content: bytes, fmt: str, suffix: str) -> None:
    project = project_create(name=f"fuzz-{next(_names)}", task="sentiment")
    fd, path = tempfile.mkstemp(suffix=suffix)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(content)
        before = _state(project)
        try:
            data_import(project=project, format=fmt, paths=[path])
        except ImportRefused as exc:
            assert str(exc)
            assert _state(project) == before
        # the lenient import is measured against what is there now: the strict one may have
        # imported the file already (then the lenient one skips every row as a re-import)
        before = _state(project)
        try:
            report = data_import(project=project, format=fmt, paths=[path], strict=False, batch_size=2)
        except ImportRefused as exc:  # refused as a whole (header, sizes): nothing written
            assert str(exc)
            assert _state(project) == before
            return
        examples, candidates = _state(project)
        assert len(examples) >= report.imported_originals and len(candidates) == len(before[1]) + report.imported_pairs
        assert report.problem_count == len(report.problems)
        assert all(":" in p for p in report.problems)
    finally:
        os.unlink(path)


@FUZZ
@given(content=st.binary(max_size=300))
@pytest.mark.parametrize("fmt, suffix", [("pairs-jsonl", ".jsonl"), ("csv", ".csv"), ("coco-captions", ".tsv")])
def test_random_bytes_are_refused_or_imported_never_an_exception(fmt: str, suffix: str, content: bytes) -> None:
    _check_import(content, fmt, suffix)


@FUZZ
@given(lines=st.lists(st.one_of(pair_like(), JSON), min_size=1, max_size=4))
def test_random_json_lines_are_refused_or_imported_never_an_exception(lines: list[Any]) -> None:
    content = "".join(json.dumps(obj) + "\n" for obj in lines).encode()
    _check_import(content, "pairs-jsonl", ".jsonl")


@FUZZ
@given(line=pair_like(), depth=st.integers(min_value=0, max_value=3000))
def test_deep_nesting_anywhere_is_a_row_problem(line: dict, depth: int) -> None:
    text = json.dumps(line)
    nested = text[:-1] + ', "meta": ' + "[" * depth + "]" * depth + "}"
    _check_import(nested.encode() + b"\n", "pairs-jsonl", ".jsonl")


@FUZZ
@given(lines=st.lists(st.one_of(pair_like(), JSON), min_size=1, max_size=3))
def test_random_coco_cf_metadata_is_refused_or_imported(lines: list[Any]) -> None:
    project = project_create(name=f"cocf-{next(_names)}", task="image-caption")
    with tempfile.TemporaryDirectory() as folder:
        meta = os.path.join(folder, "metadata.jsonl")
        with open(meta, "w", encoding="utf-8") as fh:
            for obj in lines:
                fh.write(json.dumps(obj) + "\n")
        try:
            report = data_import(project=project, format="coco-cf", paths=[meta], strict=False)
        except ImportRefused as exc:
            assert str(exc)
            assert _state(project) == ([], [])
            return
        assert report.imported_pairs == Candidate.objects.filter(project=project).count()
