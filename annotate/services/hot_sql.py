"""The SQL of the two hot requests (next item, submit), written out by hand.

Each request is a handful of single-row statements on indexed columns, with the rule each one
enforces in its WHERE clause. On PostgreSQL the whole claim is one statement (pick with
``FOR UPDATE SKIP LOCKED`` → ``taken = taken + 1 WHERE taken < k`` → insert the lease); on
SQLite (no data-modifying CTEs, single writer under ``BEGIN IMMEDIATE``) the same three steps
run as three statements in one transaction. The ORM equivalents are easier to read but cost
several times the CPU per request (query compilation), which is what limits throughput here.
"""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from django.db import connection

from annotate.models import Assignment
from annotate.open_for import WINDOW, pick_sql  # the pick lives with its predicate (selectors use it too)

__all__ = ["WINDOW", "pick_sql"]


def is_postgres() -> bool:
    return connection.vendor == "postgresql"


def dt(value: datetime) -> Any:
    """A datetime as this backend's query parameter."""
    return connection.ops.adapt_datetimefield_value(value)


def json_param(value: Any) -> Any:
    return Assignment._meta.get_field("display_order").get_db_prep_value(value, connection)


def json_value(value: Any) -> Any:
    """JSON read back by a raw cursor: parsed already on PostgreSQL, text on SQLite."""
    if isinstance(value, (str, bytes, bytearray)):
        return json.loads(value)
    return value


# Ids in these statements are 64-bit columns: an id outside that range (from a URL such as
# /api/v1/projects/99999999999999999999/next-item/) matches no row. SQLite would raise
# OverflowError binding it, PostgreSQL an out-of-range error: answer "no row" instead.
_INT64 = range(-(2**63), 2**63)


def _out_of_range(params: list[Any] | dict[str, Any]) -> bool:
    values = params.values() if isinstance(params, dict) else params
    return any(isinstance(v, int) and not isinstance(v, bool) and v not in _INT64 for v in values)


def fetchone(sql: str, params: list[Any] | dict[str, Any]) -> tuple[Any, ...] | None:
    if _out_of_range(params):
        return None
    with connection.cursor() as cur:
        cur.execute(sql, params)
        row: tuple[Any, ...] | None = cur.fetchone()  # Django's cursor wrapper is untyped (Any)
        return row


def fetchone_prepared(sql: str, params: list[Any] | dict[str, Any]) -> tuple[Any, ...] | None:
    """PostgreSQL: run as a server-side prepared statement (planned once per connection —
    planning the claim statement costs several times its execution). Elsewhere: ``fetchone``."""
    if not is_postgres() or _out_of_range(params):
        return fetchone(sql, params)
    import psycopg

    connection.ensure_connection()
    with psycopg.Cursor(connection.connection) as cur:  # server-side binding
        cur.execute(sql, params, prepare=True)
        return cur.fetchone()


def execute(sql: str, params: list[Any]) -> int:
    if _out_of_range(params):
        return 0
    with connection.cursor() as cur:
        cur.execute(sql, params)
        return int(cur.rowcount)


# Whether the member's account still holds a role (projects.permissions.holds_a_role): an
# admin, or in the researcher or annotator group. Correlated with the membership row ``m``.
ROLE_HELD = """(EXISTS (SELECT 1 FROM auth_user u WHERE u.id = m.user_id AND u.is_superuser)
    OR EXISTS (SELECT 1 FROM auth_user_groups ug JOIN auth_group g ON g.id = ug.group_id
               WHERE ug.user_id = m.user_id AND g.name IN ('researcher', 'annotator')))"""

ACCESS = f"""
SELECT p.id, p.task, p.text_fields, m.id, m.qualified_at, m.flagged, m.flag_reason, m.role, {ROLE_HELD}
FROM generation_project p
LEFT JOIN annotate_projectmembership m ON m.project_id = p.id AND m.user_id = %s
WHERE p.id = %s
"""

# The annotator's own live lease (page reload, or the item kept aside during an undo).
RENEW_LIVE = """
UPDATE annotate_assignment SET expires_at = %s
WHERE id = (
    SELECT id FROM annotate_assignment
    WHERE annotator_id = %s AND project_id = %s AND status = 'leased' AND expires_at > %s
    ORDER BY leased_at, id LIMIT 1
)
RETURNING id, item_id, display_order
"""

_PAYLOAD_JOIN = """
JOIN generation_candidate c ON c.id = i.candidate_id
JOIN generation_example e ON e.id = c.example_id
"""

# PostgreSQL: pick, take the slot, write the lease and read what to show — one statement,
# one round trip, atomic on its own (no BEGIN/COMMIT needed). The display order is one of the
# two passed in, chosen by the same md5 bit as ``annotate.kinds.caption_swapped``.
CLAIM_PG = (
    """
WITH pick AS (SELECT p.id FROM ({pick}) p WHERE p.id IS NOT NULL),
bump AS (
    UPDATE annotate_item it SET taken = it.taken + 1 FROM pick
    WHERE it.id = pick.id AND it.status = 'open' AND it.taken < it.k
    RETURNING it.id
),
ins AS (
    INSERT INTO annotate_assignment
        (project_id, item_id, annotator_id, status, display_order, leased_at, expires_at, finished_at, skip_reason)
    SELECT %(pid)s::bigint, bump.id, %(uid)s::integer, 'leased',
           CASE WHEN get_byte(decode(md5(bump.id::text || ':' || %(uid)s::integer::text), 'hex'), 0) & 1 = 1
                THEN %(order_swapped)s::jsonb ELSE %(order)s::jsonb END,
           %(now)s::timestamptz,
           %(expires)s::timestamptz, NULL, '' FROM bump
    RETURNING id, item_id, display_order
)
SELECT ins.id, ins.item_id, ins.display_order, i.kind, i.side, c.fields, c.image, e.fields, e.image
FROM ins JOIN annotate_item i ON i.id = ins.item_id
"""
    + _PAYLOAD_JOIN
)


