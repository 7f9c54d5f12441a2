"""The one place a candidate changes state (see ``generation/states.py``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from projects import states
from projects.models import Candidate


def candidates_transition(*, candidates: QuerySet[Candidate] | Iterable[int], to: str, **fields: Any) -> int:
    """Move the given candidates to state ``to`` and set ``fields`` (label, label_source,
    confidence, …) in the same UPDATE. Only candidates currently in a state from which
    ``to`` is allowed move; the others are left alone. Returns how many moved.

    Because the allowed source states are part of the UPDATE's WHERE clause, two
    concurrent callers can never push a candidate along an edge that is not allowed.
    """
    sources = states.sources_for(to)
    qs = candidates if isinstance(candidates, QuerySet) else Candidate.objects.filter(pk__in=list(candidates))
    with transaction.atomic():
        return qs.filter(state__in=sources).update(state=to, **fields)


def candidate_transition(*, candidate: Candidate, to: str, **fields: Any) -> Candidate:
    """Single-candidate form: raises ``InvalidTransition`` if the edge is not allowed
    (or the candidate moved concurrently); returns the refreshed candidate."""
    states.check(candidate.state, to)
    moved = candidates_transition(candidates=Candidate.objects.filter(pk=candidate.pk), to=to, **fields)
    if moved != 1:
        candidate.refresh_from_db(fields=["state"])
        raise states.InvalidTransition(f"candidate {candidate.pk} is now {candidate.state!r}; cannot move to {to!r}")
    candidate.refresh_from_db()
    return candidate
