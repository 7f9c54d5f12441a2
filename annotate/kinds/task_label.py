"""Task-label items: one per candidate; the annotator picks the counterfactual's label.

The project's labels are offered in the project's fixed order (``Label.position``) and then
``unclear`` (always last), so key "1" means the same label on every item and for every
annotator (muscle memory, as in Label Studio and Prodigy). The offered strings *are* the
canonical choices, and the aggregated one is the candidate's label.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from annotate.kinds.base import UNCLEAR, ItemBody, ItemKind, ItemSource, ordered_fields


class TaskLabel(ItemKind):
    name = "task_label"
    template = "annotate/kinds/_task_label.html"
    instructions_template = "annotate/kinds/task_label_instructions.html"

    def handles_task(self, task: str) -> bool:
        return task != "image-caption"

    def sides(self, *, gold: bool) -> list[str]:
        return [""]

    def canonical_choices(self, labels: Sequence[str]) -> list[str]:
        return [*labels, UNCLEAR]

    def gold_answers(self, labels: Sequence[str]) -> list[str]:
        return list(labels)

    def display_order(self, labels: Sequence[str], *, swapped: bool = False) -> list[str]:
        return [*labels, UNCLEAR]

    def choice_labels(self, offered: Sequence[str]) -> list[str]:
        return ["Unclear / invalid" if c == UNCLEAR else c.replace("_", " ") for c in offered]

    def body(self, source: ItemSource, display_order: Sequence[str], image_url: Callable[[str], str]) -> ItemBody:
        fields = ordered_fields(source.fields, source.text_fields)
        original = ordered_fields(source.original_fields, source.text_fields)
        return ItemBody(
            fields=fields,
            original_fields=original,
            extra={"fields": dict(fields), "original": {"fields": dict(original)}},
        )

    def choice_text(self, choice: str, source: ItemSource) -> str:
        return "Unclear / invalid" if choice == UNCLEAR else choice.replace("_", " ")
