from django.urls import include, path

from generation import views

urlpatterns: list = [
    path("", views.home, name="home"),
    path("projects/", views.project_list, name="project-list"),
    path("projects/<int:pk>/", views.project_detail, name="project-detail"),
    path("projects/<int:pk>/export/", views.project_export, name="project-export"),
    path("projects/<int:pk>/import/", views.project_import, name="project-import"),
    path("projects/<int:project_id>/runs/", views.run_list, name="run-list"),
    path("projects/<int:project_id>/runs/new/", views.run_new, name="run-new"),
    path("runs/<int:pk>/", views.run_detail, name="run-detail"),
    path("runs/<int:pk>/cancel/", views.run_cancel_view, name="run-cancel"),
    path("api/v1/generation/", include("generation.api_urls")),
]
