"""Request-wide guards (``MIDDLEWARE`` in ``config/settings/base.py``).

``UnstorableInputMiddleware`` refuses, in one place, the characters no database column can
hold: a NUL or a lone surrogate anywhere in what a request sends — its path, the names and
values of its query parameters and form fields, and the keys and strings of a JSON body at any
depth. PostgreSQL refuses both in ``text``, ``varchar`` and ``jsonb`` (even in a ``WHERE``), and
a lone surrogate echoed in an error message cannot be encoded to answer it: each used to be a
500 somewhere. The answer is a 400 that names the field but never repeats the value: JSON
(``{"detail": …}``) under ``/api/``, the page otherwise (a fragment for htmx).

What is checked where:

* the path and the query string, a urlencoded body and a JSON body: before any view runs (the
  body is read without touching ``request.POST``, so a view may still install its own upload
  handlers; a urlencoded or JSON body over ``DATA_UPLOAD_MAX_MEMORY_SIZE``, 2.5 MB, is a 413);
* a multipart body: after CSRF, for the views that let Django parse it. Views exempt from
  Django's CSRF check parse their own uploads — the import page and the API (DRF checks CSRF
  itself), which install upload handlers that must run first — and are left to their forms and
  serializers: DRF's ``CharField`` refuses NUL and lone surrogates, and a multipart field cannot
  carry a lone surrogate (Django decodes it with ``errors="replace"``).

Lengths are the forms' and serializers' business (``max_length`` as on the model field).

``SecurityHeadersMiddleware`` sends the CSP and the Permissions-Policy;
``HtmxLoginRedirectMiddleware`` turns the log-in redirect of an htmx request (its session
ended) into a full-page one; ``HtmxErrorMiddleware`` answers an htmx request's 404 or 403 with
the error card alone.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.contrib.auth.views import redirect_to_login
from django.core.exceptions import PermissionDenied, RequestDataTooBig
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse, QueryDict
from django.shortcuts import render, resolve_url
from django_htmx.http import HTMX_STOP_POLLING, HttpResponseClientRedirect

from projects.inputs import unstorable

API_PREFIX = "/api/"
SHOWN_NAME = 60


@dataclass(frozen=True)
class Problem:
    """What is wrong (``text``) and, when it lies in a named field, the field's name (a
    top-level form field, query parameter or JSON key, fit to print)."""

    text: str
    field: str | None = None


def _shown(name: str) -> str:
    """A field name fit to print: as sent, or escaped when it holds the bad character itself."""
    text = name if unstorable(name) is None and name.isprintable() else ascii(name)[1:-1]
    return text if len(text) <= SHOWN_NAME else text[: SHOWN_NAME - 1] + "…"


def _pairs_problem(pairs: Iterable[tuple[str, list[str]]], where: str) -> Problem | None:
    for name, values in pairs:
        problem = unstorable(name)
        if problem is not None:
            return Problem(f"the name of a {where} contains {problem}")
        for value in values:
            problem = unstorable(value)
            if problem is not None:
                return Problem(f"the {where} {_shown(name)} contains {problem}", _shown(name))
    return None


def _json_problem(value: Any) -> Problem | None:
    """The first NUL or lone surrogate in a parsed JSON value (iterative: any depth)."""
    stack: list[tuple[Any, str, str | None]] = [(value, "", None)]
    while stack:
        item, at, top = stack.pop()
        if isinstance(item, str):
            problem = unstorable(item)
            if problem is not None:
                return Problem(f"the JSON body contains {problem}" + (f" (in {_shown(at)})" if at else ""), top)
        elif isinstance(item, dict):
            for key, sub in item.items():
                problem = unstorable(key)
                if problem is not None:
                    return Problem(
                        f"a key in the JSON body contains {problem}" + (f" (in {_shown(at)})" if at else ""), top
                    )
                stack.append((sub, f"{at}.{key}" if at else key, top if top is not None else _shown(key)))
        elif isinstance(item, list):
            stack.extend((sub, f"{at}[{i}]", top) for i, sub in enumerate(item))
    return None


def _is_json(content_type: str) -> bool:
    return content_type == "application/json" or content_type.endswith("+json")


def request_problem(request: HttpRequest) -> Problem | None:
    """Why the path, the query string or a urlencoded/JSON body cannot be taken, or ``None``."""
    problem = unstorable(request.path_info)
    if problem is not None:
        return Problem(f"the address contains {problem}")
    found = _pairs_problem(request.GET.lists(), "query parameter")
    if found is not None:
        return found
    content_type = request.content_type or ""
    if content_type == "application/x-www-form-urlencoded" or _is_json(content_type):
        if not request.META.get("CONTENT_LENGTH"):
            return None
        body = request.body  # RequestDataTooBig over DATA_UPLOAD_MAX_MEMORY_SIZE: handled by the caller
        if _is_json(content_type):
            try:
                parsed = json.loads(body)
            except (ValueError, RecursionError):
                return None  # not JSON (or nested too deeply): the API's parser answers 400 itself
            return _json_problem(parsed)
        form = QueryDict(body, encoding=request.encoding)  # a copy: request.POST stays unparsed
        return _pairs_problem(form.lists(), "form field")
    return None


def bad_input_response(
    request: HttpRequest, message: str, *, field: str | None = None, status: int = 400
) -> HttpResponse:
    """``message`` as JSON under ``/api/`` (``detail``, and under the field's name as DRF puts
    field errors), else as a page (a fragment for htmx)."""
    if request.path_info.startswith(API_PREFIX):
        body: dict[str, Any] = {"detail": message}
        if field is not None and field != "detail":
            body[field] = [message]
        return JsonResponse(body, status=status)
    template = "bad_input.html#message" if request.headers.get("HX-Request") == "true" else "bad_input.html"
    return render(request, template, {"message": message}, status=status)


def _refused(request: HttpRequest, problem: Problem) -> HttpResponse:
    message = f"Bad input: {problem.text}, which cannot be stored. Remove it and try again."
    return bad_input_response(request, message, field=problem.field)


class UnstorableInputMiddleware:
    """A 400 for a request that carries a NUL or a lone surrogate (see the module's docstring)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        try:
            problem = request_problem(request)
        except RequestDataTooBig:
            limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
            return bad_input_response(request, f"The request body is larger than {limit} bytes.", status=413)
        if problem is not None:
            return _refused(request, problem)
        return self.get_response(request)

    def process_view(
        self, request: HttpRequest, view_func: Callable[..., Any], view_args: Any, view_kwargs: Any
    ) -> HttpResponse | None:
        if request.content_type != "multipart/form-data" or getattr(view_func, "csrf_exempt", False):
            return None
        problem = _pairs_problem(request.POST.lists(), "form field")
        if problem is not None:
            return _refused(request, problem)
        return None


def policy_header(policy: dict[str, list[str]], *, csp: bool) -> str:
    """A ``CONTENT_SECURITY_POLICY`` or ``PERMISSIONS_POLICY`` setting as its header value."""
    if csp:
        return "; ".join(f"{directive} {' '.join(sources)}".strip() for directive, sources in policy.items())
    return ", ".join(f"{feature}=({' '.join(allowed)})" for feature, allowed in policy.items())


class SecurityHeadersMiddleware:
    """``Content-Security-Policy`` and ``Permissions-Policy`` on every response, from the
    settings of the same names (``config/settings/base.py``; docs/security.md). A view that sets
    its own header keeps it."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response
        self.csp = policy_header(settings.CONTENT_SECURITY_POLICY, csp=True)
        self.permissions = policy_header(settings.PERMISSIONS_POLICY, csp=False)

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if self.csp:
            response.headers.setdefault("Content-Security-Policy", self.csp)
        if self.permissions:
            response.headers.setdefault("Permissions-Policy", self.permissions)
        return response


class HtmxLoginRedirectMiddleware:
    """An htmx request whose session has ended (logged out in another tab, expired) is answered
    by the log-in-required views with a redirect to the log-in page, which the browser follows
    inside the request: htmx swapped the whole log-in page into the fragment's place (a second
    header in the page, the annotator's item replaced by a log-in form) and its ``next`` was the
    fragment's or the POST's URL (after logging in: a bare fragment, or a 405). Such a redirect
    becomes ``HX-Redirect``: the browser goes to the log-in page, whose ``next`` is the page the
    user was on (``HX-Current-URL``, same origin only)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        htmx = getattr(request, "htmx", None)
        if not htmx or response.status_code not in (301, 302, 303, 307, 308):
            return response
        login = resolve_url(settings.LOGIN_URL)
        if urlsplit(response["Location"]).path != login:
            return response
        here = htmx.current_url_abs_path
        return HttpResponseClientRedirect(redirect_to_login(here).url if here else login)


class HtmxErrorMiddleware:
    """A page view that raises ``Http404`` or ``PermissionDenied`` during an htmx request — the
    overview's counts polled after another researcher deleted the project, a section's button
    pressed after the role was taken away — answered with the whole 404 or 403 page (under
    ``DEBUG`` Django's technical page, whose inline style the CSP refuses), which htmx swapped
    into the section. The answer is now the error page's card alone, swapped in its place, with
    HTTP 286: htmx swaps it without logging an error and stops polling."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not getattr(request, "htmx", False) or request.path.startswith("/api/"):
            return None
        if isinstance(exception, Http404):
            return render(request, "404.html", status=HTMX_STOP_POLLING)
        if isinstance(exception, PermissionDenied):
            return render(request, "403.html", {"exception": str(exception)}, status=HTMX_STOP_POLLING)
        return None
