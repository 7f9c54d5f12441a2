"""Checking the values of plain (non-DRF) forms and query strings before they reach the
database: a value that is not a whole number where an id is expected, or text with a NUL
character (PostgreSQL cannot store or even compare it), is a :class:`BadInput` that the view
answers with a 400 and the message — never a 500."""

from __future__ import annotations

from collections.abc import Iterable

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


def form_text(value: str | None, name: str) -> str:
    """``value`` (``""`` when absent) when the database can store it; raises :class:`BadInput`."""
    text = value or ""
    if "\x00" in text:
        raise BadInput(f"{name} contains a NUL character")
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        raise BadInput(f"{name} is not valid Unicode") from None
    return text


def form_texts(values: Iterable[str], name: str) -> list[str]:
    return [form_text(v, name) for v in values]


def _shown(value: str | None) -> str:
    text = repr(value or "")
    return text if len(text) <= 40 else text[:37] + "…'"
