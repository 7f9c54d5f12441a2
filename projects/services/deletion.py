"""Deleting a project: its rows (everything hangs off ``Project`` with ``on_delete=CASCADE``)
and its files on disk.

Refused while one of its jobs is queued or running (a job would write into a project that is
gone). The files are found before the rows go: the kernel's own (uploads waiting for an import
job under ``MEDIA_ROOT/imports``, export files under ``EXPORT_DIR``) plus what the apps register
with :func:`project_files_register` at start-up (a generation run's images, the pairwise
models). Only paths inside ``MEDIA_ROOT``, ``EXPORT_DIR`` or ``MODEL_DIR`` are ever removed,
and only once the rows' transaction has committed.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import transaction

from projects.models import JOB_ACTIVE, Candidate, Example, Job, Project
from projects.services.exports import export_path, manifest_path

# (project) -> the files and folders on disk that belong to it alone
ProjectFiles = Callable[[Project], list[Path]]
_finders: list[ProjectFiles] = []


class ProjectBusy(Exception):
    """The project has a queued or running job; nothing was deleted."""


@dataclass(frozen=True)
class ProjectDeleted:
    name: str
    rows: int  # rows deleted, all tables together
    paths: int  # files and folders removed from disk


def project_files_register(finder: ProjectFiles) -> None:
    """Register an app's ``finder(project) -> [paths]`` (called once at start-up; the same
    function twice is kept once)."""
    if finder not in _finders:
        _finders.append(finder)


def _kernel_files(project: Project) -> list[Path]:
    paths: list[Path] = []
    for kind, params in Job.objects.filter(project=project, kind__in=["import", "export"]).values_list(
        "kind", "params"
    ):
        params = params or {}
        if kind == "import" and params.get("uploaded"):
            paths += [Path(p) for p in [*params.get("paths", []), params.get("archive")] if p]
    for job_id, params in Job.objects.filter(project=project, kind="export").values_list("id", "params"):
        out = export_path(job_id=job_id, format=str((params or {}).get("format", "pairs-jsonl")))
        paths += [out, manifest_path(out)]
    return paths


def project_files(project: Project) -> list[Path]:
    """Every file and folder on disk that belongs to ``project`` alone and lies inside one of
    the folders Counterpart writes to (existing or not)."""
    roots = [
        Path(r).resolve()
        for r in (settings.MEDIA_ROOT, settings.COUNTERPART["EXPORT_DIR"], settings.COUNTERPART["MODEL_DIR"])
    ]
    found: list[Path] = []
    for path in [*_kernel_files(project), *(p for finder in _finders for p in finder(project))]:
        real = Path(os.path.realpath(path))
        if any(root in real.parents for root in roots) and real not in found:
            found.append(real)
    return found


def project_delete(*, project: Project) -> ProjectDeleted:
    """Delete ``project``, its rows and its files; raises :class:`ProjectBusy` while one of its
    jobs is queued or running."""
    with transaction.atomic():
        locked = Project.objects.select_for_update().get(pk=project.pk)
        active = list(
            Job.objects.filter(project=locked, status__in=JOB_ACTIVE).order_by("pk").values_list("kind", "pk")[:5]
        )
        if active:
            running = ", ".join(f"{kind} (job {pk})" for kind, pk in active)
            raise ProjectBusy(
                f"Project {locked.name!r} has a job that is still queued or running: {running}. "
                "Wait for it to finish or cancel it, then delete the project."
            )
        paths = [p for p in project_files(locked) if p.exists()]
        # the rows that point at the project's labels (PROTECT) first, then everything else
        rows = Candidate.objects.filter(project=locked).delete()[0]
        rows += Example.objects.filter(project=locked).delete()[0]
        rows += locked.delete()[0]
        transaction.on_commit(lambda: _remove(paths))
    return ProjectDeleted(name=project.name, rows=rows, paths=len(paths))


def _remove(paths: list[Path]) -> None:
    for path in paths:
        if path.is_dir():
            shutil.rmtree(path, ignore_errors=True)
        elif path.exists():
            path.unlink(missing_ok=True)
