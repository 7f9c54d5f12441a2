"""The one background-job mechanism.

Every long operation (generation, training h, auto-labelling, routing, large exports, later
evaluation) is a :class:`projects.models.Job` row plus one Celery task,
``projects.tasks.job_execute_task``, that looks up the job's *kind* in a registry filled by
each app in ``AppConfig.ready()`` (so this kernel imports no other app). The task takes the
job id and calls :func:`job_execute`, which

1. **claims** the job with one conditional UPDATE (queued, or running with a stale
   heartbeat — its executor died) and a fresh ``token``; an execution that cannot claim
   returns at once, so a duplicate message is harmless;
2. keeps ``heartbeat_at`` fresh from a background thread while the kind's handler runs, and
   lets the handler report ``done``/``total`` through :class:`JobContext`;
3. records the outcome: ``succeeded`` with the handler's result summary, ``failed`` with a
   clear message (never a silent success), or ``cancelled``.

A worker killed outright (SIGKILL of the main process and its pool) leaves the job
``running`` with a heartbeat that stops moving. :func:`jobs_sweep` — run every
``JOB_SWEEP_SECONDS`` by celery beat, and by every worker when it starts and again once
``JOB_STALE_SECONDS`` have passed (so recovery does not need beat) — re-enqueues every job
whose heartbeat is older than ``JOB_STALE_SECONDS``; the new execution claims it and the
handler resumes from what was committed (generation runs continue after their cursor). The
message of the killed execution may be redelivered later by the broker; it finds the job
finished or owned and does nothing.

**Per-project serialization.** Kinds registered ``exclusive`` (those that change a project's
candidates: generation, route, train, autolabel, import — :data:`EXCLUSIVE_KINDS`) run one at
a time per project. The claim of such a job locks the project row (``SELECT … FOR UPDATE``;
SQLite's ``IMMEDIATE`` transactions serialize it there) and looks for another exclusive job of
the project that is ``running``; if there is one, the job stays ``queued``, records
``result["waiting_behind"]`` (the page says "waiting behind job #N") and its message is sent
again after :func:`job_wait_seconds`. A running job with a stale heartbeat still holds its
project: it is resumed by the sweep, never overtaken.

**Errors.** A handler's :class:`JobFailed` message is shown as written. Any other exception is
logged with its traceback under a reference, and the job shows only "an internal error
stopped the job (logged as job-N-…)": never raw database text.

Enqueueing happens after the transaction commits (:func:`job_start`). When the broker cannot
be reached the job is marked failed with a clear message and :class:`BrokerUnavailable` is
raised, which pages and APIs answer with 503 — the job never runs inside the web request.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import connection, transaction
from django.db.models import Case, F, Q, QuerySet, When
from django.db.models.functions import Coalesce
from django.utils import timezone

from projects.aggregates import project_stats_mark_stale, project_stats_recompute
from projects.models import JOB_ACTIVE, JOB_KINDS, Job, Project
from projects.selectors import job_waiting_behind

logger = logging.getLogger(__name__)


class BrokerUnavailable(RuntimeError):
    """The task broker could not be reached; the job was marked failed."""


class JobCancelled(Exception):
    """Raised inside a handler (by :meth:`JobContext.check_cancelled`) to stop cleanly."""


def stop_if_cancelled(should_stop: Callable[[], bool] | None) -> None:
    """A cancel point inside a service that a job's handler passed its cancel check to
    (``should_stop=ctx.cancel_requested``): raises :class:`JobCancelled` when it answers true."""
    if should_stop is not None and should_stop():
        raise JobCancelled()


class JobFailed(Exception):
    """A handler's clear, user-facing failure (no traceback is shown for it)."""


class JobSuperseded(Exception):
    """Another execution owns the job now (this one was presumed dead); stop quietly."""


Handler = Callable[[Job, "JobContext"], dict[str, Any]]
# Called with (job id, final status) once a job has ended, wherever it ended: run to its end,
# cancelled while queued, refused by a down broker, cancelled while its executor was dead.
EndHook = Callable[[int, str], None]
STEP_WRITE_SECONDS = 0.5  # a step's progress is written at most this often (the page polls every 1 s)


@dataclass(frozen=True)
class JobKind:
    name: str
    queue: str
    handler: Handler
    time_limit: int | None = None
    exclusive: bool = False
    on_end: EndHook | None = None


_KINDS: dict[str, JobKind] = {}

#: Kinds that change a project's candidates: one of them at a time per project (the default of
#: ``job_kind_register(exclusive=...)``).
EXCLUSIVE_KINDS = frozenset({"generation", "route", "train", "autolabel", "import"})
#: Kinds that write candidates: their project's aggregates are recounted when they end.
RECOUNT_KINDS = frozenset({"generation", "route", "autolabel", "import"})


