"""The error handlers of ``config/urls.py``: ``handler500`` (server errors) and ``handler404``
(JSON under ``/api/``, as every API view answers its own 404s, instead of the HTML page a
script cannot read) and ``api_not_found``, the last pattern under ``/api/``.

Django's own answer to an uncaught exception, without a ``500.html``, is a bare "Server Error
(500)" page, and the same for the API. This one answers with the app's error page (the
layout of the 400/403/404 pages, rendered without the request: it reads neither the session
nor the database, which may be what failed), JSON under ``/api/``, and tells a database
that cannot be reached (a wrong ``DATABASE_URL``, PostgreSQL restarting, connections
exhausted) apart from a bug: ``503`` with ``Retry-After``, saying that nothing was started
or saved. Never the exception's text (it may hold the database's host or SQL). Django has
already logged the traceback ("Internal Server Error: …") when this runs.
"""

from __future__ import annotations

import logging
import sys

from django import db
from django.conf import settings
from django.http import HttpRequest, HttpResponse, HttpResponsePermanentRedirect, JsonResponse
from django.template.loader import render_to_string
from django.urls import Resolver404, resolve
from django.views import defaults

logger = logging.getLogger(__name__)

UNAVAILABLE = (
    "The database cannot be reached just now, so nothing was started or saved. "
    "Try again in a minute; if it lasts, tell whoever runs this server."
)
SERVER_ERROR = "Something went wrong on the server; what you sent may not have been saved. It has been logged."
RETRY_AFTER_SECONDS = 30


def database_unavailable(exc: BaseException | None) -> bool:
    """Whether ``exc`` (the exception being handled) says the database cannot be reached or
    dropped the connection, rather than a fault in the code."""
    return isinstance(exc, db.OperationalError | db.InterfaceError)


#: DRF's own answer for a missing object (``NotFound``), so a client reads one shape.
API_NOT_FOUND = "Not found."


def _api_not_found() -> JsonResponse:
    return JsonResponse({"detail": API_NOT_FOUND, "docs": "/api/docs/"}, status=404)


def page_not_found(request: HttpRequest, exception: Exception | None) -> HttpResponse:
    """A page view raised ``Http404`` (or, with ``DEBUG`` off, nothing matched): under
    ``/api/`` a JSON ``{"detail": …}`` like DRF's 404s, with the address's way in
    (``/api/docs/``); elsewhere the app's 404 page (``templates/404.html``)."""
    if request.path.startswith("/api/"):
        return _api_not_found()
    return defaults.page_not_found(request, exception)


def api_not_found(request: HttpRequest, rest: str = "") -> HttpResponse:
    """The last URL pattern under ``/api/``: an API address nothing else matches answers the
    JSON 404 whatever ``DEBUG`` says (``make run`` has it on, and Django's debug 404 is an HTML
    page a script cannot read). A GET of an address that exists with a trailing slash is sent
    there, as ``APPEND_SLASH`` does for every other address."""
    path = request.path_info
    if settings.APPEND_SLASH and not path.endswith("/") and request.method in ("GET", "HEAD"):
        try:
            match = resolve(f"{path}/")
        except Resolver404:
            match = None
        if match is not None and match.func is not api_not_found:
            return HttpResponsePermanentRedirect(request.get_full_path(force_append_slash=True))
    return _api_not_found()


def server_error(request: HttpRequest) -> HttpResponse:
    unavailable = database_unavailable(sys.exc_info()[1])
    status = 503 if unavailable else 500
    message = UNAVAILABLE if unavailable else SERVER_ERROR
    if request.path.startswith("/api/"):
        response: HttpResponse = JsonResponse({"detail": message}, status=status)
    else:
        heading = "Database unavailable (503)" if unavailable else "Server error (500)"
        try:
            html: str = render_to_string("_error_page.html", {"heading": heading, "explanation": message, "detail": ""})
        except Exception:  # the page itself failed: still answer, in plain text
            logger.exception("the error page could not be rendered")
            html = f"{heading}\n\n{message}\n"
            response = HttpResponse(html, status=status, content_type="text/plain; charset=utf-8")
        else:
            response = HttpResponse(html, status=status)
    if unavailable:
        response["Retry-After"] = str(RETRY_AFTER_SECONDS)
    return response
