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


@pytest.mark.django_db
def test_bench_annotation_against_a_server_that_is_not_there_fails():
    """``--url`` naming a port nobody listens on printed "client error: ConnectionRefusedError"
    among the figures and exited 0 with a JSON line of 0 annotations and null latencies: a
    failed run read as a measurement. It now exits with an error naming the URL (the bench
    project is removed first)."""
    from annotate.management.commands.bench_annotation import _free_port
    from projects.models import Project

    url = f"http://127.0.0.1:{_free_port()}"
    out = StringIO()
    with pytest.raises(CommandError, match=rf"no request to {url} succeeded \(client error: ConnectionRefused"):
        call_command(
            *("bench_annotation", "--url", url, "--items", "5", "--annotators", "1", "--seconds", "1", "--json"),
            stdout=out,
            stderr=StringIO(),
        )
    assert "{" not in out.getvalue() and not Project.objects.filter(name__startswith="bench").exists()


@pytest.mark.django_db
def test_bench_annotation_load_against_a_server_that_is_not_there_fails():
    """The Locust load test against a ``--url`` nobody listens on exited 0 with a JSON line of
    0 answers/s and "errors" counted as ``next-item 0``: every request failed to connect, so
    nothing was measured. It now exits with an error naming the URL."""
    from annotate.management.commands.bench_annotation import _free_port

    url = f"http://127.0.0.1:{_free_port()}"
    args = ["bench_annotation_load", "--url", url, "--annotators", "2", "--items", "10", "--seconds", "3"]
    args += ["--think-min", "0.2", "--think-max", "0.4", "--json"]
    with pytest.raises(CommandError, match=rf"no request reached {url} \(\d+ connection failures\)"):
        call_command(*args, stdout=StringIO(), stderr=StringIO())
