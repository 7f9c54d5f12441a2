from django.urls import path

from labeling import views

urlpatterns: list = [
    path("projects/<int:pk>/flip-rates/", views.flip_rates, name="labeling-flip-rates"),
    path("projects/<int:pk>/train/", views.pairwise_train_start, name="labeling-train"),
    path("projects/<int:pk>/autolabel/", views.autolabel_start, name="labeling-autolabel"),
    path("projects/<int:pk>/task-model/", views.task_model_section, name="labeling-task-model"),
    path("projects/<int:pk>/task-model/train/", views.task_model_start, name="labeling-task-model-train"),
    path("projects/<int:pk>/task-model/probe/", views.task_model_probe_start, name="labeling-task-model-probe"),
    path("projects/<int:pk>/task-model/cancel/", views.task_model_cancel, name="labeling-task-model-cancel"),
]
