"""DRF's token authentication with the lookup written as one plain query.

Same tokens (``rest_framework.authtoken``), same header (``Authorization: Token …``), same
refusals (unknown key or inactive user → 401); used by the hot annotation endpoints where the
ORM's query compilation is a measurable share of each request's CPU.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.db import connection
from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import SessionAuthentication, TokenAuthentication
from rest_framework.authtoken.models import Token

_SQL: dict[str, Any] = {}


def _query() -> tuple[str, list[str]]:
    if "sql" not in _SQL:
        User = get_user_model()
        qn = connection.ops.quote_name
        fields = list(User._meta.concrete_fields)
        cols = ", ".join(f"u.{qn(f.column)}" for f in fields)
        _SQL["sql"] = (
            f"SELECT {cols} FROM {qn(Token._meta.db_table)} t "
            f"JOIN {qn(User._meta.db_table)} u ON u.{qn(User._meta.pk.column)} = t.{qn('user_id')} "
            f"WHERE t.{qn('key')} = %s"
        )
        _SQL["names"] = [f.attname for f in fields]
    return _SQL["sql"], _SQL["names"]


class FastTokenAuthentication(TokenAuthentication):
    def authenticate_credentials(self, key: str) -> tuple[Any, None]:
        sql, names = _query()
        with connection.cursor() as cur:
            cur.execute(sql, [key])
            row = cur.fetchone()
        if row is None:
            raise exceptions.AuthenticationFailed(_("Invalid token."))
        User = get_user_model()
        user = User.from_db(connection.alias, names, list(row))
        if not user.is_active:
            raise exceptions.AuthenticationFailed(_("User inactive or deleted."))
        return (user, None)


# Token first, so that a missing or bad token answers 401 with "WWW-Authenticate: Token".
AUTHENTICATION = [FastTokenAuthentication, SessionAuthentication]
