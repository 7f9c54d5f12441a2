"""The project's overview and its pages (issue 32.1): the overview (counts, the one next step,
the risks with their remedies, links to the pages), the data page, the task model and h, the
evaluation; and the remedies' route buttons. Thin: parse, call one selector or service, render.
The other pages of a project (generation runs, annotation quality, routing, members, the
dashboard) are the apps' own; every page carries the same tabs (``workspace/_tabs.html``)."""

from __future__ import annotations

from typing import Any

from django.contrib import messages
from django.core.exceptions import ValidationError
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from annotate.services.routing import project_route_target_start
from labeling import evaluation as services_evaluation
from labeling.task_training import task_data_counts
from projects.formats import FORMAT_TASKS
from projects.http import HtmxHttpRequest, bad_request
from projects.models import Project
from projects.permissions import researcher_required
from projects.selectors import project_counts
from projects.services.import_jobs import TASK_DATA_FORMATS
from projects.services.jobs import BrokerUnavailable
from workspace.dashboard.selectors import abstained_warning, science_warnings
from workspace.overview.forms import RemedyForm
from workspace.overview.selectors import overview_counts, project_next_step


def _project(pk: int) -> Project:
    return get_object_or_404(Project, pk=pk)


@researcher_required
@require_GET
def overview(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """``/projects/<id>/``: the counts (refreshed every 10 s: the ``counts`` partial), the next
    step, the risks (loaded with hx-get) and the pages."""
    project = _project(pk)
    counts = project_counts(project=project)
    context: dict[str, Any] = {"project": project, "overview": overview_counts(counts=counts)}
    if request.htmx:
        return render(request, "workspace/overview.html#counts", context)
    context["step"] = project_next_step(project=project, counts=counts)
    context["labels"] = list(project.labels.values_list("name", flat=True))
    # an image-caption project is not offered the evaluation it cannot run
    context["can_evaluate"] = not services_evaluation.not_applicable(project=project)
    return render(request, "workspace/overview.html", context)


@researcher_required
@require_GET
def data_page(request: HttpRequest, pk: int) -> HttpResponse:
    """``/projects/<id>/data/``: candidates by state, labels by source, import and export."""
    project = _project(pk)
    counts = project_counts(project=project)
    return render(
        request, "workspace/project_data.html", {"project": project, "overview": overview_counts(counts=counts)}
    )


def _task_data_formats(project: Project) -> list[str]:
    return [f for f in TASK_DATA_FORMATS if FORMAT_TASKS.get(f, project.task) == project.task]


@researcher_required
@require_GET
def models_page(request: HttpRequest, pk: int) -> HttpResponse:
    """``/projects/<id>/models/``: the task model f (with its training data upload) and the
    pairwise classifier h (train, auto-label, flip rates); both sections load with hx-get."""
    project = _project(pk)
    context = {
        "project": project,
        "task_counts": task_data_counts(project=project),
        "task_formats": _task_data_formats(project),
    }
    return render(request, "workspace/project_models.html", context)


@researcher_required
@require_GET
def evaluation_page(request: HttpRequest, pk: int) -> HttpResponse:
    """``/projects/<id>/evaluation/``: does the labelled set make models robust? (the
    evaluation section, loaded with hx-get)."""
    return render(request, "workspace/project_evaluation.html", {"project": _project(pk)})


@researcher_required
@require_POST
def route_remedy(request: HttpRequest, pk: int) -> HttpResponse:
    """A risk's route button (issue 32.2): ``remedy=abstained`` sends every pair h abstained on
    to people; ``remedy=warning&key=…`` routes the candidates of that risk (recomputed here, so
    the button does what the risk on the page says). Queues a ``route`` job and shows it on
    the routing page, whose result says what was routed, or why nothing could be."""
    project = _project(pk)
    form = RemedyForm(request.POST)
    if not form.is_valid():
        return bad_request(form.error_text())
    d = form.cleaned_data
    if d["remedy"] == "abstained":
        n = sum(c.n for c in project_counts(project=project).cells if c.state == "abstained")
        if not n:
            messages.warning(request, "No pair is abstained now: nothing to send to people.")
            return redirect("project-detail", pk=project.pk)
        warning = abstained_warning(project=project, n=n)
    else:
        found = [w for w in science_warnings(project=project) if w.key == d["key"] and w.route]
        if not found:
            messages.warning(request, "That risk is gone (the data changed): nothing was routed.")
            return redirect("project-detail", pk=project.pk)
        warning = found[0]
    try:
        job = project_route_target_start(
            project=project,
            target=warning.route,
            groups=warning.group_dicts() or None,
            k=warning.k,
            created_by=request.user,
        )
    except ValidationError as exc:
        messages.error(request, " ".join(exc.messages))
        return redirect("project-detail", pk=project.pk)
    except BrokerUnavailable as exc:
        messages.error(request, f"Routing not started: {exc}")
        return redirect("project-detail", pk=project.pk)
    messages.success(request, f"{warning.route_label}: queued (job {job.pk}); its result is below.")
    return redirect("annotate-route", project_id=project.pk)
