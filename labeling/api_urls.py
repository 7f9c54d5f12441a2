"""Labelling API routes; mounted under ``api/v1/`` by ``config/urls.py``."""

from django.urls import path

from labeling import apis

urlpatterns: list = [
    path("projects/<int:project_id>/evaluate/", apis.ProjectEvaluateApi.as_view(), name="api-project-evaluate"),
    path("projects/<int:project_id>/train/", apis.PairwiseTrainApi.as_view(), name="api-project-train"),
    path("projects/<int:project_id>/autolabel/", apis.AutolabelApi.as_view(), name="api-project-autolabel"),
    path("projects/<int:project_id>/task-model/", apis.TaskModelApi.as_view(), name="api-project-task-model"),
    path(
        "projects/<int:project_id>/task-model/probe/",
        apis.TaskModelProbeApi.as_view(),
        name="api-project-task-model-probe",
    ),
]