def job_kind_register(
    *,
    name: str,
    queue: str,
    handler: Handler,
    time_limit: int | None = None,
    exclusive: bool | None = None,
    on_end: EndHook | None = None,
) -> None:
    """Called from an app's ``AppConfig.ready()``: ``name`` must be one of ``JOB_KINDS``.
    ``exclusive`` (default: ``name in EXCLUSIVE_KINDS``): jobs of this kind run one at a time
    per project, together with every other exclusive kind. ``on_end(job_id, status)``
    (optional) cleans up after a job of this kind has ended."""
    if name not in JOB_KINDS:
        raise ValueError(f"unknown job kind {name!r}; add it to projects.models.JOB_KINDS")
    exclusive = name in EXCLUSIVE_KINDS if exclusive is None else exclusive
    _KINDS[name] = JobKind(
        name=name, queue=queue, handler=handler, time_limit=time_limit, exclusive=exclusive, on_end=on_end
    )


def _exclusive_kinds() -> list[str]:
    return sorted(k.name for k in _KINDS.values() if k.exclusive)


def job_kind(name: str) -> JobKind:
    try:
        return _KINDS[name]
    except KeyError:
        raise LookupError(f"no handler registered for job kind {name!r}") from None


def _cfg(key: str) -> Any:
    counterpart: Mapping[str, Any] = settings.COUNTERPART  # a TypedDict: a str key needs this view
    return counterpart[key]


# ---------------------------------------------------------------------------------------
# create / enqueue / cancel
# ---------------------------------------------------------------------------------------
def job_create(
    *,
    kind: str,
    project: Project | None,
    params: dict[str, Any] | None = None,
    created_by: Any = None,
    total: int = 0,
) -> Job:
    job_kind(kind)  # refuse a kind nobody handles
    user = created_by if getattr(created_by, "is_authenticated", False) else None
    return Job.objects.create(kind=kind, project=project, params=dict(params or {}), created_by=user, total=total)


def job_wait_seconds() -> float:
    """How long a job waiting behind another of its project waits before it tries again:
    short enough that a waiting job is never shown as stalled (a third of the stale
    threshold), at most 10 s."""
    return max(1.0, min(10.0, float(_cfg("JOB_STALE_SECONDS")) / 3))


# The Celery task that runs a job (``projects/tasks.py``, registered at start-up by
# ``projects.apps``). This module finds it by this name in the Celery app's registry rather than
# importing the tasks module, which imports this one: the dependency goes one way.
JOB_TASK = "projects.tasks.job_execute_task"


def _job_task() -> Any:
    from celery import current_app

    return current_app.tasks[JOB_TASK]


def job_enqueue(*, job_id: int, countdown: float | None = None, fail: bool = True) -> None:
    """Send the job's message now (callers use :func:`job_start`, which does it on commit),
    or after ``countdown`` seconds. A broker that cannot be reached marks the job failed
    (unless not ``fail``: a message sent again, the first may still be queued) and raises
    ``BrokerUnavailable``."""
    job_execute_task = _job_task()
    job = Job.objects.get(pk=job_id)
    kind = job_kind(job.kind)
    options: dict[str, Any] = {"queue": kind.queue}
    if countdown:
        options["countdown"] = countdown
    if kind.time_limit:
        options.update(time_limit=kind.time_limit, soft_time_limit=max(kind.time_limit - 60, 1))
    Job.objects.filter(pk=job_id).update(enqueued_at=timezone.now())
    try:
        try:
            job_execute_task.apply_async(args=[job_id], **options)
        except _declare_race():
            # the embedded SQL broker: another process (a worker starting) created the queue's
            # row between this one's look-up and insert; the row is there now, send again
            job_execute_task.apply_async(args=[job_id], **options)
    except _broker_errors() as exc:
        message = f"could not enqueue the job: the task broker is unreachable ({type(exc).__name__})"
        logger.error("job %s: %s: %s", job_id, message, exc)
        if fail and Job.objects.filter(pk=job_id, status="queued").update(
            status="failed", error=message, finished_at=timezone.now()
        ):
            _ended(job_id, "failed")
        raise BrokerUnavailable(message) from exc


def job_queues() -> list[str]:
    """Every queue a task is sent to: each registered kind's, each periodic task's
    (``CELERY_BEAT_SCHEDULE``) and Celery's default (``CELERY_TASK_DEFAULT_QUEUE``)."""
    schedule: dict[str, dict[str, Any]] = settings.CELERY_BEAT_SCHEDULE
    beat = {entry.get("options", {}).get("queue") for entry in schedule.values()}
    kinds = {k.queue for k in _KINDS.values()}
    return sorted(kinds | {q for q in beat if q} | {settings.CELERY_TASK_DEFAULT_QUEUE})


