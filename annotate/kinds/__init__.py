"""The registry of item kinds: ``Item.kind`` value -> the kind's rules (``ItemKind``).

A new kind is one module in this package (a subclass of ``annotate.kinds.base.ItemKind``, its
template partial under ``templates/annotate/kinds/``) plus one line in ``_KINDS`` below; see
docs/architecture.md, "Adding an item kind". Workflow code never tests ``kind == "…"``: it asks
``kind_named(item.kind)`` or ``kind_for_task(project.task)``.
"""

from __future__ import annotations

from collections.abc import Sequence

from annotate.kinds.base import UNCLEAR, ItemBody, ItemKind, ItemSource, ordered_fields
from annotate.kinds.caption_choice import CaptionChoice, caption_swapped
from annotate.kinds.task_label import TaskLabel

# Order matters twice: a project's task goes to the first kind that handles it, and a stored
# display order to the first kind that owns it, the last kind (task labels) being the fallback.
_KINDS: tuple[ItemKind, ...] = (
    CaptionChoice(),
    TaskLabel(),
)
KINDS: dict[str, ItemKind] = {k.name: k for k in _KINDS}
ITEM_KINDS: list[str] = sorted(KINDS)  # the values ``Item.kind`` may hold (a CHECK constraint)


def kind_named(name: str) -> ItemKind:
    """The kind stored as ``Item.kind == name`` (KeyError for an unknown one)."""
    return KINDS[name]


def kind_for_task(task: str) -> ItemKind:
    """The kind of the items of a project with ``task``."""
    for kind in _KINDS:
        if kind.handles_task(task):
            return kind
    raise KeyError(f"no item kind handles task {task!r}")


def kind_of_order(display_order: Sequence[str]) -> ItemKind:
    """The kind a stored display order belongs to (the submit path only has the lease's order)."""
    for kind in _KINDS[:-1]:
        if kind.owns_order(display_order):
            return kind
    return _KINDS[-1]


__all__ = [
    "ITEM_KINDS",
    "KINDS",
    "UNCLEAR",
    "ItemBody",
    "ItemKind",
    "ItemSource",
    "caption_swapped",
    "kind_for_task",
    "kind_named",
    "kind_of_order",
    "ordered_fields",
]
