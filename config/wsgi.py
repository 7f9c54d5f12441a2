"""WSGI entry point (``gunicorn config.wsgi``). Without ``DJANGO_SETTINGS_MODULE`` it runs the
production settings (``config.DEFAULT_SETTINGS_MODULE``, set by ``config/__init__.py``, which
Python runs before this module; the Celery app's default too): a server started without it must
never run with DEBUG on. ``manage.py`` (runserver, the commands) defaults to the local settings."""

from django.core.wsgi import get_wsgi_application

application = get_wsgi_application()
