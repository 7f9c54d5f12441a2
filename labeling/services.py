"""Training h and auto-labelling with it (writes). Reads are in ``selectors.py``.

- :func:`pairwise_train`: trains f (CAPC) on the project's labelled originals and h on the
  human-labelled candidates (state ``human_labeled``, label source ``human`` or ``gold``),
  optionally warm-started; saves the model file under ``COUNTERPART["MODEL_DIR"]`` and a
  :class:`PairwiseModel` row with its cross-validated quality.
- :func:`autolabel`: applies the latest model to the ``pooled`` and ``abstained`` candidates;
  each moves to ``auto_labeled`` (label, source ``auto``, confidence) or, below the threshold,
  ``abstained`` — only through ``candidates_transition``, one UPDATE per chunk and label.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from pathlib import Path
from typing import Any, Protocol

import numpy as np
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Case, F, FloatField, Max, Q, Value, When

from labeling.ml.base_classifier import CrossFitted, TooFewLabels, make_base_classifier
from labeling.ml.feature_cache import (
    EncodingCache,
    embed_records_chunked,
    encode_pairs_chunked,
    encoding_key,
    files_digest,
)
from labeling.ml.features import Pair, PairEncoding
from labeling.ml.pairs import pairs_from_records, parse_warm_spec, unique_originals, unseen
from labeling.ml.pairwise import MIN_LABELS as MIN_LABELS  # re-exported: the dashboard's "enough labels"
from labeling.ml.pairwise import (
    LabelingModel,
    PairInputs,
    PairwiseClassifier,
    check_labels,
)
from labeling.ml.siblings import sibling_keys
from labeling.ml.strata import ALPHA, as_dicts, deciding_stratum, judge_strata, overall, verdict_index
from labeling.ml.strata import MIN_STRATUM_LABELS as MIN_STRATUM_LABELS  # re-exported: the dashboard's checks
from labeling.ml.task_inputs import load_task, read_task_meta, task_leak
from labeling.ml.validity import MIN_VALID, ValidityPrior
from labeling.models import MODES, AutolabelRun, PairwiseModel
from labeling.task_training import task_model_for_h
from projects import states
from projects.ml.embeddings import Encoder, shared_encoder
from projects.ml.textkeys import text_hash
from projects.models import Candidate, Example, Job, Label, Project
from projects.services.candidates import candidates_transition
from projects.services.jobs import JobContext, JobFailed, job_start, stop_if_cancelled

TRAIN_SOURCES = ("human", "gold")
STRATUM_ALPHA = ALPHA  # the strata's one-sided level (the dashboard's checks state it)
AUTOLABEL_FROM = (states.POOLED, states.ABSTAINED)
NOT_IN_POOL = (states.GENERATED, states.FILTERED_OUT)  # never labelled, nor counted as siblings
LEARNERS = ("linear", "cross-encoder")
# ``task_model`` for h: a task model folder, "" for none, or this: the project's newest one
TASK_MODEL_LATEST = "latest"
logger = logging.getLogger(__name__)

CHUNK = 500
# auto-labelling commits and reports progress at least every this many candidates (a block ends
# at an original's last candidate): a 1,000-pair project shows its progress move, not 0/N
# until the end (issue 25)
AUTOLABEL_BLOCK = 200


Progress = Callable[[int, int], None]


class StepProgress(Protocol):
    """How training reports its steps and the work inside each (``JobContext`` is one; the
    bench and the tests pass recorders)."""

    def step(
        self, name: str, *, index: int, count: int, total: int = 0, unit: str = "", plan: Sequence[str] = ()
    ) -> None: ...

    def step_progress(self, done: int, total: int | None = None) -> None: ...


class _Silent:
    def step(
        self, name: str, *, index: int, count: int, total: int = 0, unit: str = "", plan: Sequence[str] = ()
    ) -> None:
        pass

    def step_progress(self, done: int, total: int | None = None) -> None:
        pass


def embedder() -> Encoder:
    """The process-wide MiniLM encoder, cached under ``COUNTERPART["EMBEDDING_CACHE_DIR"]``."""
    cp = settings.COUNTERPART
    return shared_encoder(model_path=cp["MINILM_PATH"] or None, cache_dir=cp["EMBEDDING_CACHE_DIR"])


CAPTIONS_HAVE_NO_CLASS = (
    "an image-caption project's originals are captions without a class label (its labels are the annotators' "
    "caption choices, per image)"
)
H_NOT_FOR_CAPTIONS = (
    f"{CAPTIONS_HAVE_NO_CLASS}, so there is no original label for h to start from, nor f to train: h and "
    "auto-labelling are for text-classification projects; the caption pairs are labelled by people"
)


def pairwise_not_applicable(*, project: Project) -> str:
    """Why h (and auto-labelling) cannot run on ``project`` whatever its labels, or ""."""
    return H_NOT_FOR_CAPTIONS if project.task == "image-caption" else ""


def _label_names(project: Project) -> list[str]:
    return list(project.labels.order_by("position").values_list("name", flat=True))


# the Candidate columns a Pair is made of (``candidate_pair``); the original's label is y
PAIR_VALUES = ("example__fields", "fields", "example__label__name", "perturbation", "group")


def candidate_pair(
    o_fields: dict[str, str], c_fields: dict[str, str], y: str, perturbation: str | None, group: str | None
) -> Pair:
    """A :class:`Pair` from a ``values_list(*PAIR_VALUES)`` row (y must not be None)."""
    return Pair(o_fields, c_fields, y, perturbation or "", group or "")


def _human_labelled(project: Project) -> Any:
    return Candidate.objects.filter(project=project, state=states.HUMAN_LABELED, label_source__in=TRAIN_SOURCES)


def _training_pairs(project: Project, generators: list[str] | None = None) -> tuple[list[Pair], list[str], int]:
    """The human-labelled pairs, their labels and how many were skipped (no original label);
    ``generators``, when given, gets each pair's generator (for h's strata)."""
    rows = _human_labelled(project).values_list("label__name", "generator", *PAIR_VALUES).order_by("id")
    pairs: list[Pair] = []
    ys: list[str] = []
    skipped = 0
    for y2, generator, *pair in rows.iterator(chunk_size=2000):
        if pair[2] is None or y2 is None:
            skipped += 1  # an original without a label: h needs y
            continue
        pairs.append(candidate_pair(*pair))
        ys.append(y2)
        if generators is not None:
            generators.append(generator or "")
    return pairs, ys, skipped


def _sibling_context(project: Project) -> list[Pair]:
    """The other candidates of the originals that have a human-labelled candidate: the
    unlabelled siblings h's sibling stage sees while it trains (``siblings.py``)."""
    labelled = _human_labelled(project)
    rows = (
        Candidate.objects.filter(
            project=project,
            example__label__isnull=False,
            example_id__in=labelled.values("example_id"),
        )
        .exclude(pk__in=labelled.values("pk"))
        .exclude(state__in=NOT_IN_POOL)
        .values_list(*PAIR_VALUES)
        .order_by("id")
    )
    return [candidate_pair(*r) for r in rows.iterator(chunk_size=2000)]