def job_queues_declare() -> list[str]:
    """Declare every queue of :func:`job_queues` in the broker, from this one process, and return
    their names. On the embedded SQL broker a queue is a row that the first process to use it
    inserts, and two processes inserting it at once race on its unique name (a worker starting
    while the web app sends its first job). ``scripts/run.sh`` and ``scripts/workers.sh`` declare
    them all before they start any worker or the web app, so no process inserts one after.
    Raises ``BrokerUnavailable`` when the broker cannot be reached."""
    from celery import current_app

    names = job_queues()
    try:
        with current_app.connection_for_write() as conn:
            conn.ensure_connection(max_retries=1)
            channel = conn.default_channel
            for name in names:
                current_app.amqp.queues[name].bind(channel).declare()
    except _broker_errors() as exc:
        raise BrokerUnavailable(
            f"could not declare the job queues: the task broker is unreachable ({type(exc).__name__})"
        ) from exc
    return names


def _declare_race() -> tuple[type[BaseException], ...]:
    """What the embedded SQL broker (kombu's sqlalchemy transport) raises when two processes
    declare the same queue at once: the unique queue name's IntegrityError."""
    try:
        from sqlalchemy.exc import IntegrityError
    except ImportError:  # pragma: no cover - no SQL broker installed
        return ()
    return (IntegrityError,)


def _broker_errors() -> tuple[type[BaseException], ...]:
    from kombu.exceptions import OperationalError as KombuOperationalError

    return (KombuOperationalError, ConnectionError, OSError, TimeoutError)


def job_start(
    *,
    kind: str,
    project: Project | None,
    params: dict[str, Any] | None = None,
    created_by: Any = None,
    total: int = 0,
) -> Job:
    """Create a job and enqueue it once the surrounding transaction commits. The same start
    again (kind, project, parameters and user) within :data:`DOUBLE_SUBMIT_SECONDS`, while the
    first job is still queued or running, is a double submit: it returns that job, and nothing
    new is created or sent."""
    with transaction.atomic():
        if project is not None:
            earlier = _double_submit(kind=kind, project=project, params=params or {}, created_by=created_by)
            if earlier is not None:
                return earlier
        job = job_create(kind=kind, project=project, params=params, created_by=created_by, total=total)
        job_id = job.pk
        transaction.on_commit(lambda: job_enqueue(job_id=job_id))
    job.refresh_from_db()
    return job


#: A second identical start within this many seconds is a double submit (:func:`job_start`).
DOUBLE_SUBMIT_SECONDS = 10.0


def jobs_just_started(*, kind: str, project: Project, created_by: Any) -> QuerySet[Job]:
    """The ``kind`` jobs ``created_by`` started on ``project`` in the last
    :data:`DOUBLE_SUBMIT_SECONDS` that have not ended, newest first: where a double submit
    (a double click, a client that sent its request twice) finds the first start. Locks the
    project's row first (SQLite's ``IMMEDIATE`` transaction serializes there), so two requests
    at once see each other's job; call it inside the transaction that creates the new one."""
    list(Project.objects.select_for_update().filter(pk=project.pk).values_list("pk", flat=True))
    user = created_by if getattr(created_by, "is_authenticated", False) else None
    since = timezone.now() - timedelta(seconds=DOUBLE_SUBMIT_SECONDS)
    return Job.objects.filter(
        kind=kind, project=project, created_by=user, status__in=JOB_ACTIVE, created_at__gte=since
    ).order_by("-pk")


def _double_submit(*, kind: str, project: Project, params: dict[str, Any], created_by: Any) -> Job | None:
    """The job that an identical start created moments ago and that has not ended, if any."""
    wanted = _jsonable(params)
    recent = jobs_just_started(kind=kind, project=project, created_by=created_by)
    return next((job for job in recent if job.params == wanted), None)


def job_cancel(*, job: Job) -> Job:
    """A queued job is cancelled at once; a running one is asked to stop (its handler checks
    between steps). A finished job is left as it is."""
    now = timezone.now()
    with transaction.atomic():
        was_queued = Job.objects.filter(pk=job.pk, status="queued").update(
            cancel_requested=True, status="cancelled", finished_at=now
        )
        Job.objects.filter(pk=job.pk, status="running").update(cancel_requested=True)
    if was_queued:
        _ended(job.pk, "cancelled")
    job.refresh_from_db()
    return job


