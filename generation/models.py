"""Projects, their label sets, originals (examples), counterfactual candidates and
generation runs. Models hold fields and constraints only; writes live in services."""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q

from generation import states

TASKS = ["sentiment", "nli", "paraphrase", "boolean-qa", "image-caption"]

# Default label sets and text fields per task (a project may override both).
TASK_DEFAULTS: dict[str, dict[str, list[str]]] = {
    "sentiment": {"labels": ["negative", "positive"], "fields": ["text"]},
    "nli": {"labels": ["entailment", "neutral", "contradiction"], "fields": ["premise", "hypothesis"]},
    "paraphrase": {"labels": ["not_paraphrase", "paraphrase"], "fields": ["sentence1", "sentence2"]},
    "boolean-qa": {"labels": ["false", "true"], "fields": ["passage", "question"]},
    "image-caption": {"labels": ["caption_a", "caption_b", "both", "neither"], "fields": ["caption"]},
}

LABEL_SOURCES = ["human", "auto", "gold", "imported"]


class Project(models.Model):
    name = models.CharField(max_length=200, unique=True)
    task = models.CharField(max_length=32, choices=[(t, t) for t in TASKS])
    text_fields = models.JSONField(help_text="ordered list of the task's text field names")
    human_budget = models.FloatField(default=0.10)
    annotators_per_item = models.PositiveSmallIntegerField(default=3)
    description = models.TextField(blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=Q(task__in=TASKS), name="project_task_valid"
            ),
            models.CheckConstraint(
                condition=Q(human_budget__gte=0) & Q(human_budget__lte=1), name="project_budget_0_1"
            ),
            models.CheckConstraint(condition=Q(annotators_per_item__gte=1), name="project_k_ge_1"),
        ]

    def __str__(self) -> str:
        return self.name


class Label(models.Model):
    """One label of a project's ordered label set. Every label column points here, so the
    database itself refuses a label that is not in the project's set."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="labels")
    name = models.CharField(max_length=64)
    position = models.PositiveSmallIntegerField()

    class Meta:
        ordering = ["project_id", "position"]
        constraints = [
            models.UniqueConstraint(fields=["project", "name"], name="label_unique_name"),
            models.UniqueConstraint(fields=["project", "position"], name="label_unique_position"),
        ]

    def __str__(self) -> str:
        return self.name


class Example(models.Model):
    """An original: its text fields (and image for image-caption), gold label, source, split."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="examples")
    external_id = models.CharField(max_length=200)
    fields = models.JSONField()
    image = models.CharField(max_length=500, blank=True, default="")
    label = models.ForeignKey(Label, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    source = models.CharField(max_length=200, blank=True, default="")
    split = models.CharField(max_length=32, blank=True, default="")
    meta = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "external_id"], name="example_unique_id"),
        ]

    def __str__(self) -> str:
        return self.external_id


RUN_STATUSES = ["queued", "running", "succeeded", "failed", "cancelled"]


class GenerationRun(models.Model):

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="generation_runs")
    generator = models.CharField(max_length=64)
    options = models.JSONField(default=dict, blank=True)
    status = models.CharField(max_length=16, default="queued", choices=[(s, s) for s in RUN_STATUSES])
    total = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0)
    cancel_requested = models.BooleanField(default=False)
    metrics = models.JSONField(default=dict, blank=True)
    skips = models.JSONField(default=list, blank=True, help_text="[{example, reason}] (first 1000)")
    error = models.TextField(blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(condition=Q(status__in=RUN_STATUSES), name="run_status_valid"),
        ]


class Candidate(models.Model):
    """A counterfactual pair: the original (``example``) and its edited copy."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="candidates")
    external_id = models.CharField(max_length=200)
    example = models.ForeignKey(Example, on_delete=models.CASCADE, related_name="candidates")
    group = models.CharField(max_length=200, blank=True, default="")
    fields = models.JSONField()
    image = models.CharField(max_length=500, blank=True, default="", help_text="image of the counterfactual caption")
    generator = models.CharField(max_length=64, blank=True, default="")
    perturbation = models.CharField(max_length=32, blank=True, default="")
    target_label = models.ForeignKey(Label, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    scores = models.JSONField(default=dict, blank=True)
    state = models.CharField(max_length=16, default=states.POOLED, choices=[(s, s) for s in states.STATES])
    # The final label and where it came from.
    label = models.ForeignKey(Label, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    label_source = models.CharField(max_length=16, blank=True, default="")
    confidence = models.FloatField(null=True, blank=True)
    # A known answer (e.g. CAD's human-written label): used for gold checks and evaluation,
    # never shown to annotators or the pairwise classifier unless routed as gold.
    gold_label = models.ForeignKey(Label, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    generation_run = models.ForeignKey(
        GenerationRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="candidates"
    )
    meta = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["project", "external_id"], name="candidate_unique_id"),
            models.CheckConstraint(condition=Q(state__in=states.STATES), name="candidate_state_valid"),
            models.CheckConstraint(
                condition=Q(label_source__in=["", *LABEL_SOURCES]), name="candidate_label_source_valid"
            ),
            models.CheckConstraint(
                condition=Q(confidence__isnull=True) | (Q(confidence__gte=0) & Q(confidence__lte=1)),
                name="candidate_confidence_0_1",
            ),
            # A final label always has a source, and labelled states always have a label.
            models.CheckConstraint(
                condition=Q(label__isnull=True, label_source="") | (Q(label__isnull=False) & ~Q(label_source="")),
                name="candidate_label_has_source",
            ),
            models.CheckConstraint(
                condition=~Q(state__in=[states.HUMAN_LABELED, states.AUTO_LABELED]) | Q(label__isnull=False),
                name="candidate_labeled_state_has_label",
            ),
        ]
        indexes = [
            models.Index(fields=["project", "state"], name="candidate_project_state"),
            models.Index(fields=["example"], name="candidate_example"),
        ]

    def __str__(self) -> str:
        return self.external_id
