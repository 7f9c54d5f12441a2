"""Pairwise classifiers (h) trained on human labels, and their auto-labelling runs."""

from __future__ import annotations

from typing import ClassVar

from django.conf import settings
from django.db import models
from django.db.models import Q

from projects.models import Project

MODES = ["pc", "capc"]


class PairwiseModel(models.Model):
    """One trained h (and, for CAPC, its base classifier f), saved with joblib under
    ``COUNTERPART["MODEL_DIR"]``, with its cross-validated quality."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="pairwise_models")
    mode = models.CharField(max_length=8, choices=[(m, m) for m in MODES])
    version = models.PositiveIntegerField()
    base_classifier = models.CharField(max_length=16, default="minilm")
    warm_start = models.CharField(max_length=500, blank=True, default="", help_text="FORMAT:PATH[:SPLIT]")
    n_train = models.PositiveIntegerField(help_text="human-labelled pairs h was trained on")
    n_warm = models.PositiveIntegerField(default=0, help_text="warm-start pairs")
    n_originals = models.PositiveIntegerField(default=0, help_text="originals f was trained on")
    label_counts = models.JSONField(default=dict, blank=True)
    cv_accuracy = models.FloatField()
    cv_macro_f1 = models.FloatField()
    cv_ece = models.FloatField()
    cv_folds = models.PositiveSmallIntegerField(default=5)
    threshold = models.FloatField(help_text="h abstains below this confidence")
    metrics = models.JSONField(default=dict, blank=True)
    path = models.CharField(max_length=1000)
    seconds = models.FloatField(default=0.0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering: ClassVar[list[str]] = ["project_id", "-version"]
        get_latest_by = "version"
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(fields=["project", "version"], name="pairwise_model_unique_version"),
            models.CheckConstraint(condition=Q(mode__in=MODES), name="pairwise_model_mode_valid"),
            models.CheckConstraint(
                condition=Q(threshold__gte=0) & Q(threshold__lte=1), name="pairwise_model_threshold_0_1"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.project} h v{self.version} ({self.mode})"


class AutolabelRun(models.Model):
    """One application of a PairwiseModel to a project's unlabelled candidates."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="autolabel_runs")
    model = models.ForeignKey(PairwiseModel, on_delete=models.CASCADE, related_name="runs")
    min_confidence = models.FloatField()
    considered = models.PositiveIntegerField(default=0)
    auto_labeled = models.PositiveIntegerField(default=0)
    abstained = models.PositiveIntegerField(default=0)
    skipped = models.PositiveIntegerField(default=0, help_text="changed state meanwhile; left alone")
    known_answers = models.PositiveIntegerField(
        default=0, help_text="candidates it auto-labelled whose answer is known (a gold label)"
    )
    known_correct = models.PositiveIntegerField(default=0, help_text="of those, how many h labelled as the answer")
    seconds = models.FloatField(default=0.0)
    created_at = models.DateTimeField(auto_now_add=True)
    job = models.OneToOneField(
        "projects.Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="autolabel_run"
    )
    cursor = models.PositiveBigIntegerField(
        default=0, help_text="the last example whose candidates are committed (a resumed run goes on after it)"
    )
    finished = models.BooleanField(default=True, help_text="False while the run is under way (or was killed)")

    class Meta:
        ordering: ClassVar[list[str]] = ["-created_at"]
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.CheckConstraint(
                condition=Q(min_confidence__gte=0) & Q(min_confidence__lte=1), name="autolabel_run_min_conf_0_1"
            ),
        ]

    @property
    def known_accuracy(self) -> float | None:
        """h's accuracy on the candidates this run labelled whose answer is known; ``None``
        when it labelled none."""
        return self.known_correct / self.known_answers if self.known_answers else None


class TaskTrainingExample(models.Model):
    """A labelled example imported only to train the project's task model f (issue 26). Kept
    apart from the pool: never an Example or a Candidate, so never routed, exported, counted in
    the aggregates or shown in the data browser. ``text_key`` is the normalised text hash of its
    fields in the project's field order (``projects.ml.textkeys.text_hash``)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="task_training_examples")
    fields = models.JSONField()
    label = models.CharField(max_length=64)
    source = models.CharField(max_length=200, blank=True, default="")
    text_key = models.CharField(max_length=40)
    batch = models.CharField(max_length=200, blank=True, default="", help_text="the imported file's name")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(fields=["project", "text_key", "label"], name="task_example_unique_text_label"),
        ]
        indexes: ClassVar[list[models.Index]] = [models.Index(fields=["project", "text_key"])]

    def __str__(self) -> str:
        return f"{self.project} task example {self.pk} ({self.label})"


class TaskModel(models.Model):
    """One trained task model f: a Hugging Face folder under ``COUNTERPART["TASK_MODEL_DIR"]``
    (shared between projects with the same base, data and hyperparameters: the cache key)."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="task_models")
    base = models.CharField(max_length=1000)
    key = models.CharField(max_length=64)
    path = models.CharField(max_length=1000)
    cached = models.BooleanField(default=False, help_text="found in the cache: nothing was trained")
    n_train = models.PositiveIntegerField(default=0)
    n_held_out = models.PositiveIntegerField(default=0)
    n_stripped = models.PositiveIntegerField(default=0, help_text="task training examples left out: pool overlap")
    held_out_accuracy = models.FloatField(null=True, blank=True)
    metrics = models.JSONField(default=dict, blank=True)
    seconds = models.FloatField(default=0.0)
    device = models.CharField(max_length=32, blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering: ClassVar[list[str]] = ["project_id", "-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.project} task model {self.key}"
