"""Every number of a job, computed once (issue 32.6): done / total, rate with its unit, ETA,
the step list and a one-line summary. The job box on every page, ``/api/v1/jobs/`` (and every
API answer that returns a job), the ``jobs`` command and the generation run page all read
:func:`job_progress`, so they cannot disagree (they did: 0.95 originals/s on the run page
while the API said 0.592 at the same moment).

- **Rate.** Of the current step when the job reports steps (``Job.step``): a step that
  reports batches (``step["recent"]``: ``[time, done]`` at its start and after each of its
  last ``RECENT_BATCHES`` batches — a generation run) is measured over those batches, so the time a
  batch spends in the filters (similarity, perplexity, validity, dedup) is in the figure,
  learned from the run's own batches, and model loading never is; any other step over the
  time since it began. Without steps, the job's ``done`` over its wall
  time. Always with a unit: ``originals/s``, ``texts/s``, ``examples/s``…
- **ETA.** What is left of the step (or job) at that rate, counted from the last batch.
- **Steps.** Every step of the job, loading included, when the handler names them
  (``JobContext.step(..., plan=[...])``), each ``done``, ``running``, ``failed`` or
  ``pending``; a finished job's list stays (all ``done`` when it succeeded).
- **Done / total.** Fixed before progress starts (``job_start`` or the first step); a
  succeeded job of several steps shows all of them done — never "succeeded 1 / 2".
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from projects.models import JOB_FINISHED, Job

# how many batches a step's rate (and so its ETA) is measured over (``step["recent"]``)
RECENT_BATCHES = 8

# What ``Job.done`` / ``Job.total`` count for a job that reports no steps (its rate's unit).
KIND_UNITS = {
    "generation": "originals",
    "import": "rows",
    "export": "candidates",
    "route": "candidates",
    "autolabel": "pairs",
    "train": "steps",
    "evaluate": "steps",
    "task_model": "training steps",
}


@dataclass(frozen=True)
class JobProgress:
    """How far a job is (module docstring): ``rate`` in ``rate_unit`` (``"originals/s"``) and
    ``eta_seconds`` left at that rate; ``None`` when unknown or finished."""

    done: int
    total: int
    fraction: float
    percent: int
    rate: float | None
    eta_seconds: float | None
    elapsed_seconds: float
    finished: bool
    waiting_behind: int | None = None
    stalled_seconds: int | None = None
    step: dict[str, Any] | None = None  # name, index, count, done, total, unit, started_at
    rate_unit: str = ""
    unit: str = ""  # what done / total count
    steps: list[dict[str, Any]] = field(default_factory=list)  # index, name, state
    status: str = ""

    @property
    def stalled(self) -> str:
        """ "stalled: no worker has …" when no worker has touched an unfinished job for
        longer than ``JOB_STALE_SECONDS`` (none runs, or none consumes its queue), else ""."""
        if self.stalled_seconds is None:
            return ""
        if self.waiting_behind is None and self.elapsed_seconds == 0:
            return f"stalled: no worker has picked it up for {self.stalled_seconds} s"
        return f"stalled: no worker has reported for {self.stalled_seconds} s"

    @property
    def rate_shown(self) -> str:
        """The rate as people read it: whole numbers from 100 up (``2,750``, not
        ``2749.997``), below that the API's figure (three decimals at most: ``0.286``, ``8.0``)."""
        if self.rate is None:
            return ""
        return f"{self.rate:,.0f}" if abs(self.rate) >= 100 else str(self.rate)

    @property
    def summary(self) -> str:
        """The job's figures in one line, as the page, the API (``summary``) and the ``jobs``
        command show them."""
        parts = [self.status]
        if self.finished and self.steps and self.status == "succeeded":
            parts.append(f"all {len(self.steps)} steps done")
        elif self.total:
            parts.append(f"{self.done} / {self.total} {self.unit}".rstrip())
        if self.step is not None and not self.finished:
            s = self.step
            text = f"step {s.get('index')} of {s.get('count')}: {s.get('name')}"
            if s.get("total"):
                text += f" — {s.get('done', 0)} / {s.get('total')} {s.get('unit') or ''}".rstrip()
            parts.append(text)
        if self.rate is not None and not self.finished and self.stalled_seconds is None:
            # a stalled job's rate is its last worker's and its ETA runs down to a false "0 s left"
            shown = self.rate_shown if abs(self.rate) >= 100 else f"{self.rate:g}"
            rate = f"{shown} {self.rate_unit}".rstrip()
            if self.eta_seconds is not None:
                where = " in this step" if self.step and self.step.get("index", 0) < self.step.get("count", 0) else ""
                rate += f", about {self.eta_seconds:.0f} s left{where}"
            parts.append(rate)
        return " · ".join(p for p in parts if p)


def job_waiting_behind(job: Job) -> int | None:
    """The id of the job a queued job waits behind (another job that changes the same
    project's candidates was running when it last tried to start), else None."""
    if job.status != "queued" or not isinstance(job.result, dict):
        return None
    blocker = job.result.get("waiting_behind")
    return blocker if isinstance(blocker, int) else None


