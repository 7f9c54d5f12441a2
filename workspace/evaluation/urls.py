"""The evaluation section's URLs: same paths and names as when it lived in labeling/ (mounted
under ``labeling/`` in config/urls.py)."""

from django.urls import path

from workspace.evaluation import views

urlpatterns: list = [
    path("projects/<int:pk>/evaluation/", views.evaluation, name="labeling-evaluation"),
    path("projects/<int:pk>/evaluate/", views.evaluation_start, name="labeling-evaluate"),
]
