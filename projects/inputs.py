"""Checking the values of plain (non-DRF) forms and query strings before they reach the
database: a value that is not a whole number where an id is expected, or text with a NUL
character (PostgreSQL cannot store or even compare it), is a form error that the view answers
with a 400 and the message — never a 500. The form fields below (``IdField``,
``IdListField``, ``StorableCharField``) and ``InputForm`` are what the pages' forms are built
from."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import forms
from django.core.exceptions import ValidationError

# PostgreSQL's integer primary keys; a larger id cannot exist.
MAX_ID = 2**63 - 1


class BadInput(ValueError):
    """A form or query value that cannot be used; ``str()`` is the message for the user."""


def form_id(value: str | None, name: str) -> int:
    """``value`` as a positive whole number (an object id); raises :class:`BadInput`."""
    text = (value or "").strip()
    if not text.isascii() or not text.isdigit() or not 0 < int(text) <= MAX_ID:
        raise BadInput(f"{name} must be a whole number (an id), not {_shown(value)}")
    return int(text)


def form_ids(values: Iterable[str], name: str) -> list[int]:
    return [form_id(v, name) for v in values]


def unstorable(text: str) -> str | None:
    """What makes ``text`` unstorable — ``"a NUL character"`` or ``"a lone surrogate"`` — or
    ``None``. PostgreSQL refuses both in ``text``, ``varchar`` and ``jsonb`` (even in a
    comparison), and a lone surrogate cannot be encoded as UTF-8 to answer it back."""
    if "\x00" in text:
        return "a NUL character"
    if not text.isascii():
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:  # UTF-8 encodes every code point but the surrogates
            return "a lone surrogate (not valid Unicode)"
    return None


def _shown(value: str | None) -> str:
    text = repr(value or "")
    return text if len(text) <= 40 else text[:37] + "…'"


# --- form fields and forms: every view parses its input through one (issue 20, the house) ----


class IdField(forms.Field):
    """A positive whole number (an object id). The error names the field: "``<label>`` must be a
    whole number (an id), not '…'", also for a required field left empty."""

    def to_python(self, value: Any) -> int | None:
        if value in self.empty_values and not self.required:
            return None
        try:
            return form_id(None if value is None else str(value), str(self.label or "id"))
        except BadInput as exc:
            raise ValidationError(str(exc), code="invalid") from exc


class IdListField(forms.Field):
    """Several ids under one name (``user=1&user=2``); each one as :class:`IdField` checks it."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value: Any) -> list[int]:
        values = [] if value in self.empty_values else list(value if isinstance(value, list | tuple) else [value])
        try:
            return form_ids([str(v) for v in values], str(self.label or "id"))
        except BadInput as exc:
            raise ValidationError(str(exc), code="invalid") from exc


class StorableCharField(forms.CharField):
    """Text the database can store (no NUL, no lone surrogate); not stripped unless asked, and
    ``""`` when absent. The error names the field: "``<label>`` contains a NUL character"."""

    def __init__(self, *, strip: bool = False, required: bool = False, **kwargs: Any) -> None:
        super().__init__(strip=strip, required=required, **kwargs)

    def to_python(self, value: Any) -> str:
        text = super().to_python(value) or ""
        problem = unstorable(text)
        if problem is not None:
            raise ValidationError(f"{self.label or 'text'} contains {problem}", code="unstorable")
        return str(text)


class InputForm(forms.Form):
    """A form that parses a view's input (POST or query string). ``error_text()`` is its errors
    as one line, for the views that answer a bad request with a plain-text 400. A field
    without a label is labelled by its name, so that messages name the field as it is sent."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, field in self.fields.items():
            if field.label is None:
                field.label = name

    def field_errors(self) -> dict[str, str]:
        """Each field's errors as one message, by field name (``__all__`` as ``general``)."""
        return {
            ("general" if name == "__all__" else name): " ".join(str(m) for m in errors)
            for name, errors in self.errors.items()
        }

    def error_text(self) -> str:
        return " ".join(str(m) for errors in self.errors.values() for m in errors)

    @classmethod
    def parse(cls, data: Any, files: Any = None, **kwargs: Any) -> Any:
        """The form bound to ``data`` (and ``files``), validated (``is_valid()`` already called)."""
        form = cls(data, files, **kwargs)
        form.is_valid()
        return form