# PostgreSQL: RENEW_LIVE and the payload in one statement
RENEW_LIVE_PG = (
    "WITH live AS ("
    + RENEW_LIVE
    + """)
SELECT live.id, live.item_id, live.display_order, i.kind, i.side, c.fields, c.image, e.fields, e.image
FROM live JOIN annotate_item i ON i.id = live.item_id
"""
    + _PAYLOAD_JOIN
)

BUMP_SQLITE = "UPDATE annotate_item SET taken = taken + 1 WHERE id = %s AND status = 'open' AND taken < k"
INSERT_LEASE_SQLITE = """
INSERT INTO annotate_assignment
    (project_id, item_id, annotator_id, status, display_order, leased_at, expires_at, finished_at, skip_reason)
VALUES (%s, %s, %s, 'leased', %s, %s, %s, NULL, '')
RETURNING id
"""

EXPIRED_PROBE = "SELECT 1 FROM annotate_assignment WHERE status = 'leased' AND expires_at <= %s LIMIT 1"

PAYLOAD = (
    """
SELECT i.kind, i.side, c.fields, c.image, e.fields, e.image
FROM annotate_item i
"""
    + _PAYLOAD_JOIN
    + """
WHERE i.id = %s
"""
)

LEASE_ORDER = "SELECT display_order FROM annotate_assignment WHERE id = %s AND annotator_id = %s"

# Submit on PostgreSQL, one statement: close the lease (ours, live, still leased — all in the
# WHERE clause), count the answer on the item, store it. Nothing happens unless the lease row
# matched; a concurrent expiry or repeat cannot both match it.
# The submitting user must (still) be an annotator member of the project, not paused or
# flagged, and hold a role: removing or pausing a member, or taking the role away, takes effect on
# leases they already hold, and nobody
# else's answer (a researcher's, an admin's) counts toward an item's k.
_ACTIVE_MEMBER = (
    """ AND EXISTS (
        SELECT 1 FROM annotate_projectmembership m
        WHERE m.project_id = annotate_assignment.project_id AND m.user_id = {uid} AND NOT m.flagged
          AND m.role = 'annotator' AND """
    + ROLE_HELD.replace("{", "{{").replace("}", "}}")
    + ")"
)

_SUBMIT_PG = """
WITH closed AS (
    UPDATE annotate_assignment SET status = 'submitted', finished_at = %(now)s
    WHERE id = %(aid)s AND annotator_id = %(uid)s AND status = 'leased' AND expires_at > %(now)s{member}
    RETURNING item_id, project_id, display_order
),
counted AS (
    UPDATE annotate_item it SET done = it.done + 1 FROM closed
    WHERE it.id = closed.item_id
    RETURNING it.id, it.done, it.k, it.status, it.is_gold, it.gold_choice
),
ins AS (
    INSERT INTO annotate_annotation
        (project_id, assignment_id, item_id, annotator_id, choice, shown_choice, display_order,
         duration_ms, is_gold, correct, created_at)
    SELECT closed.project_id, %(aid)s::bigint, closed.item_id, %(uid)s::integer, %(choice)s::varchar,
           %(shown)s::varchar, closed.display_order, %(duration)s::integer, counted.is_gold,
           CASE WHEN counted.is_gold THEN counted.gold_choice = %(choice)s::varchar ELSE NULL END,
           %(now)s::timestamptz
    FROM closed JOIN counted ON counted.id = closed.item_id
    RETURNING id
)
SELECT ins.id, counted.id, counted.done, counted.k, counted.status, counted.is_gold, closed.project_id,
       counted.gold_choice
FROM ins, counted, closed
"""
SUBMIT_PG = _SUBMIT_PG.format(member=_ACTIVE_MEMBER.format(uid="%(uid)s"))

# Submit on SQLite: the same three steps as three statements in one (IMMEDIATE) transaction.
_CLOSE_LEASE = """
UPDATE annotate_assignment SET status = 'submitted', finished_at = %s
WHERE id = %s AND annotator_id = %s AND status = 'leased' AND expires_at > %s{member}
RETURNING item_id, project_id, display_order
"""
CLOSE_LEASE = _CLOSE_LEASE.format(member=_ACTIVE_MEMBER.format(uid="%s"))  # params: now, aid, uid, now, uid

INSERT_ANNOTATION = """
INSERT INTO annotate_annotation
    (project_id, assignment_id, item_id, annotator_id, choice, shown_choice, display_order,
     duration_ms, is_gold, correct, created_at)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s, %s, %s)
RETURNING id
"""

COUNT_DONE = """
UPDATE annotate_item SET done = done + 1 WHERE id = %s
RETURNING done, k, status, is_gold, gold_choice
"""
