"""Kernel REST API: background jobs (researchers). Thin: parse, call one selector or service,
render. Fields as ``manage.py jobs --json`` (docs/formats.md §3)."""

from __future__ import annotations

from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
    extend_schema,
    extend_schema_serializer,
)
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from projects.models import JOB_KINDS, Project
from projects.permissions import IsResearcher
from projects.selectors import job_as_dict, job_get, jobs_list
from projects.services.jobs import job_cancel


@extend_schema_serializer(component_name="Job")
class JobOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    kind = serializers.ChoiceField(choices=JOB_KINDS)
    project = serializers.CharField(allow_null=True)
    project_id = serializers.IntegerField(allow_null=True)
    status = serializers.CharField()
    done = serializers.IntegerField()
    total = serializers.IntegerField()
    error = serializers.CharField(allow_null=True)
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)
    created_at = serializers.DateTimeField(allow_null=True)
    created_by = serializers.CharField(allow_null=True)
    rate = serializers.FloatField(allow_null=True, help_text="units of done per second")
    eta_seconds = serializers.FloatField(allow_null=True)
    percent = serializers.IntegerField()
    heartbeat_at = serializers.DateTimeField(allow_null=True)
    attempts = serializers.IntegerField()
    cancel_requested = serializers.BooleanField()
    params = serializers.JSONField()
    result = serializers.JSONField()


class JobListApi(APIView):
    permission_classes = (IsResearcher,)

    @extend_schema(
        parameters=[
            OpenApiParameter("project", int, description="project id"),
            OpenApiParameter("kind", str, enum=JOB_KINDS),
            OpenApiParameter("limit", int, description="at most this many (default 100, max 1000)"),
        ],
        responses={200: JobOutputSerializer(many=True)},
    )
    def get(self, request: Request) -> Response:
        project = None
        raw = request.query_params.get("project")
        if raw:
            if not raw.isdigit():
                return Response({"project": ["must be a project id"]}, status=status.HTTP_400_BAD_REQUEST)
            project = Project.objects.filter(pk=int(raw)).first()
            if project is None:
                return Response({"detail": "no such project"}, status=status.HTTP_404_NOT_FOUND)
        kind = request.query_params.get("kind") or None
        if kind is not None and kind not in JOB_KINDS:
            return Response({"kind": [f"choose one of {', '.join(JOB_KINDS)}"]}, status=status.HTTP_400_BAD_REQUEST)
        raw_limit = request.query_params.get("limit") or "100"
        if not raw_limit.isdigit() or not 1 <= int(raw_limit) <= 1000:
            return Response({"limit": ["must be a whole number from 1 to 1000"]}, status=status.HTTP_400_BAD_REQUEST)
        jobs = jobs_list(project=project, kind=kind, limit=int(raw_limit))
        return Response([job_as_dict(job=j) for j in jobs])


class JobDetailApi(APIView):
    permission_classes = (IsResearcher,)

    @extend_schema(responses={200: JobOutputSerializer, 404: OpenApiResponse(description="no such job")})
    def get(self, request: Request, job_id: int) -> Response:
        job = job_get(job_id=job_id)
        if job is None:
            return Response({"detail": "no such job"}, status=status.HTTP_404_NOT_FOUND)
        return Response(job_as_dict(job=job))


class JobCancelApi(APIView):
    permission_classes = (IsResearcher,)

    @extend_schema(
        request=None,
        responses={
            200: JobOutputSerializer,
            404: OpenApiResponse(description="no such job"),
            409: OpenApiResponse(description="the job has already ended"),
        },
    )
    def post(self, request: Request, job_id: int) -> Response:
        job = job_get(job_id=job_id)
        if job is None:
            return Response({"detail": "no such job"}, status=status.HTTP_404_NOT_FOUND)
        if job.finished:
            return Response({"detail": f"job {job.pk} is already {job.status}"}, status=status.HTTP_409_CONFLICT)
        return Response(job_as_dict(job=job_cancel(job=job)))
