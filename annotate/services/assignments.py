"""Leases and answers: next item, submit, skip, undo, heartbeat, expiry.

Hot path. Every write is a conditional UPDATE whose WHERE clause carries the rule it enforces
(``taken < k``, ``status = 'leased' AND expires_at > now``), backed by the constraints in
``annotate/models.py``. On PostgreSQL the next-item claim is ``SELECT … FOR UPDATE SKIP LOCKED``
so concurrent annotators take different rows instead of queueing on the same one; on SQLite the
transaction is ``BEGIN IMMEDIATE`` (settings), i.e. one writer at a time, and the same UPDATEs
and constraints hold.
"""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from annotate import kinds
from annotate.models import Annotation, Assignment, Item
from annotate.selectors import (
    NO_ROLE_MESSAGE,
    NOT_ANNOTATOR_MESSAGE,
    PAUSED_MESSAGE,
    REMOVED_MESSAGE,
    WAITING_CHECKS,
    ItemView,
    image_url,
    item_view,
    item_view_of,
    skipped_checks_for,
    undo_window,
)
from annotate.services import hot_sql as sql
from projects import permissions
from projects.models import PAUSE_REASON_PREFIX, Project, ProjectMembership

_rng = random.SystemRandom()


class AnnotationError(Exception):
    """Base: something the caller did that the rules refuse (mapped to 4xx). ``field``: the
    input field at fault, for a 400 that names it."""

    status = 400
    field: str | None = None


class NotFound(AnnotationError):
    status = 404


class Conflict(AnnotationError):
    """Expired or foreign lease, or a different answer to an already-answered item."""

    status = 409


class InvalidChoice(AnnotationError):
    status = 400
    field = "choice"


class NotAllowed(AnnotationError):
    status = 403


LEASE_EXPIRED = "the lease expired; the item went back to the pool"
FLAGGED_MESSAGE = "Your answers on the check items were below the project's threshold; a researcher has to review them."
WAITING_CHECKS_MESSAGE = WAITING_CHECKS  # the home page says the same (annotate.selectors.serving_for)


def _cfg(key: str) -> Any:
    counterpart: Mapping[str, Any] = settings.COUNTERPART  # a TypedDict: a str key needs this view
    return counterpart[key]


def lease_duration() -> timedelta:
    return timedelta(seconds=int(_cfg("LEASE_SECONDS")))


# --- next item ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Access:
    project_id: int
    task: str
    text_fields: list[str]
    membership_id: int | None
    qualified: bool
    flagged: bool
    paused: bool = False
    role: str = ""  # the membership's role ('' without one)


def project_access(*, project_id: int, annotator: Any) -> Access | None:
    """The project if ``annotator`` may open its annotator pages (member, or researcher/admin),
    in one query. Only an annotator membership is served items (``lease_next``)."""
    row = sql.fetchone_prepared(sql.ACCESS, [annotator.pk, project_id])
    if row is None:
        return None
    pid, task, text_fields, mid, qualified_at, flagged, reason, role, role_held = row
    if mid is not None and not role_held:  # a member without a role any more: as no member
        return None
    if mid is None and not permissions.is_researcher(annotator):
        return None
    paused = bool(flagged) and str(reason or "").startswith(PAUSE_REASON_PREFIX)
    return Access(
        pid,
        task,
        list(sql.json_value(text_fields) or []),
        mid,
        qualified_at is not None,
        bool(flagged),
        paused,
        role or "",
    )


