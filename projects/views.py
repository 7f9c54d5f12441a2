"""Project pages: home (role-based redirect), the project list, a project's overview, data
import (streamed upload with a size limit) and export. Thin: parse, call one service or
selector, render."""

from __future__ import annotations

import os
import tempfile
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import ValidationError
from django.http import FileResponse, Http404, HttpRequest, HttpResponse, JsonResponse
from django.middleware.csrf import CsrfViewMiddleware
from django.shortcuts import get_object_or_404, redirect, render
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_http_methods
from django_htmx.http import HttpResponseStopPolling, trigger_client_event

from projects import permissions, states
from projects.formats import FORMAT_TASKS
from projects.formats.images import IMAGE_TYPES
from projects.formats.reading import LABEL_SOURCES, below
from projects.formats.whole_input import human_size, upload_limit_message
from projects.forms import DownloadQuery, ExportForm, ExportJobQuery, ImportForm, ProjectDeleteForm, uploads_parse
from projects.http import HtmxHttpRequest, bad_request, render_section
from projects.models import JOB_ACTIVE, TASK_DEFAULTS, TASKS, Job, Project
from projects.permissions import login_or_token_required, researcher_or_token_required, researcher_required
from projects.selectors import (
    image_visible_to,
    job_get,
    job_progress,
    jobs_list,
    project_list_with_counts,
    project_overview,
)
from projects.services.deletion import ProjectBusy, project_delete, project_files
from projects.services.exports import (
    DIRECTORY_FORMATS,
    EXCLUDED_BY_DEFAULT,
    EXPORT_FORMATS,
    NOTHING_TO_EXPORT,
    ExportError,
    candidates_for_export,
    data_export,
    export_count,
    export_download_file,
    export_download_type,
    export_manifest,
    export_missing_reason,
    export_not_downloadable,
    export_splits,
    export_start,
    export_sync_name,
)
from projects.services.import_bundles import CAD_NLI_PARTS
from projects.services.import_jobs import TASK_DATA_FORMATS, UPLOAD_FORMATS, ImportNotStarted
from projects.services.import_uploads import import_files_start
from projects.services.imports import image_root
from projects.services.jobs import BrokerUnavailable
from projects.services.projects import project_create
from projects.uploads import ImportFileUploadHandler, MaxSizeUploadHandler, stored_path, upload_store_message
from projects.validators import budget_validator


@login_required
def home(request: HttpRequest) -> HttpResponse:
    if permissions.is_researcher(request.user):
        return redirect("project-list")
    return redirect("annotate-home")


@researcher_required
def project_list(request: HttpRequest) -> HttpResponse:
    projects = project_list_with_counts(user=request.user)
    return render(request, "projects/project_list.html", {"projects": projects})


@researcher_required
@require_http_methods(["GET", "POST"])
def project_delete_page(request: HttpRequest, pk: int) -> HttpResponse:
    """GET: what deleting the project removes, and a form to confirm by typing its name. POST:
    delete it (refused with 409 while one of its jobs is queued or running; 400 when the name
    typed does not match), then back to the project list."""
    project = get_object_or_404(Project, pk=pk)
    context: dict[str, Any] = {
        "project": project,
        "overview": project_overview(project=project),
        "active_jobs": project.jobs.filter(status__in=JOB_ACTIVE).order_by("pk"),
        "files": len([p for p in project_files(project) if p.exists()]),
        "errors": {},
    }
    if request.method == "GET":
        return render(request, "projects/project_delete.html", context)
    form = ProjectDeleteForm.parse(request.POST, project_name=project.name)
    if not form.is_valid():
        return render(request, "projects/project_delete.html", {**context, "errors": form.field_errors()}, status=400)
    try:
        deleted = project_delete(project=project)
    except ProjectBusy as exc:
        return render(request, "projects/project_delete.html", {**context, "errors": {"general": str(exc)}}, status=409)
    messages.success(
        request, f"Project {deleted.name!r} deleted ({deleted.rows} rows, {deleted.paths} files or folders on disk)."
    )
    return redirect("project-list")


