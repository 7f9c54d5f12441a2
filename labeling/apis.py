"""Labelling REST API (researchers): train h, auto-label, start an augmentation evaluation,
train the task model f. Thin: parse, call one
service, render the job as ``/api/v1/jobs/{id}/`` does. Errors: 400 bad input (field
messages), 403 role, 404 unknown project, 503 broker unreachable."""

from __future__ import annotations

from collections.abc import Callable

from django.core.exceptions import ValidationError as DjangoValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from labeling.evaluation import MAX_SEEDS, evaluation_start
from labeling.ml.augmentation import CLASSIFIERS
from labeling.models import MODES
from labeling.selectors import cad_missing_note, warm_start_choices
from labeling.services import TASK_MODEL_LATEST, autolabel_start, pairwise_train_start
from labeling.task_training import (
    MAX_EPOCHS,
    TaskModelBusy,
    task_data_counts,
    task_model_active_job,
    task_model_as_dict,
    task_model_latest,
    task_model_probe_latest,
    task_model_probe_start,
    task_model_start,
)
from projects.apis import JobOutputSerializer
from projects.models import Job, Project
from projects.permissions import IsResearcher
from projects.selectors import job_as_dict
from projects.services.jobs import BrokerUnavailable


def _job_response(start: Callable[[], Job], *, field_errors: bool = False) -> Response:
    """Start a job and answer as the API does for every job it starts: 202 with the job (as
    ``/api/v1/jobs/{id}/``), 400 when the service refuses (field messages, or ``detail``), 503
    when the broker is unreachable."""
    try:
        job = start()
    except DjangoValidationError as exc:
        body = exc.message_dict if field_errors else {"detail": exc.messages}
        return Response(body, status=status.HTTP_400_BAD_REQUEST)
    except BrokerUnavailable as exc:
        return Response({"detail": str(exc)}, status=status.HTTP_503_SERVICE_UNAVAILABLE)
    return Response(job_as_dict(job=job), status=status.HTTP_202_ACCEPTED)