def _member_refusal(*, project_id: int, annotator: Any) -> NotAllowed | None:
    """Why ``annotator`` may not act on ``project_id`` now (its current membership: removed,
    paused or flagged; or no annotator membership at all: a researcher or admin), or None."""
    row = (
        ProjectMembership.objects.filter(project_id=project_id, user_id=annotator.pk)
        .values_list("flagged", "flag_reason", "role")
        .first()
    )
    if row is None:
        return NotAllowed(NOT_ANNOTATOR_MESSAGE if permissions.is_researcher(annotator) else REMOVED_MESSAGE)
    if not permissions.holds_a_role(annotator):
        return NotAllowed(NO_ROLE_MESSAGE)
    flagged, reason, role = row
    if role != permissions.ANNOTATOR:
        return NotAllowed(NOT_ANNOTATOR_MESSAGE)
    if flagged:
        return NotAllowed(PAUSED_MESSAGE if reason.startswith(PAUSE_REASON_PREFIX) else FLAGGED_MESSAGE)
    return None


def _check_member(*, project_id: int, annotator: Any) -> None:
    refusal = _member_refusal(project_id=project_id, annotator=annotator)
    if refusal is not None:
        raise refusal


@dataclass(frozen=True)
class Lease:
    assignment_id: int
    item_id: int
    display_order: list[str]
    expires_at: datetime
    # (kind, side, candidate fields, candidate image, example fields, example image) when the
    # statement that made the lease also read what to show (PostgreSQL)
    shown: tuple[Any, ...] | None = None


def _claim(*, access: Access, annotator_id: int, gold: bool, now: datetime) -> Lease | None:
    """Take one slot of the best open item this annotator has not seen; None if none is left.

    Order: gold items by their random key; other items breadth-first (``taken`` desc: finish
    what others started) then by the random key. Both orders are served by partial indexes
    (``item_next_open``, ``item_next_gold``), so the cost does not grow with the pool.
    """
    kind = kinds.kind_for_task(access.task)
    labels = _labels_for(access.project_id)
    return _backend().claim(
        project_id=access.project_id,
        annotator_id=annotator_id,
        gold=gold,
        orders=(
            kind.display_order(labels, swapped=False),
            kind.display_order(labels, swapped=True),
        ),
        now=now,
        expires=now + lease_duration(),
    )


_LABEL_CACHE: dict[int, list[str]] = {}


def _labels_for(project_id: int) -> list[str]:
    """The project's label names (a project's label set does not change once created)."""
    labels = _LABEL_CACHE.get(project_id)
    if labels is None:
        from projects.models import Label

        labels = list(Label.objects.filter(project_id=project_id).order_by("position").values_list("name", flat=True))
        if labels:
            _LABEL_CACHE[project_id] = labels
    return labels


_last_expiry_check = [0.0]


def _expire_now_and_then(now: datetime) -> None:
    """Return expired leases to the pool; probed at most once a second per process."""
    import time

    t = time.monotonic()
    if t - _last_expiry_check[0] < 1.0:
        return
    _last_expiry_check[0] = t
    assignments_expire(now=now)


