"""The next-item pick reads a bounded number of items however large the pool (docs/annotation.md,
"Which item next"). Before: when an annotator had already had every item of the 64-item
window of started items (they answered faster than the others), probe 1 of the pick walked
every open item of the project — the planner scanned the item index in ORDER BY order and
semi-joined the window to it — so next-item cost grew with the pool: 365 ms on a 6,900-item
project (74k candidates), about 50 ms more per 1,000 open items. Now the window is read first and
joined by primary key: the same pick reads about 2 × 64 item rows at any size."""

from __future__ import annotations

import json

import pytest
from django.db import connection

from annotate.models import Item
from annotate.open_for import WINDOW, pick_sql
from annotate.services import assignments as svc
from annotate.services.routing import project_route

from .factories import annotator, project_with_candidates

pytestmark = [pytest.mark.django_db, pytest.mark.postgres]


def _item_rows_read(plan: dict) -> int:
    """Rows the plan produced from ``annotate_item`` scans (all probes that ran)."""
    own = (
        plan.get("Actual Rows", 0) * plan.get("Actual Loops", 0) if plan.get("Relation Name") == "annotate_item" else 0
    )
    return own + sum(_item_rows_read(p) for p in plan.get("Plans", []))


def test_the_pick_does_not_walk_the_pool_when_the_window_is_all_seen(require_postgres):
    project = project_with_candidates(n=1500, k=3)
    project_route(project=project, budget=1.0, seed=0)
    fast = annotator(project)
    for _ in range(WINDOW + 6):  # the window of started items is now all items this annotator had
        a = svc.assignment_next(project=project, annotator=fast)
        svc.annotation_submit(assignment_id=a.pk, annotator=fast, choice="entailment")
    assert Item.objects.filter(project=project, status="open", is_gold=False).count() == 1500
    with connection.cursor() as cur:
        cur.execute("ANALYZE annotate_item")  # as autovacuum would have
        cur.execute("ANALYZE annotate_assignment")
        # plan as for a large table: at 1,500 rows a sequential scan is the cheapest way to read
        # anything, whatever the query; at 100k items it is not (SET LOCAL: this test's transaction)
        cur.execute("SET LOCAL enable_seqscan = off")
        cur.execute(
            "EXPLAIN (ANALYZE, FORMAT JSON) " + pick_sql(gold=False, lock=True),
            {"pid": project.pk, "uid": fast.pk},
        )
        raw = cur.fetchone()[0]
    plan = (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]
    # the window (64) and its primary-key lookups (64), then one fresh item: not the 1,500
    assert _item_rows_read(plan) <= 3 * WINDOW
    # and the pick still serves this annotator a fresh item
    a = svc.assignment_next(project=project, annotator=fast)
    assert a is not None and Item.objects.get(pk=a.item_id).taken == 1
