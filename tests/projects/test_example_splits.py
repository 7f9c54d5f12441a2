"""The export page's split list reads one index entry per split, not every original (docs/workspace.md,
"Measured: every researcher page"). Before, ``SELECT DISTINCT split`` read all 90,943 originals of
the large project on each request of the export page (26-99 ms after ANALYZE, 169 ms before)."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from projects.models import Example
from projects.services.exports import export_splits
from tests.annotate.factories import project_with_candidates

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def _project(n: int):
    project = project_with_candidates(n=4)
    Example.objects.bulk_create(
        Example(project=project, external_id=f"x{i}", fields={}, split=["train", "", "dev", "test"][i % 4])
        for i in range(n)
    )
    return project


def test_the_splits_each_once_sorted_without_the_empty_one():
    assert export_splits(project=_project(40)) == ["dev", "test", "train"]


def _rows_read(plan: dict) -> int:
    own = plan.get("Actual Rows", 0) * plan.get("Actual Loops", 0) if plan.get("Relation Name") else 0
    return own + sum(_rows_read(p) for p in plan.get("Plans", []))


@pytest.mark.postgres
def test_the_splits_do_not_read_every_original(require_postgres):
    project = _project(2000)
    with connection.cursor() as cur:
        cur.execute("ANALYZE generation_example")
        cur.execute("SET LOCAL enable_seqscan = off")  # plan as for a large table
    with CaptureQueriesContext(connection) as ctx:
        assert export_splits(project=project) == ["dev", "test", "train"]
    read = 0
    with connection.cursor() as cur:
        for q in ctx.captured_queries:
            cur.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + q["sql"])
            raw = cur.fetchone()[0]
            read += _rows_read((json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"])
    assert read <= 10  # one index entry per split (before: the 2,004 originals)
