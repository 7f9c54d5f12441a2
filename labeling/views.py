"""Labelling pages: the flip-rate fragment the project page loads with hx-get."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from annotate.roles import is_researcher
from generation.models import Project
from labeling.selectors import flip_rates_for


@login_required
def flip_rates(request: HttpRequest, pk: int) -> HttpResponse:
    if not is_researcher(request.user):
        raise PermissionDenied("researchers only")
    project = get_object_or_404(Project, pk=pk)
    return render(request, "labeling/_flip_rates.html", {"project": project, "rates": flip_rates_for(project=project)})
