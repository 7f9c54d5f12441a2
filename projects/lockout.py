"""Log-in throttling: django-axes for passwords, a cache counter for API tokens.

* Passwords (the log-in page, the admin's log-in): django-axes counts failures per
  username + client address in the database (``axes.AccessAttempt``) and refuses that pair, even
  with the right password, once ``AXES_FAILURE_LIMIT`` is reached, until the cool-off has passed
  or a researcher/admin unlocks it (``lockouts`` below, the admin, ``manage.py axes_reset_*``).
* API tokens (``Authorization: Token …``): a token is a random 40-hex key, not a password,
  and the annotation endpoints must stay cheap, so there is no database work here: an address
  whose requests drew ``COUNTERPART["API_TOKEN_FAILURE_LIMIT"]`` 401 answers within the
  cool-off gets 429 for any token request until the window ends. A valid token costs one cache
  read.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from axes.backends import AxesStandaloneBackend
from axes.helpers import get_client_username, get_failure_limit
from axes.models import AccessAttempt
from axes.utils import reset as axes_reset
from django.conf import settings
from django.contrib import messages
from django.contrib.admin.forms import AdminAuthenticationForm
from django.contrib.auth.forms import AuthenticationForm
from django.core.cache import cache
from django.core.validators import MaxLengthValidator
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_http_methods

from projects.forms import UnlockForm
from projects.http import bad_request
from projects.permissions import researcher_required


def client_ip(request: HttpRequest) -> str | None:
    """The client's address: ``REMOTE_ADDR``, or, behind ``COUNTERPART_TRUSTED_PROXY_COUNT``
    proxies that each append to ``X-Forwarded-For``, the address the outermost one saw.

    Entries left of that one were written by the client and are never trusted."""
    count = settings.COUNTERPART["TRUSTED_PROXY_COUNT"]
    remote = request.META.get("REMOTE_ADDR") or None
    if count <= 0:
        return remote
    forwarded = [part.strip() for part in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",") if part.strip()]
    if len(forwarded) < count:
        return remote  # not the chain of proxies we were told about: fall back to the peer
    return forwarded[-count]


class LoginLockoutBackend(AxesStandaloneBackend):
    """axes' check (refuse a locked-out username + address) for web log-ins.

    ``authenticate()`` without a request is no web log-in (the test client's ``login()``, a
    shell): there is no address to count, so this backend steps aside for it (axes' own backend
    raises instead). The log-in page and the admin always pass the request."""

    def authenticate(
        self, request: HttpRequest | None, username: str | None = None, password: str | None = None, **kwargs: Any
    ) -> None:
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


class _UsernameLength:
    """Django's log-in forms set the username field's ``max_length`` after the field is built,
    so the length is never validated and any username reaches ``authenticate()``; axes then
    stores the failed attempt's username in a 255-character column (a 500 on PostgreSQL). This
    adds the validator: a longer username is a form error, and no attempt is recorded."""

    fields: dict[str, Any]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["username"]
        field.validators.append(MaxLengthValidator(field.max_length))


class LoginForm(_UsernameLength, AuthenticationForm):
    """The log-in page's form (``config/urls.py``)."""


class AdminLoginForm(_UsernameLength, AdminAuthenticationForm):
    """The admin's log-in form (``admin.site.login_form``, ``config/urls.py``)."""


def cooloff_minutes() -> int | None:
    cooloff = settings.AXES_COOLOFF_TIME
    return None if cooloff is None else int(cooloff.total_seconds() // 60)


def lockout_response(
    request: HttpRequest, original_response: HttpResponse | None = None, credentials: dict[str, Any] | None = None
) -> HttpResponse:
    """``AXES_LOCKOUT_CALLABLE``: the page a locked-out log-in gets (429)."""
    context = {
        "username": get_client_username(request, credentials) or "",
        "failure_limit": get_failure_limit(request, credentials),
        "cooloff_minutes": cooloff_minutes(),
    }
    return render(request, "registration/locked_out.html", context, status=settings.AXES_HTTP_RESPONSE_CODE)


def locked_attempts() -> Any:
    """Username + address pairs locked out now (the database handler's records)."""
    attempts = AccessAttempt.objects.filter(failures_since_start__gte=settings.AXES_FAILURE_LIMIT)
    if settings.AXES_COOLOFF_TIME is not None:
        attempts = attempts.filter(attempt_time__gt=timezone.now() - settings.AXES_COOLOFF_TIME)
    return attempts.order_by("-attempt_time")


@researcher_required
@require_http_methods(["GET", "POST"])
def lockouts(request: HttpRequest) -> HttpResponse:
    """Researchers and admins see the locked-out log-ins and unlock them."""
    if request.method == "POST":
        form = UnlockForm.parse(request.POST)
        if not form.is_valid():
            return bad_request(form.error_text())
        attempt = get_object_or_404(AccessAttempt, pk=form.cleaned_data["attempt"])
        axes_reset(ip=attempt.ip_address, username=attempt.username)
        messages.success(request, f"Unlocked {attempt.username or '(no username)'} from {attempt.ip_address}.")
        return redirect("lockouts")
    return render(request, "registration/lockouts.html", {"attempts": locked_attempts()})


# --- API tokens --------------------------------------------------------------------------


def _token_failures_key(ip: str | None) -> str:
    return f"counterpart:token-failures:{ip or 'unknown'}"


def token_failures_reset(ip: str) -> None:
    """Forget an address's bad-token count (needs a shared cache, ``DJANGO_CACHE_URL``, to reach
    the web processes from a shell)."""
    cache.delete(_token_failures_key(ip))


def _carries_token(request: HttpRequest) -> bool:
    parts = request.META.get("HTTP_AUTHORIZATION", "").split()
    return bool(parts) and parts[0].lower() == "token"


class TokenFailureThrottleMiddleware:
    """429 for token requests from an address that drew too many 401s (see the module doc)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        limit = settings.COUNTERPART["API_TOKEN_FAILURE_LIMIT"]
        if limit <= 0 or not _carries_token(request):
            return self.get_response(request)
        key = _token_failures_key(client_ip(request))
        window = settings.COUNTERPART["API_TOKEN_FAILURE_WINDOW_SECONDS"]
        if cache.get(key, 0) >= limit:
            minutes = max(1, round(window / 60))
            refused = JsonResponse(
                {
                    "detail": (
                        "Too many requests with an invalid API token from this address. "
                        f"Try again in {minutes} minutes."
                    )
                },
                status=429,
            )
            refused["Retry-After"] = str(window)
            return refused
        response = self.get_response(request)
        if response.status_code == 401 and not cache.add(key, 1, window):
            try:
                cache.incr(key)
            except ValueError:  # expired between add and incr
                cache.add(key, 1, window)
        return response
