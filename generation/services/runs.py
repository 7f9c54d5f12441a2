"""Generation runs: create, execute (resumably), cancel.

How a run is written, and why it survives a killed worker
---------------------------------------------------------
``run_execute`` walks the project's originals in primary-key order (keyset pagination,
``GENERATION_BATCH_SIZE`` originals at a time, so memory stays flat in the number of
originals). A run with a ``limit`` below the number of originals walks instead a
stratified, seeded sample fixed when it starts (``generation/ml/sampling.py``; its ids in
``run.metrics["sample"]``, the cursor then a position in it). For each batch it asks the
generator for candidates, applies the run's filters, and then writes **in one transaction**:

* the batch's candidates, with deterministic external ids ``"{run}:{original}:{n}"``,
* ``run.done`` / ``run.skipped`` / ``run.skips`` for the batch, and
* the progress marker ``run.metrics["cursor"]`` (the last original's primary key).

The transaction locks the run row and checks that ``done`` is still what this executor
last saw, so two executors of the same run (a redelivered message while the first one
still runs) can never both write a batch. A worker killed between two batches loses only
the uncommitted batch; when the message is redelivered (``acks_late`` +
``reject_on_worker_lost`` on the task) ``run_execute`` sees ``status == "running"`` and
continues after the cursor — no candidate is written twice (the ids would collide with
the unique ``(project, external_id)`` constraint anyway) and every original is covered.

Candidate states: candidates are inserted as ``generated`` and, in the same transaction,
moved to ``pooled`` or ``filtered_out`` through ``candidates_transition`` (the only way a
state changes), so no other reader ever sees them half-filtered.
"""

from __future__ import annotations

import contextlib
import json
import logging
import math
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

from django.conf import settings
from django.core.exceptions import NON_FIELD_ERRORS, ValidationError
from django.db import transaction
from django.db.models import Count, F, QuerySet
from django.utils import timezone

from generation.ml import registry
from generation.ml import teacher as ml_teacher
from generation.ml.base import (
    BackendUnavailable,
    GeneratedCandidate,
    GeneratorConfigError,
    Original,
    Skip,
    StopHook,
    StopRequested,
)
from generation.ml.sampling import stratified_sample
from generation.ml.stages import StageClock
from generation.models import GenerationRun
from generation.selectors import RECENT_BATCHES
from generation.services.availability import availability
from generation.services.llm import PROMPTING, backend_problem, endpoint_config, endpoint_configured, resolve_backend
from generation.services.run_quality import (
    FILTER_NAMES,
    apply_filters,
    compute_run_metrics,
    default_band,
    default_filters,
    parse_band,
)
from projects import states
from projects.aggregates import stats_write
from projects.formats.reading import unstorable
from projects.models import (
    JOB_ACTIVE,
    JOB_FINISHED,
    Candidate,
    Example,
    Job,
    Label,
    Project,
)
from projects.selectors import example_splits, job_waiting_behind
from projects.services.candidates import candidates_transition
from projects.services.jobs import (
    JobCancelled,
    JobContext,
    JobFailed,
    JobSuperseded,
    job_cancel,
    job_create,
    job_execute,
    job_wait_seconds,
    jobs_just_started,
)

logger = logging.getLogger(__name__)

ACTIVE = JOB_ACTIVE
FINISHED = JOB_FINISHED
RUN_OPTION_KEYS = (
    "limit",
    "max_per_original",
    "seed",
    "similarity_band",
    "filters",
    "batch_size",
    "split",
    "generator_options",
    "validity_threshold",
    "teacher",
    "teacher_threshold",
)
TEACHER_CHOICES = ("on", "off")


def _cfg(key: str) -> Any:
    counterpart: Mapping[str, Any] = settings.COUNTERPART  # a TypedDict: a str key needs this view
    return counterpart[key]


# ---------------------------------------------------------------------------------------
# options
# ---------------------------------------------------------------------------------------
# Bounds of a run's numeric options, the form's and the API's (issue 32.8: a limit of 1e26 was
# accepted, and its cancel took 110 s to land).
MAX_LIMIT = 10_000_000  # originals
MAX_PER_ORIGINAL = 1000  # candidates per original
MAX_SEED = 2**32 - 1  # what numpy's generators take


def _positive_int(value: Any, name: str, errors: dict[str, str], maximum: int | None = None) -> int | None:
    if value is None or value == "":
        return None
    try:
        if isinstance(value, bool):
            raise ValueError
        n = int(value)
        if isinstance(value, float) and value != n:
            raise ValueError
    except (TypeError, ValueError, OverflowError):
        errors[name] = f"{name} must be a whole number"
        return None
    if n < 1 or (maximum is not None and n > maximum):
        errors[name] = f"{name} must be between 1 and {maximum}" if maximum else f"{name} must be at least 1"
        return None
    return n


