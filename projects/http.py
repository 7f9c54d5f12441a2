"""The request type of views that read ``request.htmx``.

django-htmx's middleware (``config/settings/base.py`` ``MIDDLEWARE``) sets ``request.htmx`` on
every request; ``HttpRequest`` does not declare it, so views that read it take this type
(django-htmx's documented way to type it).
"""

from __future__ import annotations

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails
