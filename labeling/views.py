"""Labelling pages: the flip-rate and augmentation-evaluation sections of the project page
(loaded with hx-get), and the buttons that queue training of h, auto-labelling and the
evaluation as jobs. Thin: parse, call one service,
render the section with the job's progress fragment in it."""

from __future__ import annotations

from typing import Any, cast

from django import forms
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET, require_POST

from labeling import evaluation as services_evaluation
from labeling import services
from labeling.evaluation import MAX_SEEDS, evaluation_choices
from labeling.forms import AutolabelForm, TrainForm
from labeling.ml.augmentation import CLASSIFIERS
from labeling.selectors import (
    CLASSIFIER_NAMES,
    evaluation_for,
    flip_rates_for,
    warm_start_options,
)
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
        "warm_starts": warm_start_options(project=project),
        "errors": errors or {},
    }
    return render(request, "labeling/_flip_rates.html", context, status=status)


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
    return _fragment(request, project, message=f"Auto-labelling queued (job {job.pk}).")


class EvaluationForm(forms.Form):
    """The evaluation form: sets by key (never a path), budget, seeds, classifier f'."""

    evals = forms.MultipleChoiceField(choices=(), error_messages={"required": "choose at least one evaluation set"})
    budget = forms.FloatField(min_value=0.01, max_value=0.99, initial=0.1)
    seeds = forms.IntegerField(min_value=1, max_value=MAX_SEEDS, initial=3)
    classifier = forms.ChoiceField(choices=[(c, CLASSIFIER_NAMES.get(c, c)) for c in CLASSIFIERS], initial="minilm-lr")

    def __init__(self, *args: Any, project: Project, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = [(c.key, c.description) for c in evaluation_choices(project=project)]
        cast(forms.MultipleChoiceField, self.fields["evals"]).choices = choices


@researcher_required
@require_GET
def evaluation(request: HttpRequest, pk: int) -> HttpResponse:
    """The augmentation-evaluation section: a form, the latest job's progress, and the
    latest result as a gain chart (SVG) with its table."""
    project = get_object_or_404(Project, pk=pk)
    return _evaluation_fragment(request, project)


def _evaluation_fragment(
    request: HttpRequest,
    project: Project,
    *,
    message: str = "",
    error: str = "",
    status: int = 200,
    form: EvaluationForm | None = None,
) -> HttpResponse:
    ev = evaluation_for(project=project)
    latest = ev["latest"]
    context: dict[str, Any] = {
        "project": project,
        "message": message,
        "error": error,
        "form": form or EvaluationForm(project=project),
        "job": latest,
        "progress": job_progress(job=latest) if latest else None,
        "result_job": ev["result_job"],
        "summary": ev["summary"],
        "sets": ev["sets"],
    }
    return render(request, "labeling/_evaluation.html", context, status=status)


@researcher_required
@require_POST
def evaluation_start(request: HttpRequest, pk: int) -> HttpResponse:
    """Queue an augmentation evaluation (an ``evaluate`` job); refuse bad input at once."""
    project = get_object_or_404(Project, pk=pk)
    form = EvaluationForm(request.POST, project=project)
    if not form.is_valid():
        problems = "; ".join(f"{e}" for errs in form.errors.values() for e in errs)
        if "evals" in form.errors and "valid choice" in str(form.errors["evals"]):
            problems = "choose evaluation sets from the list"
        return _evaluation_fragment(request, project, error=problems, status=400, form=form)
    d = form.cleaned_data
    try:
        job = services_evaluation.evaluation_start(
            project=project,
            evals=list(d["evals"]),
            budget=d["budget"],
            seeds=d["seeds"],
            classifier=d["classifier"],
            created_by=request.user,
        )
    except ValidationError as exc:
        return _evaluation_fragment(request, project, error=" ".join(exc.messages), status=400, form=form)
    except BrokerUnavailable as exc:
        return _evaluation_fragment(request, project, error=str(exc), status=503, form=form)
    return _evaluation_fragment(request, project, message=f"Evaluation queued (job {job.pk}).")
