"""Labelling REST API (researchers): start an augmentation evaluation. Thin: parse, call one
service, render the job as ``/api/v1/jobs/{id}/`` does. Errors: 400 bad input (field
messages), 403 role, 404 unknown project, 503 broker unreachable."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from labeling.evaluation import MAX_SEEDS, evaluation_start
from labeling.ml.augmentation import CLASSIFIERS
from projects.apis import JobOutputSerializer
from projects.models import Project
from projects.permissions import IsResearcher
from projects.selectors import job_as_dict
from projects.services.jobs import BrokerUnavailable


class ProjectEvaluateApi(APIView):
    """Queue an augmentation evaluation (job kind ``evaluate``); its result, once the job
    has succeeded, is the ``bench_augmentation --json`` structure (FORMATS.md §3)."""

    permission_classes = (IsResearcher,)

    @extend_schema_serializer(component_name="EvaluationStartInput")
    class InputSerializer(serializers.Serializer):
        evals = serializers.ListField(
            child=serializers.CharField(max_length=1000),
            allow_empty=False,
            max_length=10,
            help_text='"FORMAT:PATH[:SPLIT]" under the shared data directory, or "project" (held-out candidates)',
        )
        budget = serializers.FloatField(default=0.1, min_value=0.0, max_value=1.0)
        seeds = serializers.IntegerField(default=3, min_value=1, max_value=MAX_SEEDS)
        classifier = serializers.ChoiceField(choices=CLASSIFIERS, default="minilm-lr")

    @extend_schema(
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
        try:
            job = evaluation_start(project=project, created_by=request.user, **data.validated_data)
        except DjangoValidationError as exc:
            return Response(exc.message_dict, status=status.HTTP_400_BAD_REQUEST)
        except BrokerUnavailable as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_503_SERVICE_UNAVAILABLE)
        return Response(job_as_dict(job=job), status=status.HTTP_202_ACCEPTED)
