"""REST API of the data browser: browse a project's candidates (the page's filters, keyset
pages by id), read one pair with its annotations, and override its label (researchers)."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import OpenApiParameter, OpenApiResponse, extend_schema
from rest_framework import serializers, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from projects.formats.reading import LABEL_SOURCES
from projects.models import Candidate, Project
from projects.permissions import IsResearcher
from projects.services.candidates import OverrideRefused, OverrideUnchanged, candidate_override
from projects.states import STATES
from workspace.data.forms import MAX_PAGE, CandidateFiltersForm, PageQuery
from workspace.data.selectors import candidates_browse, pair_view


class CandidateRowSerializer(serializers.Serializer):
    id = serializers.IntegerField(help_text="the candidate's database id (/api/v1/candidates/{id}/)")
    external_id = serializers.CharField(help_text="the stable id, as in imports and exports: 1:snli-dev-12:11")
    title = serializers.CharField(help_text="readable: the original's id and the candidate's label")
    candidate_label = serializers.CharField(help_text="'cand. 11 (rules/negation)', 'rh1', or '' (see title)")
    run = serializers.IntegerField(allow_null=True, help_text="the generation run of a generated candidate")
    original_id = serializers.CharField()
    state = serializers.CharField()
    generator = serializers.CharField()
    perturbation = serializers.CharField()
    label = serializers.CharField(allow_null=True)  # type: ignore[assignment]  # a field named label; the stubs see Field.label
    label_source = serializers.CharField()
    confidence = serializers.FloatField(allow_null=True)
    gold_label = serializers.CharField(allow_null=True)
    original_label = serializers.CharField(allow_null=True)
    flip = serializers.BooleanField(allow_null=True, help_text="label differs from the original's label")
    text = serializers.CharField(help_text="the counterfactual's first text field, cut at 160 characters")
    images = serializers.DictField(
        allow_null=True,
        help_text=(
            "image–caption projects: {original, counterfactual}, each {url, missing, caption}; url is '' "
            "and missing says why when there is no image to load; null for text projects"
        ),
    )
    edits = serializers.ListField(
        child=serializers.DictField(),
        help_text=(
            "every text field as the edit reads: {name, changed, segments: [{op: equal|del|ins, text}]}, "
            "clipped around the first change"
        ),
    )


class TotalSerializer(serializers.Serializer):
    value = serializers.IntegerField()
    kind = serializers.ChoiceField(
        choices=["exact", "estimate", "at_least"],
        help_text="exact; estimate (PostgreSQL's planner, over 10,000 rows); at_least (counted up to 10,000)",
    )
    text = serializers.CharField(help_text="as the page shows it: '1,234', 'about 1,000,000', '10,000+'")


class CandidatePageSerializer(serializers.Serializer):
    total = TotalSerializer(help_text="how many candidates match the filters")
    results = CandidateRowSerializer(many=True)
    next_after = serializers.IntegerField(allow_null=True, help_text="pass as ?after= for the next page")
    prev_before = serializers.IntegerField(allow_null=True, help_text="pass as ?before= for the previous page")


class CandidateListApi(APIView):
    """Researchers: a page of a project's candidates with the data browser's filters, in id
    order (keyset pages: ``after`` / ``before`` a candidate id), with the total that match
    (exact up to 10,000; above, PostgreSQL's planner estimate, or "10,000+" on SQLite) and a
    readable title per row beside its stable id. Bad filters: 400 per field."""

    permission_classes = (IsResearcher,)

    @extend_schema(
        summary="Browse a project's candidates",
        parameters=[
            OpenApiParameter("state", str, many=True, enum=STATES),
            OpenApiParameter("generator", str),
            OpenApiParameter("perturbation", str),
            OpenApiParameter("label_source", str, enum=[*LABEL_SOURCES, "none"]),
            OpenApiParameter("label", str),
            OpenApiParameter("flip", str, enum=["flip", "keep"]),
            OpenApiParameter("min_confidence", float),
            OpenApiParameter("max_confidence", float),
            OpenApiParameter("disagreement", bool, description="only pairs whose annotators disagree"),
            OpenApiParameter("gold", str, enum=["yes", "no"]),
            OpenApiParameter("source", str, enum=["human-written", "generated"]),
            OpenApiParameter("after", int, description="candidate id: the page after it"),
            OpenApiParameter("before", int, description="candidate id: the page before it"),
            OpenApiParameter("limit", int, description=f"page size, 1 to {MAX_PAGE} (default 50)"),
        ],
        responses={200: CandidatePageSerializer, 400: OpenApiResponse(description="field errors")},
    )
    def get(self, request: Request, project_id: int) -> Response:
        project = Project.objects.filter(pk=project_id).first()
        if project is None:
            return Response({"detail": "no such project"}, status=status.HTTP_404_NOT_FOUND)
        form = CandidateFiltersForm.parse(request.query_params, project=project)
        query = PageQuery.parse(request.query_params)
        errors = {**form.errors, **query.errors}
        if errors:
            return Response(errors, status=status.HTTP_400_BAD_REQUEST)
        page = candidates_browse(
            project=project,
            filters=form.filters(),
            size=query.cleaned_data["limit"],
            **{k: query.cleaned_data[k] for k in ("after", "before")},
        )
        out = {
            "total": page.total.as_dict() if page.total is not None else None,
            "results": page.rows,
            "next_after": page.last_id if page.has_next else None,
            "prev_before": page.first_id if page.has_prev else None,
        }
        return Response(CandidatePageSerializer(out).data)


class PairOutputSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    external_id = serializers.CharField()
    state = serializers.CharField()
    original = serializers.JSONField()
    counterfactual = serializers.JSONField()
    label = serializers.CharField(allow_null=True)  # type: ignore[assignment]  # a field named label; the stubs see Field.label
    label_source = serializers.CharField()
    confidence = serializers.FloatField(allow_null=True)
    h_confidence = serializers.FloatField(allow_null=True)
    h_version = serializers.IntegerField(allow_null=True)
    annotations = serializers.ListField(child=serializers.JSONField())
    overrides = serializers.ListField(child=serializers.JSONField())
    images = serializers.JSONField(allow_null=True, help_text="image–caption projects: as in the browse rows")


def _pair(candidate: Candidate) -> dict[str, Any]:
    v = pair_view(candidate=candidate)
    return {
        "id": candidate.pk,
        "external_id": candidate.external_id,
        "state": candidate.state,
        "original": {
            "id": candidate.example.external_id,
            "fields": candidate.example.fields,
            "label": v.original_label,
        },
        "counterfactual": {
            "fields": candidate.fields,
            "generator": candidate.generator,
            "perturbation": candidate.perturbation,
        },
        "label": candidate.label.name if candidate.label is not None else None,
        "label_source": candidate.label_source,
        "confidence": candidate.confidence,
        "h_confidence": v.h_confidence,
        "h_version": v.h_version,
        "images": v.images,
        "annotations": [{**a, "created_at": a["created_at"].isoformat()} for a in v.annotations],
        "overrides": [
            {
                "label": o.label.name if o.label is not None else None,
                "previous_label": o.previous_label.name if o.previous_label is not None else None,
                "previous_source": o.previous_source,
                "previous_state": o.previous_state,
                "note": o.note,
                "by": o.created_by.username if o.created_by is not None else None,
                "at": o.created_at.isoformat(),
            }
            for o in v.overrides
        ],
    }


def _candidate(candidate_id: int) -> Candidate | None:
    return (
        Candidate.objects.select_related("project", "example", "example__label", "label")
        .filter(pk=candidate_id)
        .first()
    )


class CandidateDetailApi(APIView):
    """Researchers: one pair — original and counterfactual fields, label, source, confidence,
    h's confidence and version, the annotations and the label overrides."""

    permission_classes = (IsResearcher,)

    @extend_schema(
        summary="One candidate pair",
        responses={200: PairOutputSerializer, 404: OpenApiResponse(description="no such candidate")},
    )
    def get(self, request: Request, candidate_id: int) -> Response:
        c = _candidate(candidate_id)
        if c is None:
            return Response({"detail": "no such candidate"}, status=status.HTTP_404_NOT_FOUND)
        return Response(PairOutputSerializer(_pair(c)).data)


class CandidateOverrideApi(APIView):
    """Relabel a pair: it becomes ``human_labeled`` with ``label_source`` ``human``; the
    override is recorded with who and when. The human label the pair already has changes
    nothing and records nothing (200 with the pair as it is)."""

    permission_classes = (IsResearcher,)

    class InputSerializer(serializers.Serializer):
        label = serializers.CharField(max_length=64)  # type: ignore[assignment]  # a field named label; the stubs see Field.label
        note = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")

    @extend_schema(
        summary="Override a candidate's label",
        request=InputSerializer,
        responses={
            200: PairOutputSerializer,
            400: OpenApiResponse(description="not one of the project's labels"),
            404: OpenApiResponse(description="no such candidate"),
            409: OpenApiResponse(description="the candidate is not part of the data set (filtered out)"),
        },
    )
    def post(self, request: Request, candidate_id: int) -> Response:
        c = _candidate(candidate_id)
        if c is None:
            return Response({"detail": "no such candidate"}, status=status.HTTP_404_NOT_FOUND)
        data = self.InputSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        try:
            candidate_override(candidate=c, by=request.user, **data.validated_data)
        except OverrideRefused as exc:
            code = status.HTTP_409_CONFLICT if "not in the data set" in str(exc) else status.HTTP_400_BAD_REQUEST
            body: dict[str, Any] = {"detail": str(exc)} if code == status.HTTP_409_CONFLICT else {"label": [str(exc)]}
            return Response(body, status=code)
        except OverrideUnchanged:
            pass  # the pair already has that human label: nothing recorded, the pair as it is
        return Response(PairOutputSerializer(_pair(_candidate(candidate_id))).data)  # type: ignore[arg-type]