def _read_warm(spec: str, project: Project, labels: list[str]) -> tuple[list[Pair], list[str]]:
    from projects.formats import FormatError, read

    try:
        fmt, path, split = parse_warm_spec(spec)
        records = list(
            read(fmt, [path], task=project.task, split=split, labels=labels, text_fields=list(project.text_fields))
        )
    except (ValueError, FormatError) as exc:
        raise ValidationError(f"warm start {spec!r}: {exc}") from None
    data, problems = pairs_from_records(records, labels)
    if not data.pairs:
        shown = "; ".join(problems[:3])
        raise ValidationError(
            f"warm start {spec!r}: no labelled pairs with this project's labels and fields"
            + (f" ({len(problems)} problems, e.g. {shown})" if problems else "")
        )
    return data.pairs, data.y_prime


def project_text_hashes(project: Project, fields: Sequence[str]) -> set[str]:
    """The normalised text hash (``textkeys.text_hash``, the evaluation's definition of "the
    same text") of every original and every candidate of the project."""
    seen: set[str] = set()
    for model in (Example, Candidate):
        for f in model.objects.filter(project=project).values_list("fields", flat=True).iterator(chunk_size=2000):
            seen.add(text_hash(f or {}, fields))
    return seen


def strip_warm_overlap(
    spec: str, pairs: list[Pair], ys: list[str], project: Project, fields: Sequence[str]
) -> tuple[list[Pair], list[str], str]:
    """The warm-start pairs without those whose original or counterfactual is also a text of
    the project (its originals or its pool), and a message saying how many went ("" when
    none). ``ValidationError`` when nothing is left: a warm start made of the project's own
    texts would only teach h the answers it is cross-validated on (issue 26: a warm start
    from CAD-NLI dev on a project imported from CAD-NLI dev took h's CV accuracy from 0.730 to
    0.910 without a word)."""
    keep = unseen(pairs, project_text_hashes(project, fields), fields)
    removed = len(pairs) - len(keep)
    if not removed:
        return pairs, ys, ""
    if not keep:
        raise ValidationError(
            f"warm start {spec!r}: all {removed} of its pairs share a text with this project's originals or "
            "candidates (the same data): h would be cross-validated on pairs it was pre-trained on. Choose a "
            "warm start from other data (e.g. the train split)."
        )
    message = (
        f"warm start {spec!r}: {removed} of its {len(pairs)} pairs share a text with this project's originals or "
        "candidates and were left out (h is never pre-trained on the pairs it is cross-validated on)"
    )
    return [pairs[i] for i in keep], [ys[i] for i in keep], message


def warm_start_refusal(*, project: Project, spec: str, title: str = "") -> str:
    """Why training would refuse the warm start ``spec`` (``FORMAT:PATH:SPLIT``) for this
    project, or "" when it would not: every pair of the set is one of the project's own texts
    (:func:`strip_warm_overlap`), as when the project was imported from that very split. Only
    a project holding originals imported from that format and split (``Example.source`` /
    ``split``) is checked pair by pair, so the train form stays cheap for every other project;
    the training keeps its own check. ``title`` (the set's name on the page) stands for the
    spec in the message, so a page shows no server path."""
    fmt, _, split = parse_warm_spec(spec)
    if not Example.objects.filter(project=project, source=fmt, split=split).exists():
        return ""
    labels = list(project.labels.order_by("position").values_list("name", flat=True))
    try:
        pairs, ys = _read_warm(spec, project, labels)
        strip_warm_overlap(spec, pairs, ys, project, list(project.text_fields))
    except ValidationError as exc:
        message = " ".join(exc.messages)
        return message.replace(repr(spec), title) if title else message
    return ""


