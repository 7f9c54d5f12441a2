"""The request type of views that read ``request.htmx``, the plain-text 400, and a section's
fragment that is a page of its own outside htmx.

django-htmx's middleware (``config/settings/base.py`` ``MIDDLEWARE``) sets ``request.htmx`` on
every request; ``HttpRequest`` does not declare it, so views that read it take this type
(django-htmx's documented way to type it).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django_htmx.middleware import HtmxDetails


class HtmxHttpRequest(HttpRequest):
    htmx: HtmxDetails


def bad_request(message: str) -> HttpResponse:
    """A 400 whose body is ``message`` as plain text. Validation messages may repeat what the
    request sent ("Select a valid choice. <…> is not one of the available choices."); served
    as text/html, a link carrying markup in a query parameter put it on the page
    (docs/security.md, *Input validation*)."""
    return HttpResponse(message, status=400, content_type="text/plain; charset=utf-8")


def started_elsewhere(request: HttpRequest, url: str) -> HttpResponse | None:
    """POST-redirect-GET for a form that started a job (issue 32.8): a plain (non-htmx) POST
    is answered with a redirect to ``url``, so a reload shows the job instead of starting
    another; an htmx POST (which swaps a fragment, the page's URL unchanged) gets None and its
    fragment as before."""
    if getattr(request, "htmx", False):
        return None
    return HttpResponseRedirect(url)


def render_section(
    request: HttpRequest, template: str, context: dict[str, Any], *, title: str, tab: str = "", status: int = 200
) -> HttpResponse:
    """A section that a page loads with hx-get (and that its forms swap): the fragment for
    htmx; for any other request — the URL opened directly or in a new tab, followed by a
    crawler, a form posted without JavaScript — the same section on a page of its own (the
    site's header, a title, a heading, the project's tabs when ``tab`` names one), never a bare
    fragment without styles or scripts."""
    if getattr(request, "htmx", False):
        return render(request, template, context, status=status)
    page = {**context, "section_template": template, "section_title": title, "tab": tab}
    return render(request, "section_page.html", page, status=status)
