"""Generation-run REST API (researchers only). Thin: parse, call one service or selector,
render. Errors: 400 bad input (field messages), 403 role, 404 unknown id, 409 a run that
cannot be cancelled any more, 503 broker unreachable."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import (
    extend_schema,
    extend_schema_field,
    extend_schema_serializer,
)
from rest_framework import permissions, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from generation.ml import registry
from generation.models import GenerationRun
from generation.selectors import run_get, run_progress, runs_of_project
from generation.services.runs import FINISHED, run_cancel, run_start
from projects.models import Project
from projects.permissions import IsResearcher
from projects.services.jobs import BrokerUnavailable

SKIPS_SHOWN = 100


@extend_schema_serializer(component_name="GenerationRunProgress")
class RunProgressSerializer(serializers.Serializer):
    done = serializers.IntegerField()
    total = serializers.IntegerField()
    skipped = serializers.IntegerField()
    fraction = serializers.FloatField()
    percent = serializers.IntegerField()
    rate = serializers.FloatField(allow_null=True, help_text="originals per second")
    eta_seconds = serializers.FloatField(allow_null=True)
    elapsed_seconds = serializers.FloatField()
    candidates = serializers.IntegerField()
    pooled = serializers.IntegerField()
    filtered_out = serializers.IntegerField()
    stalled = serializers.CharField(help_text='"stalled: no worker has …" while no worker reports; else ""')
    waiting_behind = serializers.IntegerField(
        allow_null=True, help_text="the job this run waits behind (another job changing the project's candidates)"
    )


@extend_schema_serializer(component_name="GenerationRun")
class RunOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    project = serializers.IntegerField(source="project_id")
    generator = serializers.CharField()
    status = serializers.CharField()
    finished = serializers.SerializerMethodField()
    cancel_requested = serializers.BooleanField()
    options = serializers.JSONField()
    progress = serializers.SerializerMethodField()
    metrics = serializers.JSONField()
    skips = serializers.SerializerMethodField()
    error = serializers.CharField()
    created_at = serializers.DateTimeField()
    started_at = serializers.DateTimeField(allow_null=True)
    finished_at = serializers.DateTimeField(allow_null=True)

    @extend_schema_field(serializers.BooleanField())
    def get_finished(self, run: GenerationRun) -> bool:
        return run.status in FINISHED

    @extend_schema_field(RunProgressSerializer)
    def get_progress(self, run: GenerationRun) -> dict[str, Any]:
        p = run_progress(run=run).as_dict()
        return RunProgressSerializer(p).data

    @extend_schema_field(serializers.ListField(child=serializers.DictField()))
    def get_skips(self, run: GenerationRun) -> list[dict[str, str]]:
        return list(run.skips or [])[:SKIPS_SHOWN]


class RunDetailApi(APIView):
    permission_classes = (
        permissions.IsAuthenticated,
        IsResearcher,
    )
    OutputSerializer = RunOutputSerializer

    @extend_schema(responses=RunOutputSerializer)
    def get(self, request: Request, run_id: int) -> Response:
        run = run_get(run_id=run_id)
        if run is None:
            return Response({"detail": "no such run"}, status=status.HTTP_404_NOT_FOUND)
        return Response(self.OutputSerializer(run).data)


class RunListApi(APIView):
    permission_classes = (
        permissions.IsAuthenticated,
        IsResearcher,
    )

    @extend_schema_serializer(component_name="GenerationRunStartInput")
    class InputSerializer(serializers.Serializer):
        generator = serializers.CharField(max_length=64)
        options = serializers.DictField(required=False, default=dict)

    OutputSerializer = RunOutputSerializer

    @extend_schema(responses=RunOutputSerializer(many=True))
    def get(self, request: Request, project_id: int) -> Response:
        project = get_object_or_404(Project, pk=project_id)
        runs = runs_of_project(project=project)[:50]
        return Response(self.OutputSerializer(runs, many=True).data)

    @extend_schema(request=InputSerializer, responses={201: RunOutputSerializer})
    def post(self, request: Request, project_id: int) -> Response:
        project = get_object_or_404(Project, pk=project_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            run = run_start(
                project=project,
                generator=data.validated_data["generator"],
                options=data.validated_data["options"],
                created_by=request.user,
            )
        except DjangoValidationError as exc:
            return Response(exc.message_dict, status=status.HTTP_400_BAD_REQUEST)
        except BrokerUnavailable as exc:  # the run is marked failed
            return Response({"detail": str(exc)}, status=status.HTTP_503_SERVICE_UNAVAILABLE)
        run.refresh_from_db()
        return Response(self.OutputSerializer(run).data, status=status.HTTP_201_CREATED)


class RunCancelApi(APIView):
    permission_classes = (
        permissions.IsAuthenticated,
        IsResearcher,
    )
    OutputSerializer = RunOutputSerializer

    @extend_schema(request=None, responses={200: RunOutputSerializer, 409: None})
    def post(self, request: Request, run_id: int) -> Response:
        run = run_get(run_id=run_id)
        if run is None:
            return Response({"detail": "no such run"}, status=status.HTTP_404_NOT_FOUND)
        if run.status in FINISHED:
            return Response({"detail": f"run {run.pk} is already {run.status}"}, status=status.HTTP_409_CONFLICT)
        run = run_cancel(run=run)
        return Response(self.OutputSerializer(run).data)


class GeneratorListApi(APIView):
    permission_classes = (
        permissions.IsAuthenticated,
        IsResearcher,
    )

    @extend_schema(responses={200: dict})
    def get(self, request: Request) -> Response:
        return Response({"generators": registry.names()})
