"""The members page; mounted under ``annotate/`` by ``config/urls.py`` (its path and name are
those it had in ``annotate/urls.py``: bookmarks and links keep working)."""

from django.urls import path

from workspace.members import views

urlpatterns: list = [
    path("projects/<int:project_id>/members/", views.members, name="annotate-members"),
]
