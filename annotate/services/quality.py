"""Aggregation at item completion, the plurality policy, gold bookkeeping and qualification.

Called inside the submit transaction (``annotate.services.assignments``); the math lives in
``annotate/ml/agreement.py`` and the decisions in ``annotate/ml/policy.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import Case, F, Value, When
from django.utils import timezone

from annotate import kinds
from annotate.ml import agreement, policy
from annotate.models import Annotation, Item
from annotate.selectors import (
    annotators_available_for,
    items_waiting_for_annotators,
    qualification_decision,
)
from projects import states
from projects.models import Label, Project, ProjectMembership
from projects.services.candidates import candidate_judge_validity, candidates_transition
from projects.services.memberships import membership_resume


def _cfg(key: str) -> Any:
    counterpart: Mapping[str, Any] = settings.COUNTERPART  # a TypedDict: a str key needs this view
    return counterpart[key]


# --- items ----------------------------------------------------------------------------------


def item_complete_if_ready(*, item_id: int, now: datetime | None = None) -> str | None:
    """If the item has its k answers: either ask for more (plurality policy: raise k by one
    while no choice holds ``MIN_AGREEMENT``, up to ``MAX_ANNOTATORS_PER_ITEM`` and never beyond
    the eligible annotators who have not had the item yet) or aggregate by majority vote,
    close the item and — when the candidate's items are all closed with a label — give the
    candidate its human label through ``candidates_transition``.

    Returns "extended", "complete" or None (not ready). Call it inside a transaction: the item
    row is locked (``SELECT … FOR UPDATE`` on PostgreSQL; SQLite has one writer anyway) so an
    undo or another submit cannot change the votes while they are counted, and the closing
    UPDATE is conditional (``status = 'open' AND done >= k``), so one caller decides.
    """
    now = now or timezone.now()
    item = Item.objects.select_for_update().select_related("candidate").get(pk=item_id)
    if item.status != "open" or item.done < item.k:
        return None
    votes = list(Annotation.objects.filter(item_id=item_id).values_list("choice", flat=True))
    k_max = max(int(_cfg("MAX_ANNOTATORS_PER_ITEM")), item.k)
    extra = policy.extra_annotations_needed(votes, k=item.k, k_max=k_max, min_agreement=float(_cfg("MIN_AGREEMENT")))
    if extra > 0:
        # Never ask for more answers than the project's annotators can still give.
        extra = min(extra, annotators_available_for(item_id=item_id, project_id=item.project_id, qualified=True))
    if extra > 0:
        Item.objects.filter(pk=item_id, status="open", k=item.k).update(k=F("k") + extra)
        return "extended"
    labels = list(Label.objects.filter(project_id=item.project_id).order_by("position").values_list("name", flat=True))
    allowed = kinds.kind_named(item.kind).canonical_choices(labels)
    outcome = agreement.majority_vote(
        [(item_id, i, v) for i, v in enumerate(votes)], labels=allowed, tie_break="abstain"
    )[item_id]
    result = outcome.label or ""
    closed = Item.objects.filter(pk=item_id, status="open", done__gte=F("k")).update(
        status="complete", result=result, result_agreement=outcome.share, completed_at=now
    )
    if closed and not item.is_gold:
        _candidate_finalize(item=item, result=result, share=outcome.share)
    return "complete"


@dataclass(frozen=True)
class SettleResult:
    lowered: int  # items whose overlap k was lowered to what their annotators can still give
    aggregated: int  # of those, items that had their answers and were aggregated now
    no_annotator: int  # items nobody eligible can answer (no answers either): add annotators
    left: int  # waiting items beyond this batch (press again)


SETTLE_BATCH = 1000


def items_settle_waiting(*, project: Project, now: datetime | None = None, batch: int = SETTLE_BATCH) -> SettleResult:
    """The one-click remedy for items waiting for annotators: lower each one's overlap ``k`` to
    what can still be reached (``taken`` + the eligible annotators who have not had it, at
    least the answers already given), and aggregate with the answers there where that is all
    it can get. An item without any answer and without anyone to answer it is left as it is
    (counted in ``no_annotator``). At most ``batch`` items per call."""
    now = now or timezone.now()
    ids = list(items_waiting_for_annotators(project=project).values_list("pk", flat=True)[: batch + 1])
    left = max(0, len(ids) - batch)
    lowered = aggregated = nobody = 0
    for item_id in ids[:batch]:
        with transaction.atomic():
            item = Item.objects.select_for_update().filter(pk=item_id, status="open").first()
            if item is None:
                continue
            reach = item.taken + annotators_available_for(item_id=item_id, project_id=project.pk, qualified=False)
            new_k = max(reach, item.done)
            if new_k < 1:
                nobody += 1
                continue
            if new_k >= item.k:
                continue  # no longer waiting (someone joined meanwhile)
            if not Item.objects.filter(pk=item_id, status="open", k=item.k, taken__lte=new_k).update(k=new_k):
                continue
            lowered += 1
            if item.done >= new_k and item_complete_if_ready(item_id=item_id, now=now) == "complete":
                aggregated += 1
    return SettleResult(lowered=lowered, aggregated=aggregated, no_annotator=nobody, left=left)


def _candidate_finalize(*, item: Item, result: str, share: float) -> None:
    """Set the candidate's final human label when its items are complete and agree on one."""
    decided = kinds.kind_named(item.kind).candidate_result(
        result=result,
        share=share,
        siblings=lambda: list(
            Item.objects.filter(candidate_id=item.candidate_id, is_gold=False).values(
                "side", "status", "result", "result_agreement"
            )
        ),
    )
    if decided is None:
        return  # the candidate's other items are still open
    result, share = decided
    if result == kinds.UNCLEAR:
        # judged invalid: a first-class outcome (no task label, no auto label, left out of
        # exports by default); the candidate stays routed, visible on the dashboard
        candidate_judge_validity(candidate_id=item.candidate_id, valid=False)
        return
    if not result:
        return  # contested: stays routed, visible on the dashboard
    label = Label.objects.filter(project_id=item.project_id, name=result).first()
    if label is None:
        return
    candidates_transition(
        candidates=[item.candidate_id],
        to=states.HUMAN_LABELED,
        label=label,
        label_source="human",
        confidence=max(0.0, min(1.0, share)),
    )