def lease_next(*, access: Access, annotator: Any, now: datetime | None = None) -> Lease | None:
    """Lease the next item to ``annotator`` (or renew and return their live lease).

    None when nothing is left for them (the API answers 204). NotAllowed when the caller has no
    annotator membership (a researcher or admin: only annotators' answers count toward k and
    agreement), is paused, flagged, failed qualification or waits for check items.
    """
    now = now or timezone.now()
    if access.membership_id is None or access.role != permissions.ANNOTATOR:
        # a researcher or admin: their answers would count toward k and agreement
        raise NotAllowed(NOT_ANNOTATOR_MESSAGE)
    if access.flagged:
        # Checked before the live lease is renewed: a paused or flagged member keeps nothing.
        raise NotAllowed(PAUSED_MESSAGE if access.paused else FLAGGED_MESSAGE)
    expires = now + lease_duration()
    live = _backend().renew_live(annotator_id=annotator.pk, project_id=access.project_id, now=now, expires=expires)
    if live is not None:
        return live
    _expire_now_and_then(now)
    if not access.qualified and int(_cfg("QUALIFICATION_GOLD")) > 0:
        got = _claim(access=access, annotator_id=annotator.pk, gold=True, now=now)
        if got is None:  # a check item they skipped comes back (issue 32.5): skips never dead-end
            got = _reclaim_skipped_check(access=access, annotator_id=annotator.pk, now=now)
        if got is not None:
            return got
        # No check item left for them: decide on what was answered if the rules allow it.
        from annotate.services.quality import membership_settle_qualification

        membership = ProjectMembership.objects.filter(pk=access.membership_id).first()
        membership = membership_settle_qualification(membership=membership, out_of_gold=True, now=now)
        if membership is None:
            raise NotAllowed(REMOVED_MESSAGE)
        if membership.flagged:
            raise NotAllowed(FLAGGED_MESSAGE)
        if membership.qualified_at is None:
            raise NotAllowed(WAITING_CHECKS_MESSAGE.format(required=int(_cfg("QUALIFICATION_GOLD"))))
    elif float(_cfg("GOLD_RATE")) > 0 and _rng.random() < float(_cfg("GOLD_RATE")):
        got = _claim(access=access, annotator_id=annotator.pk, gold=True, now=now)
        if got is not None:
            return got
    got = _claim(access=access, annotator_id=annotator.pk, gold=False, now=now)
    if got is None and assignments_expire(now=now):
        # The pool looked empty, but some leases had run out: try once more.
        got = _claim(access=access, annotator_id=annotator.pk, gold=False, now=now)
    return got


def _reclaim_skipped_check(*, access: Access, annotator_id: int, now: datetime) -> Lease | None:
    """Lease again the check item this annotator skipped (or let expire) longest ago (``skipped_checks_for``),
    on the same assignment row (one per item and annotator) and in the order they saw it; None
    when they skipped none that is still open. Only while they qualify and only once every
    unseen check item was served: never on the hot path of qualified annotators."""
    expires = now + lease_duration()
    for a in skipped_checks_for(project_id=access.project_id, user_id=annotator_id).values("id", "item_id")[:5]:
        with transaction.atomic():
            if not Item.objects.filter(pk=a["item_id"], status="open", taken__lt=F("k")).update(taken=F("taken") + 1):
                continue
            if not Assignment.objects.filter(pk=a["id"], status__in=("skipped", "expired")).update(
                status="leased", expires_at=expires, finished_at=None, skip_reason=""
            ):
                transaction.set_rollback(True)
                continue
        order = Assignment.objects.filter(pk=a["id"]).values_list("display_order", flat=True).get()
        return Lease(a["id"], a["item_id"], list(order), expires)
    return None


def assignment_next(*, project: Project, annotator: Any, now: datetime | None = None) -> Assignment | None:
    """``lease_next`` for pages and tests: returns the Assignment row (or None)."""
    access = project_access(project_id=project.pk, annotator=annotator)
    if access is None:
        raise NotAllowed("not a project you annotate")
    lease = lease_next(access=access, annotator=annotator, now=now)
    if lease is None:
        return None
    return Assignment.objects.get(pk=lease.assignment_id)


def lease_next_view(*, project: Project, annotator: Any) -> ItemView | None:
    """``lease_next`` for the annotator page: the item view of the lease (or None), built from
    what the lease statement read on PostgreSQL (no further query), from the rows on SQLite."""
    access = project_access(project_id=project.pk, annotator=annotator)
    if access is None:  # a member whose role was taken away is told so, not taken for a stranger
        raise _member_refusal(project_id=project.pk, annotator=annotator) or NotAllowed("not a project you annotate")
    lease = lease_next(access=access, annotator=annotator)
    if lease is None:
        return None
    if lease.shown is None:
        return item_view(assignment=Assignment.objects.get(pk=lease.assignment_id))
    shown = list(lease.shown)
    shown[2], shown[4] = sql.json_value(shown[2]), sql.json_value(shown[4])
    assignment = Assignment(
        pk=lease.assignment_id,
        project_id=project.pk,
        item_id=lease.item_id,
        annotator_id=annotator.pk,
        status="leased",
        display_order=lease.display_order,
        expires_at=lease.expires_at,
    )
    return item_view_of(assignment=assignment, shown=tuple(shown), text_fields=access.text_fields)


