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


def form_text(value: str | None, name: str) -> str:
    """``value`` (``""`` when absent) when the database can store it; raises :class:`BadInput`."""
    text = value or ""
    problem = unstorable(text)
    if problem is not None:
        raise BadInput(f"{name} contains {problem}")
    return text


def form_texts(values: Iterable[str], name: str) -> list[str]:
    return [form_text(v, name) for v in values]


def _shown(value: str | None) -> str:
    text = repr(value or "")
    return text if len(text) <= 40 else text[:37] + "…'"
