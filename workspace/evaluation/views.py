"""The researcher's evaluation page: "Does the labelled set make models robust?", a section of
the project page loaded with hx-get. It reads the project's pool and its export and runs
labelling's ``evaluate`` job (``labeling/evaluation.py``). Thin: parse, call one service, render
the section with the job's progress fragment in it."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.views.decorators.http import require_GET, require_POST

from labeling import evaluation as services_evaluation
from labeling.selectors import cad_missing_note, evaluation_for
from projects.http import render_section, started_elsewhere
from projects.models import Project
from projects.permissions import researcher_required
from projects.selectors import job_progress
from projects.services.jobs import BrokerUnavailable
from workspace.evaluation.forms import EvaluationForm


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
    choices = services_evaluation.evaluation_choices(project=project)
    context: dict[str, Any] = {
        "project": project,
        "message": message,
        "error": error,
        "form": form or EvaluationForm(project=project),
        "cad_note": cad_missing_note(
            project=project,
            found=any(c.key != services_evaluation.PROJECT_EVAL for c in choices),
            what="CAD test sets",
        ),
        "refused": [c.key for c in choices if c.imported],
        "not_applicable": services_evaluation.not_applicable(project=project),
        "job": latest,
        "progress": job_progress(job=latest) if latest else None,
        "result_job": ev["result_job"],
        "summary": ev["summary"],
        "sets": ev["sets"],
    }
    return render_section(
        request, "workspace/_evaluation.html", context, title="Evaluation", tab="evaluation", status=status
    )


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
    done = started_elsewhere(request, f"{reverse('project-evaluation', args=[project.pk])}#evaluation")
    if done is not None:  # a plain POST: redirect, so a reload does not start another (issue 32.8)
        return done
    return _evaluation_fragment(request, project, message=f"Evaluation queued (job {job.pk}).")
