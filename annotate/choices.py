"""Older entry points of the choice rules, now kept by the item kinds (``annotate/kinds/``).

Thin wrappers over the registry, kept so that callers written against them (tests, scripts)
keep working; new code asks ``annotate.kinds`` directly.
"""

from __future__ import annotations

from collections.abc import Sequence

from annotate.kinds import UNCLEAR, caption_swapped, kind_named
from annotate.kinds.caption_choice import CAPTION_CANONICAL, CAPTION_EXTRA, CAPTION_INSTRUCTION, CAPTION_SHOWN


def display_order_for(kind: str, labels: Sequence[str], *, swapped: bool = False) -> list[str]:
    """Canonical choices in the order this annotator will see them (``ItemKind.display_order``)."""
    return kind_named(kind).display_order(labels, swapped=swapped)


def offered(kind: str, display_order: Sequence[str]) -> list[str]:
    """The strings a client may submit, in display order (``ItemKind.offered``)."""
    return kind_named(kind).offered(display_order)


def to_canonical(kind: str, display_order: Sequence[str], shown: str) -> str | None:
    """A submitted choice mapped back to the canonical one (``ItemKind.to_canonical``)."""
    return kind_named(kind).to_canonical(display_order, shown)


def canonical_choices(kind: str, labels: Sequence[str]) -> list[str]:
    """The answers an item of ``kind`` can have, in canonical order (``ItemKind.canonical_choices``)."""
    return kind_named(kind).canonical_choices(labels)


__all__ = [
    "CAPTION_CANONICAL",
    "CAPTION_EXTRA",
    "CAPTION_INSTRUCTION",
    "CAPTION_SHOWN",
    "UNCLEAR",
    "canonical_choices",
    "caption_swapped",
    "display_order_for",
    "offered",
    "to_canonical",
]