# --- gold and qualification ---------------------------------------------------------------


def membership_record_gold(*, project_id: int, annotator: Any, correct: bool, now: datetime) -> None:
    """Count a gold answer and settle qualification / flagging. No-op without membership."""
    updated = ProjectMembership.objects.filter(project_id=project_id, user=annotator).update(
        gold_answered=F("gold_answered") + 1,
        gold_correct=F("gold_correct") + (1 if correct else 0),
    )
    if not updated:
        return
    membership = ProjectMembership.objects.get(project_id=project_id, user=annotator)
    if membership.qualified_at is None and not membership.flagged:
        membership_settle_qualification(membership=membership, out_of_gold=False, now=now)
    else:
        _flag_if_below(membership)


def membership_unrecord_gold(*, project_id: int, annotator: Any, correct: bool, answered_at: datetime) -> None:
    """Take back an undone check answer given at ``answered_at``. A qualification decided at or
    after that moment may have rested on it: it is undecided again (settled by the next check
    answer, as before it), so undoing the answer that qualified keeps no qualification. One
    granted earlier (a researcher added as an annotator, an earlier window) stays."""
    members = ProjectMembership.objects.filter(project_id=project_id, user=annotator)
    members.filter(gold_answered__gt=0).update(
        gold_answered=F("gold_answered") - 1,
        gold_correct=Case(When(gold_correct__gt=0, then=F("gold_correct") - (1 if correct else 0)), default=Value(0)),
    )
    members.filter(qualified_at__gte=answered_at).update(qualified_at=None)


def membership_settle_qualification(
    *, membership: ProjectMembership | None, out_of_gold: bool, now: datetime
) -> ProjectMembership | None:
    """Pass or fail the qualification step: nothing is decided before ``QUALIFICATION_GOLD``
    check answers are in (in the current window); then at least ``GOLD_MIN_ACCURACY`` of them
    must be correct.

    When no unseen check item is left for the annotator before that: a project without any
    check item qualifies everyone (there is nothing to check); a project that has fewer check
    items in all than the minimum decides on all of them in the first window; otherwise the
    member stays undecided (``lease_next`` says they wait for more check items)."""
    if membership is None:
        return None
    min_acc = float(_cfg("GOLD_MIN_ACCURACY"))
    decision = qualification_decision(membership=membership, out_of_gold=out_of_gold)
    answers_b, required = decision.answers, decision.required
    status = policy.qualification_status(answers_b, required=required, min_accuracy=min_acc)
    if status == policy.QualificationStatus.PASSED:
        ProjectMembership.objects.filter(pk=membership.pk, qualified_at__isnull=True).update(qualified_at=now)
    elif status == policy.QualificationStatus.FAILED:
        ProjectMembership.objects.filter(pk=membership.pk).update(
            flagged=True, flag_reason=f"failed qualification: {sum(answers_b)} of {len(answers_b)} check items correct"
        )
    membership.refresh_from_db()
    return membership


def _flag_if_below(membership: ProjectMembership) -> None:
    """After qualification: flag when the Wilson upper bound of gold accuracy falls below the
    threshold (confidently bad, not just unlucky)."""
    n, k = membership.gold_answered, membership.gold_correct
    if n == 0 or membership.flagged:
        return
    low, high = agreement.wilson_interval(k, n)
    acc = agreement.Accuracy(n=n, correct=k, accuracy=k / n, ci_low=low, ci_high=high)
    threshold = float(_cfg("GOLD_MIN_ACCURACY"))
    if policy.flag_annotators(
        {membership.user_id: acc}, threshold=threshold, min_answers=max(1, int(_cfg("QUALIFICATION_GOLD")))
    ):
        ProjectMembership.objects.filter(pk=membership.pk).update(
            flagged=True, flag_reason=f"gold accuracy {k}/{n} (95% CI {low:.2f}–{high:.2f}) below {threshold:.2f}"
        )


def membership_unflag(*, membership: ProjectMembership) -> ProjectMembership:
    """A researcher clears a flag after review: a pause is lifted; a quality flag starts a fresh
    qualification window (earlier check answers no longer count toward the decision)."""
    return membership_resume(membership=membership)


# -- export provenance (registered in AnnotateConfig.ready) ---------------------------------


def export_provenance(project: Project, candidate_ids: list[int]) -> dict[int, dict[str, Any]]:
    """Per pair: how many annotators answered its real items and the share that agreed on
    the aggregated answer (the lowest over an image pair's two items)."""
    out: dict[int, dict[str, Any]] = {}
    rows = Item.objects.filter(candidate_id__in=candidate_ids, is_gold=False).values_list(
        "candidate_id", "done", "result_agreement"
    )
    for cid, done, share in rows:
        entry = out.setdefault(cid, {"annotators": 0, "agreement": None})
        entry["annotators"] = max(entry["annotators"], done)
        if share is not None:
            share = round(float(share), 4)
            entry["agreement"] = share if entry["agreement"] is None else min(entry["agreement"], share)
    return out


def export_manifest(project: Project) -> dict[str, Any]:
    return {"annotators_per_item": project.annotators_per_item}
