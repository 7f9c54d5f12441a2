"""The researcher's data browser: ``/projects/<id>/candidates/`` (filters, keyset pages) and
``/candidates/<id>/`` (one pair: the edit word by word, its annotations, h's confidence, and
the researcher's override). Thin: parse, call one selector or service, render."""

from __future__ import annotations

from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_GET, require_POST

from projects import states
from projects.formats.reading import LABEL_SOURCES
from projects.http import HtmxHttpRequest
from projects.models import Candidate, Label, Project
from projects.permissions import researcher_required
from projects.services.candidates import OverrideRefused, OverrideUnchanged, candidate_override
from workspace.data.selectors import (
    FLIP_CHOICES,
    GOLD_CHOICES,
    candidate_filters_parse,
    candidates_browse,
    pair_view,
)


def _int(raw: str | None) -> int | None:
    try:
        return int(raw) if raw else None
    except ValueError:
        return None


@researcher_required
@require_GET
def candidate_list(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    project = get_object_or_404(Project, pk=pk)
    filters, errors = candidate_filters_parse(request.GET, project=project)
    page = None
    if not errors:
        page = candidates_browse(
            project=project,
            filters=filters,
            after=_int(request.GET.get("after")),
            before=_int(request.GET.get("before")),
        )
    query = urlencode(filters.as_query())
    ctx = {
        "project": project,
        "filters": filters,
        "errors": errors,
        "page": page,
        "query": query,
        "states": states.STATES,
        "label_sources": [*LABEL_SOURCES, "none"],
        "labels": list(Label.objects.filter(project=project).order_by("position").values_list("name", flat=True)),
        "flip_choices": FLIP_CHOICES[1:],
        "gold_choices": GOLD_CHOICES[1:],
    }
    template = "workspace/candidates.html#results" if request.htmx else "workspace/candidates.html"
    return render(request, template, ctx, status=400 if errors else 200)


@researcher_required
@require_GET
def candidate_detail(request: HttpRequest, pk: int) -> HttpResponse:
    candidate = get_object_or_404(
        Candidate.objects.select_related("project", "example", "example__label", "label"), pk=pk
    )
    return render(request, "workspace/pair.html", {"view": pair_view(candidate=candidate), "errors": {}})


@researcher_required
@require_POST
def candidate_override_view(request: HttpRequest, pk: int) -> HttpResponse:
    candidate = get_object_or_404(
        Candidate.objects.select_related("project", "example", "example__label", "label"), pk=pk
    )
    label = request.POST.get("label", "").strip()
    errors: dict[str, str] = {}
    if not label:
        errors["label"] = "choose a label"
    else:
        try:
            candidate_override(candidate=candidate, label=label, by=request.user, note=request.POST.get("note", ""))
        except OverrideRefused as exc:
            errors["label"] = str(exc)
        except OverrideUnchanged as exc:
            messages.info(request, f"{exc} No override recorded.")
            return redirect("candidate-detail", pk=candidate.pk)
    if errors:
        ctx = {"view": pair_view(candidate=candidate), "errors": errors, "note": request.POST.get("note", "")}
        return render(request, "workspace/pair.html", ctx, status=400)
    messages.success(request, f"Relabelled {candidate.external_id} as {label} (label source human; recorded).")
    return redirect("candidate-detail", pk=candidate.pk)
