"""``bench_pages`` (docs/benchmarks.md): every researcher page and API list it times answers
200 on a routed project, and the annotator's hot path writes real answers."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from annotate.models import Annotation
from annotate.services.routing import project_route
from tests.annotate.factories import project_with_candidates

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def test_bench_pages_times_every_page_and_the_hot_path():
    project = project_with_candidates(name="bench-small", n=40, k=2)
    project_route(project=project, budget=0.5, seed=0)
    out = StringIO()
    call_command("bench_pages", "--project", "bench-small", "--requests", "1", "--rounds", "12", "--json", stdout=out)
    result = json.loads(out.getvalue().strip().splitlines()[-1])
    pages = result["pages"]
    for name in ("overview", "dashboard", "browser: deep (after=)", "pair page", "quality", "members", "export"):
        assert pages[name]["queries_warm"] > 0 and pages[name]["warm_p50_ms"] > 0
    assert {"API next item", "API answer", "API undo", "API skip", "page: answer (+ next)"} <= set(result["hot_path"])
    # 2 annotators x (API flow + browser flow), each answering items for real
    assert Annotation.objects.filter(project=project).count() >= 20
