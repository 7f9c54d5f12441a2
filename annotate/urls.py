from django.urls import path

from annotate import views

urlpatterns: list = [
    path("", views.home, name="annotate-home"),
    path("projects/<int:project_id>/instructions/", views.instructions, name="annotate-instructions"),
    path("projects/<int:project_id>/", views.work, name="annotate-work"),
    # The annotation-quality page; path and name kept from when it was called a dashboard.
    path("projects/<int:project_id>/dashboard/", views.quality, name="annotate-dashboard"),
    path("projects/<int:project_id>/route/", views.route, name="annotate-route"),
    path("projects/<int:project_id>/waiting/", views.waiting, name="annotate-waiting"),
    path("projects/<int:project_id>/check-items/", views.check_items, name="annotate-check-items"),
    path("assignments/<int:assignment_id>/answer/", views.answer, name="annotate-answer"),
    path("assignments/<int:assignment_id>/skip/", views.skip, name="annotate-skip"),
    path("assignments/<int:assignment_id>/undo/", views.undo, name="annotate-undo"),
    path("assignments/<int:assignment_id>/heartbeat/", views.heartbeat, name="annotate-heartbeat"),
]
