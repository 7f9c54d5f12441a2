"""Kernel API routes; mounted under ``api/v1/`` by ``config/urls.py``."""

from django.urls import path

from projects import apis, apis_data, apis_members

urlpatterns: list = [
    path("projects/", apis.ProjectListCreateApi.as_view(), name="api-projects"),
    path("jobs/", apis.JobListApi.as_view(), name="api-job-list"),
    path("jobs/<int:job_id>/", apis.JobDetailApi.as_view(), name="api-job-detail"),
    path("jobs/<int:job_id>/cancel/", apis.JobCancelApi.as_view(), name="api-job-cancel"),
    path("projects/<int:project_id>/import/", apis_data.DataImportApi.as_view(), name="api-data-import"),
    path("projects/<int:project_id>/export/", apis_data.DataExportApi.as_view(), name="api-data-export"),
    path("exports/<int:job_id>/download/", apis_data.ExportDownloadApi.as_view(), name="api-export-download"),
    path("projects/<int:project_id>/members/", apis_members.MemberListApi.as_view(), name="api-member-list"),
    path("projects/<int:project_id>/members/add/", apis_members.MemberAddApi.as_view(), name="api-member-add"),
    path("memberships/<int:membership_id>/remove/", apis_members.MemberRemoveApi.as_view(), name="api-member-remove"),
    path("memberships/<int:membership_id>/pause/", apis_members.MemberPauseApi.as_view(), name="api-member-pause"),
    path("memberships/<int:membership_id>/resume/", apis_members.MemberResumeApi.as_view(), name="api-member-resume"),
    path("tokens/", apis_members.TokenCreateApi.as_view(), name="api-token-create"),
    path("tokens/revoke/", apis_members.TokenRevokeApi.as_view(), name="api-token-revoke"),
]
