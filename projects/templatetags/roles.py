"""Template filters about the signed-in user's role (the navigation shows researchers'
links only to researchers)."""

from __future__ import annotations

from typing import Any

from django import template

from projects import permissions

register = template.Library()


@register.filter
def is_researcher(user: Any) -> bool:
    """``{% if user|is_researcher %}``: researchers and admins."""
    return permissions.is_researcher(user)