def _validity_judgements(project: Project) -> tuple[list[str], list[bool]]:
    """(control code, valid) for every candidate someone judged: ``meta.valid`` (imported, or
    annotators' "Unclear / invalid"), and a human label without it (a labelled pair was judged
    sensible enough to label)."""
    codes: list[str] = []
    valid: list[bool] = []
    judged = Candidate.objects.filter(project=project).filter(
        Q(meta__has_key="valid") | Q(state=states.HUMAN_LABELED, label_source="human")
    )
    for code, v in judged.values_list("perturbation", "meta__valid").iterator(chunk_size=2000):
        codes.append(code or "")
        valid.append(v is not False)
    return codes, valid


def pairwise_training_data(*, project: Project, generators: list[str] | None = None) -> tuple[list[Pair], list[str]]:
    """The human-labelled pairs h trains on, or ValidationError saying why there are too few
    (cheap: one query, no model), so a page can refuse before it enqueues training.
    ``generators``, when given, gets each pair's generator."""
    if reason := pairwise_not_applicable(project=project):
        raise ValidationError(reason)  # not "0 human-labelled pairs, need at least 10": more would not help
    pairs, ys, skipped = _training_pairs(project, generators)
    try:
        check_labels(ys, _label_names(project), minimum=MIN_LABELS)
    except TooFewLabels as exc:
        extra = f" ({skipped} more have an original without a label)" if skipped else ""
        raise ValidationError(f"{exc}{extra}") from None
    return pairs, ys


def invariant_baseline(pairs: list[Pair], ys: list[str]) -> dict[str, Any]:
    """The ``invariant`` baseline ("nothing flips": y' = y) on the pairs h is trained on, in
    the same order as h's out-of-fold predictions: its accuracy and per pair whether it was
    right. It needs no training, so its accuracy on them is its cross-validated accuracy; the
    dashboard compares h's with it (``workspace/dashboard/selectors.py``)."""
    right = [int(p.y == y2) for p, y2 in zip(pairs, ys, strict=True)]
    return {"invariant_accuracy": round(sum(right) / len(right), 4) if right else None, "invariant_correct": right}


def project_model_files(project: Project) -> list[Path]:
    """The project's folder of pairwise models (removed when the project is deleted; registered
    with ``projects.services.deletion`` in ``LabelingConfig.ready``)."""
    return [Path(settings.COUNTERPART["MODEL_DIR"]) / f"project-{project.pk}"]


def model_path(project: Project, version: int) -> Path:
    return Path(settings.COUNTERPART["MODEL_DIR"]) / f"project-{project.pk}" / f"pairwise-v{version}.joblib"


def warm_feature_cache() -> EncodingCache:
    """The process-wide cache of warm-start encodings, on disk beside the MiniLM embedding
    cache (``EMBEDDING_CACHE_DIR/pair-features``), shared by every project on the machine."""
    directory = str(Path(settings.COUNTERPART["EMBEDDING_CACHE_DIR"]) / "pair-features")
    if directory not in _WARM_CACHES:
        _WARM_CACHES[directory] = EncodingCache(directory)
    return _WARM_CACHES[directory]


_WARM_CACHES: dict[str, EncodingCache] = {}


def _pairs_digest(pairs: Sequence[Pair], ys: Sequence[str]) -> str:
    rows = [[p.original, p.counterfactual, p.y, p.perturbation, y2] for p, y2 in zip(pairs, ys, strict=True)]
    return hashlib.sha256(json.dumps(rows, sort_keys=True).encode()).hexdigest()


def warm_encoding(
    *,
    spec: str,
    pairs: Sequence[Pair],
    ys: Sequence[str],
    labels: Sequence[str],
    fields: Sequence[str],
    encoder: Any,
    progress: Progress | None = None,
) -> tuple[PairEncoding, bool]:
    """The features of the warm-start pairs, from the cross-project cache when this set was
    encoded before (same spec, same file content, same pairs, same encoder model, labels and
    fields, same feature code), else computed chunk by chunk (``progress(pairs, total)``) and
    cached. Returns the encoding and whether it was a cache hit."""
    _, path, _ = parse_warm_spec(spec)
    model = str(getattr(encoder, "model_path", "") or type(encoder).__qualname__)
    key = encoding_key(
        spec=spec,
        content=f"{files_digest(path)}:{_pairs_digest(pairs, ys)}",
        model=model,
        labels=labels,
        fields=fields,
    )
    cache = warm_feature_cache()
    enc = cache.get(key)
    if enc is not None and len(enc) == len(pairs):
        if progress is not None:
            progress(len(pairs), len(pairs))
        return enc, True
    t0 = time.perf_counter()
    enc = encode_pairs_chunked(pairs, labels=labels, fields=fields, embed=encoder.encode, progress=progress)
    cache.put(key, enc)
    cache.record(spec=spec, key=key, pairs=len(pairs), seconds=time.perf_counter() - t0)
    return enc, False


def _with_base(enc: PairEncoding, pairs: Sequence[Pair], base: Any) -> PairInputs:
    """h's inputs: the encoding plus f's probabilities on x and x' (CAPC; cross-fitted f
    answers each original from the copy that did not train on it)."""
    if base is None:
        return PairInputs(enc)
    originals = [p.original for p in pairs]
    records = originals + [p.counterfactual for p in pairs]
    if isinstance(base, CrossFitted):
        both = base.predict_proba(records, keys=originals * 2)
    else:
        both = base.predict_proba(records)
    return PairInputs(enc, both[: len(pairs)], both[len(pairs) :])


