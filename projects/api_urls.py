"""Kernel API routes; mounted under ``api/v1/`` by ``config/urls.py``."""

from django.urls import path

from projects import apis

urlpatterns: list = [
    path("jobs/", apis.JobListApi.as_view(), name="api-job-list"),
    path("jobs/<int:job_id>/", apis.JobDetailApi.as_view(), name="api-job-detail"),
    path("jobs/<int:job_id>/cancel/", apis.JobCancelApi.as_view(), name="api-job-cancel"),
]
