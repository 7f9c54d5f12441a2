"""DRF permissions and view helpers for the three roles (see ``annotate/roles.py``)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
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