class ProjectEvaluateApi(APIView):
    """Queue an augmentation evaluation (job kind ``evaluate``); its result, once the job
    has succeeded, is the ``bench_augmentation --json`` structure (FORMATS.md §3) with sets
    named by title (no server path), ``excluded`` test examples counted, and the variant
    ``export`` (the project's current labelled set)."""

    permission_classes = (IsResearcher,)

    @extend_schema_serializer(component_name="EvaluationStartInput")
    class InputSerializer(serializers.Serializer):
        evals = serializers.ListField(
            child=serializers.CharField(max_length=1000),
            allow_empty=False,
            max_length=10,
            help_text='a listed set ("cad-nli:dev", "project": held-out candidates) or "FORMAT:PATH[:SPLIT]" under '
            "the shared data directory",
        )
        budget = serializers.FloatField(default=0.1, min_value=0.0, max_value=1.0)
        seeds = serializers.IntegerField(default=3, min_value=1, max_value=MAX_SEEDS)
        classifier = serializers.ChoiceField(choices=CLASSIFIERS, default="minilm-lr")

    @extend_schema(
        summary="Evaluate augmentation (job)",
        request=InputSerializer,
        responses={
            202: JobOutputSerializer,
            400: OpenApiResponse(description="bad input"),
            503: OpenApiResponse(description="task broker unreachable"),
        },
    )
    def post(self, request: Request, project_id: int) -> Response:
        project = get_object_or_404(Project, pk=project_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return _job_response(
            lambda: evaluation_start(project=project, created_by=request.user, **data.validated_data),
            field_errors=True,
        )


class PairwiseTrainApi(APIView):
    """Queue training of h (job kind ``train``, queue ``ml``); refused at once (400) when the
    project's human labels cannot train it."""

    permission_classes = (IsResearcher,)

    @extend_schema_serializer(component_name="PairwiseTrainInput")
    class InputSerializer(serializers.Serializer):
        mode = serializers.ChoiceField(choices=MODES, default="capc")
        warm_start = serializers.CharField(
            required=False,
            allow_blank=True,
            max_length=100,
            help_text="a key of the known warm-start data sets for the project's task (e.g. cad-nli:train)",
        )
        threshold = serializers.FloatField(required=False, allow_null=True, min_value=0.0, max_value=1.0)
        task_model = serializers.ChoiceField(
            choices=[TASK_MODEL_LATEST, "none"],
            default=TASK_MODEL_LATEST,
            help_text="latest: h reads the project's newest task model f (left out, with a note, when there is "
            "none, it is near chance — the job's params.task_model_note says why — or it trained on the "
            "human-labelled counterfactuals); none: h without f",
        )

    @extend_schema(
        summary="Train the pairwise classifier h (job)",
        request=InputSerializer,
        responses={
            202: JobOutputSerializer,
            400: OpenApiResponse(description="bad input, or too few human labels"),
            503: OpenApiResponse(description="task broker unreachable"),
        },
    )
    def post(self, request: Request, project_id: int) -> Response:
        project = get_object_or_404(Project, pk=project_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        d = data.validated_data
        key = d.get("warm_start") or ""
        specs = {k: spec for k, _, spec in warm_start_choices(project=project)}
        if key and key not in specs:
            choices = ", ".join(specs) or "none for this task"
            note = cad_missing_note(project=project, found=bool(specs), what="warm starts")
            message = f"unknown warm-start set {key!r}; choose one of {choices}" + (f". {note}" if note else "")
            return Response({"warm_start": [message]}, status=400)
        return _job_response(
            lambda: pairwise_train_start(
                project=project,
                mode=d["mode"],
                warm_start=specs.get(key, ""),
                threshold=d.get("threshold"),
                task_model="" if d["task_model"] == "none" else TASK_MODEL_LATEST,
                created_by=request.user,
            )
        )


class AutolabelApi(APIView):
    """Queue auto-labelling with the latest h (job kind ``autolabel``); 400 when there is no
    model yet or the threshold is out of range."""

    permission_classes = (IsResearcher,)

    @extend_schema_serializer(component_name="AutolabelInput")
    class InputSerializer(serializers.Serializer):
        min_confidence = serializers.FloatField(required=False, allow_null=True, min_value=0.0, max_value=1.0)

    @extend_schema(
        summary="Auto-label the pool with h (job)",
        request=InputSerializer,
        responses={
            202: JobOutputSerializer,
            400: OpenApiResponse(description="bad input, or no pairwise model yet"),
            503: OpenApiResponse(description="task broker unreachable"),
        },
    )
    def post(self, request: Request, project_id: int) -> Response:
        project = get_object_or_404(Project, pk=project_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return _job_response(
            lambda: autolabel_start(
                project=project, min_confidence=data.validated_data.get("min_confidence"), created_by=request.user
            )
        )


class TaskModelApi(APIView):
    """The project's task model f (issue 26). ``POST`` queues its training (job kind
    ``task_model``): 202 with the job, 400 bad input or too little data, 403 not a researcher,
    409 one already queued or running, 503 broker unreachable. ``GET``: the active job (if any),
    the latest model's figures (held-out and CAD-NLI dev accuracy) and the task training data
    counts."""

    permission_classes = (IsResearcher,)

    @extend_schema_serializer(component_name="TaskModelTrainInput")
    class InputSerializer(serializers.Serializer):
        base = serializers.CharField(
            default="minilm",
            max_length=1000,
            help_text="minilm (bundled), mpnet (COUNTERPART_MPNET_PATH) or a local path",
        )
        epochs = serializers.IntegerField(default=3, min_value=1, max_value=MAX_EPOCHS)
        max_examples = serializers.IntegerField(default=0, min_value=0, help_text="cap on task training data (0: all)")
        counterfactuals = serializers.BooleanField(
            default=False,
            help_text="also train on the project's human-labelled counterfactuals (h then cannot use this model: "
            "it cross-validates on those labels)",
        )

    @extend_schema(
        summary="Train the task model f (job)",
        request=InputSerializer,
        responses={
            202: JobOutputSerializer,
            400: OpenApiResponse(description="bad input, or too little labelled data"),
            409: OpenApiResponse(description="a task model is already being trained"),
            503: OpenApiResponse(description="task broker unreachable"),
        },
    )
    def post(self, request: Request, project_id: int) -> Response:
        project = get_object_or_404(Project, pk=project_id)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            return _job_response(
                lambda: task_model_start(project=project, created_by=request.user, **data.validated_data)
            )
        except TaskModelBusy as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)

    @extend_schema(
        summary="The task model's status and figures", responses={200: OpenApiResponse(description="status")}
    )
    def get(self, request: Request, project_id: int) -> Response:
        project = get_object_or_404(Project, pk=project_id)
        job = task_model_active_job(project=project)
        latest = task_model_latest(project=project)
        return Response(
            {
                "job": job_as_dict(job=job) if job else None,
                "model": task_model_as_dict(model=latest) if latest else None,
                # the newest probe: the estimate and the proposal sized for about an hour (issue 30)
                "probe": task_model_probe_latest(project=project),
                "task_training_data": task_data_counts(project=project),
            }
        )


class TaskModelProbeApi(APIView):
    """Estimate the task model's training time on this machine (issue 30): a few real training
    steps on the project's data (job kind ``task_model_probe``). 202 with the job, whose result
    holds the seconds per example, the estimate for the given settings and a proposed cap and
    epochs that fit about an hour (``GET …/task-model/`` shows the newest as ``probe``); 400 bad
    input, 403 not a researcher, 409 a task-model job already active, 503 broker unreachable."""

    permission_classes = (IsResearcher,)

    @extend_schema(
        summary="Estimate the task model's training time (job)",
        request=TaskModelApi.InputSerializer,
        responses={
            202: JobOutputSerializer,
            400: OpenApiResponse(description="bad input, or too little labelled data"),
            409: OpenApiResponse(description="a task-model job is already queued or running"),
            503: OpenApiResponse(description="task broker unreachable"),
        },
    )
    def post(self, request: Request, project_id: int) -> Response:
        project = get_object_or_404(Project, pk=project_id)
        data = TaskModelApi.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            return _job_response(
                lambda: task_model_probe_start(project=project, created_by=request.user, **data.validated_data)
            )
        except TaskModelBusy as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
