"""Roles. A user's role is a Django group: ``researcher`` or ``annotator``; a superuser is
an admin. Annotators see only projects they are members of, and only annotation pages."""

from __future__ import annotations

from typing import Any

RESEARCHER = "researcher"
ANNOTATOR = "annotator"
ROLES = [RESEARCHER, ANNOTATOR]


def is_admin(user: Any) -> bool:
    return bool(user.is_authenticated and user.is_superuser)


def is_researcher(user: Any) -> bool:
    if not user.is_authenticated:
        return False
    return is_admin(user) or user.groups.filter(name=RESEARCHER).exists()


def is_annotator(user: Any) -> bool:
    return bool(user.is_authenticated and user.groups.filter(name=ANNOTATOR).exists())
