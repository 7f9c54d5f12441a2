"""Kernel REST API: projects (list with counts, create) and background jobs (researchers).
Thin: parse, call one selector or service, render. Job fields as ``manage.py jobs --json``
(docs/formats.md §3)."""

from __future__ import annotations

from typing import Any, ClassVar

from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import IntegrityError
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

from projects.models import JOB_KINDS, TASKS, Project
from projects.permissions import IsResearcher
from projects.selectors import job_as_dict, job_get, jobs_list, projects_with_state_counts
from projects.services.jobs import job_cancel
from projects.services.projects import project_create
from projects.validators import budget_validator


@extend_schema_serializer(component_name="ProjectCounts")
class ProjectCountsSerializer(serializers.Serializer):
    """Originals and candidates of a project, the candidates also per state (every state, zeros
    included)."""

    originals = serializers.IntegerField(source="n_originals")
    candidates = serializers.IntegerField(source="n_candidates")
    generated = serializers.IntegerField(source="n_generated")
    filtered_out = serializers.IntegerField(source="n_filtered_out")
    pooled = serializers.IntegerField(source="n_pooled")
    routed = serializers.IntegerField(source="n_routed")
    human_labeled = serializers.IntegerField(source="n_human_labeled")
    auto_labeled = serializers.IntegerField(source="n_auto_labeled")
    abstained = serializers.IntegerField(source="n_abstained")


@extend_schema_serializer(component_name="Project")
class ProjectOutputSerializer(serializers.ModelSerializer):
    labels = serializers.SerializerMethodField()
    counts = ProjectCountsSerializer(source="*", read_only=True)

    class Meta:
        model = Project
        fields: ClassVar[list[str]] = [
            "id",
            "name",
            "task",
            "annotators_per_item",
            "labels",
            "text_fields",
            "human_budget",
            "description",
            "created_at",
            "counts",
        ]

    def get_labels(self, obj: Project) -> list[str]:
        return [lab.name for lab in obj.labels.all()]


