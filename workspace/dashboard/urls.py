"""Mounted at the site root (``config/urls.py``): the dashboard sits beside the project page."""

from django.urls import path

from workspace.dashboard import views as views_dashboard

urlpatterns: list = [
    path("projects/<int:project_id>/dashboard/", views_dashboard.dashboard, name="project-dashboard"),
    path("projects/<int:project_id>/warnings/", views_dashboard.warnings, name="project-warnings"),
]
