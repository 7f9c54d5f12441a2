"""Imports as background jobs (kind ``import``): the page, the API and ``import_data --async``.

The request only stores the upload (streamed to a file under ``MEDIA_ROOT/imports/`` by
:class:`projects.uploads.ImportFileUploadHandler`) and queues the job; the job
(:func:`import_job`) runs :func:`projects.services.imports.data_import` on it.

Guarantees (docs/operations.md, docs/data-and-formats.md):

- **The whole file is checked first** (strict mode, the default): every bad row is reported
  as ``file:line: what is wrong`` and a refused file writes nothing.
- **All or nothing.** Rows are then written in batches of ``IMPORT_BATCH_SIZE``, one
  transaction each, every row marked with the job (``Example.job``, ``Candidate.job``).
  Progress and the heartbeat are written from other connections between (never inside) the
  batches, so SQLite is never locked for long and PostgreSQL shows them at once.
  A **cancel** (checked between batches) or a **failure** removes every row the job wrote
  (:func:`import_discard`, run by the job's end hook), leaving the project as it was. A
  **killed worker** leaves the job ``running``; the stale-job sweep re-enqueues it and the new
  execution checks the file again and writes on, skipping the rows already there (imports
  are idempotent by id), so every row ends up written exactly once. A job cancelled while its
  executor was dead is cleaned up when the sweep hands it to a new execution.
- **The uploaded file is removed when the job ends** (succeeded, failed or cancelled), never
  while it may still resume. Files named on the command line (``--async``) are the user's
  and are never removed. Each import job also sweeps the upload folder of files no active
  job needs that are over ``ORPHAN_SECONDS`` old (:func:`import_uploads_sweep`).
"""

from __future__ import annotations

import contextlib
import os
import time
import uuid
import zlib
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from django.conf import settings

from projects import formats
from projects.aggregates import stats_write
from projects.formats.reading import open_data
from projects.models import JOB_ACTIVE, JOB_FINISHED, Candidate, Example, Job, Project
from projects.services.import_bundles import BundleRefused, remove_uploads, zip_unpack
from projects.services.imports import ImportRefused, ImportReport, data_import
from projects.services.jobs import JobContext, JobFailed, job_start

# What the page and the API accept: every format read from files (the CAD layouts as their
# files or a zip); a folder format (hf-datasets) is imported by the command, from its path.
UPLOAD_FORMATS = [f for f in formats.FORMATS if f not in formats.FOLDER_FORMATS]
SHOWN_PROBLEMS = 200  # problems and warnings kept in the job's result
PROGRESS_SECONDS = 1.0  # at most one progress write (and cancel check) per second
DISCARD_CHUNK = 5000
ORPHAN_SECONDS = 6 * 3600  # an upload file no active job needs is removed after this long


class ImportNotStarted(ValueError):
    """The import's settings are wrong (format, split); nothing was queued. ``field``: the
    form field the problem is about (the page shows it there), '' for the whole form."""

    def __init__(self, message: str, field: str = "") -> None:
        super().__init__(message)
        self.field = field


# Where an import's rows go (issue 32.3): ``pool`` (originals and pairs, the default) or
# ``task``: the project's task training data, which only trains the task model f. The kernel
# does not know that data's model: the labelling app registers its importer
# (``labeling.task_training.task_data_import``, the one ``import_task_data`` runs).
TARGETS = ("pool", "task")
TASK_DATA_FORMATS = [f for f in UPLOAD_FORMATS if not f.startswith("coco")]
TaskDataImporter = Callable[..., dict[str, Any]]
_task_data_importers: list[TaskDataImporter] = []


def task_data_importer_register(importer: TaskDataImporter) -> None:
    """Called once at start-up by the labelling app (a second call replaces the first)."""
    _task_data_importers[:] = [importer]


def import_upload_dir() -> Path:
    """Where uploads wait for their import job: ``MEDIA_ROOT/imports``."""
    return Path(settings.MEDIA_ROOT) / "imports"


def import_upload_path(name: str) -> Path:
    """A new, unique file under :func:`import_upload_dir` for an upload called ``name``; it
    keeps the name's extension when harmless (``.tsv`` chooses the CSV reader's delimiter)."""
    suffix = os.path.splitext(name or "")[1][:10].lower()
    if not suffix[1:].isalnum():
        suffix = ""
    directory = import_upload_dir()
    directory.mkdir(parents=True, exist_ok=True)
    return directory / f"upload-{uuid.uuid4().hex}{suffix}"


