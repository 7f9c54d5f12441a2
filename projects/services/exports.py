"""Exporting a project's pairs (``python manage.py export``).

``pairs-jsonl`` is FORMATS.md §1: ``counterfactual.label`` is the final label with its
``label_source`` and ``confidence``; a candidate without a final label but with a known
(gold) answer is written with that answer and ``label_source: "gold"``. When a candidate has
both, the gold answer goes to the optional ``counterfactual.gold_label``. The exporter also
writes the optional keys ``original.id``, ``original.split``, ``original.source``,
``original.meta`` and ``counterfactual.scores`` so that an export re-imports to the same
data (import -> export -> import -> export gives the same bytes). ``csv`` has the same
content in columns (see :mod:`projects.formats.tabular`). ``hf-datasets`` is a directory written
by Hugging Face ``datasets``' ``save_to_disk`` (:mod:`projects.formats.hf`: ClassLabel label
columns, provenance columns); ``coco-cf`` (image-caption projects) is the COCO-Counterfactuals
``metadata.jsonl`` with the pair images copied beside it (:func:`projects.formats.coco.write_cf`).

Only pairs are exported (originals without candidates are not). Rows come in candidate id
order, i.e. in the order they were imported or generated. The candidate's *state* is not
written; re-importing derives it from the label source (pooled, human_labeled, auto_labeled).
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.db.models import Q, QuerySet

from projects import formats, states
from projects.formats import OriginalRecord, PairRecord
from projects.formats.reading import LABEL_SOURCES
from projects.models import Candidate, Job, Label, Project
from projects.services.jobs import JobContext, JobFailed, job_start

EXPORT_FORMATS = ["pairs-jsonl", "csv", "hf-datasets", "coco-cf"]
# Formats written as a directory (``out`` is the directory to create), not a single file.
DIRECTORY_FORMATS = ("hf-datasets", "coco-cf")


class ExportError(ValueError):
    pass


def candidates_for_export(
    *,
    project: Project,
    state: list[str] | None = None,
    label_source: list[str] | None = None,
    min_confidence: float | None = None,
    split: list[str] | None = None,
) -> QuerySet[Candidate]:
    """The project's candidates matching the filters, in id order, with their originals.

    ``label_source`` filters on the exported label's source: a final label's source, or
    ``gold`` for a candidate whose only label is its known answer."""
    qs = Candidate.objects.filter(project=project).select_related("example").order_by("id")
    if state:
        unknown = sorted(set(state) - set(states.STATES))
        if unknown:
            raise ExportError(f"unknown state(s) {', '.join(unknown)}; choose from {', '.join(states.STATES)}")
        qs = qs.filter(state__in=state)
    if label_source:
        unknown = sorted(set(label_source) - set(LABEL_SOURCES) - {"none"})
        if unknown:
            raise ExportError(
                f"unknown label source(s) {', '.join(unknown)}; choose from {', '.join(LABEL_SOURCES)}, none"
            )
        q = Q(label__isnull=False, label_source__in=label_source)
        if "gold" in label_source:
            q |= Q(label__isnull=True, gold_label__isnull=False)
        if "none" in label_source:
            q |= Q(label__isnull=True, gold_label__isnull=True)
        qs = qs.filter(q)
    if min_confidence is not None:
        qs = qs.filter(confidence__gte=min_confidence)
    if split:
        qs = qs.filter(example__split__in=split)
    return qs


def pair_records(*, project: Project, candidates: QuerySet[Candidate]) -> Iterator[PairRecord]:
    """Candidates as :class:`PairRecord`\\ s (streamed in chunks; labels mapped from one query)."""
    names = dict(Label.objects.filter(project=project).values_list("id", "name"))

    def name(label_id: int | None) -> str | None:
        return names[label_id] if label_id is not None else None

    for c in candidates.iterator(chunk_size=2000):
        ex = c.example
        original = OriginalRecord(
            id=ex.external_id,
            fields=ex.fields,
            label=name(ex.label_id),
            image=ex.image,
            source=ex.source,
            split=ex.split,
            meta=ex.meta or {},
        )
        if c.label_id is not None:
            label, source, gold = name(c.label_id), c.label_source, name(c.gold_label_id)
        elif c.gold_label_id is not None:
            label, source, gold = name(c.gold_label_id), "gold", None
        else:
            label, source, gold = None, "", None
        yield PairRecord(
            id=c.external_id,
            original=original,
            cf_fields=c.fields,
            group=c.group,
            cf_label=label,
            target_label=name(c.target_label_id),
            generator=c.generator,
            perturbation=c.perturbation,
            label_source=source,
            confidence=c.confidence,
            cf_image=c.image,
            meta=c.meta or {},
            gold_label=gold,
            scores=c.scores or {},
        )


def data_export(
    *,
    project: Project,
    format: str,
    out: str | IO[str],
    state: list[str] | None = None,
    label_source: list[str] | None = None,
    min_confidence: float | None = None,
    split: list[str] | None = None,
) -> int:
    """Write the project's (filtered) pairs to ``out`` (a path, ``"-"`` for stdout, or a
    text stream). A path is written to a temporary file first and renamed when complete.
    Returns how many pairs were written."""
    if format not in EXPORT_FORMATS:
        raise ExportError(f"unknown export format {format!r}; choose one of {', '.join(EXPORT_FORMATS)}")
    qs = candidates_for_export(
        project=project, state=state, label_source=label_source, min_confidence=min_confidence, split=split
    )
    records = pair_records(project=project, candidates=qs)
    if format in DIRECTORY_FORMATS:
        if not isinstance(out, str) or out == "-":
            raise ExportError(f"{format} writes a directory: give --out a directory path")
        return _write_directory(project=project, format=format, records=records, out=out)

    def write(fh: IO[str]) -> int:
        if format == "csv":
            return formats.write_csv(records, fh, text_fields=list(project.text_fields))
        return formats.write_pairs_jsonl(records, fh)

    if out == "-":
        return write(sys.stdout)
    if not isinstance(out, str):
        return write(out)
    directory = os.path.dirname(os.path.abspath(out))
    os.makedirs(directory, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".export-", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            n = write(fh)
        os.chmod(tmp, 0o644)  # mkstemp makes it owner-only
        os.replace(tmp, out)
    except BaseException:
        _remove(tmp)
        raise
    return n


def _write_directory(*, project: Project, format: str, records: Iterator[PairRecord], out: str) -> int:
    """Write a directory format into a temporary directory beside ``out`` and rename it to
    ``out`` when complete. ``out`` must not exist yet, or be an empty directory."""
    if format == "coco-cf" and project.task != "image-caption":
        raise ExportError(f"coco-cf holds image-caption pairs; project {project.name!r} has task {project.task}")
    target = os.path.abspath(out)
    if os.path.exists(target) and (not os.path.isdir(target) or os.listdir(target)):
        raise ExportError(f"{out} exists and is not an empty directory")
    parent = os.path.dirname(target)
    os.makedirs(parent, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".export-", dir=parent)
    try:
        built = os.path.join(tmp, "ds")
        if format == "hf-datasets":
            labels = list(Label.objects.filter(project=project).order_by("position").values_list("name", flat=True))
            n = formats.write_hf_datasets(records, built, labels=labels, text_fields=list(project.text_fields))
        else:
            n = formats.write_coco_cf(records, built, image_root=str(settings.MEDIA_ROOT))
        os.chmod(built, 0o755)  # mkdtemp makes the parent owner-only; the result is readable
        if os.path.isdir(target):
            os.rmdir(target)
        os.replace(built, target)
    except ValueError as exc:
        raise ExportError(str(exc)) from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return n


def _remove(path: str) -> Any:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


# -- the ``export`` job kind (large exports; registered in ProjectsConfig.ready) -------------
EXPORT_FILTERS = ("state", "label_source", "min_confidence", "split")


def export_path(*, job_id: int, format: str) -> Path:
    """Where the export job's result lands: a file, or for the directory formats a zip archive
    of the directory."""
    ext = {"csv": "csv", "hf-datasets": "hf-datasets.zip", "coco-cf": "coco-cf.zip"}.get(format, "jsonl")
    return Path(settings.COUNTERPART["EXPORT_DIR"]) / f"export-{job_id}.{ext}"


def export_start(
    *, project: Project, format: str, filters: dict[str, Any] | None = None, created_by: Any = None
) -> Job:
    """Check the format, then queue the export as a job; the file lands in ``EXPORT_DIR``."""
    if format not in EXPORT_FORMATS:
        raise ExportError(f"unknown export format {format!r}; choose one of {', '.join(EXPORT_FORMATS)}")
    filters = {k: v for k, v in (filters or {}).items() if k in EXPORT_FILTERS and v not in (None, [], "")}
    return job_start(kind="export", project=project, created_by=created_by, params={"format": format, **filters})


def export_job(job: Job, ctx: JobContext) -> dict[str, Any]:
    assert job.project is not None
    p = dict(job.params)
    fmt = p.pop("format")
    path = export_path(job_id=job.pk, format=fmt)
    try:
        if fmt in DIRECTORY_FORMATS:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=path.parent, prefix=".export-") as tmp:
                n = data_export(project=job.project, format=fmt, out=os.path.join(tmp, fmt), **p)
                archive = shutil.make_archive(os.path.join(tmp, "archive"), "zip", tmp, fmt)
                os.replace(archive, path)
        else:
            n = data_export(project=job.project, format=fmt, out=str(path), **p)
    except ExportError as exc:
        raise JobFailed(str(exc)) from exc
    ctx.progress(n, n)
    return {"pairs": n, "format": fmt, "file": path.name, "bytes": path.stat().st_size}
