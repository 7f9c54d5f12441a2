"""API tokens (DRF authtoken: one per account). Everyone manages their own; researchers may
revoke anyone's (e.g. a leaked annotator token)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.db import transaction
from django.utils import timezone
from rest_framework.authtoken.models import Token

from projects import permissions

#: A second request for a new token within this many seconds of the last one (a double click,
#: a client that sent its POST twice, two at once) gets that token, not one that revokes it.
TOKEN_DOUBLE_SUBMIT_SECONDS = 2.0


@transaction.atomic
def token_create(*, user: Any) -> Token:
    """A new token for ``user``; an existing one is replaced (revoked). A double submit (the
    same request again within :data:`TOKEN_DOUBLE_SUBMIT_SECONDS`) returns the token the first
    one made: before, two requests at once both answered 201 with different keys, and only the
    second key worked. The account's row is locked first, so two at once are served in turn."""
    list(get_user_model().objects.select_for_update().filter(pk=user.pk).values_list("pk", flat=True))
    current = Token.objects.filter(user=user).first()
    if current is not None and timezone.now() - current.created < timedelta(seconds=TOKEN_DOUBLE_SUBMIT_SECONDS):
        return current
    Token.objects.filter(user=user).delete()
    return Token.objects.create(user=user)


def token_revoke(*, owner: Any, by: Any) -> bool:
    """Revoke ``owner``'s token. Only the owner or a researcher may. Returns whether one existed."""
    if owner.pk != by.pk and not permissions.is_researcher(by):
        raise PermissionDenied("only researchers may revoke another account's token")
    deleted, _ = Token.objects.filter(user=owner).delete()
    return deleted > 0
