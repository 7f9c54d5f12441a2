"""Celery tasks: take ids, load, call one service (queue ``ml``, see CELERY_TASK_ROUTES)."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.contrib.auth import get_user_model

from generation.models import Project
from labeling import services


@shared_task(name="labeling.tasks.pairwise_train_task")
def pairwise_train_task(project_id: int, mode: str = "capc", warm_start: str = "", user_id: int | None = None,
                        threshold: float | None = None) -> dict[str, Any]:
    project = Project.objects.get(pk=project_id)
    user = get_user_model().objects.filter(pk=user_id).first() if user_id else None
    model = services.pairwise_train(project=project, mode=mode, warm_start=warm_start, threshold=threshold,
                                    created_by=user)
    return {"model": model.pk, "version": model.version, "cv_accuracy": model.cv_accuracy}


@shared_task(name="labeling.tasks.autolabel_task")
def autolabel_task(project_id: int, min_confidence: float | None = None) -> dict[str, Any]:
    project = Project.objects.get(pk=project_id)
    run = services.autolabel(project=project, min_confidence=min_confidence)
    return {"run": run.pk, "auto_labeled": run.auto_labeled, "abstained": run.abstained}