def train_steps(*, mode: str, warm_start: str) -> list[str]:
    """The steps of a "Train h" job, as its box shows them."""
    return [
        "reading the labels" + (" and the warm-start set" if warm_start else ""),
        *(["training f on the labelled originals"] if mode == "capc" else []),
        *(["encoding the warm-start pairs"] if warm_start else []),
        "encoding the project's pairs",
        "adding f's outputs, fitting h and saving it",
    ]


def pairwise_train(
    *,
    project: Project,
    mode: str = "capc",
    warm_start: str = "",
    base: str = "minilm",
    threshold: float | None = None,
    learner: str = "linear",
    created_by: Any = None,
    progress: StepProgress | None = None,
    task_model: str = "",
    should_stop: Callable[[], bool] | None = None,
) -> PairwiseModel:
    """Train h on the project's human labels. Raises ``ValidationError`` (and writes nothing)
    when there are too few labels, a label class has none, or f cannot be trained.
    ``progress`` is told each step of :func:`train_steps` as it starts and, in the encoding
    steps, the pairs encoded so far (a chunk at a time). The warm-start set's features come
    from a cache shared by all projects after the first time (:func:`warm_encoding`).
    ``should_stop()`` (a job's cancel) is asked as each step starts and once more under the
    project's lock just before the new model is recorded: true, it raises ``JobCancelled``
    and no model is saved (the current model stays the current one)."""
    t0 = time.perf_counter()
    report: StepProgress = progress or _Silent()
    if mode not in MODES:
        raise ValidationError(f"unknown mode {mode!r}; choose pc or capc")
    steps = train_steps(mode=mode, warm_start=warm_start)
    at = iter(range(1, len(steps) + 1))

    def step(total: int = 0, unit: str = "") -> None:
        stop_if_cancelled(should_stop)
        index = next(at)
        report.step(steps[index - 1], index=index, count=len(steps), total=total, unit=unit, plan=steps)

    threshold = settings.COUNTERPART["MIN_CONFIDENCE"] if threshold is None else float(threshold)
    if not 0 <= threshold <= 1:
        raise ValidationError("threshold must be between 0 and 1")
    labels = _label_names(project)
    fields = list(project.text_fields)
    if learner not in LEARNERS:
        raise ValidationError(f"unknown learner {learner!r}; choose {' or '.join(LEARNERS)}")
    if learner == "cross-encoder" and (mode != "pc" or warm_start):
        raise ValidationError("the cross-encoder learner is PC only, without warm start")
    if learner == "cross-encoder":
        pairs, ys, _ = _training_pairs(project)
        return _train_cross_encoder(project, pairs, ys, threshold, created_by, t0, should_stop)
    step()  # reading
    generators: list[str] = []
    pairs, ys = pairwise_training_data(project=project, generators=generators)
    notes: list[str] = []  # what the training report says besides the figures

    originals = list(Example.objects.filter(project=project, label__isnull=False).values_list("fields", "label__name"))
    orig_records = [o for o, _ in originals]
    orig_y = [y for _, y in originals]
    warm_pairs: list[Pair] = []
    warm_y: list[str] = []
    if warm_start:
        warm_pairs, warm_y = _read_warm(warm_start, project, labels)
        warm_pairs, warm_y, overlap = strip_warm_overlap(warm_start, warm_pairs, warm_y, project, fields)
        if overlap:
            notes.append(overlap)
        w_orig, w_oy = unique_originals(warm_pairs)
        orig_records, orig_y = orig_records + w_orig, orig_y + w_oy

    f: Any = None
    if mode == "capc":
        step(len(orig_records), "originals")

        def make_f() -> Any:
            return make_base_classifier(
                base,
                labels=labels,
                fields=fields,
                embed=embedder().encode,
                model_path=settings.COUNTERPART["BASE_CLASSIFIER_PATH"],
                device=settings.COUNTERPART["DEVICE"],
            )

        if base == "minilm":  # embed the originals first, a chunk at a time, with progress
            embed_records_chunked(
                orig_records, fields, embedder().encode, lambda done, total: report.step_progress(done, total)
            )
        try:
            # trained bases are cross-fitted (f(x) is never a memorised label; see CrossFitted);
            # a ready-made HF model never saw these originals and is used as is
            f = make_f().fit(orig_records, orig_y) if base == "hf" else CrossFitted(make_f).fit(orig_records, orig_y)
        except TooFewLabels as exc:
            raise ValidationError(f"CAPC needs f: {exc}; import labelled originals or use --mode pc") from None
        except (ValueError, FileNotFoundError) as exc:
            raise ValidationError(f"base classifier: {exc}") from None
        report.step_progress(len(orig_records))
    task = None
    if task_model == TASK_MODEL_LATEST:
        # the newest task model, unless it is near chance (its gate, labeling/ml/task_gate.py)
        chosen_f, why_not = task_model_for_h(project=project)
        task_model = chosen_f.path if chosen_f else ""
        if why_not:
            notes.append(why_not)
    if task_model:
        # the task model (issue 26): h reads it unless it saw the labels h is cross-validated on
        try:
            meta = read_task_meta(task_model)
            leak = task_leak(
                meta,
                labelled=[p.counterfactual for p in pairs],
                originals=[o for o, _ in originals],
                fields=fields,
            )
            task = None if leak.refused else load_task(task_model, labels, fields, settings.COUNTERPART["DEVICE"])
        except (ValueError, FileNotFoundError) as exc:
            raise ValidationError(f"task model: {exc}") from None
        notes.append(leak.message())
    encoder = embedder()
    h = PairwiseClassifier(labels, fields, mode=mode, threshold=threshold)
    warm_cached = False
    if warm_pairs:
        step(len(warm_pairs), "pairs")
        warm_enc, warm_cached = warm_encoding(
            spec=warm_start,
            pairs=warm_pairs,
            ys=warm_y,
            labels=labels,
            fields=fields,
            encoder=encoder,
            progress=lambda done, total: report.step_progress(done, total),
        )
        warm_h = PairwiseClassifier(labels, fields, mode=mode).fit_warm(_with_base(warm_enc, warm_pairs, f), warm_y)
        h.with_warm(warm_h)
    context = _sibling_context(project)
    pool = pairs + context
    step(len(pool), "pairs")
    enc = encode_pairs_chunked(
        pool,
        labels=labels,
        fields=fields,
        embed=encoder.encode,
        progress=lambda done, total: report.step_progress(done, total),
    )
    # the last step starts as soon as the encoding ends: adding f's and the task model's outputs
    # took 47 s that the box showed as "1157/1157 pairs, ETA 0" (issue 32.6)
    step()  # fitting h
    try:
        inputs = _with_base(enc, pool, f).with_task(task, pool)
    except (ValueError, OSError) as exc:
        raise ValidationError(f"task model: {exc}") from None
    train_rows = list(range(len(pairs)))
    try:
        h.fit(inputs.subset(train_rows), ys)
    except TooFewLabels as exc:
        raise ValidationError(str(exc)) from None
    h.fit_siblings(inputs, sibling_keys(pool, fields), train_rows, ys)
    assert h.cv is not None
    # what the annotators' "Unclear / invalid" answers say about each control code: autolabel
    # abstains where a candidate is more likely invalid than valid (labeling/ml/validity.py)
    validity = ValidityPrior().fit(*_validity_judgements(project))
    cv: dict[str, Any] = dict(h.cv.as_dict())  # the CV figures plus the feature set's name
    cv["features"] = h.feature_set_name
    cv.update(invariant_baseline(pairs, ys))
    cv["candidates"] = h.candidates  # each candidate of the CV choice, its CV accuracy, the chosen one
    if task is not None and not h.uses_task:
        # f passed its gate, but the cross-validation says it adds nothing here: say so (issue 30)
        notes.append(
            f"the task model adds nothing here: h's cross-validation chose {h.feature_set_name}, which does not read "
            "it (see the candidates), so h labels without it"
        )
    # where h earns its labels (labeling/ml/strata.py): per source, generator and control code
    strata = as_dicts(
        judge_strata(cv["oof_correct"], cv["invariant_correct"], generators, [p.perturbation for p in pairs])
    )
    cv["strata"] = strata
    # h against "nothing flips" pooled, with the same test (the dashboard's check reads it)
    cv["h_vs_invariant"] = overall(cv["oof_correct"], cv["invariant_correct"])
    cv["task_model"] = task_model if h.uses_task else ""
    cv["notes"] = notes
    bundle = LabelingModel(
        labels,
        fields,
        mode,
        h,
        base=f,
        meta={
            "warm_start": warm_start,
            "base": base,
            "validity": asdict(validity),
            "strata": strata,
            "task_model": task_model if h.uses_task else "",
        },
    )
    bundle.task = task if h.uses_task else None
    cv["sibling_stage"] = h.sibling_stage is not None
    cv["sibling_context"] = len(context)  # unlabelled siblings the sibling stage saw
    if warm_pairs:
        cv["warm_features_cached"] = warm_cached
    return _save_model(
        project,
        bundle,
        should_stop,
        mode=mode,
        base_classifier=base,
        warm_start=warm_start,
        n_train=len(pairs),
        n_warm=len(warm_pairs),
        n_originals=len(orig_records) if f is not None else 0,
        label_counts={lab: ys.count(lab) for lab in labels},
        # rounded as the stored candidates and strata are: the report, the dashboard and the
        # command show the same figures (issue 30)
        cv_accuracy=round(h.cv.accuracy, 4),
        cv_macro_f1=round(h.cv.macro_f1, 4),
        cv_ece=round(h.cv.ece, 4),
        cv_folds=h.cv.folds,
        threshold=threshold,
        metrics=cv,
        seconds=round(time.perf_counter() - t0, 2),
        created_by=created_by,
    )


