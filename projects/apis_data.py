"""Kernel REST API for data: import (multipart upload streamed to disk, then an ``import``
job, as on the page) and export (small exports stream back at once, large ones start an ``export`` job)."""

from __future__ import annotations

import os
import tempfile
from typing import Any

from django.conf import settings
from django.http import FileResponse, HttpRequest
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.parsers import MultiPartParser
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from projects.formats import parse_label_map
from projects.formats.reading import LABEL_SOURCES
from projects.formats.whole_input import upload_limit_message
from projects.forms import DownloadQuery
from projects.models import Job, Project
from projects.permissions import IsResearcher
from projects.selectors import job_as_dict
from projects.services.exports import (
    DIRECTORY_FORMATS,
    EXPORT_FORMATS,
    NOTHING_TO_EXPORT,
    ExportError,
    data_export,
    export_count,
    export_download_file,
    export_download_type,
    export_filters_parse,
    export_missing_reason,
    export_not_downloadable,
    export_start,
    export_sync_name,
)
from projects.services.import_bundles import CAD_NLI_PARTS
from projects.services.import_jobs import TARGETS, TASK_DATA_FORMATS, UPLOAD_FORMATS, ImportNotStarted
from projects.services.import_uploads import import_files_start
from projects.services.jobs import BrokerUnavailable
from projects.states import STATES
from projects.uploads import ImportFileUploadHandler, MaxSizeUploadHandler, stored_path, upload_store_message


def _project(project_id: int) -> Project | None:
    return Project.objects.filter(pk=project_id).first()


