"""Celery tasks of the kernel: the one job task and the stale-job sweep. Thin: ids in, one
service call. Queues are chosen per job kind when the job is enqueued
(``projects.services.jobs.job_enqueue``)."""

from __future__ import annotations

from celery import shared_task
from celery.signals import worker_ready

from projects.services.jobs import job_execute, jobs_sweep


@shared_task(name="projects.tasks.job_execute_task", acks_late=True, reject_on_worker_lost=True, ignore_result=True)
def job_execute_task(job_id: int) -> str:
    return job_execute(job_id=job_id).status


@shared_task(name="projects.tasks.jobs_sweep_task", ignore_result=True, time_limit=120, soft_time_limit=110)
def jobs_sweep_task() -> list[int]:
    return jobs_sweep()


@worker_ready.connect
def _sweep_when_a_worker_starts(sender: object = None, **_: object) -> None:
    """A worker that comes back after a crash picks up its stranded jobs without waiting
    for the first beat."""
    jobs_sweep_task.apply_async(queue="default")