def import_start(
    *,
    project: Project,
    format: str,
    paths: list[str],
    split: str = "",
    strict: bool = True,
    label_map: dict[str, str] | None = None,
    image_base: str | None = None,
    names: dict[str, str] | None = None,
    uploaded: bool = False,
    archive: str | None = None,
    skip_hint: str = "--skip-bad-rows",
    batch_size: int | None = None,
    target: str = "pool",
    created_by: Any = None,
) -> Job:
    """Queue an ``import`` job for ``paths`` (``target``: ``pool`` or ``task``, see
    ``TARGETS``). ``names`` maps a path to the name problems show
    (an upload's own file name); ``uploaded``: the files are uploads the job removes when it
    ends; ``archive``: an uploaded zip the job unpacks into ``paths[0]`` first (a CAD
    folder, :mod:`projects.services.import_bundles`). Raises :class:`ImportNotStarted` for a
    wrong format or split (an uploaded file is removed then), and ``BrokerUnavailable`` when
    the job cannot be queued (the job is then failed and its upload removed)."""
    problem = None
    if format not in formats.FORMATS:
        problem = f"unknown format {format!r}; choose one of {', '.join(formats.FORMATS)}"
    elif msg := formats.check_split(split):
        problem = msg
    elif target not in TARGETS:
        problem = "import the rows into the pool or as the task model's training data (target: pool or task)"
    elif target == "task" and format not in TASK_DATA_FORMATS:
        problem = f"task training data is labelled text: choose one of {', '.join(TASK_DATA_FORMATS)}"
    if problem:
        if uploaded:
            import_uploads_remove([*paths, *([archive] if archive else [])])
        raise ImportNotStarted(problem)
    params = {
        "format": format,
        "paths": [str(p) for p in paths],
        "names": dict(names or {}),
        "split": split,
        "strict": strict,
        "label_map": dict(label_map or {}),
        "image_base": image_base,
        "uploaded": uploaded,
        "archive": archive,
        "skip_hint": skip_hint,
        "batch_size": batch_size,
        "target": target,
    }
    return job_start(kind="import", project=project, params=params, created_by=created_by)


def import_job(job: Job, ctx: JobContext) -> dict[str, Any]:
    """The ``import`` kind's handler (see the module docstring)."""
    assert job.project is not None
    p = job.params
    paths = [str(x) for x in p["paths"]]
    shown = _namer(p.get("names") or {})
    import_discard_leftovers(project=job.project)
    import_uploads_sweep()
    if p.get("archive"):  # a zipped CAD folder: checked again, then unpacked (again, on a resume)
        try:
            zip_unpack(
                p["archive"],
                paths[0],
                format=p["format"],
                split=p.get("split", ""),
                max_bytes=int(settings.COUNTERPART["MAX_UPLOAD_BYTES"]),
            )
        except BundleRefused as exc:
            raise JobFailed(str(exc)) from None
    if p.get("target") == "task":
        return _task_data_job(job, ctx, paths, shown)
    total = _count_lines(p["format"], paths, p.get("split", ""))
    state: dict[str, Any] = {"phase": "", "at": 0.0}

    def on_progress(phase: str, rows: int, of: int | None) -> None:
        now = time.monotonic()
        final = of is not None and rows >= of  # the end of a pass is always reported
        if phase == state["phase"] and not final and now - float(state["at"]) < PROGRESS_SECONDS:
            return
        ctx.check_cancelled()
        if phase != state["phase"]:  # shown beside the progress bar
            ctx.owned().update(result={"phase": phase})
        of = of if of is not None else total
        ctx.progress(min(rows, of), of)
        state.update(phase=phase, at=now)

    try:
        report = data_import(
            project=job.project,
            format=p["format"],
            paths=paths,
            split=p.get("split", ""),
            strict=bool(p.get("strict", True)),
            batch_size=p.get("batch_size"),
            skip_hint=p.get("skip_hint") or "--skip-bad-rows",
            label_map=p.get("label_map") or None,
            image_base=p.get("image_base"),
            job_id=job.pk,
            on_progress=on_progress,
        )
    except ImportRefused as exc:
        problems = [shown(x) for x in exc.problems[:SHOWN_PROBLEMS]]
        ctx.owned().update(result={"problems": problems, "problem_count": len(exc.problems)})
        raise JobFailed(shown(str(exc))) from None
    ctx.check_cancelled()  # the last moment a cancel is honoured (it then removes every row)
    return import_summary(report, shown)


def import_summary(report: ImportReport, shown: Callable[[str], str] = str) -> dict[str, Any]:
    """An ``import`` job's result (``shown``: how a file is named in it)."""
    return {
        "imported_originals": report.imported_originals,
        "imported_pairs": report.imported_pairs,
        "skipped": report.skipped,
        "problem_count": report.problem_count,
        "problems": [shown(x) for x in report.problems[:SHOWN_PROBLEMS]],
        "warning_count": report.warning_count,
        "warnings": [shown(x) for x in report.warnings[:SHOWN_PROBLEMS]],
        "summary": report.summary(),
    }


