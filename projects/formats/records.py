"""Plain records that every reader yields and every writer takes. No Django here: the
benchmarks and the ML code read data files through these too."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class OriginalRecord:
    """An original example (no counterfactual)."""

    id: str
    fields: dict[str, str]
    label: str | None = None
    image: str = ""
    source: str = ""
    split: str = ""
    meta: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class PairRecord:
    """An original and one counterfactual of it (docs/formats.md §1)."""

    id: str
    original: OriginalRecord
    cf_fields: dict[str, str]
    group: str = ""
    cf_label: str | None = None
    target_label: str | None = None
    generator: str = ""
    perturbation: str = ""
    label_source: str = ""  # human | auto | gold | imported | "" (unknown)
    confidence: float | None = None
    cf_image: str = ""
    meta: dict[str, Any] = field(default_factory=dict)
    # Added for lossless round trips (docs/formats.md §1 extended with optional keys): a known
    # answer kept beside a different final label, and the filter scores.
    gold_label: str | None = None
    scores: dict[str, Any] = field(default_factory=dict)
    # docs/formats.md §1 ``counterfactual.valid``: is the counterfactual fluent, sensible text?
    # None: not judged
    valid: bool | None = None


@dataclass(frozen=True)
class Problem:
    """A row that could not be read: ``file:line: message``."""

    path: str
    line: int
    message: str
    # the text fields the row has, when what is wrong is that they are not the project's (a
    # file of another task: said once for the file, :func:`.whole_input.refuse_other_fields`)
    fields: tuple[str, ...] | None = field(default=None, compare=False)

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.message}"


Record = OriginalRecord | PairRecord | Problem