def _export_context(project: Project, form: dict[str, Any], errors: dict[str, str], job: Any = None) -> dict[str, Any]:
    return {
        "project": project,
        "form": form,
        "errors": errors,
        "formats": EXPORT_FORMATS,
        "directory_formats": DIRECTORY_FORMATS,
        "states": states.STATES,
        "label_sources": [*LABEL_SOURCES, "none"],
        "excluded_by_default": EXCLUDED_BY_DEFAULT,
        "splits": export_splits(project=project),
        "sync_max": settings.COUNTERPART["EXPORT_SYNC_MAX"],
        "job": job,
        "progress": job_progress(job=job) if job else None,
    }


BLANK_EXPORT: dict[str, Any] = {
    "format": "pairs-jsonl",
    "state": [],
    "label_source": [],
    "min_confidence": None,
    "split": [],
    "include_invalid": False,
    "labelled_only": False,
}


def _export_page(
    request: HttpRequest,
    project: Project,
    form: dict[str, Any],
    errors: dict[str, str],
    status: int = 200,
    job: Any = None,
    notice: str = "",
) -> HttpResponse:
    context = {**_export_context(project, form, errors, job), "notice": notice}
    return render(request, "projects/project_export.html", context, status=status)


@researcher_required
@require_http_methods(["GET", "POST"])
def project_export(request: HttpRequest, pk: int) -> HttpResponse | FileResponse:
    """GET: the form (``?job=<id>``: with that export job's box). POST (the form): up to
    ``EXPORT_SYNC_MAX`` pairs download at once; more, and the directory formats, start an
    ``export`` job and redirect to ``?job=<id>`` so that a reload shows the job instead of
    starting another. A GET with filters (a bookmarked link) downloads a small file as
    before; one that needs a job only fills the form in. An export of nothing says so."""
    project = get_object_or_404(Project, pk=pk)
    form = ExportForm.parse(request.POST if request.method == "POST" else request.GET)
    if (problem := form.unstorable()) is not None:
        return bad_request(problem)
    query = ExportJobQuery.parse(request.GET)
    if request.method == "GET" and "job" in query.data:
        if not query.is_valid():
            return bad_request("job: a job id")
        job = get_object_or_404(Job, pk=query.cleaned_data["job"], kind="export", project=project)
        started = {**BLANK_EXPORT, **{k: v for k, v in job.params.items() if k in BLANK_EXPORT}}
        return _export_page(request, project, started, {}, job=job)
    if form.is_blank():
        return _export_page(request, project, dict(BLANK_EXPORT), {})
    shown: dict[str, Any] = form.filters()
    if not form.is_valid():
        return _export_page(request, project, shown, form.field_errors(), 400)
    filters = dict(shown)
    fmt = str(filters.pop("format"))
    if fmt == "coco-cf" and project.task != "image-caption":
        errors = {"format": f"coco-cf holds image-caption pairs; this project's task is {project.task}"}
        return _export_page(request, project, shown, errors, 400)
    sync_max = int(settings.COUNTERPART["EXPORT_SYNC_MAX"])
    n = export_count(project=project, filters=filters, limit=sync_max)
    if n == 0:  # an empty result is not a bad request: the page says so (200)
        return _export_page(request, project, shown, {}, notice=NOTHING_TO_EXPORT)
    # Directory formats (hf-datasets, coco-cf) and large exports run as a job (a file, or a zip).
    if fmt in DIRECTORY_FORMATS or n > sync_max:
        if request.method != "POST":
            note = "This export runs as a background job: press Export to start it."
            return _export_page(request, project, shown, {"general": note})
        try:
            job = export_start(project=project, format=fmt, filters=filters, created_by=request.user)
        except BrokerUnavailable as exc:
            return _export_page(request, project, shown, {"general": f"Export not started: {exc}"}, 503)
        return redirect(f"{reverse('project-export', args=[project.pk])}?job={job.pk}")
    fd, path = tempfile.mkstemp(suffix=".export")
    os.close(fd)
    try:
        data_export(project=project, format=fmt, out=path, manifest=False, **filters)
        fh = open(path, "rb")  # noqa: SIM115 - FileResponse closes it
    except ExportError as exc:
        return bad_request(str(exc))
    finally:
        os.unlink(path)  # the open handle keeps the data until the response is sent
    name = export_sync_name(project=project, format=fmt)
    return FileResponse(fh, as_attachment=True, filename=name, content_type=export_download_type(name))


