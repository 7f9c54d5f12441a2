"""Labelling pages: the flip-rate and augmentation-evaluation sections of the project page
(loaded with hx-get), and the buttons that queue training of h, auto-labelling and the
evaluation as jobs. Thin: parse, call one service,
render the section with the job's progress fragment in it."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET, require_POST

from labeling import evaluation as services_evaluation
from labeling import services
from labeling.evaluation import evaluation_choices
from labeling.ml.augmentation import CLASSIFIERS
from labeling.selectors import evaluation_for, flip_rates_for, warm_start_choices
from projects.models import Project
from projects.permissions import researcher_required
from projects.selectors import job_latest, job_progress
from projects.services.jobs import BrokerUnavailable


@researcher_required
@require_GET
def flip_rates(request: HttpRequest, pk: int) -> HttpResponse:
    project = get_object_or_404(Project, pk=pk)
    return _fragment(request, project)


def _fragment(
    request: HttpRequest,
    project: Project,
    *,
    message: str = "",
    error: str = "",
    status: int = 200,
    errors: dict[str, str] | None = None,
) -> HttpResponse:
    jobs = [j for j in (job_latest(project=project, kind="train"), job_latest(project=project, kind="autolabel")) if j]
    context: dict[str, Any] = {
        "project": project,
        "rates": flip_rates_for(project=project),
        "message": message,
        "error": error,
        "jobs": [{"job": j, "progress": job_progress(job=j)} for j in jobs],
        "warm_starts": warm_start_choices(project=project),
        "errors": errors or {},
    }
    return render(request, "labeling/_flip_rates.html", context, status=status)


@researcher_required
@require_POST
def pairwise_train_start(request: HttpRequest, pk: int) -> HttpResponse:
    """Queue training of h (a ``train`` job); refuse at once when the labels can't train it."""
    project = get_object_or_404(Project, pk=pk)
    key = request.POST.get("warm_start", "").strip()
    known = {k: spec for k, _, spec in warm_start_choices(project=project)}
    if key and key not in known:
        choices = ", ".join(known) or f"none for {project.task} projects"
        return _fragment(
            request, project, errors={"warm_start": f"choose one of the listed data sets ({choices})"}, status=400
        )
    try:
        job = services.pairwise_train_start(
            project=project,
            mode=request.POST.get("mode", "capc"),
            warm_start=known.get(key, ""),
            created_by=request.user,
        )
    except ValidationError as exc:
        return _fragment(request, project, error=f"cannot train yet: {' '.join(exc.messages)}", status=400)
    except BrokerUnavailable as exc:
        return _fragment(request, project, error=str(exc), status=503)
    return _fragment(request, project, message=f"Training {job.params['mode'].upper()} queued (job {job.pk}).")


@researcher_required
@require_POST
def autolabel_start(request: HttpRequest, pk: int) -> HttpResponse:
    """Queue auto-labelling with the latest model; refuse at once when there is none."""
    project = get_object_or_404(Project, pk=pk)
    raw = request.POST.get("min_confidence", "").strip()
    try:
        min_conf = float(raw) if raw else None
    except ValueError:
        return _fragment(request, project, error="min confidence must be a number between 0 and 1", status=400)
    try:
        job = services.autolabel_start(project=project, min_confidence=min_conf, created_by=request.user)
    except ValidationError as exc:
        return _fragment(request, project, error=" ".join(exc.messages), status=400)
    except BrokerUnavailable as exc:
        return _fragment(request, project, error=str(exc), status=503)
    return _fragment(request, project, message=f"Auto-labelling queued (job {job.pk}).")


@researcher_required
@require_GET
def evaluation(request: HttpRequest, pk: int) -> HttpResponse:
    """The augmentation-evaluation section: a form, the latest job's progress, and the
    latest result as a gain chart (SVG) with its table."""
    project = get_object_or_404(Project, pk=pk)
    return _evaluation_fragment(request, project)


def _evaluation_fragment(
    request: HttpRequest, project: Project, *, message: str = "", error: str = "", status: int = 200
) -> HttpResponse:
    ev = evaluation_for(project=project)
    latest = ev["latest"]
    context: dict[str, Any] = {
        "project": project,
        "message": message,
        "error": error,
        "choices": evaluation_choices(project=project),
        "classifiers": CLASSIFIERS,
        "job": latest,
        "progress": job_progress(job=latest) if latest else None,
        "result_job": ev["result_job"],
        "sets": ev["sets"],
    }
    return render(request, "labeling/_evaluation.html", context, status=status)


@researcher_required
@require_POST
def evaluation_start(request: HttpRequest, pk: int) -> HttpResponse:
    """Queue an augmentation evaluation (an ``evaluate`` job); refuse bad input at once."""
    project = get_object_or_404(Project, pk=pk)
    allowed = {spec for spec, _ in evaluation_choices(project=project)}
    evals = [e for e in request.POST.getlist("evals") if e]
    if any(e not in allowed for e in evals):
        return _evaluation_fragment(request, project, error="choose evaluation sets from the list", status=400)
    try:
        budget = float(request.POST.get("budget") or 0.1)
        seeds = int(request.POST.get("seeds") or 3)
    except ValueError:
        return _evaluation_fragment(request, project, error="budget and seeds must be numbers", status=400)
    try:
        job = services_evaluation.evaluation_start(
            project=project,
            evals=evals,
            budget=budget,
            seeds=seeds,
            classifier=request.POST.get("classifier") or "minilm-lr",
            created_by=request.user,
        )
    except ValidationError as exc:
        return _evaluation_fragment(request, project, error=" ".join(exc.messages), status=400)
    except BrokerUnavailable as exc:
        return _evaluation_fragment(request, project, error=str(exc), status=503)
    return _evaluation_fragment(request, project, message=f"Evaluation queued (job {job.pk}).")
