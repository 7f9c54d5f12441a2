"""The one place a candidate changes state (see ``generation/states.py``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.db import transaction
from django.db.models import QuerySet

from projects import states
from projects.aggregates import ID_CHUNK, stats_write
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
    # The per-project aggregates (projects/aggregates.py) follow the same rows: counted
    # before and after, under the projects' stats locks, in this transaction.
    with stats_write() as w:
        ids = list(qs.filter(state__in=sources).order_by().values_list("pk", flat=True))
        moved = 0
        for start in range(0, len(ids), ID_CHUNK):
            chunk = ids[start : start + ID_CHUNK]
            w.before(chunk)
            moved += Candidate.objects.filter(pk__in=chunk, state__in=sources).update(state=to, **fields)
            w.after(chunk)
        return moved


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


class OverrideRefused(ValueError):
    pass


class OverrideUnchanged(Exception):
    """The override would change nothing (the pair already has that label from a human), so
    nothing is written and no override is recorded; ``str()`` says so for the user."""


def candidate_override(*, candidate: Candidate, label: str, by: Any, note: str = "") -> Candidate:
    """A researcher relabels a pair. The candidate becomes ``human_labeled`` with
    ``label_source="human"`` and confidence 1 (so it wins over every auto label and is never
    auto-labelled again); a :class:`~projects.models.LabelOverride` records who, when and what
    it replaced. A pair still being annotated (``routed``) may be overridden too: the
    annotators' answers then no longer change its label. ``filtered_out`` and ``generated``
    candidates are refused (they are not part of the data set). Relabelling a pair with the
    human label it already has changes nothing and records nothing (:class:`OverrideUnchanged`);
    confirming an auto label does change its source, and is recorded. A pair judged invalid
    (``meta.valid`` false) is valid once a researcher labels it (``meta.valid_source``
    ``"override"``), so that it is exported as it is counted."""
    from projects.models import Label, LabelOverride

    target = Label.objects.filter(project_id=candidate.project_id, name=label).first()
    if target is None:
        names = list(Label.objects.filter(project_id=candidate.project_id).values_list("name", flat=True))
        raise OverrideRefused(f"{label!r} is not one of this project's labels ({', '.join(names)})")
    with stats_write() as w:
        w.lock([candidate.project_id])  # the stats lock first, as every tracked write takes it
        locked = Candidate.objects.select_for_update().get(pk=candidate.pk)
        if locked.state in (states.FILTERED_OUT, states.GENERATED):
            raise OverrideRefused(f"a {locked.state} candidate is not in the data set; it cannot be relabelled")
        if locked.state == states.HUMAN_LABELED and locked.label_id == target.pk and locked.label_source == "human":
            raise OverrideUnchanged(
                f"Nothing changed: {locked.external_id} is already labelled {target.name} by a human."
            )
        LabelOverride.objects.create(
            candidate=locked,
            label=target,
            previous_label_id=locked.label_id,
            previous_source=locked.label_source,
            previous_state=locked.state,
            previous_confidence=locked.confidence,
            note=note[:500],
            created_by=by,
        )
        # human_labeled is terminal in the state machine; a researcher's override of an
        # already human-labelled pair changes the label only.
        w.before([locked.pk])
        values: dict[str, Any] = {"state": states.HUMAN_LABELED, "label": target, "label_source": "human"}
        meta = locked.meta if isinstance(locked.meta, dict) else {}
        if meta.get("valid") is False:
            # A label from a researcher says the pair is a real one: judged invalid before
            # (annotators' "Unclear / invalid", an import), it would be counted as a human label
            # on every page yet left out of every export. ``valid_source`` says who decided.
            values["meta"] = {**meta, "valid": True, "valid_source": "override"}
        Candidate.objects.filter(pk=locked.pk).update(confidence=1.0, **values)
        w.after([locked.pk])
    candidate.refresh_from_db()
    return candidate


def candidate_judge_validity(*, candidate_id: int, valid: bool, source: str = "human") -> None:
    """Record a judgement of whether the counterfactual is fluent, sensible text in
    ``meta.valid`` (docs/formats.md §1), with who judged it in ``meta.valid_source``. A
    candidate judged invalid gets no automatic label and is left out of exports by default;
    its state is not changed (the annotators' answers stay visible on the dashboard)."""
    with transaction.atomic():
        locked = Candidate.objects.select_for_update().filter(pk=candidate_id).first()
        if locked is None:
            return
        meta = dict(locked.meta or {})
        meta.update({"valid": bool(valid), "valid_source": source})
        Candidate.objects.filter(pk=candidate_id).update(meta=meta)
