"""Kernel REST API for people: a project's members (annotators and researchers; pause and
resume annotators) and API tokens (your own; researchers may revoke anyone's)."""

from __future__ import annotations

from typing import Any

from django.contrib.auth import get_user_model
from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from drf_spectacular.utils import OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.permissions import IsAuthenticated
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from projects.models import MEMBER_ROLES, Project, ProjectMembership
from projects.permissions import IsResearcher
from projects.services.memberships import (
    MembershipConflict,
    membership_add,
    membership_pause,
    membership_remove,
    membership_resume,
)
from projects.services.tokens import token_create, token_revoke


class MembershipOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    username = serializers.CharField(source="user.username")
    role = serializers.ChoiceField(choices=MEMBER_ROLES)
    flagged = serializers.BooleanField()
    flag_reason = serializers.CharField()
    paused = serializers.SerializerMethodField()
    qualified_at = serializers.DateTimeField(allow_null=True)
    gold_answered = serializers.IntegerField()
    gold_correct = serializers.IntegerField()
    created_at = serializers.DateTimeField()

    def get_paused(self, m: ProjectMembership) -> bool:
        return m.paused


def _membership(membership_id: int) -> ProjectMembership | None:
    return ProjectMembership.objects.select_related("user", "project").filter(pk=membership_id).first()


class MemberListApi(APIView):
    """Researchers: a project's members with their role, flag, pause, qualification and check
    answers."""

    permission_classes = (IsResearcher,)

    @extend_schema(
        summary="List a project's members",
        responses={200: MembershipOutputSerializer(many=True), 404: OpenApiResponse(description="no such project")},
    )
    def get(self, request: Request, project_id: int) -> Response:
        project = Project.objects.filter(pk=project_id).first()
        if project is None:
            return Response({"detail": "no such project"}, status=status.HTTP_404_NOT_FOUND)
        members = ProjectMembership.objects.filter(project=project).select_related("user").order_by("user__username")
        return Response(MembershipOutputSerializer(members, many=True).data)


class MemberAddApi(APIView):
    """Researchers: add an account to a project as ``annotator`` or ``researcher``. No such
    account, or it lacks the role's group: 400 per field; already a member: 409."""

    permission_classes = (IsResearcher,)

    class InputSerializer(serializers.Serializer):
        username = serializers.CharField(max_length=150)
        role = serializers.ChoiceField(choices=MEMBER_ROLES, default="annotator")

    @extend_schema(
        summary="Add a member",
        request=InputSerializer,
        responses={
            201: MembershipOutputSerializer,
            400: OpenApiResponse(description="no such account, or it lacks the role"),
            409: OpenApiResponse(description="already a member"),
        },
    )
    def post(self, request: Request, project_id: int) -> Response:
        project = Project.objects.filter(pk=project_id).first()
        if project is None:
            return Response({"detail": "no such project"}, status=status.HTTP_404_NOT_FOUND)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            m = membership_add(project=project, **data.validated_data)
        except DjangoValidationError as exc:
            return Response(exc.message_dict, status=status.HTTP_400_BAD_REQUEST)
        except MembershipConflict as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(MembershipOutputSerializer(m).data, status=status.HTTP_201_CREATED)


class MemberRemoveApi(APIView):
    """Researchers: remove a member. Their answers stay; the items they hold go back to the pool
    at once, and their later actions on the project answer 403."""

    permission_classes = (IsResearcher,)

    @extend_schema(
        summary="Remove a member",
        request=None,
        responses={204: None, 404: OpenApiResponse(description="no such membership")},
    )
    def post(self, request: Request, membership_id: int) -> Response:
        m = _membership(membership_id)
        if m is None:
            return Response({"detail": "no such membership"}, status=status.HTTP_404_NOT_FOUND)
        membership_remove(membership=m)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MemberPauseApi(APIView):
    """Researchers: stop serving items to an annotator (a flag "paused by …"); the items they
    hold go back to the pool at once."""

    permission_classes = (IsResearcher,)

    @extend_schema(
        summary="Pause a member",
        request=None,
        responses={200: MembershipOutputSerializer, 404: OpenApiResponse(description="no such membership")},
    )
    def post(self, request: Request, membership_id: int) -> Response:
        m = _membership(membership_id)
        if m is None:
            return Response({"detail": "no such membership"}, status=status.HTTP_404_NOT_FOUND)
        return Response(MembershipOutputSerializer(membership_pause(membership=m, by=request.user)).data)


class MemberResumeApi(APIView):
    """Researchers: lift a pause, or clear a quality flag (which starts a fresh qualification
    window)."""

    permission_classes = (IsResearcher,)

    @extend_schema(
        summary="Resume a member",
        request=None,
        responses={200: MembershipOutputSerializer, 404: OpenApiResponse(description="no such membership")},
    )
    def post(self, request: Request, membership_id: int) -> Response:
        m = _membership(membership_id)
        if m is None:
            return Response({"detail": "no such membership"}, status=status.HTTP_404_NOT_FOUND)
        return Response(MembershipOutputSerializer(membership_resume(membership=m)).data)


class TokenOutputSerializer(serializers.Serializer):
    username = serializers.CharField(source="user.username")
    key = serializers.CharField(help_text="send as 'Authorization: Token <key>'")
    created = serializers.DateTimeField()


class TokenCreateApi(APIView):
    """A new token for the caller (any signed-in account); an older one stops working."""

    permission_classes = (IsAuthenticated,)

    @extend_schema(summary="Make an API token", request=None, responses={201: TokenOutputSerializer})
    def post(self, request: Request) -> Response:
        return Response(TokenOutputSerializer(token_create(user=request.user)).data, status=status.HTTP_201_CREATED)


class TokenRevokeApi(APIView):
    """Revoke the caller's token, or (researchers) another account's (``username``)."""

    permission_classes = (IsAuthenticated,)

    class InputSerializer(serializers.Serializer):
        username = serializers.CharField(max_length=150, required=False, allow_blank=True)

    @extend_schema(
        summary="Revoke an API token",
        request=InputSerializer,
        responses={
            204: None,
            400: OpenApiResponse(description="no such account"),
            403: OpenApiResponse(description="only researchers may revoke another account's token"),
            404: OpenApiResponse(description="there was no token"),
        },
    )
    def post(self, request: Request) -> Response:
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        owner: Any = request.user
        if name := data.validated_data.get("username"):
            owner = get_user_model().objects.filter(username=name).first()
            if owner is None:
                return Response({"username": [f"no account named {name!r}"]}, status=status.HTTP_400_BAD_REQUEST)
        try:
            existed = token_revoke(owner=owner, by=request.user)
        except PermissionDenied as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_403_FORBIDDEN)
        if not existed:
            return Response({"detail": "there was no token"}, status=status.HTTP_404_NOT_FOUND)
        return Response(status=status.HTTP_204_NO_CONTENT)
