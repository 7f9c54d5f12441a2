"""How many candidates match the data browser's filters (issue 20.6), cheaply at 1M rows.

- A bounded count first: ``SELECT COUNT(*) FROM (… LIMIT EXACT_UP_TO + 1)`` stops after
  ``EXACT_UP_TO + 1`` matching rows, so a small total is exact at the cost of at most that
  many rows read.
- On PostgreSQL the planner's estimate (``EXPLAIN``, no rows read) is asked first; when it
  is above ``EXACT_UP_TO`` the total is that estimate ("about 1,000,000") and nothing is
  counted; when it is at most ``EXACT_UP_TO`` the bounded count gives the exact number (or
  "10,000+" when the estimate was too low). That count gets ``COUNT_BUDGET_MS``
  (``statement_timeout``, local to a savepoint): a filter the planner underestimates and
  that must read many rows to reach 10,001 matches falls back to the estimate instead of
  slowing the page.
- Elsewhere (SQLite) there is no cheap estimate: the bounded count alone ("10,000+").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.db import OperationalError, connection, transaction
from django.db.models import QuerySet

EXACT_UP_TO = 10_000
COUNT_BUDGET_MS = 60  # PostgreSQL: the longest the bounded count may take before the estimate is shown
QUERY_CANCELED = "57014"  # PostgreSQL's SQLSTATE for a statement cancelled by statement_timeout


@dataclass(frozen=True)
class Total:
    value: int
    kind: str  # "exact" | "estimate" (the planner's) | "at_least"

    @property
    def text(self) -> str:
        if self.kind == "estimate":
            return f"about {self.value:,}"
        return f"{self.value:,}+" if self.kind == "at_least" else f"{self.value:,}"

    def as_dict(self) -> dict[str, Any]:
        return {"value": self.value, "kind": self.kind, "text": self.text}


def planner_rows(qs: QuerySet[Any]) -> int | None:
    """PostgreSQL's estimate of the rows ``qs`` returns (``EXPLAIN (FORMAT JSON)``), or
    ``None`` on another database."""
    if connection.vendor != "postgresql":
        return None
    sql, params = qs.order_by().values("pk").query.sql_with_params()
    with connection.cursor() as cur:
        cur.execute(f"EXPLAIN (FORMAT JSON) {sql}", params)
        plan = cur.fetchone()[0]
    if isinstance(plan, str):
        plan = json.loads(plan)
    return int(plan[0]["Plan"]["Plan Rows"])


def matching_total(qs: QuerySet[Any], *, exact_up_to: int = EXACT_UP_TO) -> Total:
    """The number of rows of ``qs``: exact up to ``exact_up_to``, else estimated or bounded."""
    estimate = planner_rows(qs)
    if estimate is not None and estimate > exact_up_to:
        return Total(estimate, "estimate")
    bounded = qs.order_by().values("pk")[: exact_up_to + 1]
    n = bounded.count() if estimate is None else _count_within_budget(bounded)
    if n is None:
        return Total(int(estimate or 0), "estimate")
    if n > exact_up_to:
        return Total(exact_up_to, "at_least")
    return Total(n, "exact")


def _count_within_budget(qs: QuerySet[Any]) -> int | None:
    """``qs.count()`` on PostgreSQL, or ``None`` when it takes over ``COUNT_BUDGET_MS``. The
    timeout is set for this count only (``set_config(…, is_local)`` inside a savepoint, and
    put back before the savepoint is released)."""
    with connection.cursor() as cur:
        cur.execute("SHOW statement_timeout")
        before = cur.fetchone()[0]
    try:
        with transaction.atomic():
            with connection.cursor() as cur:
                cur.execute("SELECT set_config('statement_timeout', %s, true)", [f"{COUNT_BUDGET_MS}ms"])
            n = qs.count()
            with connection.cursor() as cur:
                cur.execute("SELECT set_config('statement_timeout', %s, true)", [before])
            return n
    except OperationalError as exc:
        if getattr(exc.__cause__, "sqlstate", None) == QUERY_CANCELED:
            return None
        raise
