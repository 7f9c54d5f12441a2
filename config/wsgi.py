"""WSGI entry point (``gunicorn config.wsgi``). Defaults to the production settings: a server
started without ``DJANGO_SETTINGS_MODULE`` must never run with DEBUG on. ``manage.py`` (runserver,
``make run``) and the Celery worker keep defaulting to the local settings."""

import os

from django.core.wsgi import get_wsgi_application

from config import REQUESTED_SETTINGS_MODULE

os.environ["DJANGO_SETTINGS_MODULE"] = REQUESTED_SETTINGS_MODULE or "config.settings.production"
application = get_wsgi_application()
