"""The researcher's project dashboard (``/projects/<id>/dashboard/``) and its science-warnings
fragment (loaded into the project page). Thin: one selector, one template."""

from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from projects.http import bad_request, render_section
from projects.models import Project
from projects.permissions import researcher_required
from workspace.dashboard.forms import WarningsQuery
from workspace.dashboard.selectors import CHECKS, project_dashboard, science_warnings


@researcher_required
@require_GET
def dashboard(request: HttpRequest, project_id: int) -> HttpResponse:
    project = get_object_or_404(Project, pk=project_id)
    return render(
        request,
        "workspace/project_dashboard.html",
        {"project": project, "checks": CHECKS, **project_dashboard(project=project)},
    )


@researcher_required
@require_GET
def warnings(request: HttpRequest, project_id: int) -> HttpResponse:
    """The risks fragment; ``?limit=N`` (the overview): the first N, and how many more the
    dashboard lists."""
    project = get_object_or_404(Project, pk=project_id)
    query = WarningsQuery(request.GET)
    if not query.is_valid():
        return bad_request(query.error_text())
    found = science_warnings(project=project)
    limit = query.cleaned_data["limit"] or len(found)
    return render_section(
        request,
        "workspace/_science_warnings.html",
        {
            "project": project,
            "warnings": found[:limit],
            "more": max(0, len(found) - limit),
            "checks": CHECKS,
            "with_dashboard_link": True,
        },
        title="Risks",
        tab="dashboard",
    )
