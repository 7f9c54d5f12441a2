import os

# The settings module of a process started without DJANGO_SETTINGS_MODULE (or with it empty):
# production, for the WSGI/ASGI servers and the Celery app alike, so that nothing that serves
# requests or runs jobs ever starts with DEBUG on by accident. ``manage.py`` sets
# ``config.settings.local`` before this runs (runserver, the commands); ``make run`` and
# ``make worker`` set it for their worker.
DEFAULT_SETTINGS_MODULE = "config.settings.production"
if not os.environ.get("DJANGO_SETTINGS_MODULE"):
    os.environ["DJANGO_SETTINGS_MODULE"] = DEFAULT_SETTINGS_MODULE

from config.celery import app as celery_app  # noqa: E402

__all__ = ("DEFAULT_SETTINGS_MODULE", "celery_app")