@researcher_required
@require_GET
def project_export_manifest(request: HttpRequest, pk: int) -> HttpResponse:
    """The manifest of the export the same query would download (JSON)."""
    project = get_object_or_404(Project, pk=pk)
    form = ExportForm.parse(request.GET)
    if not form.is_valid():
        return JsonResponse({"errors": form.field_errors()}, status=400)
    filters = form.filters()
    fmt = filters.pop("format")
    rows = candidates_for_export(project=project, **filters).count()
    return JsonResponse(
        export_manifest(project=project, format=fmt, filters=filters, rows=rows), json_dumps_params={"indent": 2}
    )


@researcher_or_token_required
@require_GET
def export_download(request: HttpRequest, job_id: int) -> HttpResponse | FileResponse:
    """The file an ``export`` job wrote (``?part=manifest``: its manifest). Only files inside
    ``EXPORT_DIR`` named by the job itself are served. A script may send its API token
    (``Authorization: Token …``) instead of logging in."""
    job = get_object_or_404(Job, pk=job_id, kind="export")
    if job.status != "succeeded":
        return HttpResponse(export_not_downloadable(job), status=409)
    found = export_download_file(job=job, manifest=DownloadQuery(request.GET).manifest())
    if found is None:
        raise Http404(export_missing_reason(job=job))
    return FileResponse(
        open(found[0], "rb"), as_attachment=True, filename=found[1], content_type=export_download_type(found[1])
    )


SKIP_HINT = "the “Skip bad rows” box ticked"


@csrf_exempt  # the CSRF check runs below, after the upload handlers are in place
@researcher_required
def project_import(request: HttpRequest, pk: int) -> HttpResponse:
    """Upload data into the project: one data file, or for the CAD layouts the files of a split
    (or a .zip of the folder). Streamed to files under the media root (refused while streaming
    once over the size limit), then imported by an ``import`` job; the page answers at once
    with the job's progress box."""
    project = get_object_or_404(Project, pk=pk)
    limit = settings.COUNTERPART["MAX_UPLOAD_BYTES"]
    if request.method != "POST":
        query = ExportJobQuery.parse(request.GET)  # ?job=<id>: where the POST redirected (PRG)
        if "job" in query.data:
            if not query.is_valid():
                return bad_request("job: a job id")
            job = get_object_or_404(Job, pk=query.cleaned_data["job"], kind="import", project=project)
            return render(request, "projects/project_import.html", {**_import_context(project), **job_context(job)})
        # ?format=…&target=task: the form comes filled in (the task-model page's link)
        chosen = ImportForm.parse(request.GET).shown()
        return render(request, "projects/project_import.html", {**_import_context(project), "chosen": chosen})
    declared = int(request.META.get("CONTENT_LENGTH") or 0)
    if declared > limit + 64 * 1024:
        return _import_error(request, project, upload_limit_message(limit, declared), 413)
    size = MaxSizeUploadHandler(request, limit)
    store = ImportFileUploadHandler(request)
    request.upload_handlers = [size, store]
    handed_over: set[str] = set()  # once the job has the files, the job removes them
    try:
        reason = CsrfViewMiddleware(lambda r: HttpResponse()).process_view(request, lambda r: HttpResponse(), (), {})
        if reason is not None:
            return reason
        uploads = uploads_parse(request.FILES)  # reads the upload through the handlers
        files = {field: (stored_path(f), f.name or "upload") for field, f in uploads.items()}
        form = ImportForm.parse(request.POST)
        chosen = form.shown()  # shown back after any error: the format, split, … stay as chosen
        if size.exceeded:
            return _import_error(request, project, upload_limit_message(limit), 413, chosen)
        if store.failure:
            return _import_error(request, project, upload_store_message(store.failure), 507, chosen)
        if not form.is_valid():
            return _import_error(request, project, "", 400, chosen, form.field_errors())
        if not files:
            return _import_error(request, project, "", 400, chosen, {"file": "choose a file to upload"})
        try:
            job = import_files_start(
                project=project,
                format=form.cleaned_data["format"],
                split=form.cleaned_data["split"],
                files=files,
                strict=not form.cleaned_data["skip_bad_rows"],
                label_map=form.cleaned_data["label_map"],
                skip_hint=SKIP_HINT,
                target=form.cleaned_data["target"],
                created_by=request.user,
            )
        except ImportNotStarted as exc:
            if exc.field:
                return _import_error(request, project, "", 400, chosen, {exc.field: str(exc)})
            return _import_error(request, project, str(exc), 400, chosen)
        except BrokerUnavailable as exc:
            return _import_error(request, project, f"Import not started: {exc}", 503, chosen)
        handed_over = {path for path, _name in files.values()}
        # POST-redirect-GET: a reload shows the job instead of uploading the file again
        return redirect(f"{reverse('project-import', args=[project.pk])}?job={job.pk}")
    finally:
        store.discard(keep=handed_over)


