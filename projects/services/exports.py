"""Exporting a project's pairs (``python manage.py export``).

``pairs-jsonl`` is docs/formats.md §1: ``counterfactual.label`` is the final label with its
``label_source`` and ``confidence``; a candidate without a final label but with a known
(gold) answer is written with that answer and ``label_source: "gold"``. When a candidate has
both, the gold answer goes to the optional ``counterfactual.gold_label``. The exporter also
writes the optional keys ``original.id``, ``original.split``, ``original.source``,
``original.meta`` and ``counterfactual.scores`` so that an export re-imports to the same
data (import -> export -> import -> export gives the same bytes). ``csv`` has the same
content in columns (see :mod:`projects.formats.tabular`); ``csv-spreadsheet`` too, with the cells a
spreadsheet would run as formulas quoted (for people, not for re-import). ``hf-datasets`` is a directory written
by Hugging Face ``datasets``' ``save_to_disk`` (:mod:`projects.formats.hf`: ClassLabel label
columns, provenance columns); ``coco-cf`` (image-caption projects) is the COCO-Counterfactuals
``metadata.jsonl`` with the pair images copied beside it (:func:`projects.formats.coco.write_cf`).

Only pairs are exported (originals without candidates are not). Rows come in candidate id
order, i.e. in the order they were imported or generated. The candidate's *state* is not
written; re-importing derives it from the label source (pooled, human_labeled, auto_labeled).
Candidates the filters threw out (``filtered_out``) and unfiltered ``generated`` ones are
left out unless a ``state`` filter names them.

Provenance: every pair carries ``meta.provenance`` (generator, perturbation, label source,
confidence, and where the other apps know them: the h version that auto-labelled it, the
number of annotators and their agreement — added by providers registered with
:func:`export_provenance_register`). A provenance that came in with an imported pair is kept
unless this project knows better, so export → import → export gives the same bytes. A path
export also writes a manifest, ``<file>.manifest.json`` (see docs/data-and-formats.md).
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from django.conf import settings
from django.db.models import Case, CharField, Count, F, Q, QuerySet, Value, When
from django.utils import timezone

from projects import formats, states
from projects.formats import OriginalRecord, PairRecord
from projects.formats.reading import LABEL_SOURCES, below
from projects.models import JOB_ACTIVE, Candidate, Job, Label, Project
from projects.selectors import example_splits
from projects.services.imports import image_root
from projects.services.jobs import JobCancelled, JobContext, JobFailed, job_start

EXPORT_FORMATS = ["pairs-jsonl", "csv", "csv-spreadsheet", "hf-datasets", "coco-cf"]
# The name ending of each format's file (the directory formats are downloaded zipped).
EXPORT_EXTENSIONS = {
    "pairs-jsonl": "jsonl",
    "csv": "csv",
    "csv-spreadsheet": "csv",
    "hf-datasets": "hf-datasets.zip",
    "coco-cf": "coco-cf.zip",
}
# Formats written as a directory (``out`` is the directory to create), not a single file.
DIRECTORY_FORMATS = ("hf-datasets", "coco-cf")
# Left out unless a state filter names them: not part of the data set.
EXCLUDED_BY_DEFAULT = [states.FILTERED_OUT, states.GENERATED]

# Provenance providers: ``fn(project, candidate_ids) -> {candidate_id: {key: value}}``, and
# manifest providers ``fn(project) -> {key: value}``; registered by the apps that know
# (annotate: annotators and agreement; labeling: the h version), in their AppConfig.ready.
ProvenanceProvider = Callable[[Project, list[int]], dict[int, dict[str, Any]]]
ManifestProvider = Callable[[Project], dict[str, Any]]
_PROVENANCE: list[ProvenanceProvider] = []
_MANIFEST: list[ManifestProvider] = []
CHUNK = 2000


def export_provenance_register(
    *, pairs: ProvenanceProvider | None = None, manifest: ManifestProvider | None = None
) -> None:
    if pairs is not None and pairs not in _PROVENANCE:
        _PROVENANCE.append(pairs)
    if manifest is not None and manifest not in _MANIFEST:
        _MANIFEST.append(manifest)


class ExportError(ValueError):
    pass


MIN_CONFIDENCE_ERROR = "a number between 0 and 1"


def export_min_confidence_check(value: float | None) -> str | None:
    """What is wrong with a ``min_confidence`` filter (None: nothing); the API, the page and
    the command all check it here."""
    if value is not None and not 0 <= value <= 1:  # NaN fails this too
        return MIN_CONFIDENCE_ERROR
    return None


def export_filters_parse(params: Any) -> tuple[dict[str, Any], dict[str, str]]:
    """The export filters from a query dict (a page's GET, or a dict of lists from the API)
    and the errors by field name. Lists may also come comma-separated (``state=a,b``)."""

    def many(name: str) -> list[str]:
        raw = params.getlist(name) if hasattr(params, "getlist") else params.get(name) or []
        if isinstance(raw, str):
            raw = [raw]
        return [v.strip() for item in raw for v in str(item).split(",") if v.strip()]

    errors: dict[str, str] = {}
    state, label_source, split = many("state"), many("label_source"), many("split")
    if unknown := sorted(set(state) - set(states.STATES)):
        errors["state"] = f"unknown state(s) {', '.join(unknown)}; choose from {', '.join(states.STATES)}"
    if unknown := sorted(set(label_source) - set(LABEL_SOURCES) - {"none"}):
        errors["label_source"] = (
            f"unknown label source(s) {', '.join(unknown)}; choose from {', '.join(LABEL_SOURCES)}, none"
        )
    min_confidence = None
    raw = params.get("min_confidence")
    if raw not in (None, ""):
        try:
            min_confidence = float(raw)
        except (TypeError, ValueError):
            errors["min_confidence"] = MIN_CONFIDENCE_ERROR
        else:
            if msg := export_min_confidence_check(min_confidence):
                errors["min_confidence"] = msg
    fmt = params.get("format") or "pairs-jsonl"
    if fmt not in EXPORT_FORMATS:
        errors["format"] = f"unknown export format {fmt!r}; choose one of {', '.join(EXPORT_FORMATS)}"
    include_invalid = str(params.get("include_invalid") or "").strip().lower() in ("1", "true", "on", "yes")
    labelled_only = str(params.get("labelled_only") or "").strip().lower() in ("1", "true", "on", "yes")
    filters = {
        "state": state,
        "label_source": label_source,
        "min_confidence": min_confidence,
        "split": split,
        "include_invalid": include_invalid,
        "labelled_only": labelled_only,
    }
    return {"format": fmt, **filters}, errors


def candidates_for_export(
    *,
    project: Project,
    state: list[str] | None = None,
    label_source: list[str] | None = None,
    min_confidence: float | None = None,
    split: list[str] | None = None,
    include_invalid: bool = False,
    labelled_only: bool = False,
) -> QuerySet[Candidate]:
    """The project's candidates matching the filters, in id order, with their originals.

    ``label_source`` filters on the exported label's source: a final label's source, or
    ``gold`` for a candidate whose only label is its known answer. Candidates judged invalid
    (``meta.valid`` false: imported so, or annotators answered "Unclear / invalid") are left
    out unless ``include_invalid``. Pairs without any label yet (neither a final label nor a
    known answer: no ``counterfactual.label`` in the file) are included unless ``labelled_only``."""
    qs = Candidate.objects.filter(project=project).select_related("example").order_by("id")
    if not state:
        qs = qs.exclude(state__in=EXCLUDED_BY_DEFAULT)
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
    if msg := export_min_confidence_check(min_confidence):
        raise ExportError(f"min_confidence must be {msg}, not {min_confidence}")
    if min_confidence is not None:
        # the confidence of the label a row carries: a pair with no label carries none, however
        # sure h was of the label it held back
        qs = qs.filter(Q(label__isnull=False) | Q(gold_label__isnull=False), confidence__gte=min_confidence)
    if split:
        qs = qs.filter(example__split__in=split)
    if not include_invalid:
        qs = qs.filter(~Q(meta__has_key="valid") | Q(meta__valid=True))
    if labelled_only:
        qs = qs.filter(Q(label__isnull=False) | Q(gold_label__isnull=False))
    return qs


def _chunks(candidates: QuerySet[Candidate]) -> Iterator[list[Candidate]]:
    chunk: list[Candidate] = []
    for c in candidates.iterator(chunk_size=CHUNK):
        chunk.append(c)
        if len(chunk) >= CHUNK:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def pair_records(*, project: Project, candidates: QuerySet[Candidate]) -> Iterator[PairRecord]:
    """Candidates as :class:`PairRecord`\\ s (streamed in chunks; labels mapped from one query,
    provenance from one query per provider and chunk)."""
    names = dict(Label.objects.filter(project=project).values_list("id", "name"))

    def name(label_id: int | None) -> str | None:
        return names[label_id] if label_id is not None else None

    for chunk in _chunks(candidates):
        known: dict[int, dict[str, Any]] = {}
        for provider in _PROVENANCE:
            for cid, values in provider(project, [c.pk for c in chunk]).items():
                known.setdefault(cid, {}).update(values)
        for c in chunk:
            yield _record(c, name, known.get(c.pk, {}))


def _record(c: Candidate, name: Callable[[int | None], str | None], known: dict[str, Any]) -> PairRecord:
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
    meta = dict(c.meta or {})
    valid = meta.pop("valid", None)
    provenance = dict(meta.get("provenance") or {}) if isinstance(meta.get("provenance"), dict) else {}
    provenance.update(
        {"generator": c.generator, "perturbation": c.perturbation, "label_source": source, "confidence": c.confidence}
    )
    provenance.update({k: v for k, v in known.items() if v is not None})
    meta["provenance"] = dict(sorted(provenance.items()))
    return PairRecord(
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
        meta=meta,
        gold_label=gold,
        scores=c.scores or {},
        valid=valid if isinstance(valid, bool) else None,
    )


def export_manifest(
    *, project: Project, format: str, filters: dict[str, Any], rows: int, path: str | None = None
) -> dict[str, Any]:
    """What an export holds and where it came from (the sidecar ``<file>.manifest.json``)."""
    qs = candidates_for_export(project=project, **filters).select_related(None).order_by()
    # by the label_source the file carries (_record): a known answer alone is written as "gold"
    written = Case(
        When(label__isnull=False, then=F("label_source")),
        When(gold_label__isnull=False, then=Value("gold")),
        default=Value(""),
        output_field=CharField(),
    )
    by_source = dict(qs.annotate(written=written).values("written").annotate(n=Count("id")).values_list("written", "n"))
    by_generator = dict(qs.values("generator").annotate(n=Count("id")).values_list("generator", "n"))
    manifest: dict[str, Any] = {
        "manifest_version": 1,
        "project": project.name,
        "task": project.task,
        "labels": list(Label.objects.filter(project=project).order_by("position").values_list("name", flat=True)),
        "text_fields": list(project.text_fields),
        "format": format,
        # labelled_only shows only when set (older manifests never had it)
        "filters": {k: v for k, v in filters.items() if v not in (None, [], "") and (k != "labelled_only" or v)},
        "excluded_by_default": ([] if filters.get("state") else EXCLUDED_BY_DEFAULT)
        + ([] if filters.get("include_invalid") else ["invalid"]),
        "rows": rows,
        "label_sources": {(k or "none"): v for k, v in sorted(by_source.items())},
        "generators": {(k or "none"): v for k, v in sorted(by_generator.items())},
        "exported_at": timezone.now().isoformat(),
    }
    for provider in _MANIFEST:
        manifest.update(provider(project))
    if path is not None and os.path.isdir(path):  # a directory format: named, not hashed
        manifest["directory"] = {"name": os.path.basename(os.path.abspath(path))}
    elif path is not None:
        manifest["file"] = _file_entry(path)
    return manifest


def _file_entry(path: str | Path) -> dict[str, Any]:
    """The manifest's ``file``: name, size and SHA-256 of ``path``."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return {"name": os.path.basename(path), "bytes": os.path.getsize(path), "sha256": digest.hexdigest()}


def _write_manifest(path: str | Path, doc: dict[str, Any]) -> None:
    manifest_path(path).write_text(json.dumps(doc, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def manifest_path(path: str | Path) -> Path:
    return Path(f"{path}.manifest.json")


def data_export(
    *,
    project: Project,
    format: str,
    out: str | IO[str],
    state: list[str] | None = None,
    label_source: list[str] | None = None,
    min_confidence: float | None = None,
    split: list[str] | None = None,
    include_invalid: bool = False,
    labelled_only: bool = False,
    manifest: bool = True,
    progress: Callable[[int, int], None] | None = None,
) -> int:
    """Write the project's (filtered) pairs to ``out`` (a path, ``"-"`` for stdout, or a
    text stream). A path is written to a temporary file first and renamed when complete,
    then its manifest beside it (``manifest=False``: none). Returns how many pairs were
    written. ``progress(rows, total)`` is called at the start and about once a second."""
    if format not in EXPORT_FORMATS:
        raise ExportError(f"unknown export format {format!r}; choose one of {', '.join(EXPORT_FORMATS)}")
    qs = candidates_for_export(
        project=project,
        state=state,
        label_source=label_source,
        min_confidence=min_confidence,
        split=split,
        include_invalid=include_invalid,
        labelled_only=labelled_only,
    )
    records = pair_records(project=project, candidates=qs)
    if progress is not None:
        records = _reporting(records, progress=progress, total=qs.count())
    values = (state, label_source, min_confidence, split, include_invalid, labelled_only)
    filters = dict(zip(EXPORT_FILTERS, values, strict=True))  # for the manifest
    if format in DIRECTORY_FORMATS:
        if not isinstance(out, str) or out == "-":
            raise ExportError(f"{format} writes a directory: give --out a directory path")
        n = _write_directory(project=project, format=format, records=records, out=out)
        if manifest:  # beside the directory, as beside a file: <out>.manifest.json
            out = out.rstrip(os.sep) or out
            _write_manifest(out, export_manifest(project=project, format=format, filters=filters, rows=n, path=out))
        return n

    records = _relative_images(records)

    def write(fh: IO[str]) -> int:
        if format in ("csv", "csv-spreadsheet"):
            spreadsheet = format == "csv-spreadsheet"  # formula-like cells quoted (docs/security.md)
            return formats.write_csv(records, fh, text_fields=list(project.text_fields), spreadsheet=spreadsheet)
        return formats.write_pairs_jsonl(records, fh)

    if out == "-":
        return write(sys.stdout)
    if not isinstance(out, str):
        return write(out)
    if os.path.isdir(out):
        raise ExportError(f"{out} is a directory; {format} writes a file: give --out a file path")
    directory = os.path.dirname(os.path.abspath(out))
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".export-", dir=directory)
    except OSError as exc:
        raise ExportError(f"cannot write {out}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") as fh:
            n = write(fh)
        os.chmod(tmp, 0o644)  # mkstemp makes it owner-only
        os.replace(tmp, out)
    except OSError as exc:
        _remove(tmp)
        raise ExportError(f"cannot write {out}: {exc.strerror or exc}") from exc
    except BaseException:
        _remove(tmp)
        raise
    if manifest:
        _write_manifest(out, export_manifest(project=project, format=format, filters=filters, rows=n, path=out))
    return n


def _relative_images(records: Iterator[PairRecord]) -> Iterator[PairRecord]:
    """``records`` with their image paths relative to the image root (docs/formats.md §1:
    ``"image": "relative/path.jpg"``; an import finds them there); a path outside the root
    is left as it is."""
    root = os.path.realpath(image_root())

    def rel(path: str) -> str:
        if path and os.path.isabs(path) and below(real := os.path.realpath(path), root):
            return os.path.relpath(real, root)
        return path

    for rec in records:
        if rec.cf_image or rec.original.image:
            o = dataclasses.replace(rec.original, image=rel(rec.original.image))
            rec = dataclasses.replace(rec, original=o, cf_image=rel(rec.cf_image))
        yield rec


_clock = time.monotonic  # the export progress reports' clock (tests replace it)


def _reporting(
    records: Iterator[PairRecord], *, progress: Callable[[int, int], None], total: int, every: float = 1.0
) -> Iterator[PairRecord]:
    """``records`` as they are handed to the writer, calling ``progress(rows, total)`` at the
    start and then at most once every ``every`` seconds (each call is one UPDATE)."""
    progress(0, total)
    last = _clock()
    for n, record in enumerate(records, start=1):
        yield record
        if _clock() - last >= every:
            progress(n, total)
            last = _clock()


# what a coco-cf export of caption pairs without images says to do (a coco-cf run without a
# diffusion model writes text-only pairs; captions imported from coco-captions come without an
# image file unless their images were found)
NO_IMAGES_HINT = (
    "coco-cf is the image-pair layout; a caption pair without images (a coco-cf run without a diffusion model "
    "writes text-only pairs) is exported as pairs-jsonl, csv or hf-datasets"
)


def _write_directory(*, project: Project, format: str, records: Iterator[PairRecord], out: str) -> int:
    """Write a directory format into a temporary directory beside ``out`` and rename it to
    ``out`` when complete. ``out`` must not exist yet, or be an empty directory."""
    if format == "coco-cf" and project.task != "image-caption":
        raise ExportError(f"coco-cf holds image-caption pairs; project {project.name!r} has task {project.task}")
    target = os.path.abspath(out)
    if os.path.exists(target) and (not os.path.isdir(target) or os.listdir(target)):
        raise ExportError(f"{out} exists and is not an empty directory")
    parent = os.path.dirname(target)
    try:
        os.makedirs(parent, exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=".export-", dir=parent)
    except OSError as exc:
        raise ExportError(f"cannot write {out}: {exc.strerror or exc}") from exc
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
        message = str(exc)
        if format == "coco-cf" and "needs both images" in message:
            message += f" — {NO_IMAGES_HINT}"
        raise ExportError(message) from exc
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return n


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.unlink(path)


# -- the ``export`` job kind (large exports; registered in ProjectsConfig.ready) -------------
EXPORT_FILTERS = ("state", "label_source", "min_confidence", "split", "include_invalid", "labelled_only")


def export_splits(*, project: Project) -> list[str]:
    """The project's splits (for the export form), each once."""
    return example_splits(project=project)


NOTHING_TO_EXPORT = "Nothing to export: no pair matches these filters."


def export_unlabelled_count(*, project: Project, filters: dict[str, Any]) -> int:
    """How many of the pairs the filters match have no label yet (no ``counterfactual.label``)."""
    qs = candidates_for_export(project=project, **filters).select_related(None).order_by()
    return int(qs.filter(label__isnull=True, gold_label__isnull=True).count())


def export_count(*, project: Project, filters: dict[str, Any], limit: int) -> int:
    """How many pairs the filtered export holds, counted up to ``limit + 1`` (so that a caller
    can tell "more than limit" without counting a million rows)."""
    qs = candidates_for_export(project=project, **filters).select_related(None).order_by()
    return int(qs.values("id")[: limit + 1].count())


def export_file_for(*, job: Job, manifest: bool = False) -> Path | None:
    """The file a succeeded export job wrote, resolved inside ``EXPORT_DIR`` (None if it is
    missing or would lie outside)."""
    root = Path(settings.COUNTERPART["EXPORT_DIR"]).resolve()
    path = export_path(job_id=job.pk, format=str(job.params.get("format", "pairs-jsonl")))
    if manifest:
        path = manifest_path(path)
    path = path.resolve()
    if root not in path.parents or not path.is_file():
        return None
    return path


def export_not_downloadable(job: Job) -> str:
    """Why an export job's file cannot be downloaded (the 409's text, page and API): not yet
    (queued, running), or never (failed, cancelled: it wrote no file)."""
    if job.status in JOB_ACTIVE:
        return f"export job {job.pk} is {job.status}; nothing to download yet"
    return f"export job {job.pk} {job.status}; it wrote no file to download (start the export again)"


def export_download_file(*, job: Job, manifest: bool = False) -> tuple[Path, str] | None:
    """The file a succeeded export job wrote and the name to download it as (``<project>-<job>``
    plus its extensions, e.g. ``.jsonl``, ``.hf-datasets.zip``, or ``.manifest.json``); None if it is gone."""
    path = export_file_for(job=job, manifest=manifest)
    if path is None:
        return None
    stem = f"{job.project.name if job.project else 'export'}-{job.pk}"
    return path, f"{stem}.manifest.json" if manifest else f"{stem}{''.join(path.suffixes)}"


def export_missing_reason(*, job: Job) -> str:
    """Why a succeeded export job has no file to download: one the ``export`` command ran in
    the foreground wrote its file to the command's ``--out`` only; any other's file is gone."""
    if (job.params or {}).get("foreground"):
        out = (job.result or {}).get("out")
        where = f" ({out})" if out else ""
        return (
            f"export job {job.pk} was run by the export command, which wrote its file to its --out{where}; "
            "it has no download"
        )
    return "the export file is gone"


# What a download is served as, by the file's extension (Django guesses nothing for .jsonl, so
# every JSON-lines export was application/octet-stream).
DOWNLOAD_TYPES = {
    ".jsonl": "application/x-ndjson; charset=utf-8",
    ".csv": "text/csv; charset=utf-8",
    ".json": "application/json",
    ".zip": "application/zip",
}


def export_download_type(name: str) -> str:
    """The Content-Type of a downloaded export file named ``name``."""
    return DOWNLOAD_TYPES.get(os.path.splitext(name)[1].lower(), "application/octet-stream")


def export_sync_name(*, project: Project, format: str) -> str:
    """The name a file export of ``format`` downloads as at once (the page and the API)."""
    return f"{project.name}.{EXPORT_EXTENSIONS[format]}"


def export_path(*, job_id: int, format: str) -> Path:
    """Where the export job's result lands: a file, or for the directory formats a zip archive
    of the directory."""
    ext = EXPORT_EXTENSIONS.get(format, "jsonl")  # a stored params.format is never a path part
    return Path(settings.COUNTERPART["EXPORT_DIR"]) / f"export-{job_id}.{ext}"


def export_start(
    *, project: Project, format: str, filters: dict[str, Any] | None = None, created_by: Any = None
) -> Job:
    """Check the format, then queue the export as a job; the file lands in ``EXPORT_DIR``."""
    if format not in EXPORT_FORMATS:
        raise ExportError(f"unknown export format {format!r}; choose one of {', '.join(EXPORT_FORMATS)}")
    filters = {k: v for k, v in (filters or {}).items() if k in EXPORT_FILTERS and v not in (None, [], "")}
    return job_start(kind="export", project=project, created_by=created_by, params={"format": format, **filters})


def exports_temp_sweep(*, older_than: float | None = None) -> list[str]:
    """Remove the temporary files and folders (``.export-*``) in ``EXPORT_DIR`` that a killed
    export left behind: older than the export job's time limit (``JOB_TIME_LIMIT``), so no
    export still writing owns them. Returns the names removed."""
    folder = Path(settings.COUNTERPART["EXPORT_DIR"])
    limit = float(settings.COUNTERPART["JOB_TIME_LIMIT"]) if older_than is None else older_than
    cutoff = time.time() - limit
    removed = []
    with contextlib.suppress(FileNotFoundError):
        for entry in folder.glob(".export-*"):
            try:
                if entry.lstat().st_mtime >= cutoff:
                    continue
                if entry.is_dir() and not entry.is_symlink():
                    shutil.rmtree(entry, ignore_errors=True)
                else:
                    entry.unlink(missing_ok=True)
            except OSError:
                continue
            removed.append(entry.name)
    return removed


def export_job(job: Job, ctx: JobContext) -> dict[str, Any]:
    assert job.project is not None
    p = dict(job.params)
    fmt = p.pop("format")
    path = export_path(job_id=job.pk, format=fmt)
    exports_temp_sweep()  # what killed exports left (their files are never offered)

    def progress(done: int, total: int | None = None) -> None:
        ctx.check_cancelled()  # about once a second: a cancel stops the writer, its temporary file removed
        ctx.progress(done, total)

    try:
        if fmt in DIRECTORY_FORMATS:
            path.parent.mkdir(parents=True, exist_ok=True)
            with tempfile.TemporaryDirectory(dir=path.parent, prefix=".export-") as tmp:
                built = os.path.join(tmp, fmt)
                n = data_export(project=job.project, format=fmt, out=built, progress=progress, **p)
                archive = shutil.make_archive(os.path.join(tmp, "archive"), "zip", tmp, fmt)
                # the directory's manifest, describing the zip that is downloaded
                doc = json.loads(manifest_path(built).read_text(encoding="utf-8"))
                os.replace(archive, path)
                doc.pop("directory", None)
                doc["file"] = _file_entry(path)
                _write_manifest(path, doc)
        else:
            n = data_export(project=job.project, format=fmt, out=str(path), progress=progress, **p)
    except ExportError as exc:
        raise JobFailed(str(exc)) from exc
    if ctx.cancel_requested():  # cancelled while the last rows were written: no file is offered
        _remove(str(path))
        _remove(str(manifest_path(path)))
        raise JobCancelled()
    if n == 0:  # the data changed since the job was started: say so, leave no empty file
        _remove(str(path))
        _remove(str(manifest_path(path)))
        raise JobFailed(NOTHING_TO_EXPORT)
    ctx.progress(n, n)
    return {
        "pairs": n,
        "format": fmt,
        "file": path.name,
        "bytes": path.stat().st_size,
        "manifest": manifest_path(path).name,
    }
