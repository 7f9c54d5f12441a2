"""Annotator pages (home, instructions, the keyboard-first item page) and the researcher's
quality dashboard. Thin: parse, call one service/selector, render. htmx requests get the
``annotate/item.html#stage`` fragment; plain form posts redirect (works without JavaScript)."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth import get_user_model
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseStopPolling

from annotate import selectors
from annotate.models import Assignment
from annotate.services import assignments as svc
from annotate.services.quality import membership_unflag
from annotate.services.routing import (
    STRATEGIES,
    project_add_annotators,
    project_route_start,
)
from projects.inputs import BadInput, form_id, form_ids, form_text
from projects.models import Project, ProjectMembership
from projects.permissions import ANNOTATOR, researcher_required
from projects.selectors import job_latest, job_progress
from projects.services.jobs import BrokerUnavailable


def _project_for_annotator(request: HttpRequest, project_id: int) -> Project:
    project = selectors.project_annotatable_by(project_id=project_id, user=request.user)
    if project is None:
        raise Http404("no such project for you")
    return project


def _stage_context(request: HttpRequest, project: Project, *, error: str = "") -> dict[str, Any]:
    """Lease (or keep) the next item and build the stage fragment's context."""
    view = None
    blocked = ""
    try:
        assignment = svc.assignment_next(project=project, annotator=request.user)
    except svc.NotAllowed as exc:
        assignment, blocked = None, str(exc)
    if assignment is not None:
        view = selectors.item_view(assignment=assignment)
    return {
        "project": project,
        "view": view,
        "blocked": blocked,
        "error": error,
        "progress": selectors.annotator_progress(project=project, user=request.user),
        "last": selectors.last_undoable(project=project, user=request.user),
        "heartbeat_seconds": settings.COUNTERPART["HEARTBEAT_SECONDS"],
        "undo_seconds": settings.COUNTERPART["UNDO_SECONDS"],
    }


def _render_stage(request: HttpRequest, project: Project, *, error: str = "", status: int = 200) -> HttpResponse:
    ctx = _stage_context(request, project, error=error)
    if request.htmx:
        return render(request, "annotate/item.html#stage", ctx, status=status)
    if error:
        messages.error(request, error)
    return redirect("annotate-work", project_id=project.pk)


@login_required
@require_GET
def home(request: HttpRequest) -> HttpResponse:
    return render(request, "annotate/home.html", {"rows": selectors.annotator_home(user=request.user)})


@login_required
@require_GET
def instructions(request: HttpRequest, project_id: int) -> HttpResponse:
    project = _project_for_annotator(request, project_id)
    from annotate import choices as choice_rules

    return render(
        request,
        "annotate/instructions.html",
        {
            "project": project,
            "labels": [lab.name for lab in project.labels.all()],
            "caption_instruction": choice_rules.CAPTION_INSTRUCTION,
            "is_caption": project.task == "image-caption",
            "undo_seconds": f"{settings.COUNTERPART['UNDO_SECONDS']} seconds",
        },
    )


@login_required
@require_GET
def work(request: HttpRequest, project_id: int) -> HttpResponse:
    project = _project_for_annotator(request, project_id)
    return render(request, "annotate/item.html", _stage_context(request, project))


def _own_assignment_project(request: HttpRequest, assignment_id: int) -> Project:
    a = Assignment.objects.select_related("project").filter(pk=assignment_id, annotator=request.user).first()
    if a is None:
        raise Http404("no such assignment of yours")
    return a.project


@login_required
@require_POST
def answer(request: HttpRequest, assignment_id: int) -> HttpResponse:
    project = _own_assignment_project(request, assignment_id)
    raw = request.POST.get("duration_ms", "")
    try:
        duration = max(0, min(int(raw), 24 * 3600 * 1000)) if raw else None
    except ValueError:
        duration = None
    error, status = "", 200
    try:
        svc.annotation_submit(
            assignment_id=assignment_id,
            annotator=request.user,
            choice=request.POST.get("choice", ""),
            duration_ms=duration,
        )
    except svc.AnnotationError as exc:
        error, status = str(exc), exc.status
    return _render_stage(request, project, error=error, status=200 if request.htmx else status)


