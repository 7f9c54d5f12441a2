"""API tokens (DRF authtoken: one per account). Everyone manages their own; researchers may
revoke anyone's (e.g. a leaked annotator token)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.db import transaction
from rest_framework.authtoken.models import Token

from projects import permissions


@transaction.atomic
def token_create(*, user: Any) -> Token:
    """A new token for ``user``; an existing one is replaced (revoked)."""
    Token.objects.filter(user=user).delete()
    return Token.objects.create(user=user)


def token_revoke(*, owner: Any, by: Any) -> bool:
    """Revoke ``owner``'s token. Only the owner or a researcher may. Returns whether one existed."""
    if owner.pk != by.pk and not permissions.is_researcher(by):
        raise PermissionDenied("only researchers may revoke another account's token")
    deleted, _ = Token.objects.filter(user=owner).delete()
    return deleted > 0
