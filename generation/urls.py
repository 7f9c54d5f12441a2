from django.urls import include, path

from generation import views

urlpatterns: list = [
    path("projects/<int:project_id>/runs/", views.run_list, name="run-list"),
    path("projects/<int:project_id>/runs/new/", views.run_new, name="run-new"),
    path("runs/<int:pk>/", views.run_detail, name="run-detail"),
    path("runs/<int:pk>/cancel/", views.run_cancel_view, name="run-cancel"),
    path("api/v1/generation/", include("generation.api_urls")),
]