def run_options_clean(*, project: Project, options: dict[str, Any] | None) -> dict[str, Any]:
    """Check and normalise a run's options. Raises ``ValidationError`` with a message per
    option (the API turns it into a 400). Generator-specific options are passed through
    under ``generator_options``: :func:`run_create` refuses a name the generator does not
    take; the generator checks their values when the run starts."""
    options = dict(options or {})
    errors: dict[str, str] = {}
    unknown = sorted(set(options) - set(RUN_OPTION_KEYS))
    if unknown:
        errors["options"] = f"unknown option(s) {', '.join(unknown)}; run options are {', '.join(RUN_OPTION_KEYS)}"
    clean: dict[str, Any] = {}
    clean["limit"] = _positive_int(options.get("limit"), "limit", errors, maximum=MAX_LIMIT)
    clean["max_per_original"] = _positive_int(
        options.get("max_per_original"), "max_per_original", errors, maximum=MAX_PER_ORIGINAL
    )
    clean["batch_size"] = _positive_int(options.get("batch_size"), "batch_size", errors, maximum=1000) or int(
        _cfg("GENERATION_BATCH_SIZE")
    )
    seed = options.get("seed")
    if seed is None or seed == "":
        clean["seed"] = 0
    else:
        try:
            if isinstance(seed, bool) or (isinstance(seed, float) and seed != int(seed)):
                raise ValueError
            clean["seed"] = int(seed)
            if not 0 <= clean["seed"] <= MAX_SEED:
                errors["seed"] = f"seed must be between 0 and {MAX_SEED}"
        except (TypeError, ValueError, OverflowError):
            errors["seed"] = "seed must be a whole number"
    band = options.get("similarity_band")
    try:
        clean["similarity_band"] = list(parse_band(band) if band not in (None, "") else default_band(project.task))
    except ValueError as exc:
        errors["similarity_band"] = str(exc)
    filters = options.get("filters")
    if filters is None:
        names = default_filters(project.task)
    elif isinstance(filters, str):
        names = [] if filters.strip().lower() in ("", "none") else [f.strip() for f in filters.split(",") if f.strip()]
    elif isinstance(filters, list | tuple):
        names = [str(f) for f in filters]
    else:
        names = []
        errors["filters"] = "filters must be a list or a comma-separated string"
    bad = [f for f in names if f not in FILTER_NAMES]
    if bad:
        errors["filters"] = f"unknown filter(s) {', '.join(bad)}; choose from {', '.join(FILTER_NAMES)} or none"
    clean["filters"] = [f for f in FILTER_NAMES if f in names]  # canonical order, no repeats
    clean["split"] = str(options.get("split") or "")
    vt = options.get("validity_threshold")
    if vt is not None and vt != "":
        try:
            clean["validity_threshold"] = float(vt)
            if not 0.0 <= clean["validity_threshold"] <= 1.0:
                raise ValueError
        except (TypeError, ValueError):
            errors["validity_threshold"] = "validity_threshold must be a number between 0 and 1"
    _clean_teacher(project, options, clean, errors)
    gen_opts = options.get("generator_options") or {}
    if not isinstance(gen_opts, dict):
        errors["generator_options"] = "generator_options must be an object"
        gen_opts = {}
    try:
        json.dumps(gen_opts, allow_nan=False)
    except (TypeError, ValueError, RecursionError):
        errors["generator_options"] = "generator_options must be JSON (no NaN or Infinity)"
    clean["generator_options"] = gen_opts
    # Text the database cannot store (NUL, lone surrogates) or absurd nesting, anywhere in
    # the options: a field message here, never a database error at the write.
    for key in sorted(set(options) & set(RUN_OPTION_KEYS)):
        if key not in errors and (msg := unstorable(options[key], where=key)):
            errors[key] = msg
    if clean["split"] and "split" not in errors and not project.examples.filter(split=clean["split"]).exists():
        # else the run loads its models, reads no original and "succeeds" with 0 / 0
        have = example_splits(project=project)
        where = f"its splits are {', '.join(have)}" if have else "its originals have no split: leave it empty"
        errors["split"] = f"no original of this project has the split {clean['split'][:80]!r}; {where}"
    if errors:
        raise ValidationError(errors)
    return clean


def _clean_teacher(project: Project, options: dict[str, Any], clean: dict[str, Any], errors: dict[str, str]) -> None:
    """``teacher``: on / off (default: on when the project has a task model f, issue 31);
    ``teacher_threshold``: P, the probability f must give a flip's target label."""
    from labeling.selectors import teacher_available

    raw = options.get("teacher")
    value = {True: "on", False: "off"}.get(raw, str(raw).strip().lower()) if raw is not None else "auto"
    if value in ("", "auto", "default", "none"):
        value = "on" if teacher_available(project=project) else "off"
    elif value not in TEACHER_CHOICES:
        errors["teacher"] = "teacher must be on, off or auto"
    elif value == "on" and not teacher_available(project=project):
        errors["teacher"] = "the project has no task model f to act as teacher: train one first, or set teacher off"
    clean["teacher"] = value
    tt = options.get("teacher_threshold")
    if tt is None or tt == "":
        clean["teacher_threshold"] = ml_teacher.DEFAULT_THRESHOLD
    else:
        try:
            clean["teacher_threshold"] = float(tt)
            if not 0.0 <= clean["teacher_threshold"] <= 1.0:
                raise ValueError
        except (TypeError, ValueError):
            errors["teacher_threshold"] = "teacher_threshold must be a number between 0 and 1"


# ---------------------------------------------------------------------------------------
# create / start / cancel
# ---------------------------------------------------------------------------------------
@transaction.atomic
def run_create(
    *, project: Project, generator: str, options: dict[str, Any] | None = None, created_by: Any = None
) -> GenerationRun:
    """A queued run: a ``generation`` job and its run row. Unknown generator, bad run options
    or a generator option the generator does not take: ``ValidationError``."""
    if not registry.is_registered(generator):
        raise ValidationError(
            {"generator": f"unknown generator {generator!r}; choose one of {', '.join(registry.names())}"}
        )
    if not Example.objects.filter(project=project).exists():  # else a run "succeeded" on 0 / 0, saying nothing
        raise ValidationError({NON_FIELD_ERRORS: "this project has no originals to generate from: import some first"})
    clean = run_options_clean(project=project, options=options)
    problem = backend_problem(generator, clean["generator_options"])
    if problem:
        raise ValidationError({"backend": problem})
    if unknown := registry.options_problem(generator, clean["generator_options"]):
        # refused now, not by the worker after its models have loaded (no model is loaded here)
        raise ValidationError({"generator_options": unknown})
    can = availability(generator, project.task, clean["generator_options"])
    if not can.available:  # what the run form and the generators list say, in the same words
        raise ValidationError({"generator": f"{generator} cannot run for this project: {can.reason}"})
    job = job_create(kind="generation", project=project, params={"generator": generator}, created_by=created_by)
    return GenerationRun.objects.create(job=job, project=project, generator=generator, options=clean)


def run_start(
    *, project: Project, generator: str, options: dict[str, Any] | None = None, created_by: Any = None
) -> GenerationRun:
    """Create a run and enqueue its job once the run is committed (a broker that cannot be
    reached fails the run and raises ``BrokerUnavailable``). The same start again (generator,
    options and user) within ``DOUBLE_SUBMIT_SECONDS``, while the first run is queued or
    running, is a double submit (a double click, a client that sent its request twice): it
    returns that run, and nothing new is created or sent."""
    from projects.services.jobs import job_enqueue

    with transaction.atomic():
        earlier = _double_submit(project=project, generator=generator, options=options, created_by=created_by)
        if earlier is not None:
            return earlier
        run = run_create(project=project, generator=generator, options=options, created_by=created_by)
        job_id = run.job_id
        transaction.on_commit(lambda: job_enqueue(job_id=job_id))
    run.job.refresh_from_db()
    return run