@login_required
@require_POST
def skip(request: HttpRequest, assignment_id: int) -> HttpResponse:
    project = _own_assignment_project(request, assignment_id)
    try:
        reason = form_text(request.POST.get("reason"), "reason")
    except BadInput as exc:
        return HttpResponseBadRequest(str(exc))
    error = ""
    try:
        svc.assignment_skip(assignment_id=assignment_id, annotator=request.user, reason=reason)
    except svc.AnnotationError as exc:
        error = str(exc)
    return _render_stage(request, project, error=error)


@login_required
@require_POST
def undo(request: HttpRequest, assignment_id: int) -> HttpResponse:
    project = _own_assignment_project(request, assignment_id)
    error = ""
    try:
        svc.annotation_undo(assignment_id=assignment_id, annotator=request.user)
    except svc.AnnotationError as exc:
        error = str(exc)
    return _render_stage(request, project, error=error)


@login_required
@require_POST
def heartbeat(request: HttpRequest, assignment_id: int) -> HttpResponse:
    expiry = svc.assignment_heartbeat(assignment_id=assignment_id, annotator=request.user)
    if expiry is None:
        resp = HttpResponseStopPolling(
            '<p class="error" role="alert">This item was released (the page was idle too long). '
            '<a href="">Reload</a> for a new one.</p>'
        )
        return resp
    return HttpResponse(status=204)


# --- researcher pages ----------------------------------------------------------------------


@researcher_required
@require_GET
def dashboard(request: HttpRequest, project_id: int) -> HttpResponse:
    project = get_object_or_404(Project, pk=project_id)
    return render(request, "annotate/dashboard.html", _dashboard_context(project))


def _dashboard_context(project: Project) -> dict[str, Any]:
    route_job = job_latest(project=project, kind="route")
    return {
        "route_job": route_job,
        "route_progress": job_progress(job=route_job) if route_job else None,
        "project": project,
        "q": selectors.project_quality(project=project),
        "strategies": STRATEGIES,
        "candidates": selectors.annotator_candidates(project=project),
        "min_agreement": f"{float(settings.COUNTERPART['MIN_AGREEMENT']):.0%}",
        "max_k": settings.COUNTERPART["MAX_ANNOTATORS_PER_ITEM"],
    }


@researcher_required
@require_POST
def route(request: HttpRequest, project_id: int) -> HttpResponse:
    """Queue routing as a job; the dashboard shows its progress and result."""
    project = get_object_or_404(Project, pk=project_id)
    try:
        budget = float(request.POST["budget"]) if request.POST.get("budget") else None
        job = project_route_start(
            project=project, budget=budget, strategy=request.POST.get("strategy", "random"), created_by=request.user
        )
    except ValueError:
        messages.error(request, "Routing refused: the budget must be a number between 0 and 1.")
    except ValidationError as exc:
        messages.error(request, f"Routing refused: {' '.join(exc.messages)}")
    except BrokerUnavailable as exc:
        messages.error(request, f"Routing not started: {exc}")
        return render(request, "annotate/dashboard.html", _dashboard_context(project), status=503)
    else:
        messages.success(request, f"Routing queued (job {job.pk}); its result appears below when it is done.")
    return redirect("annotate-dashboard", project_id=project.pk)


@researcher_required
@require_POST
def members(request: HttpRequest, project_id: int) -> HttpResponse:
    """Add annotators to a project, or clear a flag."""
    project = get_object_or_404(Project, pk=project_id)
    try:
        unflag = form_id(request.POST["unflag"], "unflag") if request.POST.get("unflag") else None
        user_ids = form_ids(request.POST.getlist("user"), "user")
    except BadInput as exc:
        return HttpResponseBadRequest(str(exc))
    if unflag is not None:
        m = get_object_or_404(ProjectMembership, pk=unflag, project=project)
        membership_unflag(membership=m)
        messages.success(request, f"Cleared the flag on {m.user.username}.")
    else:
        users = list(get_user_model().objects.filter(pk__in=user_ids, groups__name=ANNOTATOR))
        added = project_add_annotators(project=project, users=users)
        messages.success(request, f"Added {added} annotator(s).")
    return redirect("annotate-dashboard", project_id=project.pk)
