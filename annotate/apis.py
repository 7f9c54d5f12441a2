"""The annotation REST API (contract: docs/formats.md §4). Thin: parse, call one service or
selector, render. Errors: 400 bad input, 403 role or membership (removed, paused, flagged), 404
unknown id, 409 lease conflicts."""

from __future__ import annotations

from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, extend_schema_serializer
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from annotate import selectors
from annotate.services import assignments as svc
from annotate.services.routing import STRATEGIES, no_annotators_warning, project_route_start
from projects.apis import JobOutputSerializer
from projects.authentication import AUTHENTICATION
from projects.models import Project
from projects.permissions import IsResearcher
from projects.selectors import job_as_dict
from projects.services.jobs import BrokerUnavailable
from projects.validators import budget_validator


def _error(exc: svc.AnnotationError) -> Response:
    """``{"detail": message}``; bad input also names its field as DRF's validation errors do
    (``{"choice": [message]}``, shared/CONVENTIONS.md "APIs": 400 with field messages)."""
    body: dict[str, object] = {"detail": str(exc)}
    if exc.field:
        body[exc.field] = [str(exc)]
    return Response(body, status=exc.status)


@extend_schema_serializer(component_name="RouteJob")
class RouteJobOutputSerializer(JobOutputSerializer):
    warnings = serializers.ListField(
        child=serializers.CharField(), help_text="e.g. the project has no annotator members (add them first)"
    )


class AnnotationOutputSerializer(serializers.Serializer):
    """Schema of an answer (the body is built by ``SubmitResult.as_json``)."""

    id = serializers.IntegerField()
    assignment = serializers.IntegerField()
    item = serializers.IntegerField()
    choice = serializers.CharField()
    canonical_choice = serializers.CharField()
    duration_ms = serializers.IntegerField(allow_null=True)
    created_at = serializers.DateTimeField()


class LeaseOutputSerializer(serializers.Serializer):
    """A leased item: what to show and the choices to submit (``ItemView.as_json``)."""

    assignment = serializers.IntegerField()
    item = serializers.JSONField(
        help_text='{"id", "kind", "fields", "original"} or {"id", "kind", "image", "captions", …}'
    )
    choices = serializers.ListField(child=serializers.CharField(), help_text="the strings to submit, in display order")
    expires_at = serializers.DateTimeField()


class AnnotationNextOutputSerializer(AnnotationOutputSerializer):
    """An answer with the next lease (``?next=1``): one round trip per answer."""

    next = LeaseOutputSerializer(allow_null=True, help_text="the next lease; null when nothing is left for you")
    next_refused = serializers.CharField(
        required=False, help_text="only when no next lease may be given now: why (next-item's 403 message)"
    )


class ItemNextApi(APIView):
    """Lease the next item for the caller (annotator members of the project). 200 with the item
    and its choices, 204 when nothing is left for the caller; 403 when the caller is not an
    annotator member (researchers and admins included), is paused or flagged, or must first
    qualify on check items."""

    authentication_classes = AUTHENTICATION

    @extend_schema(
        summary="Lease the next item",
        request=None,
        responses={
            200: LeaseOutputSerializer,
            204: OpenApiResponse(description="nothing left for the caller"),
            403: OpenApiResponse(description="not an annotator member, paused, flagged, or not qualified yet"),
        },
    )
    def post(self, request: Request, project_id: int) -> Response:
        access = svc.project_access(project_id=project_id, annotator=request.user)
        if access is None:
            return Response({"detail": "not a project you annotate"}, status=status.HTTP_403_FORBIDDEN)
        try:
            lease = svc.lease_next(access=access, annotator=request.user)
        except svc.AnnotationError as exc:
            return _error(exc)
        if lease is None:
            return Response(status=status.HTTP_204_NO_CONTENT)
        return Response(svc.lease_payload(lease=lease, access=access))


class AnnotationSubmitApi(APIView):
    """Answer a leased item with one of its ``choices``. 201 with the annotation; the same answer
    again: 200 with the same annotation; an expired or foreign lease: 409; a choice not offered:
    400; removed, paused or flagged: 403."""

    authentication_classes = AUTHENTICATION

    class InputSerializer(serializers.Serializer):
        choice = serializers.CharField(max_length=64)
        duration_ms = serializers.IntegerField(min_value=0, max_value=24 * 3600 * 1000, required=False, allow_null=True)

    class QuerySerializer(serializers.Serializer):
        next = serializers.BooleanField(
            required=False,
            default=False,
            help_text="1/true: the response also carries the next lease (`next`), as next-item would answer",
        )

    @extend_schema(
        summary="Answer a leased item",
        request=InputSerializer,
        parameters=[QuerySerializer],
        responses={
            201: AnnotationNextOutputSerializer,
            200: AnnotationNextOutputSerializer,
            400: OpenApiResponse(description="a choice the item does not offer"),
            403: OpenApiResponse(description="removed from the project, paused or flagged"),
            409: OpenApiResponse(description="the lease expired or belongs to someone else"),
        },
    )
    def post(self, request: Request, assignment_id: int) -> Response:
        query = self.QuerySerializer(data=request.query_params)
        query.is_valid(raise_exception=True)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            result = svc.annotation_submit(
                assignment_id=assignment_id,
                annotator=request.user,
                choice=data.validated_data["choice"],
                duration_ms=data.validated_data.get("duration_ms"),
            )
        except svc.AnnotationError as exc:
            return _error(exc)
        body = result.as_json()
        if query.validated_data["next"]:
            body["next"], refused = svc.lease_next_payload(project_id=result.project_id, annotator=request.user)
            if refused:
                body["next_refused"] = refused
        return Response(body, status=status.HTTP_201_CREATED if result.created else status.HTTP_200_OK)


