"""The one small interface every generator implements.

A generator takes originals and yields, per original, either candidates or a skip with a
reason. It never touches the database: ``generation/services/runs.py`` writes what it yields.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True)
class Original:
    id: str  # the Example's external id (or any stable key)
    fields: dict[str, str]
    label: str | None
    labels: tuple[str, ...]  # the project's ordered label set
    task: str


@dataclass(frozen=True)
class GeneratedCandidate:
    original_id: str
    fields: dict[str, str]  # same field names as the original
    generator: str
    perturbation: str = ""  # control code (negation, quantifier, lexical, ...)
    target_label: str | None = None  # None: untargeted (the pairwise classifier decides)
    scores: dict[str, float] = field(default_factory=dict)
    meta: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Skip:
    original_id: str
    reason: str


class GeneratorConfigError(ValueError):
    """The generator cannot run at all (bad options, a model path that does not exist):
    the run fails at start with this message."""


class BackendUnavailable(Exception):
    """The model backend cannot answer (a model server still down after its retries): the run
    fails with this message, in words, instead of skipping every original it reaches."""


class StopRequested(Exception):
    """Raised at a stop point when the generator's ``should_stop`` hook says the run was
    cancelled: the service stops the run there (the batch in progress is not written)."""


StopHook = Callable[[], bool]


def stop_point(should_stop: StopHook | None) -> None:
    """Raise :class:`StopRequested` when ``should_stop`` (set by the service on the generator,
    cheap to call: it checks the database at most once a second) says so. Generators call it
    between originals and inside long per-original loops, so a cancel lands within seconds."""
    if should_stop is not None and should_stop():
        raise StopRequested()


class Generator(Protocol):
    name: str

    def generate(self, originals: Sequence[Original]) -> Iterator[GeneratedCandidate | Skip]:
        """Yield candidates and skips for a batch of originals (order free; every original
        yields at least one candidate or one skip)."""
        ...


class PerOriginalGenerator:
    """Base for generators that work one original at a time and may run unconfigured.

    Subclasses set ``unconfigured`` to a reason (e.g. "set COUNTERPART_MLM_PATH") when a model
    they need is not configured — every original is then skipped with that reason, which is
    what the issue asks for an unconfigured model path — and implement ``_one``."""

    name: str
    unconfigured: str = ""
    should_stop: StopHook | None = None  # set by the service: the run was cancelled

    def generate(self, originals: Sequence[Original]) -> Iterator[GeneratedCandidate | Skip]:
        for original in originals:
            stop_point(self.should_stop)
            if self.unconfigured:
                yield Skip(original.id, self.unconfigured)
                continue
            yield from self._one(original)

    def _one(self, original: Original) -> Iterator[GeneratedCandidate | Skip]:
        raise NotImplementedError


def edit_field_of(original: Original, edit_field: str, nli_default: str) -> str | None:
    """The field a one-field editor rewrites: ``edit_field`` when set (None if the original
    lacks it), else ``nli_default`` for an NLI original that has it, else the first field."""
    if edit_field:
        return edit_field if edit_field in original.fields else None
    if original.task == "nli" and nli_default in original.fields:
        return nli_default
    return next(iter(original.fields), None)


def by_label_in_turn(originals: Iterable[Original]) -> list[Original]:
    """``originals`` taken in turn from each label (labels in sorted order, unlabelled last), in
    their own order within a label: the first N of a file sorted by label then hold every label
    (the first 400 training originals of CAD-sentiment hold 398 negatives)."""
    by_label: dict[str | None, list[Original]] = {}
    for o in originals:
        by_label.setdefault(o.label, []).append(o)
    queues = [by_label[k] for k in sorted(by_label, key=lambda k: (k is None, str(k)))]
    out: list[Original] = []
    for i in range(max((len(q) for q in queues), default=0)):
        out.extend(q[i] for q in queues if i < len(q))
    return out
