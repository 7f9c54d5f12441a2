"""Caption-choice items (COCO-Counterfactuals): one per image of an image pair; the annotator
picks the caption that describes the image.

Two captions are shown as "caption 1" / "caption 2", then "both" and "neither". Which caption
comes first is drawn **per annotator**, seeded by (item, annotator) (``caption_swapped``), so
two annotators of one item see different orders about half of the time and position bias
averages out, as in the COCO-Counterfactuals (Mindy) interface. The order is stored on the
assignment. Canonically ``caption_a`` is the original's caption and ``caption_b`` the
counterfactual's; the annotator's "caption 1" maps back through the stored order.

A pair counts as its counterfactual image's answer once both of its items are complete.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from annotate.kinds.base import UNCLEAR, ItemBody, ItemKind, ItemSource

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


def caption_texts(display_order: Sequence[str], original: str, counterfactual: str) -> list[str]:
    """The two caption texts in the order shown (caption 1, caption 2)."""
    by_key = {"caption_a": original, "caption_b": counterfactual}
    return [by_key[c] for c in display_order if c in by_key]


class CaptionChoice(ItemKind):
    name = "caption_choice"
    template = "annotate/kinds/_caption_choice.html"
    instructions_template = "annotate/kinds/caption_choice_instructions.html"
    instruction = CAPTION_INSTRUCTION
    answers_are_labels = False  # caption_a / caption_b / both / neither: not labels h learns

    def handles_task(self, task: str) -> bool:
        return task == "image-caption"

    def sides(self, *, gold: bool) -> list[str]:
        # a check item asks about the counterfactual image only
        return ["counterfactual"] if gold else ["original", "counterfactual"]

    def canonical_choices(self, labels: Sequence[str]) -> list[str]:
        return CAPTION_CANONICAL + CAPTION_EXTRA

    def display_order(self, labels: Sequence[str], *, swapped: bool = False) -> list[str]:
        captions = list(reversed(CAPTION_CANONICAL)) if swapped else list(CAPTION_CANONICAL)
        return captions + list(CAPTION_EXTRA)

    def owns_order(self, display_order: Sequence[str]) -> bool:
        return CAPTION_CANONICAL[0] in display_order

    def offered(self, display_order: Sequence[str]) -> list[str]:
        return CAPTION_SHOWN + [c for c in display_order if c in CAPTION_EXTRA]

    def choice_labels(self, offered: Sequence[str]) -> list[str]:
        return [f"Caption {i + 1}" for i in range(2)] + [c.capitalize() for c in offered[2:]]

    def _image(self, source: ItemSource, image_url: Callable[[str], str]) -> str:
        return image_url(source.original_image if source.side == "original" else source.image)

    def body(self, source: ItemSource, display_order: Sequence[str], image_url: Callable[[str], str]) -> ItemBody:
        image = self._image(source, image_url)
        captions = caption_texts(
            display_order, str(source.original_fields.get("caption", "")), str(source.fields.get("caption", ""))
        )
        return ItemBody(
            image=image,
            captions=captions,
            extra={"image": image, "captions": captions, "instruction": CAPTION_INSTRUCTION},
        )

    def choice_text(self, choice: str, source: ItemSource) -> str:
        if choice == UNCLEAR:
            return "Unclear / invalid"
        captions = {
            "caption_a": source.original_fields.get("caption", ""),
            "caption_b": source.fields.get("caption", ""),
        }
        return f"the caption “{captions[choice]}”" if choice in captions else choice.capitalize()

    def feedback_image(self, source: ItemSource, image_url: Callable[[str], str]) -> str:
        return image_url(source.image)

    summary_key = "caption_pairs"

    def summarise(self, completed: Iterable[tuple[int, str, str]]) -> dict[str, Any]:
        """Pairs with both images complete, and those that "worked": the original's image got
        the original's caption and the counterfactual's image the counterfactual's."""
        pairs: dict[int, dict[str, str]] = defaultdict(dict)
        for cid, side, result in completed:
            pairs[cid][side] = result
        both = [p for p in pairs.values() if "original" in p and "counterfactual" in p]
        worked = sum(1 for p in both if p["original"] == "caption_a" and p["counterfactual"] == "caption_b")
        return {"complete": len(both), "worked": worked}

    def candidate_result(
        self, *, result: str, share: float, siblings: Callable[[], Sequence[Mapping[str, Any]]]
    ) -> tuple[str, float] | None:
        """The pair's answer is its counterfactual image's, once both images are complete."""
        rows = siblings()
        if any(s["status"] != "complete" for s in rows):
            return None
        cf = next((s for s in rows if s["side"] == "counterfactual"), None)
        if cf is None:
            return None
        return cf["result"], float(cf["result_agreement"] or 0.0)


__all__ = ["CAPTION_CANONICAL", "CAPTION_EXTRA", "CAPTION_INSTRUCTION", "CAPTION_SHOWN", "CaptionChoice"]
