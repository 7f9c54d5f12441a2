"""Labelling pages: the flip-rate fragment the project page loads with hx-get."""

from __future__ import annotations

from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_POST

from annotate.permissions import researcher_required
from generation.models import Project
from labeling import services, tasks
from labeling.selectors import flip_rates_for


@researcher_required
def flip_rates(request: HttpRequest, pk: int) -> HttpResponse:
    project = get_object_or_404(Project, pk=pk)
    return _fragment(request, project)


def _fragment(request: HttpRequest, project: Project, *, message: str = "", error: str = "",
              status: int = 200) -> HttpResponse:
    context = {"project": project, "rates": flip_rates_for(project=project), "message": message, "error": error}
    return render(request, "labeling/_flip_rates.html", context, status=status)


@require_POST
@researcher_required
def pairwise_train_start(request: HttpRequest, pk: int) -> HttpResponse:
    """Queue training of h (on the ``ml`` queue); refuse at once when the labels can't train it."""
    project = get_object_or_404(Project, pk=pk)
    mode = request.POST.get("mode", "capc")
    if mode not in ("pc", "capc"):
        return _fragment(request, project, error=f"unknown mode {mode!r}; choose pc or capc", status=400)
    try:
        services.pairwise_training_data(project=project)
    except ValidationError as exc:
        return _fragment(request, project, error=f"cannot train yet: {' '.join(exc.messages)}", status=400)
    warm = request.POST.get("warm_start", "").strip()
    user_id = request.user.pk
    transaction.on_commit(lambda: tasks.pairwise_train_task.delay(project.pk, mode, warm, user_id))
    return _fragment(request, project, message=f"Training {mode.upper()} queued; the figures update when it is done.")


@require_POST
@researcher_required
def autolabel_start(request: HttpRequest, pk: int) -> HttpResponse:
    """Queue auto-labelling with the latest model; refuse at once when there is none."""
    project = get_object_or_404(Project, pk=pk)
    try:
        services.latest_model(project=project)
        raw = request.POST.get("min_confidence", "").strip()
        min_conf = float(raw) if raw else None
        if min_conf is not None and not 0 <= min_conf <= 1:
            raise ValidationError("min confidence must be between 0 and 1")
    except ValueError:
        return _fragment(request, project, error="min confidence must be a number between 0 and 1", status=400)
    except ValidationError as exc:
        return _fragment(request, project, error=" ".join(exc.messages), status=400)
    transaction.on_commit(lambda: tasks.autolabel_task.delay(project.pk, min_conf))
    return _fragment(request, project, message="Auto-labelling queued; the counts update when it is done.")
