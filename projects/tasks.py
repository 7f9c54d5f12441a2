"""Celery tasks of the kernel: the one job task and the stale-job sweep. Thin: ids in, one
service call. Queues are chosen per job kind when the job is enqueued
(``projects.services.jobs.job_enqueue``)."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from celery.signals import worker_ready

from projects.services.jobs import JOB_TASK, job_execute_or_wait, jobs_sweep, sweep_after_start_seconds

logger = logging.getLogger(__name__)


@shared_task(name=JOB_TASK, acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def job_execute_task(job_id: int) -> str:
    return job_execute_or_wait(job_id=job_id).status


@shared_task(name="projects.tasks.jobs_sweep_task", ignore_result=True, time_limit=120, soft_time_limit=110)
def jobs_sweep_task() -> list[int]:
    return jobs_sweep()


def _sweep_queue(consumer: Any) -> str:
    """A queue this worker consumes (``default`` when it does), so its own sweeps reach it
    even when no other worker runs."""
    try:
        names = [q.name for q in consumer.task_consumer.queues]
    except AttributeError:
        names = []
    return "default" if "default" in names or not names else str(names[0])


@worker_ready.connect
def _sweep_when_a_worker_starts(sender: object = None, **_: object) -> None:
    """A worker that comes back after a crash picks up its stranded jobs without celery beat:
    one sweep now (jobs stranded long ago), and one once the stale threshold has passed (the
    job this worker was running when it was killed still had a fresh heartbeat now)."""
    queue = _sweep_queue(sender)
    jobs_sweep_task.apply_async(queue=queue)
    countdown = sweep_after_start_seconds()
    jobs_sweep_task.apply_async(queue=queue, countdown=countdown)
    logger.info("jobs sweep scheduled now and in %.0f s on queue %s", countdown, queue)
