"""The kernel's models: projects, their label sets, originals (examples), counterfactual
candidates, who belongs to which project, and background jobs.

Models hold fields, constraints and small derived properties only; writes live in
``projects/services/``. The tables keep the names they had before the kernel moved out of
``generation``/``annotate`` (``db_table``), so existing databases migrate in place."""

from __future__ import annotations

from typing import Any, ClassVar

from django.conf import settings
from django.db import models
from django.db.models import F, Q

from projects import states

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
        db_table = "generation_project"
        ordering: ClassVar[list[str]] = ["name"]
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.CheckConstraint(condition=Q(task__in=TASKS), name="project_task_valid"),
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
        db_table = "generation_label"
        ordering: ClassVar[list[str]] = ["project_id", "position"]
        constraints: ClassVar[list[models.BaseConstraint]] = [
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
    # The import job that created it (rows of an import that is cancelled or fails are removed
    # by it; see projects/services/imports.py); empty for originals from the command line.
    job = models.ForeignKey("Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="examples")
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        db_table = "generation_example"
        ordering: ClassVar[list[str]] = ["id"]
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(fields=["project", "external_id"], name="example_unique_id"),
        ]
        # the project's splits are read one index probe each (projects.selectors.example_splits)
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["project", "split"], name="example_project_split")
        ]

    def __str__(self) -> str:
        return self.external_id


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
    # The job that produced it: a generation run's job, or the import job that wrote it (empty
    # for pairs imported by the synchronous command).
    job = models.ForeignKey("Job", null=True, blank=True, on_delete=models.SET_NULL, related_name="candidates")
    meta = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "generation_candidate"
        ordering: ClassVar[list[str]] = ["id"]
        constraints: ClassVar[list[models.BaseConstraint]] = [
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
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["project", "state"], name="candidate_project_state"),
            models.Index(fields=["example"], name="candidate_example"),
            # The data browser pages by id (keyset), over all of a project's candidates or one state.
            models.Index(fields=["project", "id"], name="candidate_project_id"),
            models.Index(fields=["project", "state", "id"], name="candidate_project_state_id"),
        ]

    def __str__(self) -> str:
        return self.external_id


class ProjectStats(models.Model):
    """The header of a project's candidate aggregates (``CandidateCount`` rows): how many
    originals it has, a ``version`` bumped on every write that changes its candidates, and
    ``stale`` when the cells must be recounted before they are read (a row created by a write
    that found none, or a write path that does not keep them). Written only by
    ``projects/aggregates.py``; its row is also the lock that serializes those writes."""

    project = models.OneToOneField(Project, primary_key=True, on_delete=models.CASCADE, related_name="stats")
    n_examples = models.BigIntegerField(default=0)
    version = models.BigIntegerField(default=0)
    stale = models.BooleanField(default=True)
    computed_at = models.DateTimeField(null=True, blank=True, help_text="last full recount")
    updated_at = models.DateTimeField(auto_now=True)


# The columns a CandidateCount cell is keyed by (after its project).
CELL_KEY = (
    "state",
    "label_source",
    "perturbation",
    "generator",
    "original_label_id",
    "target_label_id",
    "label_id",
    "gold",
)


class CandidateCount(models.Model):
    """How many of a project's candidates share one combination of the columns the project
    page and the dashboard count by (a cell of the project's count cube). Label columns hold
    the ``Label`` id, or 0 for none (so that the unique constraint also covers "none");
    ``original_label_id`` is the original's (``Example``) label. Kept equal to a full recount
    by ``projects/aggregates.py``."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="candidate_counts")
    state = models.CharField(max_length=16)
    label_source = models.CharField(max_length=16, blank=True, default="")
    perturbation = models.CharField(max_length=32, blank=True, default="")
    generator = models.CharField(max_length=64, blank=True, default="")
    original_label_id = models.BigIntegerField(default=0)
    target_label_id = models.BigIntegerField(default=0)
    label_id = models.BigIntegerField(default=0)
    gold = models.BooleanField(default=False, help_text="the candidates carry a known (gold) label")
    n = models.BigIntegerField(default=0)

    class Meta:
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(
                fields=["project", *CELL_KEY],
                name="candidatecount_cell_unique",
            ),
        ]


MEMBER_ROLES = ["annotator", "researcher"]
PAUSE_REASON_PREFIX = "paused by"  # a pause is a flag with this reason (projects/services/memberships.py)


class ProjectMembership(models.Model):
    """Who works on which project, as what (``role``: an annotator annotates it; a researcher
    membership records who runs the project — researchers may open every project whatever
    their memberships). Quality bookkeeping (gold answers, qualification, flags)
    is updated with F() expressions by ``annotate`` when a gold answer is saved, so that
    next-item never has to count over the annotation table."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=16, default="annotator", choices=[(r, r) for r in MEMBER_ROLES])
    created_at = models.DateTimeField(auto_now_add=True)
    gold_answered = models.PositiveIntegerField(default=0)
    gold_correct = models.PositiveIntegerField(default=0)
    qualified_at = models.DateTimeField(null=True, blank=True)
    flagged = models.BooleanField(default=False)
    flag_reason = models.CharField(max_length=300, blank=True, default="")
    gold_window_start = models.DateTimeField(
        null=True,
        blank=True,
        help_text="qualification counts only check answers given after this (set when a flag is cleared)",
    )

    class Meta:
        db_table = "annotate_projectmembership"
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.UniqueConstraint(fields=["project", "user"], name="membership_unique"),
            models.CheckConstraint(condition=Q(gold_correct__lte=F("gold_answered")), name="membership_gold_le"),
            models.CheckConstraint(condition=Q(role__in=MEMBER_ROLES), name="membership_role_valid"),
        ]

    @property
    def paused(self) -> bool:
        """Paused by a researcher (rather than flagged by the quality checks)."""
        return self.flagged and self.flag_reason.startswith(PAUSE_REASON_PREFIX)


