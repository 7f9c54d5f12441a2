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
from workspace.data.forms import AddressQuery, CandidateFiltersForm, OverrideForm, PageQuery
from workspace.data.selectors import FLIP_CHOICES, GOLD_CHOICES, SOURCE_CHOICES, candidates_browse, pair_view


@researcher_required
@require_GET
def candidate_list(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    project = get_object_or_404(Project, pk=pk)
    # The filter form sends every field, so a search read ?state=&generator=&label=&… The
    # address kept (pushed by htmx, bookmarked, shown) is the same search without the empty
    # fields; a plain (no-JavaScript) submit or an old bookmark with them is redirected to it.
    address = AddressQuery(request.GET)
    clean_url = address.url(request.path)
    if address.had_empty and not request.htmx:
        return redirect(clean_url)
    form = CandidateFiltersForm.parse(request.GET, project=project)
    filters, errors = form.filters(), form.field_errors()
    page = None
    if not errors:
        cursor = PageQuery.parse(request.GET).cleaned_data  # a cursor that is not an id: none
        page = candidates_browse(
            project=project, filters=filters, after=cursor.get("after"), before=cursor.get("before")
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
        "source_choices": SOURCE_CHOICES[1:],
    }
    if request.htmx and not request.htmx.history_restore_request:  # a restore wants the whole page
        response = render(request, "workspace/candidates.html#results", ctx, status=400 if errors else 200)
        response["HX-Push-Url"] = clean_url  # instead of the form's raw query (hx-push-url)
        return response
    return render(request, "workspace/candidates.html", ctx, status=400 if errors else 200)


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
    form = OverrideForm.parse(request.POST)
    errors = form.field_errors()
    if not errors:
        label = form.cleaned_data["label"]
        try:
            candidate_override(candidate=candidate, label=label, by=request.user, note=form.cleaned_data["note"])
        except OverrideRefused as exc:
            errors["label"] = str(exc)
        except OverrideUnchanged as exc:
            messages.info(request, f"{exc} No override recorded.")
            return redirect("candidate-detail", pk=candidate.pk)
    if errors:
        ctx = {"view": pair_view(candidate=candidate), "errors": errors, "note": form.data.get("note", "")}
        return render(request, "workspace/pair.html", ctx, status=400)
    messages.success(request, f"Relabelled {candidate.external_id} as {label} (label source human; recorded).")
    return redirect("candidate-detail", pk=candidate.pk)
