"""Generation-run REST API (researchers only). Thin: parse, call one service or selector,
render. Errors: 400 bad input (field messages), 403 role, 404 unknown id, 409 a run that
cannot be cancelled any more, 503 broker unreachable."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError as DjangoValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import (
    OpenApiParameter,
    OpenApiResponse,
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
from projects.models import TASKS, Project
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
    rate_unit = serializers.CharField(help_text='the rate\'s unit, "originals/s" (projects/job_progress.py)')
    eta_seconds = serializers.FloatField(allow_null=True)
    elapsed_seconds = serializers.FloatField()
    candidates = serializers.IntegerField()
    pooled = serializers.IntegerField()
    filtered_out = serializers.IntegerField()
    stalled = serializers.CharField(help_text='"stalled: no worker has …" while no worker reports; else ""')
    waiting_behind = serializers.IntegerField(
        allow_null=True, help_text="the job this run waits behind (another job changing the project's candidates)"
    )
    phase = serializers.CharField(
        help_text='"loading models" (no rate yet) or "generating" while the run runs; "" once finished'
    )
    phase_message = serializers.CharField(help_text='what it loads, in words, while loading; else ""')
    steps = serializers.ListField(
        child=serializers.DictField(), help_text="every step (loading included): index, name, state"
    )
    summary = serializers.CharField(help_text="the figures in one line, as /api/v1/jobs/ and the jobs command")


@extend_schema_serializer(component_name="GenerationRun")
class RunOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    project = serializers.IntegerField(source="project_id")
    generator = serializers.CharField()
    job = serializers.IntegerField(source="job_id", allow_null=True, help_text="its job (as /api/v1/jobs/{id}/)")
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
    """Researchers: one generation run — status, options, progress (done/total, rate, eta,
    candidates, pooled, filtered out), metrics, the first skips, error. Its ``job`` is the
    same run as a job (``/api/v1/jobs/{id}/``)."""

    permission_classes = (
        permissions.IsAuthenticated,
        IsResearcher,
    )
    OutputSerializer = RunOutputSerializer

    @extend_schema(
        summary="One generation run",
        responses={200: RunOutputSerializer, 404: OpenApiResponse(description="no such run")},
    )
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

    @extend_schema(summary="List a project's generation runs", responses=RunOutputSerializer(many=True))
    def get(self, request: Request, project_id: int) -> Response:
        """Researchers: the project's generation runs, newest first (at most 50)."""
        project = get_object_or_404(Project, pk=project_id)
        runs = runs_of_project(project=project)[:50]
        return Response(self.OutputSerializer(runs, many=True).data)

    @extend_schema(
        summary="Start a generation run (job)",
        request=InputSerializer,
        responses={
            201: RunOutputSerializer,
            400: OpenApiResponse(description="bad input (a message per field)"),
            503: OpenApiResponse(description="task broker unreachable (the run is marked failed)"),
        },
    )
    def post(self, request: Request, project_id: int) -> Response:
        """Researchers: generate counterfactual candidates for the project's originals with one
        generator (``GET /api/v1/generation/generators/``) and ``options`` (``limit``, ``filters``,
        ``similarity_band``, ``seed``, ``generator_options``, …). 201 with the queued run; poll it
        (or its ``job``) until it has finished."""
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
    """Researchers: ask a generation run to stop after its current batch. A run already
    finished: 409."""

    permission_classes = (
        permissions.IsAuthenticated,
        IsResearcher,
    )
    OutputSerializer = RunOutputSerializer

    @extend_schema(
        summary="Cancel a generation run",
        request=None,
        responses={200: RunOutputSerializer, 409: OpenApiResponse(description="the run has already finished")},
    )
    def post(self, request: Request, run_id: int) -> Response:
        run = run_get(run_id=run_id)
        if run is None:
            return Response({"detail": "no such run"}, status=status.HTTP_404_NOT_FOUND)
        if run.status in FINISHED:
            return Response({"detail": f"run {run.pk} is already {run.status}"}, status=status.HTTP_409_CONFLICT)
        run = run_cancel(run=run)
        return Response(self.OutputSerializer(run).data)


class GeneratorAvailabilitySerializer(serializers.Serializer):
    name = serializers.CharField()
    description = serializers.CharField()
    available = serializers.BooleanField()
    reason = serializers.CharField(help_text="why it cannot run ('' when it can)")
    backend = serializers.CharField(help_text="the language model backend it would use ('' when it prompts none)")


class GeneratorListApi(APIView):
    """Researchers: the names of the registered counterfactual generators (``rules``, the
    language-model ones, …), for ``generator`` when starting a run. With ``?project=ID`` (or
    ``?task=nli``) also ``availability``: per generator whether a run can use it with the
    configured models, and if not why — the same answer as the run form and ``generate
    --list-generators`` (``generation/services/availability.py``)."""

    permission_classes = (
        permissions.IsAuthenticated,
        IsResearcher,
    )

    class OutputSerializer(serializers.Serializer):
        generators = serializers.ListField(child=serializers.CharField())
        availability = GeneratorAvailabilitySerializer(many=True, required=False)

    class QuerySerializer(serializers.Serializer):
        project = serializers.IntegerField(required=False, min_value=1, max_value=2**63 - 1)
        task = serializers.CharField(required=False, allow_blank=True, max_length=200)

    @extend_schema(
        summary="List generators",
        parameters=[
            OpenApiParameter("project", int, description="a project id: availability for its task"),
            OpenApiParameter("task", str, description="a task (nli, sentiment, …): availability for it"),
        ],
        responses={200: OutputSerializer, 400: OpenApiResponse(description="bad project or task")},
    )
    def get(self, request: Request) -> Response:
        from generation.services.availability import all_availability

        body: dict[str, Any] = {"generators": registry.names()}
        query = self.QuerySerializer(data=request.query_params)
        if not query.is_valid():
            return Response(query.errors, status=status.HTTP_400_BAD_REQUEST)
        project_id, task = query.validated_data.get("project"), query.validated_data.get("task", "")
        if project_id:
            project = Project.objects.filter(pk=project_id).first()
            if project is None:
                return Response({"detail": "no such project"}, status=status.HTTP_404_NOT_FOUND)
            task = project.task
        if task:
            if task not in TASKS:
                return Response(
                    {"task": f"unknown task {task[:50]!r}; choose one of {', '.join(TASKS)}"},
                    status=status.HTTP_400_BAD_REQUEST,
                )
            body["availability"] = [a.as_dict() for a in all_availability(task)]
        return Response(body)