class AssignmentSkipApi(APIView):
    """Give a leased item back (with an optional reason); it returns to the pool."""

    class InputSerializer(serializers.Serializer):
        reason = serializers.CharField(max_length=300, required=False, allow_blank=True, default="")

    class OutputSerializer(serializers.Serializer):
        assignment = serializers.IntegerField()
        status = serializers.CharField()

    @extend_schema(summary="Skip a leased item", request=InputSerializer, responses={200: OutputSerializer})
    def post(self, request: Request, assignment_id: int) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            a = svc.assignment_skip(
                assignment_id=assignment_id, annotator=request.user, reason=data.validated_data["reason"]
            )
        except svc.AnnotationError as exc:
            return _error(exc)
        return Response({"assignment": a.pk, "status": a.status})


class AnnotationUndoApi(APIView):
    """Extension: take back an answer inside the undo window; the lease is live again."""

    @extend_schema(summary="Undo an answer", request=None, responses={200: LeaseOutputSerializer})
    def post(self, request: Request, assignment_id: int) -> Response:
        try:
            a = svc.annotation_undo(assignment_id=assignment_id, annotator=request.user)
        except svc.AnnotationError as exc:
            return _error(exc)
        return Response(selectors.item_view(assignment=a).as_json())


class AssignmentHeartbeatApi(APIView):
    """Extension: keep a lease alive while the item is on screen."""

    class OutputSerializer(serializers.Serializer):
        assignment = serializers.IntegerField()
        expires_at = serializers.DateTimeField()

    @extend_schema(
        summary="Keep a lease alive",
        request=None,
        responses={200: OutputSerializer, 409: OpenApiResponse(description="the lease is no longer live")},
    )
    def post(self, request: Request, assignment_id: int) -> Response:
        try:
            expiry = svc.assignment_heartbeat(assignment_id=assignment_id, annotator=request.user)
        except svc.AnnotationError as exc:
            return _error(exc)
        if expiry is None:
            return Response({"detail": "this lease is no longer live"}, status=status.HTTP_409_CONFLICT)
        return Response({"assignment": assignment_id, "expires_at": expiry.isoformat()})


class ProjectQualityApi(APIView):
    """Researchers: the project's aggregation and agreement figures (what the annotation-quality page shows):
    items, answers, agreement, gold accuracy per annotator and the like."""

    permission_classes = (IsResearcher,)

    @extend_schema(
        summary="Quality figures of a project",
        responses={200: OpenApiTypes.OBJECT, 404: OpenApiResponse(description="no such project")},
    )
    def get(self, request: Request, project_id: int) -> Response:
        project = Project.objects.filter(pk=project_id).first()
        if project is None:
            return Response({"detail": "no such project"}, status=status.HTTP_404_NOT_FOUND)
        return Response(selectors.project_quality(project=project))


class ProjectRouteApi(APIView):
    """Researchers: queue routing of the human share of the pool (as ``manage.py route``) as a
    ``route`` job: ``budget`` (share of the pool, default the project's), ``strategy``, ``seed``.
    202 with the job; once it has succeeded its ``result`` holds the routing result."""

    permission_classes = (IsResearcher,)

    class InputSerializer(serializers.Serializer):
        budget = serializers.FloatField(required=False, allow_null=True, validators=[budget_validator])
        strategy = serializers.ChoiceField(choices=STRATEGIES, default="random")
        seed = serializers.IntegerField(required=False, allow_null=True)

    @extend_schema(
        summary="Route items to annotators (job)",
        request=InputSerializer,
        responses={
            202: RouteJobOutputSerializer,
            400: OpenApiResponse(description="bad input"),
            503: OpenApiResponse(description="task broker unreachable"),
        },
    )
    def post(self, request: Request, project_id: int) -> Response:
        project = Project.objects.filter(pk=project_id).first()
        if project is None:
            return Response({"detail": "no such project"}, status=status.HTTP_404_NOT_FOUND)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            job = project_route_start(project=project, created_by=request.user, **data.validated_data)
        except DjangoValidationError as exc:
            return Response({"detail": exc.messages}, status=status.HTTP_400_BAD_REQUEST)
        except BrokerUnavailable as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_503_SERVICE_UNAVAILABLE)
        warning = no_annotators_warning(project)
        return Response(
            {**job_as_dict(job=job), "warnings": [warning] if warning else []}, status=status.HTTP_202_ACCEPTED
        )