class DataImportApi(APIView):
    """Upload a data file into a project (multipart ``file``); it is streamed to a file
    under the media root and imported by an ``import`` job: 202 with the job (follow it at
    ``/api/v1/jobs/{id}/``). The CAD layouts need ``split``: ``cad-sentiment`` takes the
    ``{split}_paired.tsv`` file or a zip holding it; ``cad-nli`` a zip of the ``cad/`` or
    ``NLI/`` folder as ``file``, or the three files as ``original``, ``revised_premise`` and
    ``revised_hypothesis``. As on the import page: a file with any bad row is refused whole
    (the job fails, its ``result.problems`` lists them as ``file:line: …``) unless
    ``skip_bad_rows``; an empty file is refused; an upload over ``MAX_UPLOAD_BYTES`` is cut
    off while streaming (413); relative image paths start at the image root. ``target=task``:
    the rows are the task model's training data (as ``import_task_data``), not the pool."""

    permission_classes = (IsResearcher,)
    parser_classes = (MultiPartParser,)

    class InputSerializer(serializers.Serializer):
        file = serializers.FileField(
            allow_empty_file=True, required=False, help_text="the data file (for cad-*: also a .zip of the folder)"
        )  # an empty file: "the file has no rows"
        original = serializers.FileField(required=False, help_text="cad-nli: original/{split}.tsv")
        revised_premise = serializers.FileField(required=False, help_text="cad-nli: revised_premise/{split}.tsv")
        revised_hypothesis = serializers.FileField(required=False, help_text="cad-nli: revised_hypothesis/{split}.tsv")
        format = serializers.ChoiceField(choices=UPLOAD_FORMATS)
        split = serializers.CharField(required=False, allow_blank=True, default="", max_length=32)
        skip_bad_rows = serializers.BooleanField(required=False, default=False)
        label_map = serializers.CharField(
            required=False, allow_blank=True, default="", max_length=2000, help_text="old=new[,old=new]"
        )
        target = serializers.ChoiceField(
            choices=TARGETS,
            required=False,
            default="pool",
            help_text="pool: originals and pairs (the default); task: labelled rows that only train the task model f "
            "(as import_task_data)",
        )

        def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
            if attrs.get("target") == "task" and attrs["format"] not in TASK_DATA_FORMATS:
                raise serializers.ValidationError(
                    {"format": [f"task training data is labelled text: one of {', '.join(TASK_DATA_FORMATS)}"]}
                )
            return attrs

        def validate_label_map(self, value: str) -> dict[str, str]:
            try:
                return parse_label_map(value)
            except ValueError as exc:
                raise serializers.ValidationError(str(exc)) from None

    def initialize_request(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Request:
        # Before anything reads the body (the CSRF check of session auth does): stop reading
        # an upload as soon as it passes the limit, and stream it to a file under the media root.
        self._size_handler = MaxSizeUploadHandler(request, settings.COUNTERPART["MAX_UPLOAD_BYTES"])
        self._store = ImportFileUploadHandler(request)
        request.upload_handlers = [self._size_handler, self._store]
        return super().initialize_request(request, *args, **kwargs)

    def finalize_response(self, request: Request, response: Any, *args: Any, **kwargs: Any) -> Any:
        # Whatever happened, only the file handed to a job is kept.
        if hasattr(self, "_store"):
            self._store.discard(keep=getattr(self, "_handed_over", set()))
        return super().finalize_response(request, response, *args, **kwargs)

    @extend_schema(
        summary="Import a data file",
        request={"multipart/form-data": InputSerializer},
        responses={
            202: OpenApiResponse(description="the queued import job (as /api/v1/jobs/{id}/)"),
            400: OpenApiResponse(description="field errors"),
            404: OpenApiResponse(description="no such project"),
            413: OpenApiResponse(description="the upload is over the size limit"),
            507: OpenApiResponse(description="the server could not store the upload (disk full); nothing was imported"),
            503: OpenApiResponse(description="the task broker is unreachable; nothing was queued"),
        },
    )
    def post(self, request: Request, project_id: int) -> Response:
        project = _project(project_id)
        if project is None:
            return Response({"detail": "no such project"}, status=status.HTTP_404_NOT_FOUND)
        limit = settings.COUNTERPART["MAX_UPLOAD_BYTES"]
        if int(request.META.get("CONTENT_LENGTH") or 0) > limit + 64 * 1024:
            return Response({"detail": upload_limit_message(limit, int(request.META["CONTENT_LENGTH"]))}, status=413)
        data = self.InputSerializer(data=request.data)
        if self._size_handler.exceeded:
            return Response({"detail": upload_limit_message(limit)}, status=413)
        if self._store.failure:
            return Response({"detail": upload_store_message(self._store.failure)}, status=507)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        files = {f: (stored_path(v[f]), v[f].name or "upload") for f in ("file", *CAD_NLI_PARTS) if f in v}
        if not files:
            return Response({"file": ["No file was submitted."]}, status=status.HTTP_400_BAD_REQUEST)
        try:
            job = import_files_start(
                project=project,
                format=v["format"],
                split=v["split"].strip(),
                files=files,
                strict=not v["skip_bad_rows"],
                label_map=v["label_map"],
                skip_hint='"skip_bad_rows": true',
                target=v["target"],
                created_by=request.user,
            )
        except ImportNotStarted as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        except BrokerUnavailable as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_503_SERVICE_UNAVAILABLE)
        self._handed_over = {path for path, _name in files.values()}
        return Response(job_as_dict(job=job), status=status.HTTP_202_ACCEPTED)