def _import_context(project: Project) -> dict[str, Any]:
    # The formats that can hold this project's task (a CAD or COCO layout holds one task):
    # the generic ones first, then the data sets' own layouts.
    shown = [f for f in UPLOAD_FORMATS if f not in FORMAT_TASKS]
    shown += [f for f in UPLOAD_FORMATS if FORMAT_TASKS.get(f) == project.task]
    return {
        "project": project,
        "formats": shown,
        "limit": settings.COUNTERPART["MAX_UPLOAD_BYTES"],
        # in the units of the refusal's message ("976.6 KiB"), not filesizeformat's "976.6 KB"
        "limit_shown": human_size(settings.COUNTERPART["MAX_UPLOAD_BYTES"]),
        "cad_nli_parts": CAD_NLI_PARTS,
        "task_formats": [f for f in shown if f in TASK_DATA_FORMATS],
        "chosen": {},
    }


def _import_error(
    request: HttpRequest,
    project: Project,
    message: str,
    status: int,
    chosen: dict[str, Any] | None = None,
    errors: dict[str, str] | None = None,
) -> HttpResponse:
    """The page again with ``message`` at the top (the whole form) and ``errors`` next to their
    fields (issue 32.8: "choose a file to upload" was shown at the top)."""
    context = {**_import_context(project), "error": message, "errors": errors or {}, "chosen": chosen or {}}
    return render(request, "projects/project_import.html", context, status=status)


# -- images -----------------------------------------------------------------


@login_or_token_required
@require_GET
def image_file(request: HttpRequest, path: str) -> FileResponse:
    """An image under the image root (``COUNTERPART["IMAGE_ROOT"]``): researchers see any;
    anyone else only the images of projects they are a member of. A browser logs in; a script
    sends its API token (``Authorization: Token …``, a bad one → 401). Anything else — outside the
    root once symlinks are resolved, not an image, missing, not theirs — is a 404 that does
    not say which."""
    full = image_path(path)
    stored_as = {path, os.path.join(image_root(), path), os.path.join(str(settings.MEDIA_ROOT), path)}
    if full is None or not image_visible_to(user=request.user, stored_as={full, *stored_as}):
        raise Http404("no such image")
    return FileResponse(open(full, "rb"), content_type=IMAGE_TYPES[os.path.splitext(full)[1].lower()])


@login_or_token_required
@require_GET
def media_file(request: HttpRequest, path: str) -> FileResponse:
    """An image under ``MEDIA_ROOT`` at ``MEDIA_URL`` (a generated image, stored relative to
    it; the demo's photos): the same rule as :func:`image_file` — nothing under ``MEDIA_ROOT``
    is public, and the uploads waiting in ``MEDIA_ROOT/imports/`` are never served."""
    media = str(settings.MEDIA_ROOT)
    full = image_path(path, root=media)
    if full is None or below(full, os.path.join(os.path.realpath(media), "imports")):
        raise Http404("no such image")
    if not image_visible_to(user=request.user, stored_as={full, path, os.path.join(media, path)}):
        raise Http404("no such image")
    return FileResponse(open(full, "rb"), content_type=IMAGE_TYPES[os.path.splitext(full)[1].lower()])