def _save_model(
    project: Project, bundle: LabelingModel, should_stop: Callable[[], bool] | None = None, **fields: Any
) -> PairwiseModel:
    """Record ``bundle`` as the project's next version (file and row in one locked step: a
    worker killed while writing leaves no row, and the next training writes that version
    again). A cancel seen under the lock saves nothing. A file that cannot be written (the
    disk is full, the folder cannot be made) is removed again and refused with the reason
    (``ValidationError``: the job's error), and the current model stays."""
    with transaction.atomic():
        Project.objects.select_for_update().filter(pk=project.pk).first()
        stop_if_cancelled(should_stop)
        version = (PairwiseModel.objects.filter(project=project).aggregate(v=Max("version"))["v"] or 0) + 1
        path = model_path(project, version)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            bundle.save(str(path))
        except OSError as exc:
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
            raise ValidationError(
                f"cannot write h's model file {path}: {exc.strerror or type(exc).__name__}; nothing was saved "
                "and the current h stays (make room under COUNTERPART_MODEL_DIR, then train again)"
            ) from exc
        return PairwiseModel.objects.create(project=project, version=version, path=str(path), **fields)


def _train_cross_encoder(
    project: Project,
    pairs: list[Pair],
    ys: list[str],
    threshold: float,
    created_by: Any,
    t0: float,
    should_stop: Callable[[], bool] | None = None,
) -> PairwiseModel:
    from labeling.ml.cross_encoder import MIN_LABELS as CE_MIN
    from labeling.ml.cross_encoder import CrossEncoderH
    from projects.ml.embeddings import default_model_path

    labels = _label_names(project)
    fields = list(project.text_fields)
    cp = settings.COUNTERPART
    h = CrossEncoderH(
        labels,
        fields,
        cp["MINILM_PATH"] or default_model_path(),
        device=cp["DEVICE"],
        threshold=threshold,
        min_labels=CE_MIN,
    )
    try:
        h.fit(pairs, ys)
    except TooFewLabels as exc:
        raise ValidationError(f"{exc} (the cross-encoder needs at least {CE_MIN})") from None
    assert h.cv is not None
    cv: dict[str, Any] = dict(h.cv.as_dict())  # the CV figures plus the feature set's name
    cv["features"] = h.feature_set_name
    cv.update(invariant_baseline(pairs, ys))
    bundle = LabelingModel(labels, fields, "pc", h, meta={"learner": "cross-encoder"})
    return _save_model(
        project,
        bundle,
        should_stop,
        mode="pc",
        base_classifier="",
        warm_start="",
        n_train=len(pairs),
        label_counts={lab: ys.count(lab) for lab in labels},
        # rounded as the stored candidates and strata are: the report, the dashboard and the
        # command show the same figures (issue 30)
        cv_accuracy=round(h.cv.accuracy, 4),
        cv_macro_f1=round(h.cv.macro_f1, 4),
        cv_ece=round(h.cv.ece, 4),
        cv_folds=1,
        threshold=threshold,
        metrics=cv,
        seconds=round(time.perf_counter() - t0, 2),
        created_by=created_by,
    )


