"""Generation-run pages: start a run from a project, the run page (progress polled by htmx
every second, stopped with ``HttpResponseStopPolling`` once the run is finished), cancel."""

from __future__ import annotations

import json
import os
import tempfile
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import FileResponse, HttpRequest, HttpResponse, HttpResponseBadRequest
from django.middleware.csrf import CsrfViewMiddleware
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from django_htmx.http import HttpResponseStopPolling

from annotate import roles
from annotate.permissions import researcher_required
from generation.formats import FORMATS
from generation.ml import registry
from generation.models import GenerationRun, Project
from generation.selectors import (
    project_list_with_counts,
    project_overview,
    run_metrics_rows,
    run_progress,
    run_skip_summary,
    runs_of_project,
)
from generation.services.exports import ExportError, data_export
from generation.services.imports import ImportRefused, data_import
from generation.services.run_quality import FILTER_NAMES, default_band
from generation.services.runs import run_cancel, run_start
from generation.uploads import MaxSizeUploadHandler


class RunStartForm(forms.Form):
    generator = forms.ChoiceField(choices=())
    limit = forms.IntegerField(required=False, min_value=1, help_text="at most this many originals")
    max_per_original = forms.IntegerField(required=False, min_value=1)
    seed = forms.IntegerField(required=False, initial=0)
    similarity_band = forms.CharField(required=False, help_text="LO,HI — keep LO < similarity <= HI")
    filters = forms.MultipleChoiceField(choices=[(f, f) for f in FILTER_NAMES], required=False,
                                        widget=forms.CheckboxSelectMultiple, initial=list(FILTER_NAMES))
    split = forms.CharField(required=False, help_text="only originals of this split")
    generator_options = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}),
                                        help_text='JSON object, e.g. {"codes": ["negation", "lexical"]}')

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["generator"].choices = [(n, n) for n in registry.names()]

    def clean_generator_options(self) -> dict[str, Any]:
        raw = (self.cleaned_data.get("generator_options") or "").strip()
        if not raw:
            return {}
        try:
            value = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"not valid JSON: {exc}") from exc
        if not isinstance(value, dict):
            raise forms.ValidationError("must be a JSON object")
        return value

    def run_options(self) -> dict[str, Any]:
        d = self.cleaned_data
        options = {k: d.get(k) for k in ("limit", "max_per_original", "seed", "similarity_band", "split")}
        options["filters"] = list(d.get("filters") or [])
        options["generator_options"] = d.get("generator_options") or {}
        return {k: v for k, v in options.items() if v not in (None, "")}


@researcher_required
def run_new(request: HttpRequest, project_id: int) -> HttpResponse:
    """Start a run from a project: pick a generator and its options."""
    project = get_object_or_404(Project, pk=project_id)
    default = "coco-cf" if project.task == "image-caption" else "rules"
    form = RunStartForm(request.POST or None, initial={"generator": default})
    if request.method == "POST" and form.is_valid():
        try:
            run = run_start(project=project, generator=form.cleaned_data["generator"], options=form.run_options(),
                            created_by=request.user)
        except ValidationError as exc:
            for field, errors in exc.message_dict.items():
                form.add_error(field if field in form.fields else None, errors)
        except Exception as exc:  # noqa: BLE001 - the broker is down: say so, never run in the request
            messages.error(request, f"Could not enqueue the run: {exc}")
            return redirect("run-list", project_id=project.pk)
        else:
            return redirect("run-detail", pk=run.pk)
    band = default_band(project.task)
    context = {"project": project, "form": form, "default_band": f"{band[0]},{band[1]}",
               "generators": [(n, registry.entry(n).description) for n in registry.names()]}
    return render(request, "generation/run_new.html", context, status=400 if form.errors else 200)


@researcher_required
def run_list(request: HttpRequest, project_id: int) -> HttpResponse:
    project = get_object_or_404(Project, pk=project_id)
    runs = runs_of_project(project=project)[:100]
    return render(request, "generation/run_list.html", {"project": project, "runs": runs})


def _run_context(run: GenerationRun) -> dict[str, Any]:
    return {
        "run": run,
        "project": run.project,
        "progress": run_progress(run=run),
        "metrics_rows": run_metrics_rows(run=run),
        "skip_summary": run_skip_summary(run=run),
    }


@researcher_required
def run_detail(request: HttpRequest, pk: int) -> HttpResponse:
    """The run page; an htmx poll gets only the progress fragment, and the poll stops
    (HTTP 286) once the run is finished — with the final fragment, metrics included."""
    run = get_object_or_404(GenerationRun.objects.select_related("project"), pk=pk)
    context = _run_context(run)
    if request.htmx:
        if context["progress"].finished:
            html = render_to_string("generation/run_detail.html#progress", context, request=request)
            return HttpResponseStopPolling(html)
        return render(request, "generation/run_detail.html#progress", context)
    return render(request, "generation/run_detail.html", context)