def _double_submit(
    *, project: Project, generator: str, options: dict[str, Any] | None, created_by: Any
) -> GenerationRun | None:
    """The run that an identical start created moments ago and that has not ended, if any
    (:func:`projects.services.jobs.jobs_just_started` finds the jobs and locks the project's
    row). Options that do not clean are left to :func:`run_create`, which refuses them."""
    try:
        wanted = json.loads(json.dumps(run_options_clean(project=project, options=options), default=str))
    except ValidationError:
        return None
    jobs = jobs_just_started(kind="generation", project=project, created_by=created_by)
    recent = GenerationRun.objects.select_related("job").filter(job__in=jobs, generator=generator)
    return next((run for run in recent.order_by("-pk") if run.options == wanted), None)


def run_cancel(*, run: GenerationRun) -> GenerationRun:
    """Ask a run to stop. A queued run is cancelled at once; a running one stops at its
    next batch. A finished run is left as it is."""
    job_cancel(job=run.job)
    run.refresh_from_db()
    return run


# ---------------------------------------------------------------------------------------
# execute
# ---------------------------------------------------------------------------------------
@dataclass
class _BatchOutcome:
    rows: list[Candidate] = field(default_factory=list)
    kept_ids: list[str] = field(default_factory=list)
    dropped_ids: list[str] = field(default_factory=list)
    skips: list[dict[str, str]] = field(default_factory=list)


def _examples_qs(run: GenerationRun) -> QuerySet[Example]:
    qs = Example.objects.filter(project_id=run.project_id)
    if run.options.get("split"):
        qs = qs.filter(split=run.options["split"])
    return qs


def _examples(run: GenerationRun, cursor: int, size: int) -> tuple[list[Example], int]:
    """The next batch and the cursor after it. A run with a sample (a limit) walks the
    sample's ids in their order and its cursor is a position in it; otherwise the cursor
    is the last original's primary key (keyset pagination)."""
    sample = (run.metrics or {}).get("sample")
    if sample is not None:
        ids = [int(i) for i in sample[cursor : cursor + size]]
        found = _examples_qs(run).in_bulk(ids)
        return [found[i] for i in ids if i in found], cursor + len(ids)
    batch = list(_examples_qs(run).filter(pk__gt=cursor).order_by("pk")[:size])
    return batch, batch[-1].pk if batch else cursor


def _sample(run: GenerationRun) -> list[int] | None:
    """With a limit below the number of originals: a stratified, seeded sample of that many
    (``generation/ml/sampling.py``); None otherwise (every original, by id)."""
    limit = run.options.get("limit")
    qs = _examples_qs(run)
    if not limit or qs.count() <= int(limit):
        return None
    rows = list(qs.values_list("pk", "label_id"))
    return stratified_sample(rows, int(limit), int(run.options.get("seed") or 0))


def _sample_labels(sample: list[int]) -> dict[str, int]:
    """How many originals of each label a sample holds (``(none)``: without a label)."""
    counts = Example.objects.filter(pk__in=sample).values_list("label__name").annotate(n=Count("pk")).order_by()
    return {str(name or "(none)"): int(n) for name, n in counts}


def _count_examples(run: GenerationRun) -> int:
    n: int = _examples_qs(run).count()
    limit = run.options.get("limit")
    return min(n, int(limit)) if limit else n


def _to_original(
    ex: Example, project: Project, label_names: dict[int, str], labels: tuple[str, ...]
) -> Original | Skip:
    fields = ex.fields if isinstance(ex.fields, dict) else {}
    out: dict[str, str] = {}
    for name in project.text_fields:
        value = fields.get(name)
        if value is None:
            return Skip(ex.external_id, f"missing field {name!r}")
        if not isinstance(value, str) or not value.strip():
            return Skip(ex.external_id, f"empty field {name!r}")
        out[name] = value
    return Original(
        id=ex.external_id,
        fields=out,
        label=label_names.get(ex.label_id) if ex.label_id else None,
        labels=labels,
        task=project.task,
    )


def cancel_probe(ctx: JobContext, *, every: float = 1.0) -> StopHook:
    """A generator's ``should_stop`` hook: whether the job was asked to stop, read from the
    database at most once every ``every`` seconds."""
    last = [0.0, False]

    def should_stop() -> bool:
        now = time.monotonic()
        if not last[1] and now - float(last[0]) >= every:
            last[0], last[1] = now, ctx.cancel_requested()
        return bool(last[1])

    return should_stop


def batch_reporter(run: GenerationRun, ctx: JobContext, *, every: float = 2.0) -> Callable[[str], None]:
    """What the batch in progress is doing (``generating original 3 of 16 of this batch``,
    ``filtering …``), in the ``generating`` step's message, written at most once every ``every``
    seconds: a slow generator (a language model on a CPU, many seconds an original) otherwise
    shows the same 0/N for a whole batch. The next batch's write clears it (``_advance_step``)."""
    last = [-every]

    def report(message: str) -> None:
        now = time.monotonic()
        step = run.job.step
        if now - last[0] < every or not isinstance(step, dict) or step.get("name") != "generating":
            return
        last[0] = now
        step = {**step, "message": message}
        if ctx.owned().update(step=step, heartbeat_at=timezone.now()):
            run.job.step = step

    return report


def _between_originals(
    items: Iterable[GeneratedCandidate | Skip],
    should_stop: StopHook | None,
    on_original: Callable[[int], None] | None = None,
) -> Iterator[GeneratedCandidate | Skip]:
    """The generator's output, checking ``should_stop`` whenever it moves to another
    original (for generators that have no stop points of their own), and telling
    ``on_original`` how many originals it has finished."""
    current: str | None = None
    finished = -1
    for item in items:
        if item.original_id != current:
            current = item.original_id
            finished += 1
            if should_stop is not None and should_stop():
                raise StopRequested()
            if on_original is not None and finished:
                on_original(finished)
        yield item


