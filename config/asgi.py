"""ASGI entry point. Defaults to the production settings, like ``config/wsgi.py``."""

import os

from django.core.asgi import get_asgi_application

from config import REQUESTED_SETTINGS_MODULE

os.environ["DJANGO_SETTINGS_MODULE"] = REQUESTED_SETTINGS_MODULE or "config.settings.production"
application = get_asgi_application()
