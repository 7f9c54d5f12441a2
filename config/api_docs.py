"""``/api/docs/``: Swagger UI for whoever may read the schema (``/api/schema/``), a signed-in
browser or a script with its API token (``SPECTACULAR_SETTINGS["SERVE_AUTHENTICATION"]``).

A visitor with no credentials is sent to the log-in page, as every page does; a bad token is a
``401``, as everywhere in the API (a script is never redirected to a log-in form)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth.views import redirect_to_login
from drf_spectacular.views import SpectacularSwaggerSplitView
from rest_framework.exceptions import NotAuthenticated


class ApiDocsView(SpectacularSwaggerSplitView):
    """The split view serves Swagger UI's start-up script as a file: no inline script (CSP)."""

    def handle_exception(self, exc: Exception) -> Any:
        if isinstance(exc, NotAuthenticated):
            return redirect_to_login(self.request.get_full_path())
        return super().handle_exception(exc)
