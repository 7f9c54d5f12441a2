"""DRF permissions and view helpers for the three roles (see ``annotate/roles.py``)."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from rest_framework.permissions import BasePermission

from annotate import roles


class IsResearcher(BasePermission):
    """Researchers and admins only (projects, routing, dashboards, exports)."""

    message = "researchers only"

    def has_permission(self, request: Any, view: Any) -> bool:
        return roles.is_researcher(request.user)


def require_researcher(user: Any) -> None:
    """For plain Django views: 403 unless researcher or admin."""
    if not roles.is_researcher(user):
        raise PermissionDenied("researchers only")


def researcher_required(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
    """Decorator for plain Django views: log in first, then 403 unless researcher or admin."""

    @login_required
    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        require_researcher(request.user)
        return view(request, *args, **kwargs)

    return wrapped