def _generate(
    generator: Any,
    originals: Sequence[Original],
    should_stop: StopHook | None = None,
    on_original: Callable[[int], None] | None = None,
) -> Iterable[GeneratedCandidate | Skip]:
    """The generator's output for a batch; if the batch raises, each original is retried
    alone so one bad original becomes a skip instead of failing the run. A cancel
    (:class:`StopRequested`) stops at once."""
    try:
        return list(_between_originals(generator.generate(originals), should_stop, on_original))
    except (StopRequested, BackendUnavailable):
        raise
    except Exception:
        if len(originals) == 1:
            raise
    out: list[GeneratedCandidate | Skip] = []
    for o in originals:
        try:
            out.extend(_between_originals(generator.generate([o]), should_stop))
        except (StopRequested, BackendUnavailable):
            raise
        except Exception as exc:  # noqa: BLE001 - a per-original skip with the reason
            out.append(Skip(o.id, f"generator error: {type(exc).__name__}: {exc}"[:500]))
    return out


def _finite(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None  # NaN/inf are not JSON (PostgreSQL's jsonb refuses them)
    if isinstance(value, dict):
        return {str(k): _finite(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(v) for v in value]
    return value


def _jsonable(value: dict[str, Any]) -> dict[str, Any]:
    """Plain JSON: numpy scalars and other objects via ``str``/``float``, NaN/inf as null."""

    def default(o: Any) -> Any:
        try:
            return float(o)
        except (TypeError, ValueError):
            return str(o)

    plain: dict[str, Any] = _finite(json.loads(json.dumps(_finite(value), default=default)))
    return plain


def _external_id(run_id: int, original_id: str, n: int) -> str:
    ext = f"{run_id}:{original_id}:{n}"
    if len(ext) <= 200:
        return ext
    import hashlib

    return f"{run_id}:{hashlib.sha1(original_id.encode()).hexdigest()}:{n}"


def _process_batch(
    *,
    run: GenerationRun,
    generator: Any,
    examples: list[Example],
    project: Project,
    label_names: dict[int, str],
    label_ids: dict[str, int],
    labels: tuple[str, ...],
    encoder: Any,
    scorer: Any = None,
    validity_scorer: Any = None,
    teacher: Any = None,
    should_stop: StopHook | None = None,
    clock: StageClock | None = None,
    report: Callable[[str], None] | None = None,
) -> _BatchOutcome:
    clock = clock if clock is not None else StageClock()
    outcome = _BatchOutcome()
    by_id: dict[str, Example] = {}
    originals: list[Original] = []
    for ex in examples:
        o = _to_original(ex, project, label_names, labels)
        if isinstance(o, Skip):
            outcome.skips.append({"example": o.original_id, "reason": o.reason})
        else:
            by_id[o.id] = ex
            originals.append(o)
    per_original: dict[str, list[GeneratedCandidate]] = {o.id: [] for o in originals}
    skipped: dict[str, str] = {}
    if originals:
        with clock("generation"):
            on_original = None
            if report is not None:
                n = len(originals)
                on_original = lambda k: report(f"generating: {k} of this batch's {n} originals done")  # noqa: E731
            items = _generate(generator, originals, should_stop, on_original)
        for item in items:
            if isinstance(item, Skip):
                if item.original_id in per_original:
                    skipped.setdefault(item.original_id, item.reason)
            elif item.original_id in per_original:
                per_original[item.original_id].append(item)
    cap = run.options.get("max_per_original")
    for oid, cands in per_original.items():
        if cap:
            del cands[int(cap) :]
        if not cands:
            outcome.skips.append({"example": oid, "reason": skipped.get(oid, "the generator produced no candidate")})
    pairs = [(o, c) for o in originals for c in per_original[o.id]]
    if should_stop is not None and should_stop():  # cancelled while generating: no filtering
        raise StopRequested()
    if report is not None and pairs:
        report(f"filtering and scoring this batch's {len(pairs)} candidates")
    existing: dict[int, set[str]] = {}
    if "dedup" in run.options["filters"] and pairs:
        for ex_id, fields in (
            Candidate.objects.filter(example__in=list(by_id.values()))
            .exclude(job_id=run.job_id)
            .values_list("example_id", "fields")
        ):
            existing.setdefault(ex_id, set()).add(json.dumps(fields, sort_keys=True))
    verdicts = apply_filters(
        pairs,
        filters=run.options["filters"],
        band=tuple(run.options["similarity_band"]),
        encoder=encoder,
        existing={oid: existing.get(by_id[oid].pk, set()) for oid in by_id},
        scorer=scorer,
        max_ratio=float(_cfg("PERPLEXITY_MAX_RATIO")),
        validity_scorer=validity_scorer,
        validity_threshold=run.options.get("validity_threshold"),
        teacher=teacher,
        teacher_labels=labels,
        teacher_threshold=float(run.options.get("teacher_threshold", ml_teacher.DEFAULT_THRESHOLD)),
        clock=clock,
    )
    counters: dict[str, int] = {}
    for (o, c), verdict in zip(pairs, verdicts, strict=True):
        n = counters.get(o.id, 0)
        counters[o.id] = n + 1
        ext = _external_id(run.pk, o.id, n)
        ex = by_id[o.id]
        meta = _jsonable(dict(c.meta))
        for key in ("image", "original_image"):  # files a generator wrote: MEDIA_ROOT-relative
            if meta.get(key):
                meta[key] = _media_relative(str(meta[key]))
        meta["filters"] = verdict.passed
        if verdict.reasons:
            meta["filter_reasons"] = verdict.reasons
        target = label_ids.get(c.target_label) if c.target_label else None
        if c.target_label and target is None:
            meta["target_label_unknown"] = c.target_label
        outcome.rows.append(
            Candidate(
                project_id=run.project_id,
                external_id=ext,
                example=ex,
                group=ex.external_id,
                fields=_jsonable(dict(c.fields)),
                image=str(meta.get("image") or ""),
                generator=c.generator or run.generator,
                perturbation=c.perturbation or "",
                target_label_id=target,
                scores=_jsonable({**c.scores, **verdict.scores}),
                state=states.GENERATED,
                job_id=run.job_id,
                meta=meta,
            )
        )
        (outcome.kept_ids if verdict.keep else outcome.dropped_ids).append(ext)
    return outcome


def _media_relative(path: str) -> str:
    """A path under ``MEDIA_ROOT`` as the relative path ``Candidate.image`` stores (what
    ``MEDIA_URL`` serves); any other path unchanged."""
    from pathlib import Path

    try:
        return Path(path).resolve().relative_to(Path(settings.MEDIA_ROOT).resolve()).as_posix()
    except ValueError:
        return path


def run_image_dir(run: GenerationRun) -> str:
    """Where a run's generated images go: ``MEDIA_ROOT/generated/<run id>``."""
    from pathlib import Path

    return str(Path(settings.MEDIA_ROOT) / "generated" / str(run.pk))


def project_run_files(project: Project) -> list[Path]:
    """The image folders of the project's generation runs (removed when the project is deleted;
    registered with ``projects.services.deletion`` in ``GenerationConfig.ready``)."""
    return [Path(run_image_dir(run)) for run in GenerationRun.objects.filter(project=project).only("pk")]


def _write_batch(
    *,
    run: GenerationRun,
    ctx: JobContext,
    outcome: _BatchOutcome,
    n_originals: int,
    cursor: int,
    max_skips: int,
    clock: StageClock | None = None,
) -> None:
    """One transaction: candidates, their state moves, progress and the cursor. The job row
    is locked and must still be owned by this execution with the ``done`` it last saw. A
    cancel asked for before the lock drops the whole batch (:class:`StopRequested`): nothing
    of it is written. With ``clock``, its time goes to the ``db writes`` stage and the stages
    so far to ``run.metrics["stages"]``."""
    clock = clock if clock is not None else StageClock()
    with clock("db writes"), stats_write() as stats:
        locked = Job.objects.select_for_update().get(pk=run.job_id)
        if locked.token != ctx.token or locked.status != "running" or locked.done != run.job.done:
            raise JobSuperseded(f"run {run.pk} moved on (done {locked.done}, status {locked.status})")
        if locked.cancel_requested:
            raise StopRequested()
        locked_run = GenerationRun.objects.get(pk=run.pk)
        stats.lock([run.project_id])  # the project's aggregates follow (projects/aggregates.py)
        Candidate.objects.bulk_create(outcome.rows)
        mine = Candidate.objects.filter(project_id=run.project_id, job_id=run.job_id)
        if outcome.rows:
            stats.added(mine.filter(external_id__in=[c.external_id for c in outcome.rows]))
        if outcome.kept_ids:
            candidates_transition(candidates=mine.filter(external_id__in=outcome.kept_ids), to=states.POOLED)
        if outcome.dropped_ids:
            candidates_transition(candidates=mine.filter(external_id__in=outcome.dropped_ids), to=states.FILTERED_OUT)
        skips = list(locked_run.skips or [])
        room = max(0, max_skips - len(skips))
        skips.extend(outcome.skips[:room])
        metrics = dict(locked_run.metrics or {})
        metrics["cursor"] = cursor
        if "endpoint" in (run.metrics or {}):  # the model server's usage so far
            metrics["endpoint"] = run.metrics["endpoint"]
        metrics["stages"] = clock.table()  # up to this batch's writes (the final metrics have them all)
        GenerationRun.objects.filter(pk=run.pk).update(
            skipped=F("skipped") + len(outcome.skips),
            skips=skips,
            metrics=metrics,
        )
        step = _advance_step(locked.step, n_originals)
        job_update: dict[str, Any] = {"done": F("done") + n_originals, "heartbeat_at": timezone.now()}
        if step is not None:
            job_update["step"] = step
        Job.objects.filter(pk=run.job_id).update(**job_update)
    if step is not None:
        run.job.step = step
    run.job.done += n_originals
    run.skipped += len(outcome.skips)
    run.metrics = metrics
    run.skips = skips


def _final_metrics(run: GenerationRun, *, failed: bool, clock: StageClock | None = None) -> None:
    """Quality metrics of what the run wrote (also for a cancelled run, and for a failed one
    that wrote something), keeping the cursor and the generator's notes."""
    metrics: dict[str, Any] = {}
    if not failed or run.done:
        try:
            metrics = compute_run_metrics(run=run)
        except Exception as exc:
            logger.exception("metrics for run %s failed", run.pk)
            metrics = {"error": f"metrics failed: {exc}"}
    metrics["cursor"] = (run.metrics or {}).get("cursor", 0)
    for key in ("sample", "sample_labels", "endpoint"):  # a sampled run's cursor is a position in its sample
        if key in (run.metrics or {}):
            metrics[key] = run.metrics[key]
    if (run.metrics or {}).get("notes"):
        metrics["notes"] = run.metrics["notes"]
    if clock is not None and clock.wall:
        metrics["stages"] = clock.table()
    elif "stages" in (run.metrics or {}):
        metrics["stages"] = run.metrics["stages"]
    GenerationRun.objects.filter(pk=run.pk).update(metrics=metrics)
    run.metrics = metrics


def default_causal_lm_path() -> str:
    """The causal LM used where no ``COUNTERPART_*_PATH`` names a language model: the bundled
    SmolLM2 (converted into ``MODEL_DIR`` on first use, with a progress message), or ``""``
    when ``COUNTERPART_BUNDLED_LM`` is off or the package is not installed."""
    if not _cfg("BUNDLED_LM"):
        return ""
    from generation.ml import bundled_lm

    return bundled_lm.ensure_converted(_cfg("MODEL_DIR"))


def _context(run: GenerationRun) -> dict[str, Any]:
    """Settings a generator may name as parameters (``mlm_path``, ``device``, ...). A generator
    that takes ``causal_lm_path`` gets the bundled LM when no language model path is set."""
    ctx: dict[str, Any] = {k.lower(): v for k, v in settings.COUNTERPART.items() if isinstance(v, str | int | float)}
    ctx["task"] = run.project.task
    gen_opts = run.options.get("generator_options") or {}
    only_when = _LM_ONLY_WHEN.get(run.generator)
    if run.generator in PROMPTING:
        backend = resolve_backend(run.generator, gen_opts)
        if backend == "endpoint":
            if endpoint_configured():  # else the generator says what to set
                ctx["endpoint"] = endpoint_config()
            return ctx
        if backend == "bundled":
            ctx["causal_lm_path"], ctx["seq2seq_path"] = default_causal_lm_path(), ""
            return ctx
    if (
        not ctx.get("causal_lm_path")
        and not ctx.get("seq2seq_path")
        and "causal_lm_path" in registry.options_for(run.generator)
        and not gen_opts.get("model_path")
        and (only_when is None or gen_opts.get(only_when[0]) == only_when[1])
    ):
        ctx["causal_lm_path"] = default_causal_lm_path()
    return ctx


# generators that take causal_lm_path but use it only with this option set (no conversion else)
_LM_ONLY_WHEN: dict[str, tuple[str, str]] = {"rationale-infill": ("infiller", "causal")}


_scorers: dict[str, Any] = {}


def perplexity_lm_path() -> str:
    """``PERPLEXITY_LM_PATH``, else ``CAUSAL_LM_PATH``, else the bundled LM, else ``""``."""
    return str(_cfg("PERPLEXITY_LM_PATH") or _cfg("CAUSAL_LM_PATH") or default_causal_lm_path())


FLUENCY_CHOICES = ("auto", "lm", "ngram", "ngram-classifier")


def fluency_choice(task: str | None = None, choice: str | None = None) -> str:
    """Which scorer the perplexity filter uses for ``task``: ``lm`` (the causal LM), ``ngram``
    (``generation/ml/fluency.py`` at its distilled ratio) or ``ngram-classifier`` (the same model's
    classifier of the LM's decisions). ``COUNTERPART_FLUENCY_SCORER`` names one, or ``auto`` (the
    default): the task's entry of ``run_quality.NGRAM_FLUENCY`` (where the n-gram model was
    measured against the judged fixture), ``lm`` elsewhere. ``choice`` overrides the setting."""
    from generation.services.run_quality import NGRAM_FLUENCY

    choice = str(choice or _cfg("FLUENCY_SCORER") or "auto")
    if choice not in FLUENCY_CHOICES:
        raise GeneratorConfigError(f"the fluency scorer must be one of {', '.join(FLUENCY_CHOICES)}, not {choice!r}")
    if choice == "auto":
        return NGRAM_FLUENCY.get(task or "", "lm")
    return choice


def ngram_scorer(task: str = "", mode: str = "ratio") -> Any:
    """The n-gram fluency scorer (``COUNTERPART_FLUENCY_MODEL_PATH``, else the shipped model) for
    ``task``, deciding by its distilled ratio or (``mode="classifier"``) its classifier; one per
    process, path, task and mode."""
    import zipfile

    from generation.ml import fluency

    path = str(_cfg("FLUENCY_MODEL_PATH") or fluency.MODEL_DIR)
    key = f"ngram:{path}:{task}:{mode}"
    if key not in _scorers:
        model_key = f"ngram:{path}"
        try:
            model = _scorers.get(model_key) or fluency.NgramLM.load(path)
            _scorers[model_key] = model
            _scorers[key] = fluency.NgramScorer(model, task=task, mode=mode)
        except (OSError, ValueError, KeyError, zipfile.BadZipFile) as exc:  # missing, corrupt, or no classifier
            raise GeneratorConfigError(f"the n-gram fluency model cannot be loaded: {exc}") from exc
    return _scorers[key]


def perplexity_scorer(task: str | None = None, choice: str | None = None) -> Any:
    """The perplexity filter's scorer for ``task`` (:func:`fluency_choice`): the n-gram model, or
    the causal LM (one per process and path, its per-text cache kept), or None when no causal LM
    is available. ``choice``: as :func:`fluency_choice`."""
    chosen = fluency_choice(task, choice)
    if chosen != "lm":
        return ngram_scorer(task or "", "classifier" if chosen == "ngram-classifier" else "ratio")
    path = perplexity_lm_path()
    if not path:
        return None
    key = f"{path}:{_cfg('PERPLEXITY_DTYPE')}"
    if key not in _scorers:
        from generation.ml import hf
        from generation.ml.filters import PerplexityScorer

        dtype = str(_cfg("PERPLEXITY_DTYPE") or "float32")
        if dtype not in ("float32", "bfloat16"):
            raise GeneratorConfigError(f"COUNTERPART_PERPLEXITY_DTYPE must be float32 or bfloat16, not {dtype!r}")
        lm = hf.load_causal_lm(path, _cfg("DEVICE"))
        model = lm.model
        if dtype == "bfloat16":
            import copy

            import torch

            # a copy: the loaded model may be shared (hf's cache); the NLL is computed in float32
            model = copy.deepcopy(model).to(torch.bfloat16)
        _scorers[key] = PerplexityScorer(model=model, tokenizer=lm.tokenizer, device=lm.device, batch_size=32)
    return _scorers[key]


def validity_model_path() -> str:
    """``VALIDITY_MODEL_PATH``, else the model shipped in ``generation/ml/validity_model``
    (``train_validity``'s output for seed 0; a head on the bundled MiniLM)."""
    from pathlib import Path

    from generation.ml import validity as ml_validity

    return str(_cfg("VALIDITY_MODEL_PATH") or Path(ml_validity.__file__).parent / "validity_model")


def validity_scorer() -> Any:
    """The validity filter's discriminator (one per process and path). FileNotFoundError
    (saying how to train one) when the folder has no model."""
    from pathlib import Path

    path = validity_model_path()
    if not (Path(path) / "validity.json").is_file():
        raise FileNotFoundError(
            f"no validity model in {path}: train it with 'python manage.py train_validity' "
            "(or set COUNTERPART_VALIDITY_MODEL_PATH)"
        )
    key = f"validity:{path}"
    if key not in _scorers:
        from generation.ml.validity import ValidityDiscriminator

        _scorers[key] = ValidityDiscriminator(path, encoder_path=_cfg("MINILM_PATH") or None, device=_cfg("DEVICE"))
    return _scorers[key]


def _run_extras(run: GenerationRun) -> dict[str, Any]:
    """Run options a generator may take too (``seed``, ``max_per_original``, ``image_dir``: the
    folder for the images it draws, passed only to generators that name it)."""
    extras: dict[str, Any] = {"seed": run.options.get("seed", 0), "image_dir": run_image_dir(run)}
    if run.options.get("max_per_original"):
        extras["max_per_original"] = run.options["max_per_original"]
    return extras


def _shared_encoder() -> Any:
    from pathlib import Path

    from projects.ml.embeddings import shared_encoder

    path = _cfg("MINILM_PATH")
    if path and not Path(path).is_dir():  # say so before importing torch
        raise FileNotFoundError(f"MiniLM model directory not found: {path}")
    return shared_encoder(model_path=_cfg("MINILM_PATH") or None, cache_dir=_cfg("EMBEDDING_CACHE_DIR") or None)


def run_execute(
    *,
    run_id: int,
    encoder: Any = None,
    on_progress: Callable[[GenerationRun], None] | None = None,
    resume: bool = False,
    on_wait: Callable[[int], None] | None = None,
    on_phase: Callable[[str, str], None] | None = None,
) -> GenerationRun:
    """Execute (or resume) a run in this process, through its job (the ``generate`` command's
    foreground mode; workers run :func:`run_job_handler` from the job task). Safe to call
    again: a finished run is returned as is; a running one continues after its cursor when
    its heartbeat is stale, or at once with ``resume`` (the caller knows its executor died).
    While another job that changes the project's candidates runs, it waits (``on_wait(job
    id)`` each time it looks again). ``on_phase(name, message)``: when the run starts loading
    its models and when it starts generating."""
    run = GenerationRun.objects.select_related("job").get(pk=run_id)
    while True:
        job = job_execute(
            job_id=run.job_id,
            take_over=resume,
            handler=lambda job, ctx: _execute(run_id, ctx, encoder=encoder, on_progress=on_progress, on_phase=on_phase),
        )
        blocker = job_waiting_behind(job)
        if blocker is None:
            break
        logger.info("run %s waits behind job %s of its project", run_id, blocker)
        if on_wait is not None:
            on_wait(blocker)
        time.sleep(job_wait_seconds())
    return GenerationRun.objects.select_related("job", "project").get(pk=run_id)


def run_job_handler(job: Job, ctx: JobContext) -> dict[str, Any]:
    """The ``generation`` job kind (registered in ``GenerationConfig.ready``)."""
    return _execute(job.generation_run.pk, ctx)


def _set_phase(run: GenerationRun, ctx: JobContext, name: str, message: str = "") -> None:
    """The run's phase in ``Job.step`` (its done/total stay the run's originals): ``loading
    models`` (step 1 of 2, with what loads) while the generator and the filters' models load,
    then ``generating`` (step 2 of 2), whose ``done``/``total`` count this execution's
    originals and whose ``recent`` holds ``[time, done]`` at its start and after each of the
    last ``RECENT_BATCHES`` batches: the rate and ETA (``projects.job_progress``, the same on the
    run page, the API and the ``jobs`` command) are the step's originals over the time from its
    start to its last batch — generation and every filter of those batches, never the loading."""
    now = timezone.now()
    step: dict[str, Any] = {
        "name": name,
        "index": 1 if name == "loading models" else 2,
        "count": 2,
        "done": 0,
        "total": 0 if name == "loading models" else max(0, run.total - run.done),
        "unit": "" if name == "loading models" else "originals",
        "started_at": now.isoformat(),
        "message": message,
        "plan": ["loading models", "generating"],
    }
    if name != "loading models":
        step["recent"] = [[now.isoformat(), 0]]
    if not ctx.owned().update(step=step, heartbeat_at=now):
        raise JobSuperseded(f"run {run.pk} moved on")
    run.job.step = step


def _loading_message(run: GenerationRun) -> str:
    """What a run loads before its first original, in words."""
    filters = run.options.get("filters", [])
    parts = [f"the {run.generator} generator"]
    if "similarity" in filters:
        parts.append("MiniLM (similarity filter)")
    if "perplexity" in filters:
        try:
            lm = fluency_choice(run.project.task) == "lm"
        except GeneratorConfigError:  # a bad setting fails the run a moment later, with its message
            lm = True
        parts.append(
            "the language model of the perplexity filter" if lm else "the n-gram model of the perplexity filter"
        )
    if "validity" in filters:
        parts.append("the validity model")
    return "loading " + ", ".join(parts) + "…"


def _advance_step(step: Any, n_originals: int) -> dict[str, Any] | None:
    """The ``generating`` step after a batch of ``n_originals`` (None outside it)."""
    if not isinstance(step, dict) or step.get("name") != "generating":
        return None
    done = int(step.get("done") or 0) + n_originals
    recent = [p for p in (step.get("recent") or []) if isinstance(p, list) and len(p) == 2]
    recent = [*recent, [timezone.now().isoformat(), done]][-(RECENT_BATCHES + 1) :]
    return {**step, "done": done, "recent": recent, "message": ""}


def _execute(
    run_id: int,
    ctx: JobContext,
    *,
    encoder: Any = None,
    on_progress: Callable[[GenerationRun], None] | None = None,
    on_phase: Callable[[str, str], None] | None = None,
) -> dict[str, Any]:
    run = GenerationRun.objects.select_related("project", "job").get(pk=run_id)
    project = run.project
    _mark_started(run, ctx)
    _set_phase(run, ctx, "loading models", _loading_message(run))
    if on_phase is not None:
        on_phase("loading models", _loading_message(run))
    clock = StageClock.from_table((run.metrics or {}).get("stages"))  # a resumed run adds to it
    load_wall, load_cpu = time.perf_counter(), time.process_time()
    # Misconfiguration fails the run at start, before any original is touched.
    try:
        generator = registry.create(
            run.generator, run.options.get("generator_options") or {}, _context(run), run_options=_run_extras(run)
        )
    except GeneratorConfigError as exc:
        _final_metrics(run, failed=True)
        raise JobFailed(str(exc)) from exc
    if "similarity" in run.options.get("filters", []) and encoder is None:
        try:
            encoder = _shared_encoder()
            encoder.encode(["warm up"])
        except Exception as exc:
            _final_metrics(run, failed=True)
            raise JobFailed(f"the similarity filter needs MiniLM, which could not be loaded: {exc}") from exc
    warm_up = getattr(generator, "warm_up", None)  # resources its first batch would load
    if callable(warm_up):
        warm_up()
    should_stop = cancel_probe(ctx)
    report = batch_reporter(run, ctx)
    with contextlib.suppress(AttributeError):  # stop points inside the generator, where it has them
        cast(Any, generator).should_stop = should_stop
    scorer = None
    notes: list[str] = []
    if "perplexity" in run.options.get("filters", []):
        try:
            scorer = perplexity_scorer(project.task)
        except GeneratorConfigError as exc:
            _final_metrics(run, failed=True)
            raise JobFailed(f"the perplexity filter cannot load its language model: {exc}") from exc
        if scorer is None:
            notes.append(
                "perplexity filter skipped: no causal language model (set COUNTERPART_PERPLEXITY_LM_PATH "
                "or COUNTERPART_CAUSAL_LM_PATH, or install requirements-models.txt)"
            )
        elif getattr(scorer, "name", "") == "ngram":
            how = (
                f"its classifier at P >= {scorer.classifier['threshold']}"
                if scorer.classifier
                else f"ratio {scorer.max_ratio}"
            )
            notes.append(
                f"perplexity filter: the n-gram fluency model, {how} (distilled from the language model's "
                "decisions; COUNTERPART_FLUENCY_SCORER=lm scores with the language model)"
            )
    validity = None
    if "validity" in run.options.get("filters", []):
        try:
            validity = validity_scorer()
        except (OSError, ValueError) as exc:
            _final_metrics(run, failed=True)
            raise JobFailed(f"the validity filter cannot load its model: {exc}") from exc
    teacher = None
    if run.options.get("teacher") == "on":
        from labeling.selectors import teacher_for

        try:
            teacher = teacher_for(project=project, device=str(_cfg("DEVICE") or "cpu"))
        except (OSError, ValueError) as exc:
            _final_metrics(run, failed=True)
            raise JobFailed(f"the teacher (the project's task model f) cannot be loaded: {exc}") from exc
        if teacher is None:
            _final_metrics(run, failed=True)
            raise JobFailed(
                "the teacher is on but the project has no task model f any more: train one or run with teacher off"
            )
    _record_notes(run, generator, extra=notes)
    clock.add("model loading", time.perf_counter() - load_wall, time.process_time() - load_cpu)
    _set_phase(run, ctx, "generating")
    if on_phase is not None:
        on_phase("generating", f"models loaded in {clock.wall['model loading']:.1f} s")
    if run.job.attempts > 1:
        logger.info("resuming generation run %s at %s/%s", run.pk, run.done, run.total)
    labels_qs = list(Label.objects.filter(project=project).order_by("position").values_list("pk", "name"))
    label_names = dict(labels_qs)
    label_ids = {name: pk for pk, name in labels_qs}
    labels = tuple(name for _, name in labels_qs)
    batch_size = int(run.options.get("batch_size") or _cfg("GENERATION_BATCH_SIZE"))
    max_skips = int(_cfg("GENERATION_MAX_SKIPS"))
    usage_before = dict((run.metrics or {}).get("endpoint") or {})  # a resumed run adds to it
    try:
        while run.done < run.total and not ctx.cancel_requested():
            cursor = int((run.metrics or {}).get("cursor", 0))
            examples, after = _examples(run, cursor, min(batch_size, run.total - run.done))
            if after == cursor:
                break  # fewer originals than counted at start (deleted meanwhile)
            outcome = _process_batch(
                run=run,
                generator=generator,
                examples=examples,
                project=project,
                label_names=label_names,
                label_ids=label_ids,
                labels=labels,
                encoder=encoder,
                scorer=scorer,
                validity_scorer=validity,
                teacher=teacher,
                should_stop=should_stop,
                clock=clock,
                report=report,
            )
            _note_usage(run, generator, usage_before)
            _write_batch(
                run=run,
                ctx=ctx,
                outcome=outcome,
                n_originals=len(examples),
                cursor=after,
                max_skips=max_skips,
                clock=clock,
            )
            if on_progress is not None:
                on_progress(run)
    except JobSuperseded:
        raise
    except StopRequested:  # cancelled: the batch in progress is not written
        _note_usage(run, generator, usage_before)
        _final_metrics(run, failed=False, clock=clock)
        raise JobCancelled() from None
    except BackendUnavailable as exc:  # the batch in progress is not written: a resume redoes it
        _note_usage(run, generator, usage_before)
        _final_metrics(run, failed=True)
        raise JobFailed(f"{exc}. Start the model server again, then resume the run.") from exc
    except Exception:
        _note_usage(run, generator, usage_before)
        _final_metrics(run, failed=True)
        raise
    _final_metrics(run, failed=False, clock=clock)
    return {
        "run": run.pk,
        "done": run.done,
        "total": run.total,
        "skipped": run.skipped,
        "accepted": run.metrics.get("accepted"),
        "candidates": run.metrics.get("candidates"),
    }


def _note_usage(run: GenerationRun, generator: Any, before: Mapping[str, Any]) -> None:
    """The model server's requests, retries, cache hits, tokens and seconds (this execution's,
    added to those of earlier executions of the run) into ``run.metrics["endpoint"]``; written
    with the next batch or the final metrics."""
    usage = getattr(generator, "usage", None)
    now = usage() if callable(usage) else None
    if not now:
        return
    total = {k: round(float(before.get(k, 0) or 0) + float(v), 3) for k, v in now.items()}
    run.metrics = {**(run.metrics or {}), "endpoint": {k: (v if k == "seconds" else int(v)) for k, v in total.items()}}


def _record_notes(run: GenerationRun, generator: Any, extra: Sequence[str] = ()) -> None:
    """What the generator says about how it runs (e.g. "text-only: no diffusion model
    configured") and ``extra`` (a filter that was skipped) go to ``run.metrics["notes"]``,
    kept through the run's end."""
    notes = [str(n) for n in (getattr(generator, "notes", None) or [])] + [str(n) for n in extra]
    if not notes or (run.metrics or {}).get("notes") == notes:
        return
    with transaction.atomic():
        locked = GenerationRun.objects.select_for_update().get(pk=run.pk)
        metrics = dict(locked.metrics or {})
        metrics["notes"] = notes
        GenerationRun.objects.filter(pk=run.pk).update(metrics=metrics)
    run.metrics = metrics


def _mark_started(run: GenerationRun, ctx: JobContext) -> None:
    """On the first execution, fix the total and start the cursor; a resumed execution keeps
    both (the cursor says where the last committed batch ended)."""
    with transaction.atomic():  # one executor fixes both, another waits on the lock and sees them
        locked = GenerationRun.objects.select_for_update().get(pk=run.pk)
        if "cursor" not in (locked.metrics or {}):
            start: dict[str, Any] = {**(locked.metrics or {}), "cursor": 0}
            sample = _sample(locked)
            if sample is not None:
                start["sample"] = sample
                start["sample_labels"] = _sample_labels(sample)
            GenerationRun.objects.filter(pk=run.pk).update(metrics=start)
            ctx.progress(0, _count_examples(run))
    run.refresh_from_db()
    run.job.refresh_from_db()


__all__ = [
    "run_cancel",
    "run_create",
    "run_execute",
    "run_options_clean",
    "run_start",
]