def lease_payload(*, lease: Lease, access: Access) -> dict[str, Any]:
    """The API body for a lease (docs/formats.md §4): blind — no labels, no other answers, not even
    whether the item is a check item."""
    row = lease.shown or sql.fetchone(sql.PAYLOAD, [lease.item_id])
    assert row is not None
    kind, side, c_fields, c_image, e_fields, e_image = row
    c_fields, e_fields = sql.json_value(c_fields), sql.json_value(e_fields)
    rules = kinds.kind_named(kind)
    source = kinds.ItemSource(
        side=side,
        text_fields=access.text_fields,
        fields=c_fields,
        image=c_image,
        original_fields=e_fields,
        original_image=e_image,
    )
    item: dict[str, Any] = {
        "id": lease.item_id,
        "kind": kind,
        **rules.body(source, lease.display_order, image_url).as_json(),
    }
    return {
        "assignment": lease.assignment_id,
        "item": item,
        "choices": rules.offered(lease.display_order),
        "expires_at": lease.expires_at.isoformat(),
    }


def lease_next_payload(
    *, project_id: int, annotator: Any, now: datetime | None = None
) -> tuple[dict[str, Any] | None, str]:
    """The next lease for ``annotator`` on ``project_id`` as the API shows it (what next-item
    would answer), for an answer that asks for it (``?next=1``): (lease body, "") — (None, "")
    when nothing is left for them — (None, why) when they may not get another item now
    (removed, paused, flagged, waiting for check items: next-item's 403)."""
    access = project_access(project_id=project_id, annotator=annotator)
    if access is None:
        return None, REMOVED_MESSAGE
    try:
        lease = lease_next(access=access, annotator=annotator, now=now)
    except NotAllowed as exc:
        return None, str(exc)
    return (None if lease is None else lease_payload(lease=lease, access=access)), ""


# --- expiry and heartbeat ------------------------------------------------------------------


def assignments_expire(*, now: datetime | None = None, limit: int = 500) -> int:
    """Give the slots of expired leases back to the pool. Returns how many expired.

    The item's ``taken`` is decremented in the same transaction that moves the assignment
    ``leased → expired``; a submit of the same lease (``… WHERE status = 'leased' AND
    expires_at > now``) can no longer match, so a slot is never both answered and returned.
    """
    now = now or timezone.now()
    base = Assignment.objects.filter(status="leased", expires_at__lte=now)
    if not base.exists():  # the usual case: an index probe, no transaction
        return 0
    with transaction.atomic():
        qs = base.order_by("expires_at")
        if _backend().skip_locked:
            qs = qs.select_for_update(skip_locked=True)
        rows = list(qs.values_list("id", "item_id")[:limit])
        if not rows:
            return 0
        return _expire_rows(rows, now=now, only_run_out=True)


def _expire_rows(rows: list[tuple[int, int]], *, now: datetime, only_run_out: bool = False) -> int:
    """Move the (locked) leases ``rows`` = [(assignment id, item id)] to expired and give their
    slots back, in the caller's transaction (``only_run_out``: leases whose time is up)."""
    ids = [r[0] for r in rows]
    live = Assignment.objects.filter(pk__in=ids, status="leased")
    if only_run_out:
        live = live.filter(expires_at__lte=now)
    moved = live.update(status="expired", finished_at=now)
    if moved != len(ids):  # cannot happen under the row locks / the single writer
        raise IntegrityError("lease expiry raced; rolled back")
    per_item = Counter(r[1] for r in rows)
    by_count: dict[int, list[int]] = {}
    for item_id, c in per_item.items():
        by_count.setdefault(c, []).append(item_id)
    for c, item_ids in by_count.items():
        Item.objects.filter(pk__in=item_ids).update(taken=F("taken") - c)
    return moved


