"""Checks shared by a form, a serializer, a command and a service, so that each rule is written
once (issue 20, the house)."""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError

BUDGET_ERROR = "the budget must be a number between 0 and 1"
GOLD_RATE_ERROR = "the gold rate must be a number between 0 and 1 (check items per routed item)"

# The answer every item kind offers besides the project's labels ("Unclear / invalid",
# ``annotate.kinds.UNCLEAR`` is this name): no label may be called so, in any case.
UNCLEAR_CHOICE = "unclear"
RESERVED_CHOICES = frozenset({UNCLEAR_CHOICE})


def _share(value: Any, error: str, code: str) -> float:
    """``value`` as a float in [0, 1]; ValidationError(``error``) otherwise (NaN included)."""
    try:
        share = float(value)
    except (TypeError, ValueError):
        raise ValidationError(error, code=code) from None
    if not 0 <= share <= 1:  # NaN fails this too
        raise ValidationError(error, code=code)
    return share


def validate_budget(value: Any) -> float:
    """A human budget (the share of a project's candidates sent to humans) as a float in
    [0, 1]; ValidationError otherwise. Behind the project form and API (``human_budget``), the
    route form and API, ``manage.py route --budget`` and the services ``project_create``,
    ``project_route_start`` and ``project_route``."""
    return _share(value, BUDGET_ERROR, "budget")


def validate_gold_rate(value: Any) -> float:
    """A gold rate (check items per routed item) as a float in [0, 1]; ValidationError
    otherwise. Behind ``manage.py route --gold-rate`` and ``project_route`` (which also checks
    ``COUNTERPART_GOLD_RATE`` so)."""
    return _share(value, GOLD_RATE_ERROR, "gold_rate")


def budget_validator(value: float) -> None:
    """``validate_budget`` as a field validator (forms and serializers)."""
    validate_budget(value)


def validate_labels(labels: list[str]) -> list[str]:
    """A project's label set: at least two, no repeats, no reserved choice name (``unclear``, in
    any case and after trimming: it would be offered twice and break agreement and quality
    figures); ``ValidationError`` naming the ``labels`` field otherwise. Behind ``project_create``,
    so the project form, the API and ``import_data --labels`` all refuse the same."""
    if len(set(labels)) != len(labels) or not labels:
        raise ValidationError({"labels": ["labels must be a non-empty list without repeats"]})
    if len(labels) < 2:  # one label: nothing can flip, and every answer is that label or Unclear
        raise ValidationError({"labels": [f"a project needs at least two labels (got only {labels[0][:64]!r})"]})
    if reserved := [n for n in labels if n.strip().casefold() in RESERVED_CHOICES]:
        raise ValidationError(
            {
                "labels": [
                    f"{reserved[0]!r} is reserved for the answer “Unclear / invalid” that every item offers; "
                    "name the label differently"
                ]
            }
        )
    return labels
