"""The Celery app. Queues: ``default`` (housekeeping), ``interactive`` (train, auto-label,
route, export, evaluate, import), ``generation`` (long generation runs, a worker of their own);
``ml`` is legacy. Each job kind's queue is given at ``job_kind_register`` (docs/operations.md);
limits live in settings (``CELERY_*``).

Without ``DJANGO_SETTINGS_MODULE`` the worker runs the production settings, as ``config.wsgi``
does (``config.DEFAULT_SETTINGS_MODULE``, set by ``config/__init__.py`` before this module is
imported); ``make run`` and ``make worker`` ask for the local ones."""

from celery import Celery

app = Celery("counterpart")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@app.task(name="counterpart.ping")
def ping() -> str:
    """Health check: ``celery -A config call counterpart.ping`` round-trips the broker."""
    return "pong"