def _task_data_job(job: Job, ctx: JobContext, paths: list[str], shown: Callable[[str], str]) -> dict[str, Any]:
    """An import whose rows are the task model's training data (``target: task``)."""
    from django.core.exceptions import ValidationError

    if not _task_data_importers:
        raise JobFailed("task training data cannot be imported: the labelling app is not installed")
    p = job.params
    ctx.progress(0, 1)
    try:
        out = _task_data_importers[0](
            project=job.project,
            format=p["format"],
            paths=paths,
            split=p.get("split", ""),
            label_map=p.get("label_map") or None,
        )
    except ValidationError as exc:
        raise JobFailed(shown(" ".join(exc.messages))) from None
    ctx.progress(1, 1)
    problems = [shown(x) for x in out.get("problem_messages", [])[:SHOWN_PROBLEMS]]
    summary = (
        f"imported {out['imported']} task training examples ({out['duplicates']} already there, "
        f"{out['problems']} rows with problems); they train the task model f only: never routed, exported or "
        "counted in the pool"
    )
    return {
        "target": "task",
        "imported_task_examples": out["imported"],
        "duplicates": out["duplicates"],
        "problem_count": out["problems"],
        "problems": problems,
        "summary": summary,
    }


def import_job_end(job_id: int, status: str) -> None:
    """The ``import`` kind's end hook: unless it succeeded, remove every row the job wrote;
    then remove its uploaded file(s). Safe to run again."""
    job = Job.objects.filter(pk=job_id).first()
    if job is None:
        return
    if status != "succeeded":
        import_discard(job_id=job_id)
    if job.params.get("uploaded"):
        archive = job.params.get("archive")
        import_uploads_remove([*(job.params.get("paths") or []), *([archive] if archive else [])])


def import_discard(*, job_id: int) -> int:
    """Delete the rows the import job ``job_id`` wrote (its candidates, then its originals),
    a chunk per transaction; returns how many rows were deleted."""
    deleted = 0
    for model in (Candidate, Example):
        while True:
            ids = list(model.objects.filter(job_id=job_id).order_by().values_list("pk", flat=True)[:DISCARD_CHUNK])
            if not ids:
                break
            with stats_write() as stats:
                rows = model.objects.filter(pk__in=ids)
                by_project = Counter(rows.values_list("project_id", flat=True))
                stats.lock(by_project)
                # the aggregates lose the rows deleted (an original takes its candidates along)
                stats.removed(Candidate.objects.filter(**{"pk__in" if model is Candidate else "example_id__in": ids}))
                for pid, n in by_project.items():
                    stats.examples(pid, -n if model is Example else 0)
                deleted += model.objects.filter(pk__in=ids).delete()[1].get(model._meta.label, 0)
    return deleted


def import_discard_leftovers(*, project: Project) -> int:
    """Remove rows of the project's import jobs that ended without succeeding but kept rows
    (their end hook was cut short, e.g. the worker was killed in between)."""
    ended = Job.objects.filter(project=project, kind="import", status__in=[s for s in JOB_FINISHED if s != "succeeded"])
    left = set(Candidate.objects.filter(project=project, job__in=ended).values_list("job_id", flat=True).distinct())
    left |= set(Example.objects.filter(project=project, job__in=ended).values_list("job_id", flat=True).distinct())
    return sum(import_discard(job_id=j) for j in left if j is not None)


def import_uploads_sweep(*, older_than: float = ORPHAN_SECONDS) -> list[str]:
    """Remove files in the upload folder that no queued or running import job needs and that
    are older than ``older_than`` seconds (an upload still arriving, or just handed to its
    job, is younger): what a web process killed mid-upload, or a worker killed between a
    job's end and its clean-up, left behind. Returns the files removed."""
    folder = import_upload_dir()
    if not folder.is_dir():
        return []
    needed = {
        os.path.realpath(path)
        for params in Job.objects.filter(kind="import", status__in=JOB_ACTIVE).values_list("params", flat=True)
        for path in [*(params or {}).get("paths", []), (params or {}).get("archive") or ""]
        if path
    }
    cutoff = time.time() - older_than
    removed = []
    for entry in folder.iterdir():
        real = os.path.realpath(entry)
        with contextlib.suppress(FileNotFoundError):
            if real not in needed and entry.stat().st_mtime < cutoff and (entry.is_file() or entry.is_dir()):
                import_uploads_remove([real])
                removed.append(real)
    return removed


def import_uploads_remove(paths: list[str]) -> None:
    """Remove uploaded files and staged folders, and only those inside the upload folder."""
    remove_uploads(paths, root=import_upload_dir())


def _namer(names: dict[str, str]) -> Any:
    def shown(text: str) -> str:
        for path, name in names.items():
            text = text.replace(path, name)
        return text

    return shown


def _count_lines(format: str, paths: list[str], split: str) -> int:
    """Lines in the data files (a cheap byte scan; the total before rows are counted)."""
    try:
        files = formats.input_files(format, paths, split=split)
    except formats.FormatError:
        return 0  # data_import reports it
    n = 0
    for name in files:
        try:
            with open_data(name) as fh:
                chunk = b""
                while block := fh.read(1 << 20):
                    n += block.count(b"\n")
                    chunk = block
                n += 1 if chunk and not chunk.endswith(b"\n") else 0
        except (OSError, EOFError, zlib.error):
            continue
    return n
