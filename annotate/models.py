"""Who annotates which project, and the annotation items, assignments (leases) and answers.

The "at most k annotations per item" rule lives in the database, not in Python:

* ``Item.taken`` counts the item's live slots (leased + submitted assignments). It only ever
  moves through conditional UPDATEs (``… SET taken = taken + 1 WHERE taken < k``) and a CHECK
  constraint ``0 <= taken <= k`` refuses anything else, whatever the code path.
* An annotator holds at most one assignment per item (unique ``(item, annotator)``), so no one
  ever gets the same item twice, and an answer is one-to-one with its assignment and unique per
  ``(item, annotator)``, so a double submit cannot store two answers.
* An answer is only written by the transaction that moves its assignment ``leased → submitted``
  (conditional on the lease being live); expiring a lease moves ``leased → expired`` and gives
  the slot back in the same transaction. Both are conditional UPDATEs on the same row, so only
  one can win. Hence answers per item ≤ submitted slots ≤ taken ≤ k.
"""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from annotate.kinds import ITEM_KINDS
from projects.models import Candidate, Project

ITEM_SIDES = ["", "original", "counterfactual"]  # which image of an image pair (caption items)
ITEM_STATUSES = ["open", "complete"]
ASSIGNMENT_STATUSES = ["leased", "submitted", "skipped", "expired"]


class Item(models.Model):
    """One thing an annotator answers: a candidate (task-label) or one image of an image pair
    (caption-choice). Gold items carry a known answer and are served as checks."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="items")
    candidate = models.ForeignKey(Candidate, on_delete=models.CASCADE, related_name="items")
    kind = models.CharField(max_length=16, choices=[(k, k) for k in ITEM_KINDS])
    side = models.CharField(max_length=16, blank=True, default="", choices=[(s, s) for s in ITEM_SIDES])
    is_gold = models.BooleanField(default=False)
    gold_choice = models.CharField(max_length=64, blank=True, default="")
    k = models.PositiveIntegerField(help_text="annotations wanted (raised on disagreement)")
    taken = models.PositiveIntegerField(default=0, help_text="live slots: leased + submitted")
    done = models.PositiveIntegerField(default=0, help_text="submitted answers")
    status = models.CharField(max_length=16, default="open", choices=[(s, s) for s in ITEM_STATUSES])
    priority = models.PositiveIntegerField(help_text="random key: the order in which new items open")
    result = models.CharField(max_length=64, blank=True, default="", help_text="aggregated choice")
    result_agreement = models.FloatField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering: ClassVar[list[str]] = ["id"]
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(fields=["candidate", "side"], name="item_unique_candidate_side"),
            models.CheckConstraint(condition=Q(taken__lte=F("k")), name="item_taken_le_k"),
            models.CheckConstraint(condition=Q(done__lte=F("taken")), name="item_done_le_taken"),
            models.CheckConstraint(condition=Q(kind__in=ITEM_KINDS), name="item_kind_valid"),
            models.CheckConstraint(condition=Q(status__in=ITEM_STATUSES), name="item_status_valid"),
            models.CheckConstraint(condition=Q(k__gte=1), name="item_k_ge_1"),
        ]
        indexes: ClassVar[list[models.Index]] = [
            # next-item: breadth-first (most-started first), then the random key. Partial, so
            # finished items and gold items never slow it down, whatever the pool size.
            models.Index(
                F("project"),
                F("taken").desc(),
                F("priority"),
                condition=Q(status="open", is_gold=False, taken__lt=F("k")),
                name="item_next_open",
            ),
            models.Index(fields=["project", "priority"], condition=Q(is_gold=True), name="item_next_gold"),
            models.Index(fields=["project", "status"], name="item_project_status"),
        ]


class Assignment(models.Model):
    """A lease of one item to one annotator; after the answer, the record of who did what."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="assignments")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments")
    status = models.CharField(max_length=16, default="leased", choices=[(s, s) for s in ASSIGNMENT_STATUSES])
    display_order = models.JSONField(help_text="canonical choices in the order this annotator sees them")
    leased_at = models.DateTimeField(auto_now_add=True)
    expires_at = models.DateTimeField()
    finished_at = models.DateTimeField(null=True, blank=True)
    skip_reason = models.CharField(max_length=300, blank=True, default="")

    class Meta:
        ordering: ClassVar[list[str]] = ["id"]
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(fields=["item", "annotator"], name="assignment_unique_item_annotator"),
            models.CheckConstraint(condition=Q(status__in=ASSIGNMENT_STATUSES), name="assignment_status_valid"),
        ]
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["annotator", "project", "status"], name="assignment_mine"),
            models.Index(fields=["expires_at"], condition=Q(status="leased"), name="assignment_live_expiry"),
        ]


class Annotation(models.Model):
    """One answer. ``choice`` is canonical (a label name, ``unclear``, or for caption items
    ``caption_a`` = the original's caption / ``caption_b`` = the counterfactual's caption /
    ``both`` / ``neither``); ``shown_choice`` is what the annotator pressed, and
    ``display_order`` the order they saw, so the mapping can be audited."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="+")
    assignment = models.OneToOneField(Assignment, on_delete=models.CASCADE, related_name="annotation")
    item = models.ForeignKey(Item, on_delete=models.CASCADE, related_name="annotations")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="annotations")
    choice = models.CharField(max_length=64)
    shown_choice = models.CharField(max_length=64)
    display_order = models.JSONField()
    duration_ms = models.PositiveIntegerField(null=True, blank=True, help_text="active time on the item")
    is_gold = models.BooleanField(default=False)
    correct = models.BooleanField(null=True, blank=True, help_text="gold items: matched the known answer")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering: ClassVar[list[str]] = ["id"]
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(fields=["item", "annotator"], name="annotation_unique_item_annotator"),
        ]
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["project", "is_gold"], name="annotation_project_gold"),
            models.Index(fields=["annotator", "created_at"], name="annotation_annotator_time"),
        ]