def assignment_heartbeat(*, assignment_id: int, annotator: Any, now: datetime | None = None) -> datetime | None:
    """Extend a live lease; returns the new expiry, or None if the lease is gone. NotAllowed
    when the annotator is no longer an active member of the lease's project."""
    now = now or timezone.now()
    new_expiry = now + lease_duration()
    mine = Assignment.objects.filter(pk=assignment_id, annotator=annotator)
    project_id = mine.values_list("project_id", flat=True).first()
    if project_id is None:
        return None
    _check_member(project_id=project_id, annotator=annotator)
    n = mine.filter(status="leased", expires_at__gt=now).update(expires_at=new_expiry)
    return new_expiry if n else None


def assignments_release_for(project_id: int, user_id: int) -> int:
    """Give back at once every live lease ``user_id`` holds on ``project_id`` (the member was
    removed or paused). Registered with ``projects.services.memberships``; runs inside its
    transaction. Returns how many were released."""
    now = timezone.now()
    with transaction.atomic():
        qs = Assignment.objects.filter(project_id=project_id, annotator_id=user_id, status="leased").order_by("id")
        rows = list(qs.select_for_update().values_list("id", "item_id"))
        if not rows:
            return 0
        return _expire_rows(rows, now=now)


# --- submit, skip, undo --------------------------------------------------------------------


def _own_assignment(assignment_id: int, annotator: Any) -> Assignment:
    a = Assignment.objects.select_related("item").filter(pk=assignment_id).first()
    if a is None:
        raise NotFound("no such assignment")
    if a.annotator_id != annotator.pk:
        raise Conflict("this lease belongs to someone else")
    return a


@dataclass(frozen=True)
class SubmitResult:
    annotation_id: int
    assignment_id: int
    item_id: int
    shown_choice: str
    choice: str
    duration_ms: int | None
    created_at: datetime
    created: bool
    project_id: int = 0
    item_open: bool = True  # the item is still open after this answer (not aggregated by it): undo may work

    def as_annotation(self) -> Annotation:
        """The stored answer as an (unsaved-looking) row for display: no query."""
        return Annotation(
            pk=self.annotation_id,
            assignment_id=self.assignment_id,
            item_id=self.item_id,
            shown_choice=self.shown_choice,
            choice=self.choice,
            duration_ms=self.duration_ms,
            created_at=self.created_at,
        )

    @property
    def annotation(self) -> Annotation:
        return Annotation.objects.get(pk=self.annotation_id)

    def as_json(self) -> dict[str, Any]:
        return {
            "id": self.annotation_id,
            "assignment": self.assignment_id,
            "item": self.item_id,
            "choice": self.shown_choice,
            "canonical_choice": self.choice,
            "duration_ms": self.duration_ms,
            "created_at": self.created_at.isoformat(),
        }


ECHO_CHARS = 80


def _echo(choice: str) -> str:
    """``choice`` as an error message quotes it: at most ``ECHO_CHARS`` characters, then "…"."""
    return repr(choice if len(choice) <= ECHO_CHARS else choice[:ECHO_CHARS] + "…")


def _canonical(order: list[str], choice: str) -> str:
    """The canonical answer for ``choice`` pressed on a lease with this display order; a choice
    that was not offered is InvalidChoice (the item kind validates it)."""
    kind = kinds.kind_of_order(order)
    canonical = kind.to_canonical(order, choice)
    if canonical is None:
        raise InvalidChoice(f"{_echo(choice)} is not one of the offered choices: {', '.join(kind.offered(order))}")
    return canonical


