"""Importing data files into a project (``python manage.py import_data``).

Policy
------
- **Whole-input checks first.** Before anything is written, every input file must exist,
  be at most ``COUNTERPART["MAX_UPLOAD_BYTES"]`` (checked with ``stat``: a 2 GB file is
  refused without being read), have no line over ``COUNTERPART["MAX_LINE_BYTES"]``, and have
  a readable header. Otherwise :class:`ImportRefused` is raised and the database is untouched.
- **A malformed input leaves the database as it was** (default, ``strict=True``): the input
  is read once without writing, and any bad row refuses the whole import; every bad row is
  reported as ``file:line: what is wrong``. With ``strict=False`` (``--skip-bad-rows``) bad
  rows are skipped and reported, and the good rows are imported.
- **Streaming, batched, transactional per batch.** Records are read line by line and
  written ``COUNTERPART["IMPORT_BATCH_SIZE"]`` at a time, each batch in one transaction
  with two bulk look-ups (existing originals, existing pairs) and two bulk inserts: a batch
  lands completely or not at all.
- **Marked with the import job.** Run as an ``import`` job (``job_id``), every row written is
  marked with the job (``Example.job`` / ``Candidate.job``), so a cancelled or failed job can
  remove exactly what it wrote and a resumed one can tell its own rows from older ones
  (:mod:`projects.services.import_jobs`). ``on_progress(phase, rows, total)`` is called
  after every batch of both passes (``checking``, then ``writing``); it may raise to stop.
- **Idempotent.** Ids are unique per project; a record whose id is already in the database
  is skipped, so importing a file twice adds nothing. When the stored record is another one
  (:func:`_kept`) a strict import is refused in its checking pass, before anything is written;
  with ``strict=False`` the row is skipped with a warning (:func:`_warn_kept`). Within one input an id repeated with
  different content is a problem, an identical repeat a warning and skipped
  (:mod:`projects.formats.ids`).
  A pair's original is found by its id and created when missing (the first import of an id
  wins; an existing original is not overwritten).

Labels of imported pairs: ``label_source`` ``gold`` -> ``Candidate.gold_label``, state
``pooled``; ``human`` / ``imported`` -> final label, state ``human_labeled``; ``auto`` -> final
label, state ``auto_labeled``. A ``counterfactual.label`` without a ``label_source`` is
``imported`` (a label the file gives, of unknown provenance: kept and exported, never taken
for a gold answer nor used to train h). ``confidence`` is kept as given.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterable
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import connection, models
from django.db.models import Max
from django.utils import timezone

from projects import formats, states
from projects.aggregates import stats_write
from projects.formats import FormatError, OriginalRecord, PairRecord, Problem
from projects.models import Candidate, Example, Label, Project

FINAL_STATES = {"human": states.HUMAN_LABELED, "imported": states.HUMAN_LABELED, "auto": states.AUTO_LABELED}


class ImportRefused(Exception):
    """The input was refused as a whole; nothing was written."""

    def __init__(self, message: str, problems: list[str] | None = None) -> None:
        super().__init__(message)
        self.problems = problems or []


@dataclass
class ImportReport:
    imported_originals: int = 0
    imported_pairs: int = 0
    skipped: int = 0
    problems: list[str] = field(default_factory=list)  # the first IMPORT_MAX_PROBLEMS messages
    problem_count: int = 0  # all of them
    batches: int = 0
    warnings: list[str] = field(default_factory=list)  # rows imported that deserve a look
    warning_count: int = 0

    def add_problem(self, problem: Problem | str, limit: int) -> None:
        self.problem_count += 1
        if len(self.problems) < limit:
            self.problems.append(str(problem))

    def add_warning(self, warning: Problem | str, limit: int) -> None:
        self.warning_count += 1
        if len(self.warnings) < limit:
            self.warnings.append(str(warning))

    def summary(self) -> str:
        text = (
            f"imported {self.imported_originals} originals, {self.imported_pairs} pairs; "
            f"skipped {self.skipped}; problems {self.problem_count}"
        )
        return text + (f"; warnings {self.warning_count}" if self.warning_count else "")


def data_import(
    *,
    project: Project,
    format: str,
    paths: list[str],
    split: str = "",
    strict: bool = True,
    batch_size: int | None = None,
    on_batch: Callable[[ImportReport], None] | None = None,
    skip_hint: str = "--skip-bad-rows",
    label_map: dict[str, str] | None = None,
    image_base: str | None = None,
    job_id: int | None = None,
    on_progress: Callable[[str, int, int | None], None] | None = None,
) -> ImportReport:
    """Import ``paths`` (in ``format``) into ``project``. See the module docstring for the
    policy. Raises :class:`ImportRefused` when the input is refused as a whole, and when it
    holds no row at all ("the file has no rows"). ``skip_hint`` names the caller's way to
    import the good rows only (the command's ``--skip-bad-rows``, the page's checkbox).

    ``label_map`` renames labels as written in the file (``{"yes": "true"}``) before they
    are matched, case-insensitively, to the project's labels. Images must lie inside
    :func:`image_root`; relative image paths start at ``image_base`` (default: the folder of
    the data file)."""
    cfg = settings.COUNTERPART
    if msg := formats.check_split(split):
        raise ImportRefused(f"{msg}; nothing was imported")
    batch_size = batch_size or cfg["IMPORT_BATCH_SIZE"]
    max_problems = cfg.get("IMPORT_MAX_PROBLEMS", 10000)
    max_line = cfg["MAX_LINE_BYTES"]
    paths = [str(p) for p in paths]
    labels = list(Label.objects.filter(project=project).order_by("position").values_list("name", flat=True))
    root = image_root()
    warnings: list[Problem] = []

    def records(some_paths: list[str]) -> Generator[OriginalRecord | PairRecord | Problem, None, None]:
        yield from formats.read(
            format,
            some_paths,
            task=project.task,
            split=split,
            labels=labels,
            text_fields=list(project.text_fields),
            max_line_bytes=max_line,
            image_root=root,
            image_base=image_base,
            label_map=label_map,
            warn=warnings.append,
            max_image_pixels=cfg["MAX_IMAGE_PIXELS"],
        )

    try:
        formats.check_inputs(
            format, paths, split=split, max_file_bytes=cfg["MAX_UPLOAD_BYTES"], max_line_bytes=max_line
        )
        # Opening each input checks its header before anything is written (the COCO formats
        # take the image folder beside the files, so they are opened together).
        for group in [paths] if format in ("coco-cf", "coco-captions") else [[p] for p in paths]:
            opened = records(group)
            try:
                next(opened, None)
            finally:
                opened.close()
    except FormatError as exc:
        raise ImportRefused(str(exc)) from None

    read_total: int | None = None
    if strict:
        dry = ImportReport()
        conflicts: list[tuple[str, str]] = []  # ids an earlier import gave to something else
        pending: list[OriginalRecord | PairRecord] = []
        rows = 0
        for n, rec in enumerate(records(paths), 1):
            if isinstance(rec, Problem):
                dry.add_problem(rec, max_problems)
            else:
                rows += 1
                pending.append(rec)
                if len(pending) >= batch_size:
                    conflicts += _conflicts(project, pending, job_id)
                    pending = []
            if on_progress and n % batch_size == 0:
                on_progress("checking", n, None)
        if pending:
            conflicts += _conflicts(project, pending, job_id)
        read_total = rows + dry.problem_count
        if on_progress:
            on_progress("checking", read_total, read_total)
        if dry.problem_count:
            raise ImportRefused(
                f"{dry.problem_count} problem(s) found; nothing was imported "
                f"(fix them, or import the good rows with {skip_hint})",
                dry.problems,
            )
        if rows == 0:
            raise ImportRefused(_NO_ROWS)
        if conflicts:
            shown = ", ".join(what for what, _ in conflicts[:CONFLICTS_SHOWN])
            more = f" and {len(conflicts) - CONFLICTS_SHOWN} more" if len(conflicts) > CONFLICTS_SHOWN else ""
            raise ImportRefused(
                f"{len(conflicts)} id(s) of this file name something else in the project (from an earlier import): "
                f"{shown}{more}; nothing was imported (give them new ids, delete the project's first, or keep the "
                f"project's and skip these rows with {skip_hint})",
                [message for _, message in conflicts[:max_problems]],
            )

    report = ImportReport()
    warnings.clear()  # the checks above read the input too; count the writing pass only
    label_ids = dict(Label.objects.filter(project=project).values_list("name", "id"))
    earlier = _Earlier.of(job_id) if job_id is not None else None
    batch: list[OriginalRecord | PairRecord] = []
    n = 0
    for n, rec in enumerate(records(paths), 1):
        if isinstance(rec, Problem):
            report.add_problem(rec, max_problems)
            continue
        batch.append(rec)
        if len(batch) >= batch_size:
            _write_batch(project, batch, label_ids, report, job_id, earlier)
            batch = []
            if on_batch:
                on_batch(report)
            if on_progress:
                on_progress("writing", n, read_total)
    if batch:
        _write_batch(project, batch, label_ids, report, job_id, earlier)
        if on_batch:
            on_batch(report)
    if on_progress:
        on_progress("writing", n, n)
    if job_id is not None:  # the truth, across every execution of the job
        report.imported_originals = Example.objects.filter(job_id=job_id).count()
        report.imported_pairs = Candidate.objects.filter(job_id=job_id).count()
    for warning in warnings:
        report.add_warning(warning, max_problems)
    if report.batches == 0 and report.problem_count == 0:
        raise ImportRefused(_NO_ROWS)  # nothing was read, so nothing was written
    return report


_NO_ROWS = "the file has no rows; nothing was imported"
CONFLICTS_SHOWN = 5  # ids named in the refusal's message (every one is in its problems)


def image_root() -> str:
    """The folder imported images must lie in: ``COUNTERPART["IMAGE_ROOT"]``
    (``COUNTERPART_IMAGE_ROOT``), by default ``MEDIA_ROOT``."""
    return str(settings.COUNTERPART.get("IMAGE_ROOT") or settings.MEDIA_ROOT)


def _write_batch(
    project: Project,
    batch: Iterable[OriginalRecord | PairRecord],
    label_ids: dict[str, int],
    report: ImportReport,
    job_id: int | None = None,
    earlier: _Earlier | None = None,
) -> None:
    """Write one batch in one transaction, its rows marked with ``job_id``. A row that is
    there already, marked with the same job and older than this execution (``earlier``) was
    written before a resume: it is not counted as skipped."""
    originals, explicit, pairs, duplicates = _by_id(batch)

    def label(name: str | None) -> int | None:
        return label_ids[name] if name is not None else None

    with stats_write() as stats:
        stats.lock([project.pk])  # the aggregates follow the rows written (projects/aggregates.py)
        # what each stored row holds comes along, for the warning when an id names something else
        found = Example.objects.filter(project=project, external_id__in=list(originals)).values_list(
            "external_id", "id", "job_id", "fields", "label__name", "image"
        )
        example_ids = {ext: pk for ext, pk, *_ in found}
        resumed_originals = {ext for ext, pk, job, *_ in found if earlier and earlier.example(job, pk)}
        new_examples = [
            {
                "project_id": project.pk,
                "job_id": job_id,
                "external_id": o.id,
                "fields": o.fields,
                "image": o.image,
                "label_id": label(o.label),
                "source": o.source,
                "split": o.split,
                "meta": o.meta,
            }
            for oid, o in originals.items()
            if oid not in example_ids
        ]
        created_originals = {e["external_id"] for e in new_examples}
        if new_examples:
            _bulk_insert(Example, new_examples)
            example_ids.update(
                Example.objects.filter(project=project, external_id__in=list(created_originals)).values_list(
                    "external_id", "id"
                )
            )
        found_pairs = Candidate.objects.filter(project=project, external_id__in=list(pairs)).values_list(
            "external_id", "id", "job_id", "fields", "image", "example__external_id"
        )
        existing_pairs = {ext for ext, *_ in found_pairs}
        resumed_pairs = {ext for ext, pk, job, *_ in found_pairs if earlier and earlier.candidate(job, pk)}
        _warn_kept(
            originals,
            pairs,
            [row[:1] + row[3:] for row in found if row[0] not in resumed_originals],
            [row[:1] + row[3:] for row in found_pairs if row[0] not in resumed_pairs],
            report,
        )
        new_candidates = [
            {**_candidate(project, p, example_ids[p.original.id], label), "job_id": job_id}
            for pid, p in pairs.items()
            if pid not in existing_pairs
        ]
        if new_candidates:
            _bulk_insert(Candidate, new_candidates)
            stats.added(
                Candidate.objects.filter(project=project, external_id__in=[c["external_id"] for c in new_candidates])
            )
        stats.examples(project.pk, len(new_examples))

    # Counts: an explicit original is imported once (its first record) and skipped otherwise.
    # (A job's imported counts are recounted from its marked rows at the end.)
    counted: set[str] = set()
    for oid in explicit:
        if (oid in created_originals or oid in resumed_originals) and oid not in counted:
            counted.add(oid)
        else:
            report.skipped += 1
    report.imported_originals += len(created_originals)
    report.imported_pairs += len(new_candidates)
    report.skipped += len(existing_pairs) - len(resumed_pairs) + duplicates
    report.batches += 1


def _by_id(
    batch: Iterable[OriginalRecord | PairRecord],
) -> tuple[dict[str, OriginalRecord], list[str], dict[str, PairRecord], int]:
    """The batch's originals by id (every original it needs, the first one wins), the ids of
    originals given as records of their own, its pairs by id (the first wins) and how many
    pairs repeat an id of the batch."""
    originals: dict[str, OriginalRecord] = {}
    explicit: list[str] = []
    pairs: dict[str, PairRecord] = {}
    duplicates = 0
    for rec in batch:
        if isinstance(rec, OriginalRecord):
            explicit.append(rec.id)
            originals.setdefault(rec.id, rec)
        elif rec.id in pairs:
            duplicates += 1
        else:
            pairs[rec.id] = rec
            originals.setdefault(rec.original.id, rec.original)
    return originals, explicit, pairs, duplicates


def _kept(
    originals: dict[str, OriginalRecord],
    pairs: dict[str, PairRecord],
    stored_originals: Iterable[tuple[Any, ...]],
    stored_pairs: Iterable[tuple[Any, ...]],
    *,
    refused: bool = False,
) -> list[tuple[str, str]]:
    """What to say about each record whose id an earlier import gave to something else (the
    project keeps what it has: the first import of an id wins). ``stored_originals``:
    ``(external_id, fields, label name, image)`` of the project's originals under the batch's
    ids; ``stored_pairs``: ``(external_id, fields, image, original's external_id)`` of its
    pairs (rows this job wrote itself left out). An original given without a label (``null``:
    unknown) names the stored one when its text and image are the same. Returns ``(what,
    message)`` pairs, ``what`` naming the id (``original 'g2'``, ``pair 'd1'``). ``refused``:
    the messages of a strict import, which writes nothing, so they say only what is wrong, not
    what the import did with the row."""
    out = []
    for ext, fields, label, image in stored_originals:
        o = originals[ext]
        if (fields, label if o.label is not None else None, image) != (o.fields, o.label, o.image):
            out.append(
                (
                    f"original {ext!r}",
                    f"original id {ext!r} is in the project already with other text, label or image (from an earlier "
                    "import)"
                    + (
                        ""
                        if refused
                        else "; the project keeps its own, and this file's pairs naming it are attached to it"
                    ),
                )
            )
    for ext, fields, image, original_id in stored_pairs:
        p = pairs[ext]
        if (fields, image, original_id) != (p.cf_fields, p.cf_image, p.original.id):
            out.append(
                (
                    f"pair {ext!r}",
                    f"pair id {ext!r} is in the project already with another counterfactual or original (from an "
                    "earlier import)"
                    + (
                        " (an id names one pair)"
                        if refused
                        else "; skipped, the project keeps its own (an id names one pair)"
                    ),
                )
            )
    return out


def _warn_kept(
    originals: dict[str, OriginalRecord],
    pairs: dict[str, PairRecord],
    stored_originals: list[tuple[Any, ...]],
    stored_pairs: list[tuple[Any, ...]],
    report: ImportReport,
) -> None:
    """A warning for each record whose id an earlier import gave to something else
    (:func:`_kept`; ``--skip-bad-rows``: a strict import refused them before writing), instead
    of skipping the row, or attaching a pair to another original, without a word."""
    limit = settings.COUNTERPART.get("IMPORT_MAX_PROBLEMS", 10000)
    for _, message in _kept(originals, pairs, stored_originals, stored_pairs):
        report.add_warning(message, limit)


def _conflicts(project: Project, batch: list[OriginalRecord | PairRecord], job_id: int | None) -> list[tuple[str, str]]:
    """:func:`_kept`'s messages for ``batch`` (read before anything is written: a strict import
    refuses them). Rows this job wrote in an earlier execution are its own, not conflicts."""
    originals, _, pairs, _ = _by_id(batch)
    stored_o = Example.objects.filter(project=project, external_id__in=list(originals))
    stored_p = Candidate.objects.filter(project=project, external_id__in=list(pairs))
    if job_id is not None:
        stored_o, stored_p = stored_o.exclude(job_id=job_id), stored_p.exclude(job_id=job_id)
    return _kept(
        originals,
        pairs,
        stored_o.values_list("external_id", "fields", "label__name", "image"),
        stored_p.values_list("external_id", "fields", "image", "example__external_id"),
        refused=True,
    )


@dataclass(frozen=True)
class _Earlier:
    """The rows an import job wrote in its earlier executions: marked with the job, with a
    primary key up to the largest it had when this execution started (ids only grow)."""

    job_id: int
    max_example: int
    max_candidate: int

    @classmethod
    def of(cls, job_id: int) -> _Earlier:
        return cls(
            job_id,
            Example.objects.filter(job_id=job_id).aggregate(m=Max("pk"))["m"] or 0,
            Candidate.objects.filter(job_id=job_id).aggregate(m=Max("pk"))["m"] or 0,
        )

    def example(self, job: int | None, pk: int) -> bool:
        return job == self.job_id and pk <= self.max_example

    def candidate(self, job: int | None, pk: int) -> bool:
        return job == self.job_id and pk <= self.max_candidate


def _candidate(
    project: Project, rec: PairRecord, example_id: int, label: Callable[[str | None], Any]
) -> dict[str, Any]:
    # A label of unknown source is what the file says, not a known (gold) answer: "imported"
    source_given = rec.label_source or ("imported" if rec.cf_label is not None else "")
    final_state = FINAL_STATES.get(source_given) if rec.cf_label is not None else None
    if final_state is not None:
        final_label, gold = rec.cf_label, rec.gold_label
        state, source = final_state, source_given
    else:  # gold: a known answer, not a final label
        final_label, gold = None, rec.cf_label if rec.cf_label is not None else rec.gold_label
        state, source = states.POOLED, ""
    return {
        "project_id": project.pk,
        "external_id": rec.id,
        "example_id": example_id,
        "group": rec.group,
        "fields": rec.cf_fields,
        "image": rec.cf_image,
        "generator": rec.generator,
        "perturbation": rec.perturbation,
        "target_label_id": label(rec.target_label),
        "scores": rec.scores,
        "state": state,
        "label_id": label(final_label),
        "label_source": source,
        "confidence": rec.confidence,
        "gold_label_id": label(gold),
        # counterfactual.valid (docs/formats.md §1) lives in the candidate's meta
        "meta": rec.meta if rec.valid is None else {**rec.meta, "valid": rec.valid},
    }


def _bulk_insert(model: type[models.Model], rows: list[dict[str, Any]]) -> None:
    """One ``executemany`` INSERT for ``rows`` (dicts of attname -> value).

    Same result as ``bulk_create`` (every concrete column; a column missing from a row gets
    the field's default; ``auto_now``/``auto_now_add`` get the current time; JSON and date
    values are adapted by their fields), without building model instances and preparing
    every value through the ORM, which made imports about 3x slower. Constraints are the
    database's, as with ``bulk_create``."""
    fields = [f for f in model._meta.concrete_fields if not f.primary_key]
    now = timezone.now()
    defaults = {f.attname: f.get_default() for f in fields}
    adapt = {
        f.attname: f
        for f in fields
        if isinstance(f, (models.JSONField, models.DateTimeField, models.DateField, models.BooleanField))
    }
    auto = {f.attname for f in fields if getattr(f, "auto_now", False) or getattr(f, "auto_now_add", False)}
    # The same adapted value for every row's timestamps and empty JSON objects.
    adapted_now = {name: adapt[name].get_db_prep_save(now, connection) for name in auto if name in adapt}
    adapted_empty = {f.attname: f.get_db_prep_save({}, connection) for f in fields if isinstance(f, models.JSONField)}
    values = []
    for row in rows:
        out = []
        for f in fields:
            name = f.attname
            if name in auto:
                out.append(adapted_now.get(name, now))
                continue
            v = row.get(name, defaults[name])
            if name in adapt:
                v = (
                    adapted_empty[name]
                    if v == {} and name in adapted_empty
                    else adapt[name].get_db_prep_save(v, connection)
                )
            out.append(v)
        values.append(out)
    qn = connection.ops.quote_name
    sql = "INSERT INTO {} ({}) VALUES ({})".format(
        qn(model._meta.db_table), ", ".join(qn(f.column) for f in fields), ", ".join(["%s"] * len(fields))
    )
    with connection.cursor() as cursor:
        cursor.executemany(sql, values)
