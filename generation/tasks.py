"""Celery tasks of the generation app (queue ``generation``; see ``CELERY_TASK_ROUTES``).

Thin: take an id, load, call the service. ``acks_late`` + ``reject_on_worker_lost``: the
message is acknowledged only when the run finished, so a worker killed mid-run gets the
message redelivered and ``run_execute`` resumes after the last committed batch.
"""

from __future__ import annotations

from celery import shared_task
from django.conf import settings

from generation.services.runs import run_execute

_LIMIT = int(settings.COUNTERPART["GENERATION_TIME_LIMIT"])


@shared_task(
    name="generation.tasks.generation_run_execute",
    queue="generation",
    acks_late=True,
    reject_on_worker_lost=True,
    time_limit=_LIMIT,
    soft_time_limit=max(_LIMIT - 60, 1),
    ignore_result=True,
)
def generation_run_execute(run_id: int) -> str:
    return run_execute(run_id=run_id).status