def image_path(relative: str, *, root: str | None = None) -> str | None:
    """The real path of the image ``relative`` to ``root`` (by default the image root), or
    ``None`` when it is not a readable image file inside it (a name too long for the file
    system included)."""
    if "\x00" in relative:
        return None
    real_root = os.path.realpath(image_root() if root is None else root)
    full = os.path.realpath(os.path.join(real_root, relative))
    if not below(full, real_root) or os.path.splitext(full)[1].lower() not in IMAGE_TYPES:
        return None
    return full if os.path.isfile(full) else None


# -- jobs -------------------------------------------------------------------


def job_context(job: Any) -> dict[str, Any]:
    return {"job": job, "progress": job_progress(job=job)}


@researcher_required
@require_GET
def job_fragment(request: HtmxHttpRequest, pk: int) -> HttpResponse:
    """A job's progress fragment. Once the job has ended: HTTP 286 (htmx stops polling) and
    a ``job-finished`` event, so the section that shows the job's results reloads them."""
    job = job_get(job_id=pk)
    if job is None:  # the app's 404 page; for an htmx poll its card, which stops the polling
        raise Http404("no such job")
    if job.finished and request.htmx:
        html = render_to_string("projects/_job.html", job_context(job), request=request)
        return trigger_client_event(HttpResponseStopPolling(html), "job-finished", {"id": job.pk, "kind": job.kind})
    return render_section(
        request, "projects/_job.html", {**job_context(job), "project": job.project}, title=f"Job {job.pk}"
    )


@researcher_required
@require_GET
def job_list(request: HttpRequest) -> HttpResponse:
    jobs = list(jobs_list(user=request.user, limit=200))
    rows = [{"job": j, "progress": job_progress(job=j)} for j in jobs]
    return render(request, "projects/job_list.html", {"rows": rows})


# -- create a project ---------------------------------------------------------


class ProjectCreateForm(forms.Form):
    name = forms.CharField(max_length=200)
    task = forms.ChoiceField(choices=[(t, t) for t in TASKS])
    labels = forms.CharField(
        required=False, max_length=2000, help_text="comma-separated, in order; empty: the task's default labels"
    )
    text_fields = forms.CharField(
        required=False, max_length=2000, help_text="comma-separated; empty: the task's default fields"
    )
    human_budget = forms.FloatField(required=False, validators=[budget_validator], help_text="share routed to humans")
    annotators_per_item = forms.IntegerField(min_value=1, max_value=50, required=False)
    description = forms.CharField(required=False, max_length=5000, widget=forms.Textarea(attrs={"rows": 3}))


def _split_list(value: str) -> list[str] | None:
    items = [v.strip() for v in value.split(",") if v.strip()]
    return items or None


@researcher_required
def project_new(request: HttpRequest) -> HttpResponse:
    """Create a project (name, task, label set, text fields, budget, overlap); every error is
    shown next to its field at once."""
    form = ProjectCreateForm(request.POST or None, initial={"task": "nli"})
    if request.method == "POST" and form.is_valid():
        d = form.cleaned_data
        if Project.objects.filter(name=d["name"]).exists():
            form.add_error("name", f"a project called {d['name']!r} already exists")
        else:
            try:
                project = project_create(
                    name=d["name"],
                    task=d["task"],
                    labels=_split_list(d.get("labels") or ""),
                    text_fields=_split_list(d.get("text_fields") or ""),
                    human_budget=d.get("human_budget"),
                    annotators_per_item=d.get("annotators_per_item"),
                    description=d.get("description") or "",
                    created_by=request.user,
                )
            except ValidationError as exc:  # a field's error (labels) shows next to that field
                form.add_error(None, exc if hasattr(exc, "error_dict") else " ".join(exc.messages))
            else:
                return redirect("project-detail", pk=project.pk)
    status = 400 if form.errors else 200
    return render(request, "projects/project_new.html", {"form": form, "defaults": TASK_DEFAULTS}, status=status)
