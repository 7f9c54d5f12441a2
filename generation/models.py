"""Generation runs. A run is a ``projects.Job`` of kind ``generation`` (its status, progress,
error and timestamps live on the job, the one background-job mechanism) plus what only a
generation run has: the generator, its options, skips and quality metrics."""

from __future__ import annotations

from typing import Any, ClassVar

from django.db import models

from projects.models import Job, Project


class GenerationRun(models.Model):
    job = models.OneToOneField(Job, on_delete=models.CASCADE, related_name="generation_run")
    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="generation_runs")
    generator = models.CharField(max_length=64)
    options = models.JSONField(default=dict, blank=True)
    skipped = models.PositiveIntegerField(default=0)
    metrics = models.JSONField(default=dict, blank=True)
    skips = models.JSONField(default=list, blank=True, help_text="[{example, reason}] (first 1000)")

    class Meta:
        ordering: ClassVar[list[str]] = ["-job__created_at", "-id"]

    def refresh_from_db(self, *args: Any, **kwargs: Any) -> None:
        """Reload the run and drop the cached job, so the lifecycle read through it is fresh."""
        super().refresh_from_db(*args, **kwargs)
        self._state.fields_cache.pop("job", None)

    # The job's lifecycle, read through the run (templates, serializers, callers).
    @property
    def status(self) -> str:
        return self.job.status

    @property
    def done(self) -> int:
        return self.job.done

    @property
    def total(self) -> int:
        return self.job.total

    @property
    def error(self) -> str:
        return self.job.error

    @property
    def cancel_requested(self) -> bool:
        return self.job.cancel_requested

    @property
    def created_by(self) -> Any:
        return self.job.created_by

    @property
    def created_at(self) -> Any:
        return self.job.created_at

    @property
    def started_at(self) -> Any:
        return self.job.started_at

    @property
    def finished_at(self) -> Any:
        return self.job.finished_at
