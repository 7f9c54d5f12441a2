"""Who may do what — the one place.

Roles are Django groups: ``researcher`` or ``annotator``; a superuser is an admin.

| who        | may                                                                              |
|------------|----------------------------------------------------------------------------------|
| admin      | everything a researcher may, plus Django's admin                                 |
| researcher | every project: create, import/export, generate, route, train, auto-label, jobs  |
| annotator  | only projects they are a member of, and only the annotation pages and API        |

A membership counts only while its user holds a role (:func:`holds_a_role`): an account taken
out of the ``annotator`` group keeps its memberships' history but may no longer act on them.

Pages use :func:`researcher_required` (files a script downloads, such as a finished export:
:func:`researcher_or_token_required`; an item's image: :func:`login_or_token_required`); DRF
views use :class:`IsResearcher`; reads that list projects use
:func:`projects.selectors.projects_visible_to`, which applies the same rule.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from rest_framework.permissions import BasePermission

RESEARCHER = "researcher"
ANNOTATOR = "annotator"
ROLES = [RESEARCHER, ANNOTATOR]


def is_admin(user: Any) -> bool:
    return bool(user.is_authenticated and user.is_superuser)


def is_researcher(user: Any) -> bool:
    """Researchers and admins."""
    if not user.is_authenticated:
        return False
    return is_admin(user) or user.groups.filter(name=RESEARCHER).exists()


def is_annotator(user: Any) -> bool:
    return bool(user.is_authenticated and user.groups.filter(name=ANNOTATOR).exists())


def role_held(user_field: str = "user") -> Any:
    """:func:`holds_a_role` as a query condition on the rows whose ``user_field`` is the
    account (memberships: ``"user"``), for the counts that must agree with who is served."""
    from django.contrib.auth import get_user_model
    from django.db.models import Exists, OuterRef, Q

    member_of = get_user_model().groups.through.objects.filter(
        user_id=OuterRef(f"{user_field}_id"), group__name__in=ROLES
    )
    return Q(**{f"{user_field}__is_superuser": True}) | Exists(member_of)


def holds_a_role(user: Any) -> bool:
    """An admin, or a member of the ``researcher`` or ``annotator`` group: whose project
    memberships count. (The annotation statements check the same in their own SQL,
    ``ROLE_HELD`` in annotate's hand-written statements.)"""
    if not user.is_authenticated:
        return False
    return is_admin(user) or user.groups.filter(name__in=ROLES).exists()


def can_annotate(user: Any, project: Any) -> bool:
    """Members of the project who hold a role, and researchers/admins (who may open the
    annotator pages; only annotator members are served items:
    ``annotate.services.assignments.lease_next``)."""
    if not user.is_authenticated:
        return False
    return is_researcher(user) or (holds_a_role(user) and project.memberships.filter(user=user).exists())


class IsResearcher(BasePermission):
    """DRF: authenticated researchers and admins only."""

    message = "researchers only"

    def has_permission(self, request: Any, view: Any) -> bool:
        return is_researcher(request.user)


def _researcher_only(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """403 unless the (already authenticated) user is a researcher or an admin."""

    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not is_researcher(request.user):
            raise PermissionDenied("researchers only")
        return view(request, *args, **kwargs)

    return wrapped


def researcher_required(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """Pages: log in first, then 403 unless researcher or admin."""
    return login_required(_researcher_only(view))


def login_or_token_required(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """A file a script also fetches with an API token (an item's image): ``Authorization:
    Token …`` is checked as the API checks it (unknown or inactive → 401, as the API answers,
    never a log-in redirect); without that header it is ``login_required`` (a browser is sent
    to log in). The view decides what the user may see."""
    page = login_required(view)

    @functools.wraps(view)
    def wrapped(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not request.META.get("HTTP_AUTHORIZATION", "").lower().startswith("token "):
            return page(request, *args, **kwargs)
        from rest_framework import exceptions
        from rest_framework.request import Request

        from projects.authentication import FastTokenAuthentication

        auth = FastTokenAuthentication()
        drf_request = Request(request)
        try:
            found = auth.authenticate(drf_request)
        except exceptions.AuthenticationFailed as exc:
            response = HttpResponse(str(exc.detail), status=401, content_type="text/plain; charset=utf-8")
            response["WWW-Authenticate"] = str(auth.authenticate_header(drf_request))
            return response
        if found is None:  # the header's keyword was not "Token": as without a header
            return page(request, *args, **kwargs)
        request.user = found[0]
        return view(request, *args, **kwargs)

    return wrapped


def researcher_or_token_required(view: Callable[..., HttpResponseBase]) -> Callable[..., HttpResponseBase]:
    """A page a script also fetches (an export's download): :func:`login_or_token_required`,
    then 403 unless researcher or admin."""
    return login_or_token_required(_researcher_only(view))