def _after_answer(
    *,
    item_id: int,
    project_id: int,
    annotator: Any,
    done: int,
    k: int,
    status: str,
    is_gold: bool,
    correct: bool | None,
    now: datetime,
) -> bool:
    """Record a check answer, or aggregate the item if this answer completed it. Returns
    whether the item is still open afterwards."""
    from annotate.services import quality

    if is_gold:
        quality.membership_record_gold(project_id=project_id, annotator=annotator, correct=bool(correct), now=now)
    elif done >= k and status == "open":
        with transaction.atomic():
            return quality.item_complete_if_ready(item_id=item_id, now=now) != "complete"
    return status == "open"


# --- one backend object per database vendor -------------------------------------------------
# The claim, the renewal of a live lease, the submit and the expiry's row locking differ by
# vendor (see ``hot_sql``); the choice is made once, in ``_backend()``.


class _PostgresPath:
    """One prepared statement per step (data-modifying CTEs, ``FOR UPDATE SKIP LOCKED``)."""

    skip_locked = True

    def claim(
        self,
        *,
        project_id: int,
        annotator_id: int,
        gold: bool,
        orders: tuple[list[str], list[str]],
        now: datetime,
        expires: datetime,
    ) -> Lease | None:
        """``orders``: the display order as drawn unswapped and swapped; the statement picks one
        by ``choices.caption_swapped`` of (item, annotator), computed in SQL."""
        # one statement: atomic by itself, no BEGIN/COMMIT round trips
        params = {
            "pid": project_id,
            "uid": annotator_id,
            "order": sql.json_param(orders[0]),
            "order_swapped": sql.json_param(orders[1]),
            "now": sql.dt(now),
            "expires": sql.dt(expires),
        }
        row = sql.fetchone_prepared(sql.CLAIM_PG.format(pick=sql.pick_sql(gold=gold, lock=True)), params)
        if row is None:
            return None
        return Lease(row[0], row[1], list(sql.json_value(row[2])), expires, tuple(row[3:9]))

    def renew_live(self, *, annotator_id: int, project_id: int, now: datetime, expires: datetime) -> Lease | None:
        live = sql.fetchone_prepared(sql.RENEW_LIVE_PG, [sql.dt(expires), annotator_id, project_id, sql.dt(now)])
        if live is None:
            return None
        return Lease(live[0], live[1], list(sql.json_value(live[2])), expires, tuple(live[3:9]))

    def submit(
        self,
        *,
        assignment_id: int,
        annotator: Any,
        choice: str,
        duration_ms: int | None,
        now: datetime,
    ) -> SubmitResult | None:
        """Two round trips: read the lease's choice order (to map the choice back), then one
        statement that closes the lease, counts and stores the answer. None: not a live lease."""
        row = sql.fetchone_prepared(sql.LEASE_ORDER, [assignment_id, annotator.pk])
        if row is None:
            return None
        canonical = _canonical(list(sql.json_value(row[0])), choice)
        params = {
            "now": sql.dt(now),
            "aid": assignment_id,
            "uid": annotator.pk,
            "choice": canonical,
            "shown": choice,
            "duration": duration_ms,
        }
        out = sql.fetchone_prepared(sql.SUBMIT_PG, params)
        if out is None:
            return None
        ann_id, item_id, done, k, status, is_gold, project_id, gold_choice = out
        correct = (canonical == gold_choice) if is_gold else None
        still_open = _after_answer(
            item_id=item_id,
            project_id=project_id,
            annotator=annotator,
            done=done,
            k=k,
            status=status,
            is_gold=bool(is_gold),
            correct=correct,
            now=now,
        )
        return SubmitResult(
            ann_id, assignment_id, item_id, choice, canonical, duration_ms, now, True, project_id, still_open
        )