# ---------------------------------------------------------------------------------------
# execute
# ---------------------------------------------------------------------------------------
@dataclass
class JobContext:
    """What a handler gets besides the job: progress, cancellation and ownership checks."""

    job_id: int
    token: str
    _last: dict[str, Any] = field(default_factory=dict)
    #: the handler saw the cancel (``cancel_requested`` answered True): it stopped early, so a
    #: normal return ends the job ``cancelled``; a handler that never saw it finished its work
    cancel_seen: bool = False

    def owned(self) -> Any:
        return Job.objects.filter(pk=self.job_id, token=self.token, status="running")

    def progress(self, done: int, total: int | None = None) -> None:
        values: dict[str, Any] = {"done": max(0, int(done)), "heartbeat_at": timezone.now()}
        if total is not None:
            values["total"] = max(0, int(total))
        if not self.owned().update(**values):
            raise JobSuperseded(f"job {self.job_id} is no longer owned by this execution")

    def step(
        self, name: str, *, index: int, count: int, total: int = 0, unit: str = "", plan: Sequence[str] = ()
    ) -> None:
        """Start step ``index`` (1-based) of ``count``: the job's ``done``/``total`` count steps
        (``index - 1`` of ``count`` done) and ``Job.step`` the work inside this one, which
        :meth:`step_progress` advances; the ETA is this step's rate (``job_progress``).
        ``plan``: the names of all ``count`` steps, so the box lists every one (issue 32.6).
        ``total`` is fixed when the step starts: give the exact count, it never grows."""
        now = timezone.now()
        info: dict[str, Any] = {
            "name": name,
            "index": index,
            "count": count,
            "done": 0,
            "total": max(0, int(total)),
            "unit": unit,
            "started_at": now.isoformat(),
        }
        if plan:
            info["plan"] = [str(n) for n in plan]
        self._last["step"] = info
        self._last["step_written"] = now
        values = {"done": max(0, index - 1), "total": count, "step": info, "heartbeat_at": now}
        if not self.owned().update(**values):
            raise JobSuperseded(f"job {self.job_id} is no longer owned by this execution")

    def step_progress(self, done: int, total: int | None = None) -> None:
        """``done`` units of the current step (``total``: changed). Written at most every
        ``STEP_WRITE_SECONDS`` and always at the end of the step."""
        info = self._last.get("step")
        if info is None:
            return
        info["done"] = max(0, int(done))
        if total is not None:
            info["total"] = max(0, int(total))
        now = timezone.now()
        last = self._last.get("step_written")
        if done < info["total"] and last is not None and (now - last).total_seconds() < STEP_WRITE_SECONDS:
            return
        self._last["step_written"] = now
        if not self.owned().update(step=dict(info), heartbeat_at=now):
            raise JobSuperseded(f"job {self.job_id} is no longer owned by this execution")

    def flush(self) -> None:
        """Write the current step's last progress (``step_progress`` writes at most every
        ``STEP_WRITE_SECONDS``): a job that ends shows where it got to."""
        info = self._last.get("step")
        if info is not None:
            self.owned().update(step=dict(info))

    def cancel_requested(self) -> bool:
        if Job.objects.filter(pk=self.job_id, cancel_requested=True).exists():
            self.cancel_seen = True
        return self.cancel_seen

    def check_cancelled(self) -> None:
        stop_if_cancelled(self.cancel_requested)


class _Heartbeat:
    """Refreshes ``heartbeat_at`` every ``JOB_HEARTBEAT_SECONDS`` from a daemon thread while
    a handler runs (a long training step reports no progress, but its worker is alive)."""

    def __init__(self, job_id: int, token: str, interval: float) -> None:
        self.job_id, self.token, self.interval = job_id, token, interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name=f"job-{job_id}-heartbeat", daemon=True)

    def _loop(self) -> None:
        try:
            while not self._stop.wait(self.interval):
                try:
                    Job.objects.filter(pk=self.job_id, token=self.token, status="running").update(
                        heartbeat_at=timezone.now()
                    )
                except Exception:
                    logger.warning("job %s: heartbeat failed", self.job_id, exc_info=True)
        finally:
            connection.close()

    def __enter__(self) -> _Heartbeat:
        if self.interval > 0:
            self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)


def _claim(job_id: int, *, take_over: bool) -> str | None:
    """A fresh token if this execution now owns the job, else None (finished, cancelled,
    owned by a live execution, or waiting behind another job of its project)."""
    row = Job.objects.filter(pk=job_id).values_list("kind", "project_id", "status").first()
    if row is None:
        return None
    kind, project_id, status = row
    if status == "queued" and project_id is not None and kind in _exclusive_kinds():
        with transaction.atomic():
            # The project's row lock serializes the claims of its exclusive jobs (on SQLite the
            # IMMEDIATE transaction does): the check below and the UPDATE see the same world.
            list(Project.objects.select_for_update().filter(pk=project_id).values_list("pk", flat=True))
            blocker = (
                Job.objects.filter(project_id=project_id, status="running", kind__in=_exclusive_kinds())
                .exclude(pk=job_id)
                .order_by("pk")
                .values_list("pk", flat=True)
                .first()
            )
            if blocker is not None:
                Job.objects.filter(pk=job_id, status="queued").update(result={"waiting_behind": blocker})
                return None
            return _claim_row(job_id, take_over=take_over)
    return _claim_row(job_id, take_over=take_over)