class DataExportApi(APIView):
    """Export a project's pairs with the export filters. Up to ``EXPORT_SYNC_MAX`` rows of
    ``pairs-jsonl`` or ``csv``: the file itself (200, streamed); more, or ``hf-datasets`` /
    ``coco-cf`` (a zipped directory): an ``export`` job (202; download its file from
    ``/exports/{job}/download/`` with the same token when it has succeeded). No matching
    pair: 400 "Nothing to export". Filtered-out candidates are left
    out unless ``state`` names them, and pairs judged invalid unless ``include_invalid``."""

    permission_classes = (IsResearcher,)

    class InputSerializer(serializers.Serializer):
        format = serializers.ChoiceField(choices=EXPORT_FORMATS, default="pairs-jsonl")
        state = serializers.ListField(child=serializers.ChoiceField(choices=STATES), required=False, default=list)
        label_source = serializers.ListField(
            child=serializers.ChoiceField(choices=[*LABEL_SOURCES, "none"]), required=False, default=list
        )
        min_confidence = serializers.FloatField(min_value=0, max_value=1, required=False, allow_null=True)
        split = serializers.ListField(child=serializers.CharField(max_length=32), required=False, default=list)
        include_invalid = serializers.BooleanField(
            required=False, default=False, help_text="also pairs judged invalid (left out by default)"
        )
        labelled_only = serializers.BooleanField(
            required=False,
            default=False,
            help_text="leave out pairs with no label yet (by default they are exported without a counterfactual label)",
        )
        run_as_job = serializers.BooleanField(required=False, default=False, help_text="always start a job")

    @extend_schema(
        summary="Export a project's pairs",
        request=InputSerializer,
        responses={
            (200, "application/x-ndjson"): OpenApiTypes.BINARY,
            (200, "text/csv"): OpenApiTypes.BINARY,
            202: OpenApiResponse(description="the queued export job (as /api/v1/jobs/{id}/)"),
            400: OpenApiResponse(description="field errors"),
        },
    )
    def post(self, request: Request, project_id: int) -> Any:
        project = _project(project_id)
        if project is None:
            return Response({"detail": "no such project"}, status=status.HTTP_404_NOT_FOUND)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = dict(data.validated_data)
        as_job = v.pop("run_as_job")
        form, errors = export_filters_parse(v)
        if errors:
            return Response({k: [msg] for k, msg in errors.items()}, status=status.HTTP_400_BAD_REQUEST)
        fmt = form.pop("format")
        sync_max = int(settings.COUNTERPART["EXPORT_SYNC_MAX"])
        n = export_count(project=project, filters=form, limit=sync_max)
        if n == 0:
            return Response({"detail": NOTHING_TO_EXPORT}, status=status.HTTP_400_BAD_REQUEST)
        if fmt == "coco-cf" and project.task != "image-caption":
            msg = f"coco-cf holds image-caption pairs; this project's task is {project.task}"
            return Response({"format": [msg]}, status=status.HTTP_400_BAD_REQUEST)
        # A directory format is always a job: it is written into the job's own fresh directory
        # and zipped (writing it beside a temporary file here was the "exists" 400).
        if as_job or fmt in DIRECTORY_FORMATS or n > sync_max:
            try:
                job = export_start(project=project, format=fmt, filters=form, created_by=request.user)
            except BrokerUnavailable as exc:
                return Response({"detail": str(exc)}, status=status.HTTP_503_SERVICE_UNAVAILABLE)
            return Response(job_as_dict(job=job), status=status.HTTP_202_ACCEPTED)
        fd, path = tempfile.mkstemp(suffix=".export")
        os.close(fd)
        try:
            data_export(project=project, format=fmt, out=path, manifest=False, **form)
            fh = open(path, "rb")  # noqa: SIM115 - FileResponse closes it
        except ExportError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        finally:
            os.unlink(path)
        name = export_sync_name(project=project, format=fmt)
        return FileResponse(fh, as_attachment=True, filename=name, content_type=export_download_type(name))


class ExportDownloadApi(APIView):
    """The file a succeeded ``export`` job wrote (``?part=manifest``: its manifest), for scripts
    with a token (the page ``/exports/{job}/download/`` takes a browser session)."""

    permission_classes = (IsResearcher,)

    @extend_schema(
        summary="Download an export job's file",
        parameters=[OpenApiParameter("part", str, enum=["manifest"], description="the manifest instead of the data")],
        responses={
            (200, "application/x-ndjson"): OpenApiTypes.BINARY,
            (200, "text/csv"): OpenApiTypes.BINARY,
            (200, "application/zip"): OpenApiTypes.BINARY,
            (200, "application/json"): OpenApiTypes.BINARY,
            404: OpenApiResponse(
                description="no such export job, its file is gone, or the export command wrote it (--out)"
            ),
            409: OpenApiResponse(description="the job has not succeeded (yet)"),
        },
    )
    def get(self, request: Request, job_id: int) -> Any:
        job = Job.objects.filter(pk=job_id, kind="export").select_related("project").first()
        if job is None:
            return Response({"detail": "no such export job"}, status=status.HTTP_404_NOT_FOUND)
        if job.status != "succeeded":
            return Response(
                {"detail": export_not_downloadable(job)},
                status=status.HTTP_409_CONFLICT,
            )
        found = export_download_file(job=job, manifest=DownloadQuery(request.query_params).manifest())
        if found is None:
            return Response({"detail": export_missing_reason(job=job)}, status=status.HTTP_404_NOT_FOUND)
        return FileResponse(
            open(found[0], "rb"), as_attachment=True, filename=found[1], content_type=export_download_type(found[1])
        )
