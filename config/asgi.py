"""ASGI entry point. Defaults to the production settings, like ``config/wsgi.py``."""

from django.core.asgi import get_asgi_application

application = get_asgi_application()
