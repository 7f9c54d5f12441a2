"""The project's overview and its own pages (mounted at the site root by ``config/urls.py``)."""

from django.urls import path

from workspace.overview import views

urlpatterns: list = [
    path("projects/<int:pk>/", views.overview, name="project-detail"),
    path("projects/<int:pk>/data/", views.data_page, name="project-data"),
    path("projects/<int:pk>/models/", views.models_page, name="project-models"),
    path("projects/<int:pk>/evaluation/", views.evaluation_page, name="project-evaluation"),
    path("projects/<int:pk>/route-remedy/", views.route_remedy, name="project-route-remedy"),
]