class LabelOverride(models.Model):
    """A researcher's relabelling of one candidate, kept as a record of who, when and what it
    replaced. The candidate itself then carries the new label with ``label_source="human"``
    and state ``human_labeled`` (the pairs-jsonl contract knows no other source), so the
    override wins over auto labels and is never re-labelled by a later auto-label run."""

    candidate = models.ForeignKey(Candidate, on_delete=models.CASCADE, related_name="overrides")
    label = models.ForeignKey(Label, on_delete=models.PROTECT, related_name="+")
    previous_label = models.ForeignKey(Label, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    previous_source = models.CharField(max_length=16, blank=True, default="")
    previous_state = models.CharField(max_length=16)
    previous_confidence = models.FloatField(null=True, blank=True)
    note = models.CharField(max_length=500, blank=True, default="")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering: ClassVar[list[str]] = ["-created_at", "-id"]
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["candidate", "-created_at"], name="override_candidate_time")
        ]


JOB_KINDS = ["generation", "train", "autolabel", "route", "export", "evaluate", "import", "task_model"]
JOB_STATUSES = ["queued", "running", "succeeded", "failed", "cancelled"]
JOB_ACTIVE = ("queued", "running")
JOB_FINISHED = ("succeeded", "failed", "cancelled")


class Job(models.Model):
    """One long operation, run by a Celery worker (see ``projects/services/jobs.py``).

    ``heartbeat_at`` is refreshed by the worker while the job runs; a running job whose
    heartbeat is stale (the whole worker was killed) is re-enqueued by the periodic sweep and
    resumes. ``attempts`` counts executions; ``token`` names the execution that owns the job
    right now, so a superseded execution can tell it must stop."""

    kind = models.CharField(max_length=16, choices=[(k, k) for k in JOB_KINDS])
    project = models.ForeignKey(Project, null=True, blank=True, on_delete=models.CASCADE, related_name="jobs")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    status = models.CharField(max_length=16, default="queued", choices=[(s, s) for s in JOB_STATUSES])
    params = models.JSONField(default=dict, blank=True, help_text="the job's arguments")
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    result = models.JSONField(default=dict, blank=True, help_text="summary written when the job ends")
    step = models.JSONField(
        default=dict,
        blank=True,
        help_text="the current step of a job of several (name, index, count, done, total, unit, started_at): "
        "progress inside a long step and its rate",
    )
    error = models.TextField(blank=True, default="")
    cancel_requested = models.BooleanField(default=False)
    attempts = models.PositiveSmallIntegerField(default=0)
    token = models.CharField(max_length=32, blank=True, default="")
    created_at = models.DateTimeField(auto_now_add=True)
    enqueued_at = models.DateTimeField(null=True, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering: ClassVar[list[str]] = ["-created_at", "-id"]
        constraints: ClassVar[list[models.BaseConstraint]] = [
            models.CheckConstraint(condition=Q(kind__in=JOB_KINDS), name="job_kind_valid"),
            models.CheckConstraint(condition=Q(status__in=JOB_STATUSES), name="job_status_valid"),
        ]
        indexes: ClassVar[list[models.Index]] = [
            models.Index(fields=["status", "heartbeat_at"], name="job_status_heartbeat"),
            models.Index(fields=["project", "kind", "-created_at"], name="job_project_kind"),
        ]

    def __str__(self) -> str:
        return f"{self.kind} job {self.pk} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in JOB_FINISHED

    @property
    def result_rows(self) -> list[tuple[str, Any]]:
        """The result's (key, value) pairs, for templates: ``job.result.items`` would look up a
        result key called "items" (routing writes one) instead of calling ``dict.items``."""
        return list(self.result.items()) if isinstance(self.result, dict) else []
