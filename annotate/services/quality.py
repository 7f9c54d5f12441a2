"""Aggregation at item completion, the plurality policy, gold bookkeeping and qualification.

Called inside the submit transaction (``annotate.services.assignments``); the math lives in
``annotate/ml/agreement.py`` and the decisions in ``annotate/ml/policy.py``.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.conf import settings
from django.db.models import Case, F, Value, When
from django.utils import timezone

from annotate import choices as choice_rules
from annotate.ml import agreement, policy
from annotate.models import Annotation, Item
from projects import states
from projects.models import Label, Project, ProjectMembership
from projects.services.candidates import candidate_judge_validity, candidates_transition


def _cfg(key: str) -> Any:
    counterpart: Mapping[str, Any] = settings.COUNTERPART  # a TypedDict: a str key needs this view
    return counterpart[key]


def canonical_choices(kind: str, labels: list[str]) -> list[str]:
    if kind == "caption_choice":
        return choice_rules.CAPTION_CANONICAL + choice_rules.CAPTION_EXTRA
    return [*labels, choice_rules.UNCLEAR]


# --- items ----------------------------------------------------------------------------------


def item_complete_if_ready(*, item_id: int, now: datetime | None = None) -> str | None:
    """If the item has its k answers: either ask for more (plurality policy: raise k by one
    while no choice holds ``MIN_AGREEMENT``, up to ``MAX_ANNOTATORS_PER_ITEM``) or aggregate by
    majority vote, close the item and — when the candidate's items are all closed with a label
    — give the candidate its human label through ``candidates_transition``.

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
        Item.objects.filter(pk=item_id, status="open", k=item.k).update(k=F("k") + extra)
        return "extended"
    labels = list(Label.objects.filter(project_id=item.project_id).order_by("position").values_list("name", flat=True))
    allowed = canonical_choices(item.kind, labels)
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


def _candidate_finalize(*, item: Item, result: str, share: float) -> None:
    """Set the candidate's final human label when its items are complete and agree on one."""
    if item.kind == "caption_choice":
        siblings = list(
            Item.objects.filter(candidate_id=item.candidate_id, is_gold=False).values(
                "side", "status", "result", "result_agreement"
            )
        )
        if any(s["status"] != "complete" for s in siblings):
            return
        cf = next((s for s in siblings if s["side"] == "counterfactual"), None)
        if cf is None:
            return
        result, share = cf["result"], float(cf["result_agreement"] or 0.0)
    if result == choice_rules.UNCLEAR:
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


def membership_unrecord_gold(*, project_id: int, annotator: Any, correct: bool) -> None:
    ProjectMembership.objects.filter(project_id=project_id, user=annotator, gold_answered__gt=0).update(
        gold_answered=F("gold_answered") - 1,
        gold_correct=Case(When(gold_correct__gt=0, then=F("gold_correct") - (1 if correct else 0)), default=Value(0)),
    )


def membership_settle_qualification(
    *, membership: ProjectMembership | None, out_of_gold: bool, now: datetime
) -> ProjectMembership | None:
    """Pass or fail the qualification step (``QUALIFICATION_GOLD`` gold answers with at least
    ``GOLD_MIN_ACCURACY`` correct). When the project has run out of gold items for this
    annotator, what was answered decides (nothing answered: passed, there is nothing to check)."""
    if membership is None:
        return None
    required = int(_cfg("QUALIFICATION_GOLD"))
    min_acc = float(_cfg("GOLD_MIN_ACCURACY"))
    answers = list(
        Annotation.objects.filter(project_id=membership.project_id, annotator_id=membership.user_id, is_gold=True)
        .order_by("created_at", "id")
        .values_list("correct", flat=True)[: max(required, 1)]
    )
    answers_b = [bool(a) for a in answers]
    if out_of_gold and len(answers_b) < required:
        required = len(answers_b)
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


def membership_unflag(*, membership: ProjectMembership, qualify: bool = True) -> ProjectMembership:
    """A researcher clears a flag (after review); optionally marks the annotator qualified."""
    fields: dict[str, Any] = {"flagged": False, "flag_reason": ""}
    if qualify:
        fields["qualified_at"] = timezone.now()
    ProjectMembership.objects.filter(pk=membership.pk).update(**fields)
    membership.refresh_from_db()
    return membership


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