class _SqlitePath:
    """The same steps as separate statements in one ``BEGIN IMMEDIATE`` transaction (a single
    writer; no data-modifying CTEs)."""

    skip_locked = False

    def claim(
        self,
        *,
        project_id: int,
        annotator_id: int,
        gold: bool,
        orders: tuple[list[str], list[str]],
        now: datetime,
        expires: datetime,
    ) -> Lease | None:
        with transaction.atomic():
            picked = sql.fetchone(sql.pick_sql(gold=gold, lock=False), {"pid": project_id, "uid": annotator_id})
            if picked is None or picked[0] is None:
                return None
            # The WHERE clause is the guarantee; the CHECK (taken <= k) is the backstop.
            if not sql.execute(sql.BUMP_SQLITE, [picked[0]]):
                return None
            order = orders[1] if kinds.caption_swapped(picked[0], annotator_id) else orders[0]
            row = sql.fetchone(
                sql.INSERT_LEASE_SQLITE,
                [project_id, picked[0], annotator_id, sql.json_param(order), sql.dt(now), sql.dt(expires)],
            )
            assert row is not None
            return Lease(row[0], picked[0], order, expires)

    def renew_live(self, *, annotator_id: int, project_id: int, now: datetime, expires: datetime) -> Lease | None:
        live = sql.fetchone(sql.RENEW_LIVE, [sql.dt(expires), annotator_id, project_id, sql.dt(now)])
        if live is None:
            return None
        return Lease(live[0], live[1], list(sql.json_value(live[2])), expires)

    def submit(
        self,
        *,
        assignment_id: int,
        annotator: Any,
        choice: str,
        duration_ms: int | None,
        now: datetime,
    ) -> SubmitResult | None:
        with transaction.atomic():
            row = sql.fetchone(sql.CLOSE_LEASE, [sql.dt(now), assignment_id, annotator.pk, sql.dt(now), annotator.pk])
            if row is None:
                return None  # not a live lease of this annotator
            item_id, project_id, order = row[0], row[1], list(sql.json_value(row[2]))
            canonical = _canonical(order, choice)  # raising here rolls the lease change back
            counted = sql.fetchone(sql.COUNT_DONE, [item_id])
            assert counted is not None
            done, k, status, is_gold, gold_choice = counted
            correct = (canonical == gold_choice) if is_gold else None
            created = sql.fetchone(
                sql.INSERT_ANNOTATION,
                [
                    project_id,
                    assignment_id,
                    item_id,
                    annotator.pk,
                    canonical,
                    choice,
                    sql.json_param(order),
                    duration_ms,
                    bool(is_gold),
                    correct,
                    sql.dt(now),
                ],
            )
            assert created is not None
            still_open = _after_answer(
                item_id=item_id,
                project_id=project_id,
                annotator=annotator,
                done=done,
                k=k,
                status=status,
                is_gold=bool(is_gold),
                correct=correct,
                now=now,
            )
            return SubmitResult(
                created[0], assignment_id, item_id, choice, canonical, duration_ms, now, True, project_id, still_open
            )


_POSTGRES, _SQLITE = _PostgresPath(), _SqlitePath()


def _backend() -> _PostgresPath | _SqlitePath:
    return _POSTGRES if sql.is_postgres() else _SQLITE


def annotation_submit(
    *,
    assignment_id: int,
    annotator: Any,
    choice: str,
    duration_ms: int | None = None,
    now: datetime | None = None,
) -> SubmitResult:
    """Record ``annotator``'s answer on their lease. A repeat of the same answer returns the
    stored one (``created=False``); an expired or foreign lease is a Conflict; a choice that
    was not offered is InvalidChoice (and nothing is written); an annotator who is no longer an
    active member (removed, paused, flagged), or anyone without an annotator membership (a
    researcher, an admin), is NotAllowed, and the answer does not count (the membership
    condition is in the statement that closes the lease). Completing an item aggregates
    it in the same transaction."""
    now = now or timezone.now()
    done = _backend().submit(
        assignment_id=assignment_id, annotator=annotator, choice=choice, duration_ms=duration_ms, now=now
    )
    if done is not None:
        return done
    # Not a live lease of an active member: say why (and answer a repeat with the stored
    # annotation). A removed, paused or flagged member is refused, whatever the lease.
    a = _own_assignment(assignment_id, annotator)
    _check_member(project_id=a.project_id, annotator=annotator)
    order = list(a.display_order)
    if kinds.kind_of_order(order).to_canonical(order, choice) is None:
        raise InvalidChoice(f"{_echo(choice)} is not one of the offered choices")
    if a.status == "submitted":
        return _repeat(a, choice)
    if a.status == "leased":
        raise Conflict(LEASE_EXPIRED)
    raise Conflict(f"this lease was {a.status}")