def _claim_row(job_id: int, *, take_over: bool) -> str | None:
    now = timezone.now()
    stale = now - timedelta(seconds=float(_cfg("JOB_STALE_SECONDS")))
    token = uuid.uuid4().hex
    dead = Q(heartbeat_at__lt=stale) | Q(heartbeat_at__isnull=True)
    claimable = Q(status="queued") | Q(status="running") & (Q() if take_over else dead)
    n = Job.objects.filter(claimable, pk=job_id).update(
        status="running",
        result={},
        token=token,
        heartbeat_at=now,
        attempts=F("attempts") + 1,
        started_at=Coalesce(F("started_at"), now),
    )
    return token if n else None


def _finish(job_id: int, token: str, status: str, *, error: str = "", result: dict[str, Any] | None = None) -> None:
    values: dict[str, Any] = {"status": status, "error": error[:5000], "finished_at": timezone.now()}
    if status == "succeeded":  # a job counted in steps wrote ``done`` as each began: all are done now
        values["done"] = Case(When(step__has_key="count", then=F("total")), default=F("done"))
    if result is not None:
        values["result"] = result
    if Job.objects.filter(pk=job_id, token=token, status="running").update(**values):
        _ended(job_id, status)


def _ended(job_id: int, status: str) -> None:
    """Run the kind's ``on_end`` hook for a job that has just ended. A failing hook is logged
    (the job's outcome stands; hooks are written to be run again safely)."""
    name, project_id = Job.objects.filter(pk=job_id).values_list("kind", "project_id").first() or ("", None)
    kind = _KINDS.get(name)
    if kind is None:
        return
    if kind.on_end is not None:
        try:
            kind.on_end(job_id, status)
        except Exception:
            logger.exception("job %s: the end hook of kind %s failed", job_id, kind.name)
    if kind.name in RECOUNT_KINDS and project_id is not None:
        _stats_recompute(job_id, project_id)


def _stats_recompute(job_id: int, project_id: int) -> None:
    """The end of a job that changes a project's candidates: recount the project's aggregates
    (``projects/aggregates.py``; its batches kept them incrementally, this makes them exact
    whatever happened in between). On failure the aggregates are marked stale instead, so the
    next read recounts them."""
    try:
        project_stats_recompute(project_id=project_id)
    except Exception:
        logger.exception("job %s: recounting project %s's aggregates failed; marked stale", job_id, project_id)
        project_stats_mark_stale(project_id=project_id)


def job_execute(*, job_id: int, handler: Handler | None = None, take_over: bool = False) -> Job:
    """Run (or resume) a job in this process. Safe to call for any job at any time: a job
    that is finished, or owned by a live execution, is returned untouched — unless
    ``take_over`` (a person said its executor is dead: ``generate --resume``). ``handler``
    replaces the kind's registered one (a foreground command passing a progress bar)."""
    cancelled_while_queued = Job.objects.filter(pk=job_id, status="queued", cancel_requested=True).update(
        status="cancelled", finished_at=timezone.now()
    )
    if cancelled_while_queued:
        _ended(job_id, "cancelled")
        return Job.objects.get(pk=job_id)
    token = _claim(job_id, take_over=take_over)
    if token is None:
        return Job.objects.get(pk=job_id)  # see job_waiting_behind: the caller may try later
    job = Job.objects.select_related("project", "created_by").get(pk=job_id)
    if job.cancel_requested:  # asked to stop while its last executor was dead
        _finish(job_id, token, "cancelled")
        return Job.objects.get(pk=job_id)
    if job.attempts > 1:
        logger.info("resuming %s job %s (attempt %s)", job.kind, job_id, job.attempts)
    ctx = JobContext(job_id=job_id, token=token)
    interval = float(_cfg("JOB_HEARTBEAT_SECONDS")) if _cfg("JOB_HEARTBEAT_THREAD") else 0.0
    with _Heartbeat(job_id, token, interval):
        try:
            result = (handler or job_kind(job.kind).handler)(job, ctx)
        except JobSuperseded as exc:
            logger.warning("%s; stopping this execution", exc)
        except JobCancelled:
            ctx.flush()
            _finish(job_id, token, "cancelled")
        except JobFailed as exc:
            # a command running its job in the foreground prints the error itself: logged as a
            # warning too, the console showed it twice ("export job 45 failed: …", then the
            # CommandError)
            log = logger.debug if (job.params or {}).get(FOREGROUND) else logger.warning
            log("%s job %s failed: %s", job.kind, job_id, exc)
            ctx.flush()
            _finish(job_id, token, "failed", error=str(exc))
        except Exception as exc:
            ref = f"job-{job_id}-{token[:8]}"
            if _connection_lost(exc) and not (job.params or {}).get(FOREGROUND):
                # PostgreSQL restarted or dropped this process's connection: not the job's fault.
                # It stays ``running``; its heartbeat stops with this execution, and the sweep
                # resumes it as it resumes a killed worker's (capped by JOB_MAX_ATTEMPTS). A
                # command's own job fails as before: no worker may take it over.
                logger.warning(
                    "%s job %s lost its database connection (reference %s); the sweep resumes it",
                    job.kind,
                    job_id,
                    ref,
                    exc_info=True,
                )
                connection.close()  # what runs next in this process opens a fresh one
                return job
            logger.exception("%s job %s failed (reference %s)", job.kind, job_id, ref)
            _finish(job_id, token, "failed", error=internal_error_message(ref))
            raise
        else:
            ctx.flush()
            # cancelled only if the handler stopped because of it: a cancel that came after its
            # last check found the work done (a model saved, items routed), and says so
            final = "cancelled" if ctx.cancel_seen else "succeeded"
            _finish(job_id, token, final, result=_jsonable(result or {}))
    return Job.objects.get(pk=job_id)


