"""Creating projects and their label sets."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from projects.models import TASK_DEFAULTS, TASKS, Label, Project
from projects.validators import validate_budget, validate_labels


@transaction.atomic
def project_create(
    *,
    name: str,
    task: str,
    labels: list[str] | None = None,
    text_fields: list[str] | None = None,
    human_budget: float | None = None,
    annotators_per_item: int | None = None,
    created_by: Any = None,
    description: str = "",
) -> Project:
    """Create a project and its ordered label set. Budget and overlap default to
    ``COUNTERPART_DEFAULT_BUDGET`` (0.10) and ``COUNTERPART_DEFAULT_ANNOTATORS_PER_ITEM`` (3)."""
    cfg = settings.COUNTERPART
    human_budget = cfg["DEFAULT_HUMAN_BUDGET"] if human_budget is None else human_budget
    annotators_per_item = cfg["DEFAULT_ANNOTATORS_PER_ITEM"] if annotators_per_item is None else annotators_per_item
    if annotators_per_item < 1:
        raise ValidationError("annotators per item must be at least 1")
    if task not in TASKS:
        raise ValidationError(f"unknown task {task!r}; choose one of {', '.join(TASKS)}")
    labels = list(labels or TASK_DEFAULTS[task]["labels"])
    text_fields = list(text_fields or TASK_DEFAULTS[task]["fields"])
    labels = validate_labels(labels)
    # Checked here, before the database (PostgreSQL would refuse an over-long value with an error).
    label_max = Label._meta.get_field("name").max_length or 64
    if too_long := [n for n in [*labels, *text_fields] if len(n) > label_max]:
        raise ValidationError(f"label and field names are at most {label_max} characters ({len(too_long[0])} given)")
    name_max = Project._meta.get_field("name").max_length or 200
    if len(name) > name_max:
        raise ValidationError(f"the name is at most {name_max} characters")
    human_budget = validate_budget(human_budget)
    project = Project.objects.create(
        name=name,
        task=task,
        text_fields=text_fields,
        human_budget=human_budget,
        annotators_per_item=annotators_per_item,
        created_by=created_by,
        description=description,
    )
    Label.objects.bulk_create([Label(project=project, name=n, position=i) for i, n in enumerate(labels)])
    return project


def project_get_or_create(*, name: str, task: str, **kwargs: Any) -> tuple[Project, bool]:
    """Return the project called ``name``; create it if missing. A task mismatch is an error."""
    existing = Project.objects.filter(name=name).first()
    if existing is not None:
        if existing.task != task:
            raise ValidationError(f"project {name!r} exists with task {existing.task!r}, not {task!r}")
        return existing, False
    return project_create(name=name, task=task, **kwargs), True