def _repeat(a: Assignment, choice: str) -> SubmitResult:
    existing = Annotation.objects.filter(assignment=a).first()
    if existing is None:  # submitted without an answer cannot happen; be explicit anyway
        raise Conflict("this lease is closed")
    if existing.shown_choice != choice:
        raise Conflict("this item was already answered differently; undo it first")
    return SubmitResult(
        existing.pk,
        a.pk,
        existing.item_id,
        existing.shown_choice,
        existing.choice,
        existing.duration_ms,
        existing.created_at,
        False,
        a.project_id,
        a.item.status == "open",
    )


def assignment_skip(*, assignment_id: int, annotator: Any, reason: str = "", now: datetime | None = None) -> Assignment:
    """Release a lease without answering (the annotator will not see the item again). A lease
    whose time is up is a Conflict, as an answer to it is, whether or not the expiry sweep has
    moved it to ``expired`` yet (its slot goes, or went, back to the pool by expiry, once). A
    repeat of the same skip returns the skipped lease."""
    now = now or timezone.now()
    a = _own_assignment(assignment_id, annotator)
    _check_member(project_id=a.project_id, annotator=annotator)
    if a.status == "skipped":
        return a
    with transaction.atomic():
        moved = Assignment.objects.filter(pk=a.pk, status="leased", expires_at__gt=now).update(
            status="skipped", finished_at=now, skip_reason=reason[:300]
        )
        if not moved:
            a.refresh_from_db()
            if a.status == "skipped":
                return a
            if a.status == "leased":
                raise Conflict(LEASE_EXPIRED)
            raise Conflict(f"this lease was {a.status}")
        Item.objects.filter(pk=a.item_id).update(taken=F("taken") - 1)
    a.refresh_from_db()
    return a


def annotation_undo(*, assignment_id: int, annotator: Any, now: datetime | None = None) -> Assignment:
    """Take back an answer: allowed while its item is still open (not aggregated) and within
    ``UNDO_SECONDS`` of answering. The assignment becomes a live lease again (same slot)."""
    now = now or timezone.now()
    a = _own_assignment(assignment_id, annotator)
    _check_member(project_id=a.project_id, annotator=annotator)
    annotation = Annotation.objects.filter(assignment=a).first()
    if a.status != "submitted" or annotation is None:
        raise Conflict("there is no answer to undo")
    if now - annotation.created_at > undo_window():
        raise Conflict("the undo window has passed")
    with transaction.atomic():
        # Lock the item row first (conditional on still being open), so aggregation cannot
        # complete it underneath us.
        if not Item.objects.filter(pk=a.item_id, status="open", done__gt=0).update(done=F("done") - 1):
            raise Conflict("this item has been aggregated; its answers can no longer change")
        deleted, _ = Annotation.objects.filter(pk=annotation.pk).delete()
        if not deleted:
            raise Conflict("there is no answer to undo")
        if not Assignment.objects.filter(pk=a.pk, status="submitted").update(
            status="leased", finished_at=None, expires_at=now + lease_duration()
        ):
            raise Conflict("there is no answer to undo")
        if annotation.is_gold:
            from annotate.services import quality

            quality.membership_unrecord_gold(
                project_id=a.project_id,
                annotator=annotator,
                correct=bool(annotation.correct),
                answered_at=annotation.created_at,
            )
    a.refresh_from_db()
    return a
