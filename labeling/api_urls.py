"""Labelling API routes; mounted under ``api/v1/`` by ``config/urls.py``."""

from django.urls import path

from labeling import apis

urlpatterns: list = [
    path("projects/<int:project_id>/evaluate/", apis.ProjectEvaluateApi.as_view(), name="api-project-evaluate"),
]