def latest_model(project: Project) -> PairwiseModel:
    model = PairwiseModel.objects.filter(project=project).order_by("-version").first()
    if model is None:
        raise ValidationError(
            f"project {project.name!r} has no pairwise model yet: train h first (“Train h” on the project's Task model "
            "and h page, or python manage.py train_pairwise)"
        )
    return model


def load_model(project: Project, model: PairwiseModel) -> LabelingModel:
    """``model``'s file, with the encoder attached. ``ValidationError`` when the file is
    missing or the project's label set is no longer the one it was trained on."""
    try:
        bundle = LabelingModel.load(model.path, embed=embedder().encode)
    except FileNotFoundError:
        raise ValidationError(f"model file missing: {model.path}") from None
    labels = Label.objects.filter(project=project).values_list("name", flat=True)
    if sorted(labels) != sorted(bundle.labels):
        raise ValidationError("the project's label set changed since the model was trained; train again")
    return bundle


def _confidence_case(ids: list[int], conf: list[float]) -> Case:
    return Case(
        *[When(pk=i, then=Value(round(float(c), 6))) for i, c in zip(ids, conf, strict=True)], output_field=FloatField()
    )


def _blocks_by_example(rows: list[Any], size: int) -> Any:
    """``rows`` (ordered by example, its 5th column) in blocks of about ``size``, each ending
    at an example's last row."""
    start = 0
    while start < len(rows):
        end = min(start + size, len(rows))
        while end < len(rows) and rows[end][4] == rows[end - 1][4]:
            end += 1
        yield rows[start:end]
        start = end