def _connection_lost(exc: BaseException) -> bool:
    """Whether a handler's exception is the PostgreSQL connection dropping under it (a restart or
    failover, ``pg_terminate_backend``: SQLSTATE class 08 or 57P01-57P03, or no SQLSTATE at all,
    the client's "server closed the connection unexpectedly"), which says nothing about the job,
    rather than a database error of the job's own (a deadlock, a cancelled statement, SQLite's
    "database is locked")."""
    from django import db

    if not isinstance(exc, db.OperationalError | db.InterfaceError):
        return False
    state = getattr(exc.__cause__, "sqlstate", "")  # "": not psycopg's (SQLite's errors have none)
    if state is None:
        return True
    return isinstance(state, str) and (state.startswith("08") or state in {"57P01", "57P02", "57P03"})


def job_execute_or_wait(*, job_id: int) -> Job:
    """What the job task does: :func:`job_execute`, and if the job waits behind another job
    of its project, send its message again after :func:`job_wait_seconds`."""
    job = job_execute(job_id=job_id)
    if job_waiting_behind(job) is not None and not _eager():
        with contextlib.suppress(BrokerUnavailable):  # job_enqueue marked it failed, clearly
            job_enqueue(job_id=job_id, countdown=job_wait_seconds())
        job.refresh_from_db()
    return job


#: ``params["foreground"]`` of a job run by a command in its own process (:func:`job_run_here`):
#: no worker can take it over, so the sweep fails it when its command stopped beating.
FOREGROUND = "foreground"
FOREGROUND_DIED = (
    "the command running this job in the foreground stopped before it finished (killed, or its "
    "machine restarted); nothing resumes it: run the command again"
)
FOREGROUND_DIED_WAITING = (
    "the command that was waiting to run this job in the foreground (behind another job of the "
    "project) stopped before it started (killed, or its machine restarted); nothing starts it: "
    "run the command again"
)


def waiting_message(blocker: int) -> str:
    """What a command running a job in the foreground says while it waits behind another."""
    return (
        f"waiting behind job {blocker} of this project (jobs that change its candidates run one at a time; "
        "see `manage.py jobs`); Ctrl-C stops waiting"
    )


def job_run_here(
    *,
    kind: str,
    project: Project | None,
    work: Callable[[JobContext], Any],
    summary: Callable[[Any], dict[str, Any]],
    params: dict[str, Any] | None = None,
    refusals: tuple[type[Exception], ...] = (),
    on_wait: Callable[[str], None] | None = None,
) -> Any:
    """Run ``work(ctx)`` in this process as a job of ``kind``: what a management command does
    in the foreground (``route``, ``import_data``, ``export``, ``train_pairwise``,
    ``autolabel``, ``train_task_model``), so ``jobs``, the Jobs page and the API list it as
    they list a worker's: ``running``, then ``succeeded`` with ``summary(value)`` as its
    result, ``failed`` with the error, or ``cancelled``; ``done``/``total`` as ``work``
    reports them through ``ctx.progress`` (a job that reports none reads 1/1 when it
    succeeds). Returns what ``work`` returned. An exception of ``work`` is raised again here,
    after the job recorded it, so the command reports it as before: one of ``refusals`` (or a
    ``ValidationError``) fails the job with its message, Ctrl-C cancels it, a cancel asked for
    on the Jobs page or the API (``work`` raising ``JobCancelled``) raises ``JobCancelled``
    with a sentence to show, anything else fails it as an internal error (logged). An
    exclusive kind waits, as a worker's job does, while another job that changes the project's
    candidates runs (``on_wait(message)`` once per job it waits behind, e.g. the command's
    stderr; Ctrl-C while waiting cancels it). A command killed outright leaves its job
    ``running``; the sweep fails it (:func:`_fail_foreground`), no worker takes it over."""
    from django.core.exceptions import ValidationError

    job = job_create(kind=kind, project=project, params=_jsonable({**(params or {}), FOREGROUND: True}))
    raised: list[BaseException] = []
    returned: list[Any] = []
    waited: set[int] = set()
    expected: tuple[type[Exception], ...] = (ValidationError, *refusals)

    def handler(_job: Job, ctx: JobContext) -> dict[str, Any]:
        try:
            value = work(ctx)
        except expected as exc:
            raised.append(exc)
            messages = getattr(exc, "messages", None) if isinstance(exc, ValidationError) else None
            raise JobFailed(" ".join(messages) if messages else str(exc)) from exc
        except KeyboardInterrupt as exc:
            raised.append(exc)
            raise JobCancelled() from exc
        except JobCancelled as exc:  # asked to stop from the Jobs page or the API
            raised.append(JobCancelled(f"{kind} job {_job.pk} was cancelled (from the Jobs page or the API)"))
            raise exc
        returned.append(value)
        if not Job.objects.filter(pk=ctx.job_id).exclude(total=0).exists():
            ctx.progress(1, 1)
        return summary(value)

    while True:
        try:
            job = job_execute(job_id=job.pk, handler=handler)
        except KeyboardInterrupt:
            job_cancel(job=job)
            raise
        blocker = job_waiting_behind(job)
        if blocker is None:
            break
        if on_wait is not None and blocker not in waited:
            waited.add(blocker)
            on_wait(waiting_message(blocker))
        # A waiting job keeps no heartbeat: this is the command's sign of life, which the sweep
        # reads (_fail_foreground_waiting) and the Jobs page too (not "stalled" while it waits).
        Job.objects.filter(pk=job.pk, status="queued").update(enqueued_at=timezone.now())
        try:
            time.sleep(job_wait_seconds())
        except KeyboardInterrupt:
            job_cancel(job=job)
            raise
    if raised:
        raise raised[0]
    return returned[0] if returned else None


