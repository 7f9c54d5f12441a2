"""The Celery app. Queues: ``default`` (housekeeping), ``interactive`` (train, auto-label,
route, export, evaluate, import), ``generation`` (long generation runs, a worker of their own);
``ml`` is legacy. Each job kind's queue is given at ``job_kind_register`` (docs/operations.md);
limits live in settings (``CELERY_*``)."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

app = Celery("counterpart")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.task(name="counterpart.ping")
def ping() -> str:
    """Health check: ``celery -A config call counterpart.ping`` round-trips the broker."""
    return "pong"