@researcher_required
@require_POST
def run_cancel_view(request: HttpRequest, pk: int) -> HttpResponse:
    run = get_object_or_404(GenerationRun.objects.select_related("project"), pk=pk)
    run = run_cancel(run=run)
    if request.htmx:
        return render(request, "generation/run_detail.html#progress", _run_context(run))
    messages.info(request, f"Run {run.pk}: cancel requested ({run.status}).")
    return redirect("run-detail", pk=run.pk)


# -- project pages ----------------------------------------------------------


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


@researcher_required
def project_export(request: HttpRequest, pk: int) -> HttpResponse:
    """Download the project's pairs (``?format=pairs-jsonl|csv`` plus the export filters)."""
    project = get_object_or_404(Project, pk=pk)
    fmt = request.GET.get("format", "pairs-jsonl")
    fd, path = tempfile.mkstemp(suffix=".export")
    os.close(fd)
    try:
        data_export(
            project=project,
            format=fmt,
            out=path,
            state=request.GET.getlist("state") or None,
            label_source=request.GET.getlist("label_source") or None,
            min_confidence=float(request.GET["min_confidence"]) if request.GET.get("min_confidence") else None,
            split=request.GET.getlist("split") or None,
        )
        fh = open(path, "rb")  # noqa: SIM115 - FileResponse closes it
    except (ExportError, ValueError) as exc:
        return HttpResponseBadRequest(str(exc))
    finally:
        os.unlink(path)  # the open handle keeps the data until the response is sent
    ext = "csv" if fmt == "csv" else "jsonl"
    return FileResponse(fh, as_attachment=True, filename=f"{project.name}.{ext}")


@csrf_exempt  # the CSRF check runs below, after the upload handlers are in place
@researcher_required
def project_import(request: HttpRequest, pk: int) -> HttpResponse:
    """Upload a data file into the project. Oversized uploads are refused while streaming."""
    project = get_object_or_404(Project, pk=pk)
    limit = settings.COUNTERPART["MAX_UPLOAD_BYTES"]
    if request.method != "POST":
        return render(request, "generation/project_import.html", {"project": project, "formats": FORMATS, "limit": limit})
    declared = int(request.META.get("CONTENT_LENGTH") or 0)
    if declared > limit + 64 * 1024:
        return _import_error(request, project, f"upload refused: {declared} bytes is over the {limit}-byte limit", 413)
    handler = MaxSizeUploadHandler(request, limit)
    request.upload_handlers.insert(0, handler)
    reason = CsrfViewMiddleware(lambda r: HttpResponse()).process_view(request, lambda r: HttpResponse(), (), {})
    if reason is not None:
        return reason
    upload = request.FILES.get("file")
    if handler.exceeded:
        return _import_error(request, project, f"upload refused: over the {limit}-byte limit", 413)
    fmt = request.POST.get("format", "")
    if upload is None:
        return _import_error(request, project, "choose a file to upload", 400)
    if fmt not in FORMATS or fmt.startswith("cad-"):
        return _import_error(request, project, f"choose a file format: {', '.join(f for f in FORMATS if not f.startswith('cad-'))}", 400)
    suffix = os.path.splitext(upload.name or "")[1][:10]
    with tempfile.TemporaryDirectory() as tmpdir:
        path = os.path.join(tmpdir, f"upload{suffix}")
        with open(path, "wb") as fh:
            for chunk in upload.chunks():
                fh.write(chunk)
        try:
            report = data_import(
                project=project,
                format=fmt,
                paths=[path],
                split=request.POST.get("split", ""),
                strict=not request.POST.get("skip_bad_rows"),
            )
        except ImportRefused as exc:
            name = upload.name or "upload"
            return _import_error(request, project, str(exc).replace(path, name), 400,
                                 [p.replace(path, name) for p in exc.problems[:200]])
    problems = [p.replace(path, upload.name or "upload") for p in report.problems[:200]]
    return render(request, "generation/project_import.html",
                  {"project": project, "formats": FORMATS, "limit": limit, "report": report, "problems": problems})


def _import_error(
    request: HttpRequest, project: Project, message: str, status: int, problems: list[str] | None = None
) -> HttpResponse:
    return render(request, "generation/project_import.html",
                  {"project": project, "formats": FORMATS, "limit": settings.COUNTERPART["MAX_UPLOAD_BYTES"],
                   "error": message, "problems": problems or []}, status=status)
