"""Researcher pages: home redirect, project list and project overview."""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from annotate import roles
from generation.models import Project
from generation.project_selectors import project_list_with_counts, project_overview


def researcher_required(view):  # type: ignore[no-untyped-def]
    @login_required
    def wrapped(request: HttpRequest, *args, **kwargs):  # type: ignore[no-untyped-def]
        if not roles.is_researcher(request.user):
            raise PermissionDenied("researchers only")
        return view(request, *args, **kwargs)

    wrapped.__name__ = view.__name__
    wrapped.__doc__ = view.__doc__
    return wrapped


@login_required
def home(request: HttpRequest) -> HttpResponse:
    if roles.is_researcher(request.user):
        return redirect("project-list")
    return redirect("annotate-home")


@researcher_required
def project_list(request: HttpRequest) -> HttpResponse:
    projects = project_list_with_counts(user=request.user)
    return render(request, "generation/project_list.html", {"projects": projects})


@researcher_required
def project_detail(request: HttpRequest, pk: int) -> HttpResponse:
    project = get_object_or_404(Project, pk=pk)
    context = {"project": project, "overview": project_overview(project=project)}
    if request.htmx:
        return render(request, "generation/project_detail.html#counts", context)
    return render(request, "generation/project_detail.html", context)
