"""Celery tasks of the annotation app (queue ``default``). Thin: ids in, one service call.

Expired leases are also returned inline (next-item probes for them at most once a second
per process, and whenever the pool looks empty), so these tasks are housekeeping, not a
correctness requirement: run ``annotate.tasks.assignments_expire_task`` from celery beat (e.g.
every minute) to keep the researcher's counts fresh when nobody is annotating.
"""

from __future__ import annotations

from celery import shared_task

from annotate.services.assignments import assignments_expire


@shared_task(name="annotate.tasks.assignments_expire_task", ignore_result=True, time_limit=300, soft_time_limit=290)
def assignments_expire_task() -> int:
    total = 0
    while True:
        n = assignments_expire()
        total += n
        if n == 0:
            return total
