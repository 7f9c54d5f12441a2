"""What every item kind provides: the protocol the workflow code calls instead of testing
``item.kind == "…"``.

An item kind is one way of asking an annotator about a candidate (a task label for a text pair,
the better caption for an image). It decides

* which projects it serves (``handles_task``) and which items a routed candidate becomes
  (``sides``: one item, or one per image of an image pair);
* the answer options: the canonical choices (``canonical_choices``), the order one annotator
  sees them in (``display_order``: fixed per project for task labels, drawn per annotator for
  captions), what a client may submit (``offered``), how each is shown (``choice_labels``) and
  how a submitted choice maps back (``to_canonical``, the validation of an answer);
* what the item shows (``body``), which template partial renders it (``template``) and what
  the instructions page says (``instructions_template``);
* how an aggregated answer becomes the candidate's counterfactual label (``candidate_result``).

Pure Python (no database): the callers read the rows and pass plain values in.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from projects.validators import UNCLEAR_CHOICE

UNCLEAR = UNCLEAR_CHOICE  # reserved: no project label may be called so (projects.validators.validate_labels)


def ordered_fields(fields: Mapping[str, Any], names: Sequence[str]) -> list[tuple[str, Any]]:
    """``fields`` with the project's text fields first, in their order, then the rest."""
    out = [(n, fields[n]) for n in names if n in fields]
    out += [(n, v) for n, v in fields.items() if n not in names]
    return out


@dataclass(frozen=True)
class ItemSource:
    """The rows an item is built from, as plain values."""

    side: str  # "" or, for image pairs, "original" / "counterfactual"
    text_fields: Sequence[str]  # the project's text fields, in order
    fields: Mapping[str, Any]  # the candidate's (counterfactual's) fields
    image: str  # the candidate's image
    original_fields: Mapping[str, Any]  # the original example's fields
    original_image: str


@dataclass(frozen=True)
class ItemBody:
    """What the item shows (blind: no labels, no other answers, no model output)."""

    fields: list[tuple[str, Any]] = field(default_factory=list)
    original_fields: list[tuple[str, Any]] = field(default_factory=list)
    image: str = ""
    captions: list[str] = field(default_factory=list)
    extra: dict[str, Any] = field(default_factory=dict)  # kind-specific keys of the API's ``item``

    def as_json(self) -> dict[str, Any]:
        """The kind-specific part of the API's ``item`` object (docs/formats.md §4)."""
        return dict(self.extra)


class ItemKind(ABC):
    """One item kind. Subclasses set the class attributes and implement the abstract methods;
    ``annotate/kinds/__init__.py`` registers one instance of each."""

    name: ClassVar[str]  # ``Item.kind`` in the database
    template: ClassVar[str]  # the partial that renders the item body (heading included)
    instructions_template: ClassVar[str]  # the instructions page's parts: partials "intro" and "keys"
    answers_are_labels: ClassVar[bool] = True  # the answers are the project's class labels (h learns them)
    instruction: ClassVar[str] = ""  # a one-line instruction shown with the item, if any

    @abstractmethod
    def handles_task(self, task: str) -> bool:
        """Whether items of a project with this ``task`` are of this kind."""

    @abstractmethod
    def sides(self, *, gold: bool) -> list[str]:
        """The ``Item.side`` of each item a routed (or gold) candidate becomes."""

    @abstractmethod
    def canonical_choices(self, labels: Sequence[str]) -> list[str]:
        """Every canonical answer (what aggregation and agreement count), in a fixed order."""

    def gold_answers(self, labels: Sequence[str]) -> list[str]:
        """The gold labels a check item of this kind can carry."""
        return self.canonical_choices(labels)

    @abstractmethod
    def display_order(self, labels: Sequence[str], *, swapped: bool = False) -> list[str]:
        """The canonical choices in the order one annotator sees them; ``swapped`` is the
        per-annotator draw (``caption_swapped``), which a kind may ignore."""

    def owns_order(self, display_order: Sequence[str]) -> bool:
        """Whether a stored display order is one of this kind's (the submit path has only
        the lease's order, not the item)."""
        return False

    def offered(self, display_order: Sequence[str]) -> list[str]:
        """The strings a client may submit, in display order."""
        return list(display_order)

    def to_canonical(self, display_order: Sequence[str], shown: str) -> str | None:
        """Validate a submitted (shown) choice and map it to the canonical one; None if it was
        not offered."""
        options = self.offered(display_order)
        if shown not in options:
            return None
        return display_order[options.index(shown)]

    @abstractmethod
    def choice_labels(self, offered: Sequence[str]) -> list[str]:
        """How each offered choice is written on its button."""

    @abstractmethod
    def body(self, source: ItemSource, display_order: Sequence[str], image_url: Callable[[str], str]) -> ItemBody:
        """What the item shows to an annotator with this ``display_order``."""

    @abstractmethod
    def choice_text(self, choice: str, source: ItemSource) -> str:
        """A canonical choice as the annotator understands it (the qualification feedback)."""

    def feedback_image(self, source: ItemSource, image_url: Callable[[str], str]) -> str:
        """The image shown beside the qualification feedback ("" for none)."""
        return ""

    summary_key: ClassVar[str | None] = None  # a key of the quality dashboard's figures, if any

    def summarise(self, completed: Iterable[tuple[int, str, str]]) -> dict[str, Any]:
        """Kind-specific figures over the project's complete real items, given as
        (candidate id, side, result); shown under ``summary_key`` (when set)."""
        return {}

    def candidate_result(
        self, *, result: str, share: float, siblings: Callable[[], Sequence[Mapping[str, Any]]]
    ) -> tuple[str, float] | None:
        """Map an item's aggregated ``result`` (with its agreement ``share``) to the candidate's
        answer: a label name, ``unclear`` or "" (contested). None: not decided yet (the
        candidate's other items are open). ``siblings`` reads the candidate's real items
        (``side``, ``status``, ``result``, ``result_agreement``) when a kind needs them."""
        return result, share