def job_stalled_seconds(*, job: Job, now: Any = None) -> int | None:
    """Seconds since a worker last touched an unfinished job, when that is longer than
    ``JOB_STALE_SECONDS``: a running job's heartbeat, a queued job's (re-)enqueueing (a job
    waiting behind another is re-sent every few seconds by a worker). None otherwise."""
    if job.status not in ("queued", "running"):
        return None
    now = now or timezone.now()
    last = job.heartbeat_at if job.status == "running" else (job.enqueued_at or job.created_at)
    if last is None:
        return None
    age = (now - last).total_seconds()
    threshold = float(settings.COUNTERPART["JOB_STALE_SECONDS"])
    return int(age) if age > threshold else None


def _batches_rate(info: dict[str, Any], now: Any) -> tuple[float | None, float | None]:
    """Units/s over a step's recent batches (``recent``: ``[time, done]`` at the step's start
    and after each batch; the last ``RECENT_BATCHES`` count, so a slow first batch with cold
    caches does not drag the figure) and the seconds left at
    that rate, from the last batch on."""
    recent = [p for p in (info.get("recent") or []) if isinstance(p, list) and len(p) == 2][-(RECENT_BATCHES + 1) :]
    if len(recent) < 2:
        return None, None
    first, last = parse_datetime(str(recent[0][0])), parse_datetime(str(recent[-1][0]))
    if first is None or last is None:
        return None, None
    seconds, done = (last - first).total_seconds(), int(recent[-1][1]) - int(recent[0][1])
    if seconds <= 0 or done <= 0:
        return None, None
    rate = done / seconds
    left = max(0, int(info.get("total") or 0) - int(recent[-1][1]))
    return rate, max(0.0, left / rate - max(0.0, (now - last).total_seconds()))


def _step_rate(info: dict[str, Any], now: Any) -> tuple[float | None, float | None]:
    """The current step's rate and ETA (see the module docstring)."""
    if "recent" in info:
        return _batches_rate(info, now)
    done, total = int(info.get("done") or 0), int(info.get("total") or 0)
    started = parse_datetime(str(info.get("started_at") or ""))
    if started is None or done <= 0:
        return None, None
    seconds = (now - started).total_seconds()
    if seconds <= 0:
        return None, None
    rate = done / seconds
    return rate, (max(0.0, (total - done) / rate) if total else None)


def _steps(info: dict[str, Any], status: str) -> list[dict[str, Any]]:
    """Every step of the job (names from ``plan`` where the handler gave one), with its state."""
    count = int(info.get("count") or 0)
    if not info.get("name") or count <= 0:
        return []
    index = int(info.get("index") or 1)
    plan = [str(n) for n in (info.get("plan") or [])]
    if len(plan) != count:
        plan = [info["name"] if i == index else f"step {i}" for i in range(1, count + 1)]
    out = []
    for i, name in enumerate(plan, start=1):
        if status == "succeeded" or i < index:
            state = "done"
        elif i > index:
            state = "pending"
        else:
            state = {"running": "running", "queued": "pending", "failed": "failed", "cancelled": "cancelled"}.get(
                status, "running"
            )
        out.append({"index": i, "name": name, "state": state})
    return out


def job_progress(*, job: Job, now: Any = None) -> JobProgress:
    now = now or timezone.now()
    finished = job.status in JOB_FINISHED
    elapsed = 0.0
    if job.started_at:
        end = job.finished_at if (finished and job.finished_at) else now
        elapsed = max(0.0, (end - job.started_at).total_seconds())
    info = job.step if isinstance(job.step, dict) and job.step.get("name") else {}
    steps = _steps(info, job.status)
    done, total = job.done, job.total
    unit = KIND_UNITS.get(job.kind, "")
    if info and not info.get("recent"):
        unit = "steps"  # done / total count the steps (JobContext.step)
    if job.kind == "generation":
        unit = "originals"  # a run's done / total stay its originals through its two phases
    if job.status == "succeeded" and steps and unit == "steps":
        done = total = len(steps)  # all of them, not "succeeded 1 / 2"
    rate = eta = None
    rate_unit = ""
    if not finished and info:
        rate, eta = _step_rate(info, now)
        rate_unit = f"{info.get('unit')}/s" if info.get("unit") else ""
    elif not finished and elapsed > 0 and job.done:
        rate = job.done / elapsed
        eta = max(0.0, (job.total - job.done) / rate)
        rate_unit = f"{unit}/s"
    if rate is not None and not rate_unit:
        rate = eta = None  # a rate without a unit is not shown (issue 32.6: "0.148/s")
    fraction = min(1.0, done / total) if total else (1.0 if job.status == "succeeded" else 0.0)
    return JobProgress(
        done=done,
        total=total,
        fraction=round(fraction, 4),
        percent=int(fraction * 100),
        rate=round(rate, 3) if rate is not None else None,
        eta_seconds=round(eta, 1) if eta is not None else None,
        elapsed_seconds=round(elapsed, 1),
        finished=finished,
        waiting_behind=job_waiting_behind(job),
        stalled_seconds=job_stalled_seconds(job=job, now=now),
        step=info if (info and not finished) else None,
        rate_unit=rate_unit,
        unit=unit,
        steps=steps,
        status=job.status,
    )