class ProjectListCreateApi(APIView):
    """``GET``: the projects visible to the caller, with their counts. ``POST`` (researchers, as
    the page ``/projects/new/``): create a project."""

    @extend_schema_serializer(component_name="ProjectCreateInput")
    class InputSerializer(serializers.Serializer):
        # Lengths are checked here, before the database (Project.name 200, Label.name 64).
        name = serializers.CharField(max_length=200)
        task = serializers.ChoiceField(choices=TASKS)
        labels = serializers.ListField(
            child=serializers.CharField(max_length=64),
            required=False,
            max_length=50,
            help_text="the label set, in order; empty or missing: the task's default labels",
        )
        text_fields = serializers.ListField(
            child=serializers.CharField(max_length=64),
            required=False,
            max_length=20,
            help_text="the text field names, in order; empty or missing: the task's default fields",
        )
        human_budget = serializers.FloatField(
            required=False,
            allow_null=True,
            validators=[budget_validator],
            help_text="share of the pool routed to humans",
        )
        annotators_per_item = serializers.IntegerField(min_value=1, max_value=50, required=False, allow_null=True)
        description = serializers.CharField(max_length=5000, required=False, allow_blank=True, default="")

    def get_permissions(self) -> list[Any]:
        # Reading the list: any signed-in account (annotators see their projects); creating:
        # researchers and admins, the rule of the page /projects/new/.
        return [IsResearcher()] if self.request.method == "POST" else list(super().get_permissions())

    @extend_schema(
        summary="List projects with counts",
        description=(
            "The projects visible to the caller (researchers and admins: all; annotators: those "
            "they are members of), by name, each with its label set and its counts: originals, "
            "candidates, and candidates per state. One query for the whole list."
        ),
        responses={200: ProjectOutputSerializer(many=True)},
    )
    def get(self, request: Request) -> Response:
        projects = projects_with_state_counts(user=request.user).prefetch_related("labels")
        return Response(ProjectOutputSerializer(projects, many=True).data)

    @extend_schema(
        summary="Create a project",
        description=(
            "Researchers and admins (as the page /projects/new/). `labels` and `text_fields` "
            "default to the task's; `human_budget` and `annotators_per_item` to the configured "
            "defaults. 201 with the project; 400 with a message per field for bad input; 409 "
            "when a project of that name exists."
        ),
        request=InputSerializer,
        responses={
            201: ProjectOutputSerializer,
            400: OpenApiResponse(description="bad input (a message per field)"),
            403: OpenApiResponse(description="researchers only"),
            409: OpenApiResponse(description="a project of that name exists"),
        },
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        d = data.validated_data
        taken = {"name": [f"a project called {d['name']!r} already exists"]}
        if Project.objects.filter(name=d["name"]).exists():
            return Response(taken, status=status.HTTP_409_CONFLICT)
        try:
            project = project_create(
                name=d["name"],
                task=d["task"],
                labels=d.get("labels") or None,
                text_fields=d.get("text_fields") or None,
                human_budget=d.get("human_budget"),
                annotators_per_item=d.get("annotators_per_item"),
                description=d["description"],
                created_by=request.user,
            )
        except DjangoValidationError as exc:  # a field's (labels) by its name, as the serializer's
            if hasattr(exc, "error_dict"):
                return Response(exc.message_dict, status=status.HTTP_400_BAD_REQUEST)
            return Response({"detail": " ".join(exc.messages)}, status=status.HTTP_400_BAD_REQUEST)
        except IntegrityError:  # created by someone else since the check above
            return Response(taken, status=status.HTTP_409_CONFLICT)
        created = projects_with_state_counts(user=request.user).prefetch_related("labels").get(pk=project.pk)
        return Response(ProjectOutputSerializer(created).data, status=status.HTTP_201_CREATED)


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
    """Researchers: background jobs (generation, train, autolabel, route, export, evaluate,
    import), newest first, optionally of one project or kind. Bad filters: 400."""

    permission_classes = (IsResearcher,)

    class FilterSerializer(serializers.Serializer):
        project = serializers.CharField(required=False, allow_blank=True)
        kind = serializers.CharField(required=False, allow_blank=True)
        limit = serializers.CharField(required=False, allow_blank=True)

        def validate_project(self, value: str) -> int | None:
            if value and not value.isdigit():
                raise serializers.ValidationError("must be a project id")
            return int(value) if value else None

        def validate_kind(self, value: str) -> str | None:
            if value and value not in JOB_KINDS:
                raise serializers.ValidationError(f"choose one of {', '.join(JOB_KINDS)}")
            return value or None

        def validate_limit(self, value: str) -> int:
            value = value or "100"
            if not value.isdigit() or not 1 <= int(value) <= 1000:
                raise serializers.ValidationError("must be a whole number from 1 to 1000")
            return int(value)

    @extend_schema(
        summary="List jobs",
        parameters=[
            OpenApiParameter("project", int, description="project id"),
            OpenApiParameter("kind", str, enum=JOB_KINDS),
            OpenApiParameter("limit", int, description="at most this many (default 100, max 1000)"),
        ],
        responses={200: JobOutputSerializer(many=True), 400: OpenApiResponse(description="field errors")},
    )
    def get(self, request: Request) -> Response:
        query = self.FilterSerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        q = query.validated_data
        project = None
        if q.get("project") is not None:
            project = Project.objects.filter(pk=q["project"]).first()
            if project is None:
                return Response({"detail": "no such project"}, status=status.HTTP_404_NOT_FOUND)
        jobs = jobs_list(project=project, kind=q.get("kind"), limit=q.get("limit", 100))
        return Response([job_as_dict(job=j) for j in jobs])


class JobDetailApi(APIView):
    """Researchers: one job — status, progress (done/total, rate, eta), error and, once it has
    succeeded, its result. Poll it until ``status`` is ``succeeded``, ``failed`` or ``cancelled``."""

    permission_classes = (IsResearcher,)

    @extend_schema(
        summary="One job (poll it)",
        responses={200: JobOutputSerializer, 404: OpenApiResponse(description="no such job")},
    )
    def get(self, request: Request, job_id: int) -> Response:
        job = job_get(job_id=job_id)
        if job is None:
            return Response({"detail": "no such job"}, status=status.HTTP_404_NOT_FOUND)
        return Response(job_as_dict(job=job))


class JobCancelApi(APIView):
    """Researchers: ask a queued or running job to stop; it stops at its next progress step.
    A job that has already ended: 409."""

    permission_classes = (IsResearcher,)

    @extend_schema(
        summary="Cancel a job",
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
