import os

# The settings module this process was started with, read before ``config.celery`` fills in the
# Celery worker's default (local). ``config.wsgi`` and ``config.asgi`` import this package first,
# so they take their own default (production) from here, not from os.environ.
REQUESTED_SETTINGS_MODULE = os.environ.get("DJANGO_SETTINGS_MODULE") or None

from config.celery import app as celery_app  # noqa: E402

__all__ = ("celery_app",)
