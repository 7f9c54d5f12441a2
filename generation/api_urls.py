"""Generation API routes; mounted by ``generation/urls.py`` under ``api/v1/generation/``."""

from django.urls import path

from generation import apis

urlpatterns = [
    path("generators/", apis.GeneratorListApi.as_view(), name="api-generators"),
    path("projects/<int:project_id>/runs/", apis.RunListApi.as_view(), name="api-run-list"),
    path("runs/<int:run_id>/", apis.RunDetailApi.as_view(), name="api-run-detail"),
    path("runs/<int:run_id>/cancel/", apis.RunCancelApi.as_view(), name="api-run-cancel"),
]
