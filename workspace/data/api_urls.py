"""The data browser's API routes; mounted under ``api/v1/`` by ``config/urls.py``."""

from django.urls import path

from workspace.data import apis

urlpatterns: list = [
    path("projects/<int:project_id>/candidates/", apis.CandidateListApi.as_view(), name="api-candidate-list"),
    path("candidates/<int:candidate_id>/", apis.CandidateDetailApi.as_view(), name="api-candidate-detail"),
    path(
        "candidates/<int:candidate_id>/override/",
        apis.CandidateOverrideApi.as_view(),
        name="api-candidate-override",
    ),
]
