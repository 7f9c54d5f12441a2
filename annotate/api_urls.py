from django.urls import path

from annotate import apis

urlpatterns: list = [
    path("projects/<int:project_id>/next-item/", apis.ItemNextApi.as_view(), name="api-next-item"),
    path("projects/<int:project_id>/quality/", apis.ProjectQualityApi.as_view(), name="api-project-quality"),
    path("projects/<int:project_id>/route/", apis.ProjectRouteApi.as_view(), name="api-project-route"),
    path("assignments/<int:assignment_id>/annotation/", apis.AnnotationSubmitApi.as_view(), name="api-annotation"),
    path("assignments/<int:assignment_id>/skip/", apis.AssignmentSkipApi.as_view(), name="api-skip"),
    path("assignments/<int:assignment_id>/undo/", apis.AnnotationUndoApi.as_view(), name="api-undo"),
    path("assignments/<int:assignment_id>/heartbeat/", apis.AssignmentHeartbeatApi.as_view(), name="api-heartbeat"),
]
