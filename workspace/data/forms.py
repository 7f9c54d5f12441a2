"""The data browser's inputs, parsed by forms (issue 20, the house): the filters (the page and
the browse API share them), the pager's cursor and the override form."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django import forms
from django.http import QueryDict

from projects import states
from projects.formats.reading import LABEL_SOURCES
from projects.inputs import InputForm
from projects.models import Label, Project
from workspace.data.selectors import FLIP_CHOICES, GOLD_CHOICES, PAGE_SIZE, SOURCE_CHOICES, CandidateFilters

MAX_PAGE = 200
UNIT_INTERVAL = "a number between 0 and 1"


class _ListField(forms.Field):
    """Every non-empty value sent under the name (``state=a&state=b``)."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value: Any) -> tuple[str, ...]:
        values = [] if value in self.empty_values else (value if isinstance(value, list | tuple) else [value])
        return tuple(str(v) for v in values if v)


def _unit(raw: str) -> float | None:
    if not raw:
        return None
    try:
        value = float(raw)
    except ValueError:
        raise forms.ValidationError(UNIT_INTERVAL) from None
    if not 0 <= value <= 1:
        raise forms.ValidationError(UNIT_INTERVAL)
    return value


class CandidateFiltersForm(InputForm):
    """The browser's filters; ``filters()`` is the parsed ``CandidateFilters`` (valid or not:
    the page shows the errors next to the fields and the filters as typed)."""

    state = _ListField(required=False)
    generator = forms.CharField(required=False, strip=True)
    perturbation = forms.CharField(required=False, strip=True)
    label_source = forms.CharField(required=False, strip=True)
    label = forms.CharField(required=False, strip=True)
    flip = forms.CharField(required=False, strip=True)
    min_confidence = forms.CharField(required=False, strip=True)
    max_confidence = forms.CharField(required=False, strip=True)
    disagreement = forms.CharField(required=False)
    gold = forms.CharField(required=False, strip=True)
    source = forms.CharField(required=False, strip=True)

    def __init__(self, *args: Any, project: Project, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.project = project

    def clean_state(self) -> tuple[str, ...]:
        state: tuple[str, ...] = self.cleaned_data["state"]
        if unknown := sorted(set(state) - set(states.STATES)):
            raise forms.ValidationError(f"unknown state {', '.join(unknown)}; choose from {', '.join(states.STATES)}")
        return state

    def clean_label_source(self) -> str:
        value: str = self.cleaned_data["label_source"]
        if value and value not in [*LABEL_SOURCES, "none"]:
            raise forms.ValidationError(f"choose one of {', '.join(LABEL_SOURCES)}, none")
        return value

    def clean_label(self) -> str:
        value: str = self.cleaned_data["label"]
        if value and not Label.objects.filter(project=self.project, name=value).exists():
            raise forms.ValidationError(f"{value!r} is not one of this project's labels")
        return value

    def clean_flip(self) -> str:
        if self.cleaned_data["flip"] not in FLIP_CHOICES:
            raise forms.ValidationError("choose flip or keep")
        return str(self.cleaned_data["flip"])

    def clean_gold(self) -> str:
        if self.cleaned_data["gold"] not in GOLD_CHOICES:
            raise forms.ValidationError("choose yes or no")
        return str(self.cleaned_data["gold"])

    def clean_source(self) -> str:
        if self.cleaned_data["source"] not in SOURCE_CHOICES:
            raise forms.ValidationError("choose human-written or generated")
        return str(self.cleaned_data["source"])

    def clean_min_confidence(self) -> float | None:
        return _unit(self.cleaned_data["min_confidence"])

    def clean_max_confidence(self) -> float | None:
        return _unit(self.cleaned_data["max_confidence"])

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        lo, hi = data.get("min_confidence"), data.get("max_confidence")
        if lo is not None and hi is not None and lo > hi:
            self.add_error("max_confidence", "must not be below the minimum")
        return data

    def filters(self) -> CandidateFilters:
        """The filters (a field in error keeps its value as typed where it is text, else none)."""
        raw, data = self.data, getattr(self, "cleaned_data", {})

        def text(name: str) -> str:
            return str(data.get(name, str(raw.get(name, "")).strip()))

        state = data["state"] if "state" in data else tuple(s for s in (self["state"].value() or []) if s)
        return CandidateFilters(
            state=state,
            generator=text("generator")[:64],
            perturbation=text("perturbation")[:32],
            label_source=text("label_source"),
            label=text("label"),
            flip=text("flip"),
            min_confidence=data.get("min_confidence"),
            max_confidence=data.get("max_confidence"),
            disagreement=raw.get("disagreement", "") in ("1", "true", "on"),
            gold=text("gold"),
            source=text("source"),
        )


class PageQuery(InputForm):
    """The pager's cursor (``after`` / ``before``: a candidate id) and, in the API, ``limit``.
    The API answers an error with 400; the page ignores a cursor that is not an id (the
    first page) and has no ``limit``."""

    after = forms.CharField(required=False, strip=True)
    before = forms.CharField(required=False, strip=True)
    limit = forms.CharField(required=False, strip=True)

    def _cursor(self, name: str) -> int | None:
        raw: str = self.cleaned_data[name]
        if raw and not raw.isdigit():
            raise forms.ValidationError("a candidate id")
        return int(raw) if raw else None

    def clean_after(self) -> int | None:
        return self._cursor("after")

    def clean_before(self) -> int | None:
        return self._cursor("before")

    def clean_limit(self) -> int:
        raw: str = self.data.get("limit", str(PAGE_SIZE))
        if not raw.isdigit() or not 1 <= int(raw) <= MAX_PAGE:
            raise forms.ValidationError(f"a whole number from 1 to {MAX_PAGE}")
        return int(raw)


class OverrideForm(InputForm):
    """The pair page's relabel form: ``label`` (required) and an optional ``note``."""

    label = forms.CharField(required=False, strip=True)
    note = forms.CharField(required=False, strip=False)

    def clean_label(self) -> str:
        if not self.cleaned_data["label"]:
            raise forms.ValidationError("choose a label")
        return str(self.cleaned_data["label"])


class AddressQuery:
    """A search's query string as the address to keep: the same fields and values in the same
    order, without the empty ones (the filter form sends every field, so a search read
    ``?state=&generator=&perturbation=negation&label=&…``). ``had_empty``: some were dropped."""

    def __init__(self, query: QueryDict) -> None:
        given = [(k, v) for k in query for v in query.getlist(k)]
        self.kept = [(k, v) for k, v in given if v != ""]
        self.had_empty = len(self.kept) != len(given)

    def url(self, path: str) -> str:
        return path + (f"?{urlencode(self.kept)}" if self.kept else "")