def autolabel(
    *,
    project: Project,
    min_confidence: float | None = None,
    model: PairwiseModel | None = None,
    chunk_size: int = CHUNK,
    progress: Progress | None = None,
    job: Job | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> AutolabelRun:
    """Label the project's ``pooled`` and ``abstained`` candidates with the latest model;
    ``progress(done, total)`` counts candidates considered.

    Not one transaction: candidates are written in blocks (about ``4 × chunk_size``, each
    ending at an original's last candidate), and each block's labels, the run's counts and
    its cursor (the block's last original) commit together. A run of ``job`` that was
    killed is resumed by the job's next execution: same model and threshold, after the
    cursor, counts carried on — so the counts are what the run wrote, over all attempts.
    ``should_stop()`` (a job's cancel) is asked before each block: true, the run ends there,
    finished, with the counts of the blocks it wrote (the candidates after it stay as they were)."""
    t0 = time.perf_counter()
    run = AutolabelRun.objects.select_related("model").filter(job=job, finished=False).first() if job else None
    if run is None:
        model = model or latest_model(project)
        threshold = model.threshold if min_confidence is None else float(min_confidence)
        if not 0 <= threshold <= 1:
            raise ValidationError("min confidence must be between 0 and 1")
    else:
        model, threshold = run.model, run.min_confidence
        logger.info("resuming auto-label run %s after example %s", run.pk, run.cursor)
    bundle = load_model(project, model)
    label_ids = dict(Label.objects.filter(project=project).values_list("name", "pk"))

    # with the sibling stage, every candidate of an original is scored together (its human-labelled
    # siblings count as their labels, the others as h's first stage); only pooled / abstained
    # ones are written. Blocks end at an original's last candidate, so no sibling is cut off.
    siblings = bundle.uses_siblings
    base_qs = Candidate.objects.filter(project=project, example__label__isnull=False).exclude(state__in=NOT_IN_POOL)
    if not siblings:
        base_qs = base_qs.filter(state__in=AUTOLABEL_FROM)
    if run is not None:
        base_qs = base_qs.filter(example_id__gt=run.cursor)
    rows = list(
        base_qs.values_list(
            "pk",
            "state",
            "label_source",
            "label__name",
            "example_id",
            "meta__valid",
            "generator",
            "gold_label__name",
            *PAIR_VALUES,
        ).order_by("example_id", "pk")
    )
    # never a task label for a candidate judged invalid, or more likely invalid than valid
    # for its control code (the model's validity prior; older models have none)
    prior = ValidityPrior(**bundle.meta["validity"]) if "validity" in bundle.meta else None
    # h abstains on the strata where it did not beat "nothing flips" (labeling/ml/strata.py;
    # models trained before issue 26 have no strata and label everywhere, as they did)
    strata = verdict_index(bundle.meta["strata"]) if "strata" in bundle.meta else None
    held: dict[str, dict[str, Any]] = {}  # deciding stratum -> its verdict and how many it held back
    todo = sum(1 for r in rows if r[1] in AUTOLABEL_FROM)
    if run is None:
        run = AutolabelRun.objects.create(
            project=project, model=model, min_confidence=threshold, job=job, finished=False
        )
    done = run.considered  # what earlier attempts committed
    total = done + todo
    if progress is not None:
        progress(done, total)
    for block in _blocks_by_example(rows, min(chunk_size * 4, AUTOLABEL_BLOCK)):
        keep = [i for i, r in enumerate(block) if r[1] in AUTOLABEL_FROM]
        if not keep:  # every candidate of these originals is labelled already
            continue
        if should_stop is not None and should_stop():
            break
        cursor = block[-1][4]
        pairs = [candidate_pair(*r[8:]) for r in block]
        known = {
            i: r[3]
            for i, r in enumerate(block)
            if r[1] == states.HUMAN_LABELED and r[2] in TRAIN_SOURCES and r[3] is not None
        }
        proba_all = bundle.predict_proba_pool(pairs, known) if siblings else bundle.predict_proba(pairs)
        block = [block[i] for i in keep]
        judged_valid = np.asarray([r[5] is not False for r in block])
        if prior is not None:
            judged_valid &= prior.predict([r[-2] or "" for r in block]) >= MIN_VALID
        if strata is not None:
            for i, r in enumerate(block):
                verdict = deciding_stratum(strata, r[6] or "", r[-2] or "")
                if verdict["abstain"]:
                    judged_valid[i] = False
                    key = f"{verdict['kind']}:{verdict['value']}"
                    held.setdefault(key, {**verdict, "held_back": 0})["held_back"] += 1
        with transaction.atomic():
            labeled, abstained, with_answer, correct = _autolabel_block(
                block,
                proba_all[keep],
                bundle.labels,
                label_ids,
                valid=judged_valid,
                threshold=threshold,
                chunk_size=chunk_size,
            )
            AutolabelRun.objects.filter(pk=run.pk).update(
                considered=F("considered") + len(block),
                auto_labeled=F("auto_labeled") + labeled,
                abstained=F("abstained") + abstained,
                known_answers=F("known_answers") + with_answer,
                known_correct=F("known_correct") + correct,
                cursor=cursor,
            )
            done += len(block)
            if progress is not None:
                progress(done, total)  # a job's progress: refused (rolled back) if it lost the job
    run.refresh_from_db()
    run.skipped = run.considered - run.auto_labeled - run.abstained
    run.seconds = round(run.seconds + time.perf_counter() - t0, 2)
    run.finished = True
    run.save(update_fields=["skipped", "seconds", "finished"])
    # this attempt's candidates left to humans because h did not earn their stratum (not
    # stored on the run; the job's result and the command's output carry it)
    setattr(run, "held_back", sorted(held.values(), key=lambda v: -int(v["held_back"])))  # noqa: B010
    return run


def _autolabel_block(
    block: list[Any],
    proba: Any,
    labels: Sequence[str],
    label_ids: dict[str, int],
    *,
    valid: Any,
    threshold: float,
    chunk_size: int,
) -> tuple[int, int, int, int]:
    """Write one block's labels (confident and judged valid) and abstentions; returns
    (labelled, abstained, labelled with a known answer, of those labelled as the answer)."""
    labeled = abstained = 0
    was_abstained = np.asarray([r[1] == states.ABSTAINED for r in block])
    pred, conf = proba.argmax(axis=1), proba.max(axis=1)
    ids = np.asarray([r[0] for r in block])
    confident = (conf >= threshold) & valid
    for k, name in enumerate(labels):
        sel = np.flatnonzero(confident & (pred == k))
        for s in range(0, len(sel), chunk_size):
            part = sel[s : s + chunk_size]
            id_list = ids[part].tolist()
            labeled += candidates_transition(
                candidates=Candidate.objects.filter(pk__in=id_list),
                to=states.AUTO_LABELED,
                label_id=label_ids[name],
                label_source="auto",
                confidence=_confidence_case(id_list, conf[part].tolist()),
            )
    low = np.flatnonzero(~confident)
    for s in range(0, len(low), chunk_size):
        part = low[s : s + chunk_size]
        id_list = ids[part].tolist()
        # abstained -> abstained is not an edge: those already abstained stay as they are
        abstained += candidates_transition(
            candidates=Candidate.objects.filter(pk__in=id_list, state=states.POOLED),
            to=states.ABSTAINED,
            confidence=_confidence_case(id_list, conf[part].tolist()),
        )
        abstained += int(np.sum(was_abstained[part]))  # already abstained: they stay so
    # h measured where the answer is known (a gold label: imported CAD revisions, check items'
    # candidates), on what it labelled: what its cross-validation on human labels estimates
    gold = np.asarray([r[7] or "" for r in block], dtype=object)
    named = np.asarray(labels, dtype=object)[pred]
    known_mask = confident & (gold != "")
    return labeled, abstained, int(known_mask.sum()), int((known_mask & (named == gold)).sum())


# -- jobs (kinds ``train`` and ``autolabel``, registered in LabelingConfig.ready) -----------


def pairwise_train_start(
    *,
    project: Project,
    mode: str = "capc",
    warm_start: str = "",
    threshold: float | None = None,
    created_by: Any = None,
    task_model: str = "",
) -> Job:
    """Refuse at once when the labels cannot train h (cheap check), else queue a ``train``
    job on the ``ml`` queue (``task_model``: a task model folder h reads, issue 26)."""
    if mode not in MODES:
        raise ValidationError(f"unknown mode {mode!r}; choose pc or capc")
    pairwise_training_data(project=project)
    params: dict[str, Any] = {"mode": mode, "warm_start": warm_start, "threshold": threshold, "task_model": task_model}
    if task_model == TASK_MODEL_LATEST:
        # said when the job is queued (the page and the API), not only in h's report
        params["task_model_note"] = task_model_for_h(project=project)[1]
    return job_start(
        kind="train",
        project=project,
        created_by=created_by,
        total=len(train_steps(mode=mode, warm_start=warm_start)),
        params=params,
    )


def autolabel_start(*, project: Project, min_confidence: float | None = None, created_by: Any = None) -> Job:
    """Refuse at once when there is no model or the threshold is out of range, else queue an
    ``autolabel`` job on the ``ml`` queue."""
    latest_model(project)
    if min_confidence is not None and not 0 <= min_confidence <= 1:
        raise ValidationError("min confidence must be between 0 and 1")
    return job_start(
        kind="autolabel", project=project, created_by=created_by, params={"min_confidence": min_confidence}
    )


def pairwise_train_job(job: Job, ctx: JobContext) -> dict[str, Any]:
    p = job.params
    assert job.project is not None
    try:
        model = pairwise_train(
            project=job.project,
            mode=p.get("mode", "capc"),
            warm_start=p.get("warm_start") or "",
            threshold=p.get("threshold"),
            created_by=job.created_by,
            progress=ctx,
            task_model=p.get("task_model") or "",
            should_stop=ctx.cancel_requested,
        )
    except ValidationError as exc:
        raise JobFailed(" ".join(exc.messages)) from exc
    ctx.progress(job.total or 1, job.total or 1)
    return pairwise_train_summary(model)


def pairwise_train_summary(model: PairwiseModel) -> dict[str, Any]:
    """A ``train`` job's result: what the job box and ``jobs --json`` show of the model."""
    return {
        "model": model.pk,
        "version": model.version,
        "mode": model.mode,
        "n_train": model.n_train,
        "cv_accuracy": model.cv_accuracy,
        "cv_macro_f1": model.cv_macro_f1,
        "cv_ece": model.cv_ece,
        "threshold": model.threshold,
        "seconds": model.seconds,
        "features": (model.metrics or {}).get("features", ""),
        "notes": (model.metrics or {}).get("notes", []),
    }


def autolabel_job_end(job_id: int, status: str) -> None:
    """The ``autolabel`` kind's end hook: a run its handler did not finish (the job cancelled
    while its worker was dead, or failed after its worker kept dying) is closed with what its
    committed blocks wrote, so it shows as the project's latest run. Safe to run again."""
    if status == "succeeded":
        return
    AutolabelRun.objects.filter(job_id=job_id, finished=False).update(
        finished=True, skipped=F("considered") - F("auto_labeled") - F("abstained")
    )


def autolabel_job(job: Job, ctx: JobContext) -> dict[str, Any]:
    assert job.project is not None
    try:
        run = autolabel(
            project=job.project,
            min_confidence=job.params.get("min_confidence"),
            progress=ctx.progress,
            job=job,
            should_stop=ctx.cancel_requested,
        )
    except ValidationError as exc:
        raise JobFailed(" ".join(exc.messages)) from exc
    return autolabel_summary(run)


def autolabel_summary(run: AutolabelRun) -> dict[str, Any]:
    """An ``autolabel`` job's result."""
    return {
        "run": run.pk,
        "model_version": run.model.version,
        "considered": run.considered,
        "auto_labeled": run.auto_labeled,
        "abstained": run.abstained,
        "skipped": run.skipped,
        "known_answers": run.known_answers,
        "known_correct": run.known_correct,
        "min_confidence": run.min_confidence,
        "seconds": run.seconds,
        "held_back": [
            {"stratum": f"{v['kind']} {v['value']}", "candidates": v["held_back"], "reason": v["reason"]}
            for v in getattr(run, "held_back", [])
        ],
    }
