"""Labelling pages: the flip-rate section of the project page (loaded with hx-get), and the
buttons that queue training of h and auto-labelling as jobs; the task-model section (train f,
its progress and ETA, cancel, its figures). Thin: parse, call one service,
render the section with the job's progress fragment in it. (The augmentation-evaluation
section is a researcher's cross-app page: ``workspace/evaluation/``.)"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from labeling import services, task_training
from labeling.forms import AutolabelForm, TaskModelForm, TrainForm
from labeling.selectors import cad_missing_note, flip_rates_for, warm_start_options
from projects.http import render_section, started_elsewhere
from projects.models import Project
from projects.permissions import researcher_required
from projects.selectors import job_latest, job_progress
from projects.services.jobs import BrokerUnavailable, job_cancel


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
        "warm_starts": warm_start_options(project=project),
        "task_model": task_training.task_model_latest(project=project),
        "errors": errors or {},
        "not_applicable": services.pairwise_not_applicable(project=project),
    }
    # whether "Train h" reads the newest task model by default, and why not (issue 30)
    context["task_model_for_h"], context["task_model_note"] = task_training.task_model_for_h(project=project)
    context["warm_note"] = cad_missing_note(project=project, found=bool(context["warm_starts"]), what="warm starts")
    return render_section(
        request, "labeling/_flip_rates.html", context, title="Label flips", tab="models", status=status
    )


@researcher_required
@require_POST
def pairwise_train_start(request: HttpRequest, pk: int) -> HttpResponse:
    """Queue training of h (a ``train`` job); refuse at once when the labels can't train it."""
    project = get_object_or_404(Project, pk=pk)
    form = TrainForm.parse(request.POST, project=project)
    if not form.is_valid():
        return _fragment(request, project, errors=form.field_errors(), status=400)
    try:
        job = services.pairwise_train_start(
            project=project,
            mode=form.cleaned_data["mode"],
            warm_start=form.cleaned_data["warm_start"],
            task_model=form.cleaned_data["task_model"],
            created_by=request.user,
        )
    except ValidationError as exc:
        return _fragment(request, project, error=f"cannot train yet: {' '.join(exc.messages)}", status=400)
    except BrokerUnavailable as exc:
        return _fragment(request, project, error=str(exc), status=503)
    if (done := started_elsewhere(request, _section_url(project, "flip-rates"))) is not None:
        return done
    note = job.params.get("task_model_note") or ""
    return _fragment(
        request,
        project,
        message=f"Training {job.params['mode'].upper()} queued (job {job.pk})." + (f" Note: {note}." if note else ""),
    )


@researcher_required
@require_POST
def autolabel_start(request: HttpRequest, pk: int) -> HttpResponse:
    """Queue auto-labelling with the latest model; refuse at once when there is none."""
    project = get_object_or_404(Project, pk=pk)
    form = AutolabelForm.parse(request.POST)
    if not form.is_valid():
        return _fragment(request, project, error=form.error_text(), status=400)
    try:
        job = services.autolabel_start(
            project=project, min_confidence=form.cleaned_data["min_confidence"], created_by=request.user
        )
    except ValidationError as exc:
        return _fragment(request, project, error=" ".join(exc.messages), status=400)
    except BrokerUnavailable as exc:
        return _fragment(request, project, error=str(exc), status=503)
    if (done := started_elsewhere(request, _section_url(project, "flip-rates"))) is not None:
        return done
    return _fragment(request, project, message=f"Auto-labelling queued (job {job.pk}).")


def _section_url(project: Project, section: str) -> str:
    """Where a section lives: the task-model page (``project-models``) holds both."""
    return f"{reverse('project-models', args=[project.pk])}#{section}"


# -- the task model f (issue 26) -----------------------------------------------------------


def _task_model_fragment(
    request: HttpRequest, project: Project, *, message: str = "", error: str = "", status: int = 200
) -> HttpResponse:
    job = job_latest(project=project, kind="task_model")
    probe = task_training.task_model_probe_latest(project=project)
    context: dict[str, Any] = {
        "probe": probe,
        # the form's values: the newest probe's proposal (sized for about an hour), else the defaults
        "epochs_value": (probe or {}).get("proposed", {}).get("epochs", 3),
        "max_examples_value": (probe or {}).get("proposed", {}).get("max_examples", 0),
        "project": project,
        "message": message,
        "error": error,
        "job": job,
        "progress": job_progress(job=job) if job else None,
        "model": task_training.task_model_latest(project=project),
        "counts": task_training.task_data_counts(project=project),
        "max_epochs": task_training.MAX_EPOCHS,
    }
    return render_section(
        request, "labeling/_task_model.html", context, title="Task model", tab="models", status=status
    )


@researcher_required
@require_GET
def task_model_section(request: HttpRequest, pk: int) -> HttpResponse:
    return _task_model_fragment(request, get_object_or_404(Project, pk=pk))


def _task_model_queue(request: HttpRequest, project: Project, start: Any) -> Any:
    """Parse the task-model form and queue ``start`` (training or its probe): the job, or the
    fragment with the error (400 bad input, 409 busy, 503 no broker)."""
    form = TaskModelForm(request.POST)
    if not form.is_valid():
        return _task_model_fragment(request, project, error=form.error_text(), status=400)
    try:
        return start(project=project, created_by=request.user, **form.cleaned_data)
    except ValidationError as exc:
        return _task_model_fragment(request, project, error=" ".join(exc.messages), status=400)
    except task_training.TaskModelBusy as exc:
        return _task_model_fragment(request, project, error=str(exc), status=409)
    except BrokerUnavailable as exc:
        return _task_model_fragment(request, project, error=str(exc), status=503)


@researcher_required
@require_POST
def task_model_start(request: HttpRequest, pk: int) -> HttpResponse:
    """Queue training of the task model (a ``task_model`` job)."""
    project = get_object_or_404(Project, pk=pk)
    job = _task_model_queue(request, project, task_training.task_model_start)
    if isinstance(job, HttpResponse):
        return job
    if (done := started_elsewhere(request, _section_url(project, "task-model"))) is not None:
        return done
    return _task_model_fragment(request, project, message=f"Training the task model queued (job {job.pk}).")


@researcher_required
@require_POST
def task_model_probe_start(request: HttpRequest, pk: int) -> HttpResponse:
    """Queue the probe that estimates the training's time on this machine (issue 30)."""
    project = get_object_or_404(Project, pk=pk)
    job = _task_model_queue(request, project, task_training.task_model_probe_start)
    if isinstance(job, HttpResponse):
        return job
    if (done := started_elsewhere(request, _section_url(project, "task-model"))) is not None:
        return done
    return _task_model_fragment(
        request, project, message=f"Estimating the training time from a few steps on this machine (job {job.pk})."
    )


@researcher_required
@require_POST
def task_model_cancel(request: HttpRequest, pk: int) -> HttpResponse:
    """Ask the running task-model job to stop (it saves a checkpoint; training again resumes)."""
    project = get_object_or_404(Project, pk=pk)
    job = task_training.task_model_active_job(project=project)
    if job is None:
        return _task_model_fragment(request, project, error="no task model is being trained", status=409)
    job_cancel(job=job)
    return _task_model_fragment(
        request, project, message=f"Cancelling job {job.pk}; training again resumes from its checkpoint."
    )
