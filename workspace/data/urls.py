"""The data browser's pages (mounted at the site root by ``config/urls.py``)."""

from django.urls import path

from workspace.data import views as data_views

urlpatterns: list = [
    path("projects/<int:pk>/candidates/", data_views.candidate_list, name="candidate-list"),
    path("candidates/<int:pk>/", data_views.candidate_detail, name="candidate-detail"),
    path("candidates/<int:pk>/override/", data_views.candidate_override_view, name="candidate-override"),
]