def _eager() -> bool:
    """Celery runs tasks in the caller (unit tests): a delayed re-send would run at once,
    over and over; the job stays queued and the caller tries again."""
    return bool(_job_task().app.conf.task_always_eager)


def sweep_after_start_seconds() -> float:
    """When a starting worker sweeps a second time: once the heartbeat of a job its killed
    predecessor was running is surely older than ``JOB_STALE_SECONDS``."""
    return float(_cfg("JOB_STALE_SECONDS")) + max(5.0, float(_cfg("JOB_HEARTBEAT_SECONDS")))


def internal_error_message(ref: str) -> str:
    """What a job shows for an unexpected exception: no exception text (it may be raw
    database text), a reference to find the traceback in the worker's log."""
    return f"an internal error stopped the job (logged as {ref} in the worker log); it can be started again"


def _jsonable(value: Any) -> Any:
    import json
    import math

    def clean(v: Any) -> Any:
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, dict):
            return {str(k): clean(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [clean(x) for x in v]
        return v

    return clean(json.loads(json.dumps(value, default=lambda o: o.item() if hasattr(o, "item") else str(o))))


# ---------------------------------------------------------------------------------------
# sweep
# ---------------------------------------------------------------------------------------
def gave_up_message(attempts: int) -> str:
    return (
        f"the worker running this job stopped {attempts} times before it finished (killed, out of "
        "memory or restarted), so it is not resumed again; look at the worker's log and memory, "
        "then start it again"
    )


def _give_up(job_id: int, *, stale: Any, now: Any, max_attempts: int) -> bool:
    """Fail a stranded job that has already been executed ``max_attempts`` times: a job that
    kills its worker (out of memory, a crash in native code) is otherwise resumed, and kills
    the worker again, for ever. Its end hook runs as for any failure."""
    n = Job.objects.filter(pk=job_id, status="running", heartbeat_at__lt=stale, attempts__gte=max_attempts)
    attempts = n.values_list("attempts", flat=True).first()
    if attempts is None:
        return False
    if n.update(status="failed", error=gave_up_message(attempts), finished_at=now):
        logger.error("job %s: its worker stopped %s times under it; failed, not resumed", job_id, attempts)
        _ended(job_id, "failed")
    return True


def _fail_foreground(job_id: int, *, stale: Any, now: Any) -> bool:
    """Fail a stranded job that a command ran in its own process (:func:`job_run_here`): its
    handler lives in that command, so no worker may take it over."""
    n = Job.objects.filter(pk=job_id, status="running", heartbeat_at__lt=stale, params__foreground=True)
    if not n.exists():
        return False
    if n.update(status="failed", error=FOREGROUND_DIED, finished_at=now):
        logger.error("job %s: the command running it in the foreground stopped beating; failed", job_id)
        _ended(job_id, "failed")
    return True


def _fail_foreground_waiting(*, stale: Any, now: Any) -> None:
    """Fail the queued jobs of commands that died while waiting behind another job (their
    wait loop stopped touching ``enqueued_at``): a worker must not start them, and nothing
    else would end them."""
    stranded = Job.objects.filter(status="queued", params__foreground=True).filter(
        Q(enqueued_at__lt=stale) | Q(enqueued_at__isnull=True, created_at__lt=stale)
    )
    for job_id in list(stranded.values_list("pk", flat=True)):
        if Job.objects.filter(pk=job_id, status="queued").update(
            status="failed", error=FOREGROUND_DIED_WAITING, finished_at=now
        ):
            logger.error("job %s: the command waiting to run it in the foreground stopped; failed", job_id)
            _ended(job_id, "failed")


def lost_message_seconds() -> float:
    """How long a job may stay ``queued`` before the sweep sends its message again (and again
    at most once per this many seconds): ten times the stale threshold, at least 10 minutes,
    so a job merely waiting in a busy queue gets few duplicates (each a no-op)."""
    return max(600.0, 10 * float(_cfg("JOB_STALE_SECONDS")))


def _resend_lost(*, now: Any) -> list[int]:
    """Send again the message of each job ``queued`` for longer than :func:`lost_message_seconds`
    since its last send: a broker restarted without persistence (Redis) or flushed, or a web
    process killed between its commit and the send, loses it, and nothing else would ever run
    the job. If the first message is still in the queue after all, whichever comes second finds
    the job owned or finished and does nothing. Not a command's own job (it runs in its
    process), nor one waiting behind another (re-sent below)."""
    lost = now - timedelta(seconds=lost_message_seconds())
    queued = (
        Job.objects.filter(status="queued", cancel_requested=False)
        .filter(Q(enqueued_at__lt=lost) | Q(enqueued_at__isnull=True, created_at__lt=lost))
        .exclude(result__has_key="waiting_behind")
        .values_list("pk", "params")
    )
    sent = []
    for job_id, params in list(queued):
        if (params or {}).get(FOREGROUND):
            continue
        if (
            Job.objects.filter(pk=job_id, status="queued")
            .filter(Q(enqueued_at__lt=lost) | Q(enqueued_at__isnull=True))
            .update(enqueued_at=now)
        ):
            logger.warning("job %s: queued since before %s with no worker taking it; sending it again", job_id, lost)
            try:
                job_enqueue(job_id=job_id, fail=False)
            except BrokerUnavailable:
                continue
            sent.append(job_id)
    return sent


def jobs_sweep(*, now: Any = None) -> list[int]:
    """Re-enqueue running jobs whose executor stopped beating (a killed worker). Each stale
    job is re-sent at most once per ``JOB_STALE_SECONDS``; returns the ids re-sent. One that
    was already executed ``JOB_MAX_ATTEMPTS`` times is failed instead (:func:`_give_up`)."""
    now = now or timezone.now()
    stale = now - timedelta(seconds=float(_cfg("JOB_STALE_SECONDS")))
    candidates = list(
        Job.objects.filter(status="running", heartbeat_at__lt=stale)
        .filter(Q(enqueued_at__isnull=True) | Q(enqueued_at__lt=stale))
        .values_list("pk", flat=True)
    )
    sent = []
    max_attempts = int(_cfg("JOB_MAX_ATTEMPTS"))
    for job_id in candidates:
        if _fail_foreground(job_id, stale=stale, now=now):
            continue
        if max_attempts and _give_up(job_id, stale=stale, now=now, max_attempts=max_attempts):
            continue
        # One sweeper wins each job (several workers may sweep at once).
        if (
            Job.objects.filter(pk=job_id, status="running", heartbeat_at__lt=stale)
            .filter(Q(enqueued_at__isnull=True) | Q(enqueued_at__lt=stale))
            .update(enqueued_at=now)
        ):
            logger.warning("job %s: no heartbeat since before %s; re-enqueueing it", job_id, stale.isoformat())
            try:
                job_enqueue(job_id=job_id)
            except BrokerUnavailable:
                continue
            sent.append(job_id)
    _fail_foreground_waiting(stale=stale, now=now)
    sent += _resend_lost(now=now)
    # A waiting job whose delayed message was lost (the worker holding it died): send it again.
    waiting = Job.objects.filter(status="queued", result__has_key="waiting_behind", enqueued_at__lt=stale)
    for job_id in list(waiting.values_list("pk", flat=True)):
        if Job.objects.filter(pk=job_id, status="queued", enqueued_at__lt=stale).update(enqueued_at=now):
            try:
                job_enqueue(job_id=job_id)
            except BrokerUnavailable:
                continue
            sent.append(job_id)
    return sent


__all__ = [
    "EXCLUSIVE_KINDS",
    "JOB_ACTIVE",
    "BrokerUnavailable",
    "JobCancelled",
    "JobContext",
    "JobFailed",
    "JobSuperseded",
    "internal_error_message",
    "job_cancel",
    "job_create",
    "job_enqueue",
    "job_execute",
    "job_execute_or_wait",
    "job_kind",
    "job_kind_register",
    "job_run_here",
    "job_start",
    "job_wait_seconds",
    "job_waiting_behind",
    "jobs_just_started",
    "jobs_sweep",
    "stop_if_cancelled",
    "sweep_after_start_seconds",
]
