"""What an item offers, in which order, and how a pressed choice maps back to a canonical one.

Pure functions (no database): the order is fixed when the item is leased, stored on the
assignment and copied onto the answer.

* Task-label items offer the project's labels in the project's fixed order (``Label.position``)
  and then ``unclear`` (always last), so key "1" means the same label on every item and for
  every annotator (muscle memory, as in Label Studio and Prodigy). The offered strings *are*
  the canonical choices.
* Caption-choice items show two captions as "caption 1" / "caption 2", then "both" and
  "neither". Which caption comes first is drawn **per annotator**: seeded by (item, annotator)
  (``caption_swapped``), so two annotators of one item see different orders about half of the
  time and position bias averages out, as in the COCO-Counterfactuals (Mindy) interface.
  Canonically ``caption_a`` is the original's caption and ``caption_b`` the counterfactual's;
  the annotator's "caption 1" maps back through the stored order.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

UNCLEAR = "unclear"
CAPTION_CANONICAL = ["caption_a", "caption_b"]
CAPTION_SHOWN = ["caption 1", "caption 2"]
CAPTION_EXTRA = ["both", "neither"]

CAPTION_INSTRUCTION = (
    "Select the caption which best describes the image. If both are valid, pick the more "
    "descriptive one; if both describe it equally well select Both; if neither does, select Neither."
)


def caption_swapped(item_id: int, annotator_id: int) -> bool:
    """Whether this annotator sees the counterfactual's caption first on this item: the low bit
    of the first byte of md5("<item>:<annotator>"). The claim statement on PostgreSQL computes
    the same bit in SQL (``annotate/services/hot_sql.py``), so both backends agree."""
    return bool(hashlib.md5(f"{item_id}:{annotator_id}".encode(), usedforsecurity=False).digest()[0] & 1)


def display_order_for(kind: str, labels: Sequence[str], *, swapped: bool = False) -> list[str]:
    """Canonical choices in the order this annotator will see them: task labels in the
    project's order then ``unclear``; captions in the per-annotator order (``swapped``)."""
    if kind == "caption_choice":
        captions = list(reversed(CAPTION_CANONICAL)) if swapped else list(CAPTION_CANONICAL)
        return captions + list(CAPTION_EXTRA)
    return [*labels, UNCLEAR]


def offered(kind: str, display_order: Sequence[str]) -> list[str]:
    """The strings a client may submit, in display order."""
    if kind == "caption_choice":
        return CAPTION_SHOWN + [c for c in display_order if c in CAPTION_EXTRA]
    return list(display_order)


def to_canonical(kind: str, display_order: Sequence[str], shown: str) -> str | None:
    """Map a submitted (shown) choice back to the canonical one; None if it was not offered."""
    options = offered(kind, display_order)
    if shown not in options:
        return None
    return display_order[options.index(shown)]


def caption_texts(display_order: Sequence[str], original: str, counterfactual: str) -> list[str]:
    """The two caption texts in the order shown (caption 1, caption 2)."""
    by_key = {"caption_a": original, "caption_b": counterfactual}
    return [by_key[c] for c in display_order if c in by_key]


def canonical_choices(kind: str, labels: list[str]) -> list[str]:
    """The answers an item of ``kind`` can have, in canonical order (``labels``: the project's)."""
    if kind == "caption_choice":
        return CAPTION_CANONICAL + CAPTION_EXTRA
    return [*labels, UNCLEAR]
