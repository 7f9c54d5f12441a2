"""The inputs of the annotator's pages and the routing page, parsed by forms (issue 20, the
house): same field names and defaults as the pages send."""

from __future__ import annotations

from typing import Any

from django import forms

from annotate.services.routing import STRATEGIES
from projects.inputs import IdField, InputForm, StorableCharField
from projects.validators import validate_budget

MAX_DURATION_MS = 24 * 3600 * 1000


class ItemHistoryQuery(InputForm):
    """``?a=<assignment id>``: an item the annotator came back to (Back / Forward)."""

    a = IdField(required=False)


class AnswerForm(InputForm):
    """An answer: the ``choice`` as pressed (the item kind checks it was offered) and the
    active time on the item, ``duration_ms`` (optional). A value that is not a whole number is
    refused (400), as the API refuses it; a number is clamped to 0 … 24 h, as a stopwatch
    glitch on the page must not lose the answer."""

    choice = StorableCharField()
    duration_ms = forms.CharField(required=False, strip=True)

    def clean_duration_ms(self) -> int | None:
        raw = self.cleaned_data.get("duration_ms") or ""
        if not raw:
            return None
        try:
            return max(0, min(int(raw), MAX_DURATION_MS))
        except ValueError:
            raise forms.ValidationError("duration_ms: a whole number of milliseconds, or leave it out") from None


class SkipForm(InputForm):
    reason = StorableCharField()


class RouteForm(InputForm):
    """The routing form: ``budget`` (blank: the project's human budget) and ``strategy``."""

    budget = forms.CharField(required=False, strip=True)
    strategy = forms.CharField(required=False)

    def clean_budget(self) -> float | None:
        raw = self.cleaned_data.get("budget") or ""
        return validate_budget(raw) if raw else None

    def clean_strategy(self) -> str:
        strategy = self.data.get("strategy", "random")  # absent: random; sent empty: an error
        if strategy not in STRATEGIES:
            raise forms.ValidationError(f"choose one of {', '.join(STRATEGIES)}")
        return str(strategy)

    def shown(self) -> dict[str, Any]:
        """The values to show back in the form: as they were typed."""
        return {"budget": str(self.data.get("budget", "")).strip(), "strategy": self.data.get("strategy", "random")}


__all__ = ["AnswerForm", "ItemHistoryQuery", "RouteForm", "SkipForm"]
