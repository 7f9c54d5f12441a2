"""How many candidates match the data browser's filters (issue 20.6), cheaply at 1M rows.

- A bounded count first: ``SELECT COUNT(*) FROM (… LIMIT EXACT_UP_TO + 1)`` stops after
  ``EXACT_UP_TO + 1`` matching rows, so a small total is exact at the cost of at most that
  many rows read.
- On PostgreSQL the planner's estimate (``EXPLAIN``, no rows read) is asked first; when it
  is above ``EXACT_UP_TO`` the total is that estimate ("about 1,000,000") and nothing is
  counted; when it is at most ``EXACT_UP_TO`` the bounded count gives the exact number (or
  "10,000+" when the estimate was too low).
- Elsewhere (SQLite) there is no cheap estimate: the bounded count alone ("10,000+").
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from django.db import connection
from django.db.models import QuerySet

EXACT_UP_TO = 10_000


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
    n = qs.order_by().values("pk")[: exact_up_to + 1].count()
    if n > exact_up_to:
        return Total(exact_up_to, "at_least")
    return Total(n, "exact")
