"""Checks shared by a form, a serializer, a command and a service, so that each rule is written
once (issue 20, the house)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

BUDGET_ERROR = "the budget must be a number between 0 and 1"


def validate_budget(value: Any) -> float:
    """A human budget (the share of a project's candidates sent to humans) as a float in
    [0, 1]; ValidationError otherwise. Behind the project form and API (``human_budget``), the
    route form and API, ``manage.py route --budget`` and the services ``project_create``,
    ``project_route_start`` and ``project_route``."""
    try:
        budget = float(value)
    except (TypeError, ValueError):
        raise ValidationError(BUDGET_ERROR, code="budget") from None
    if not 0 <= budget <= 1:  # NaN fails this too
        raise ValidationError(BUDGET_ERROR, code="budget")
    return budget


def budget_validator(value: float) -> None:
    """``validate_budget`` as a field validator (forms and serializers)."""
    validate_budget(value)
