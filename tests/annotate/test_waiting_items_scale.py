"""Items waiting for annotators (the dashboard, the annotation-quality page and its API, the
warnings) are found with one grouped join, not a count per item of the eligible members
(docs/workspace.md, "Measured: every researcher page"). Before, PostgreSQL ran the members
subquery once per open item, each member with its own ``NOT EXISTS`` probe: items × members
index probes, 80-100 ms per page on 6,897 items and 3 members, growing with both."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from annotate import selectors
from annotate.models import Item
from annotate.services import assignments as svc
from annotate.services.routing import project_route

from .factories import annotator, project_with_candidates

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def _loops_on(plan: dict, table: str) -> int:
    own = plan.get("Actual Loops", 0) if plan.get("Relation Name") == table else 0
    return max([own, *(_loops_on(p, table) for p in plan.get("Plans", []))])


def test_waiting_items_are_one_join_not_a_members_count_per_item(require_postgres):
    project = project_with_candidates(n=300, k=3)
    project_route(project=project, budget=1.0, seed=0)
    members = [annotator(project) for _ in range(2)]  # two of the three answers each item wants
    for user in members:
        for _ in range(5):
            a = svc.assignment_next(project=project, annotator=user)
            svc.annotation_submit(assignment_id=a.pk, annotator=user, choice="neutral")
    qs = selectors.items_waiting_for_annotators(project=project)
    assert qs.count() == Item.objects.filter(project=project, is_gold=False, status="open").count() == 300
    sql, params = qs.query.sql_with_params()
    with connection.cursor() as cur:
        cur.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
        raw = cur.fetchone()[0]
    plan = (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]
    # the members are read once (before: once per open item, 300 loops)
    assert _loops_on(plan, "annotate_projectmembership") <= 1
