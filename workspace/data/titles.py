"""Readable names for candidates (issue 20.6). A generated candidate's stable id is
``"{run}:{original}:{n}"`` (``1:snli-dev-12:11``): exact, and what the API, exports and
imports use, but hard to read. The data browser and the pair page show, as Label Studio and
Argilla show a record, the original it belongs to and a short label for the candidate, and
keep the stable id beside it for copying:

- generated: ``snli-dev-12 · cand. 11 (rules/negation)`` (run 1 in the detail);
- imported with the original's id as prefix (CAD ``snli-dev-0-rh1``): ``snli-dev-0 · rh1``;
- anything else: the stable id itself.

Pure functions of the row's values (no queries)."""

from __future__ import annotations

import re
from dataclasses import dataclass

_GENERATED = re.compile(r"^(\d+):(.+):(\d+)$")


@dataclass(frozen=True)
class CandidateTitle:
    original: str  # the original's id (the row's group)
    label: str  # the candidate within it: "cand. 11 (rules/negation)", "rh1", or ""
    run: int | None  # the generation run, for a generated candidate

    @property
    def text(self) -> str:
        return f"{self.original} · {self.label}" if self.label else self.original


def candidate_title(
    *, external_id: str, original_id: str, generator: str = "", perturbation: str = ""
) -> CandidateTitle:
    """The readable name of the candidate ``external_id`` of the original ``original_id``."""
    how = "/".join(p for p in (generator, perturbation) if p)
    m = _GENERATED.match(external_id)
    if m and (m.group(2) == original_id or re.fullmatch(r"[0-9a-f]{40}", m.group(2))):
        label = f"cand. {int(m.group(3))}" + (f" ({how})" if how else "")
        return CandidateTitle(original=original_id, label=label, run=int(m.group(1)))
    if original_id and external_id.startswith(original_id) and len(external_id) > len(original_id):
        rest = external_id[len(original_id) :].lstrip("-_:.· ")
        if rest:
            return CandidateTitle(original=original_id, label=rest, run=None)
    return CandidateTitle(original=external_id, label="", run=None)
