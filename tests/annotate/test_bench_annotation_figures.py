"""bench_annotation / bench_annotation_load: figures that were never measured are null, not 0."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.postgres_too


def test_a_percentile_of_no_request_is_null_not_zero_ms():
    """With ``?next=1`` answers (the load test's default API flow) no next-item request is sent:
    its p50/p95/p99 read 0.0 ms, a latency nobody measured."""
    from annotate.management.commands import bench_annotation, bench_annotation_load

    assert bench_annotation._pct([], 95) is None
    assert bench_annotation_load._pct([], 50) is None
    assert bench_annotation._pct([1.0, 2.0, 3.0, 4.0], 50) == 2.0
    assert bench_annotation_load._pct([4.0, 1.0, 3.0, 2.0], 99) == 4.0


def test_bench_annotation_refuses_a_run_of_no_seconds():
    with pytest.raises(CommandError, match="--seconds must be positive"):
        call_command("bench_annotation", "--seconds", "0", "--items", "5", "--annotators", "1", stdout=StringIO())
