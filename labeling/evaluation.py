"""The augmentation evaluation as a job (kind ``evaluate``, queue ``ml``): does the labelled
set make models robust? The ML is ``labeling/ml/augmentation.py``; this module validates the
inputs, reads the pool and the evaluation sets, and runs it inside the one job mechanism.

- Pool: the project's candidates with a known counterfactual label — the human label where
  humans labelled (state ``human_labeled``, source ``human``/``gold``), else the known (gold)
  label — whose original has a label. Per seed the evaluation gives a ``budget`` share of
  that pool to "humans" exactly as ``bench_augmentation`` does.
- Evaluation sets: ``FORMAT:PATH[:SPLIT]`` specs whose path lies inside
  ``COUNTERPART["SHARED_DATA_DIR"]`` (never a free path: the page offers a select of them,
  the API refuses any other path), and ``project``: a held-out fifth of the project's own
  groups (removed from the pool, evaluated as originals and counterfactuals).
- Result: the same structure as ``bench_augmentation --json`` (FORMATS.md §3).
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError

from labeling.ml.augmentation import CLASSIFIERS, VARIANTS, EvalSet, FineTuneOptions, eval_sets_from_records
from labeling.ml.base_classifier import TooFewLabels
from labeling.ml.features import Pair
from labeling.ml.pairs import LabelledPairs, parse_warm_spec
from labeling.services import NOT_IN_POOL, PAIR_VALUES, TRAIN_SOURCES, _label_names, candidate_pair, embedder
from projects import states
from projects.formats import FORMAT_TASKS, FORMATS, FormatError, read
from projects.models import Candidate, Job, Project
from projects.services.jobs import JobContext, JobFailed, job_start

PROJECT_EVAL = "project"
HOLDOUT_SHARE = 0.2  # of the project's groups, for the ``project`` evaluation set
MIN_POOL = 20
MAX_SEEDS = 10


def finetune_options() -> FineTuneOptions:
    """The fine-tuning caps, on the MiniLM weights and the device from settings."""
    from projects.ml.embeddings import default_model_path

    cp = settings.COUNTERPART
    return FineTuneOptions(model_path=cp["MINILM_PATH"] or default_model_path(), device=cp["DEVICE"])


def read_eval_sets(spec: str, task: str, labels: list[str], fields: list[str] | None = None) -> list[EvalSet]:
    """The evaluation sets of one ``FORMAT:PATH[:SPLIT]`` spec, named after the spec as
    given (``/original`` and ``/counterfactual`` appended for pair formats). ValueError with
    a clear message when it cannot be read or holds no labelled record."""
    try:
        fmt, path, split = parse_warm_spec(spec)
        records = list(read(fmt, [path], task=task, split=split, labels=labels, text_fields=fields))
    except (FormatError, ValueError) as exc:
        raise ValueError(f"evaluation set {spec!r}: {exc}") from None
    sets, _problems = eval_sets_from_records(spec, records, labels)
    sets = [s for s in sets if s.records]
    if not sets:
        raise ValueError(f"evaluation set {spec!r}: no record with a label of this task")
    return sets


# -- what the page offers ---------------------------------------------------------------------
def _shared_dir() -> Path:
    return Path(settings.COUNTERPART["SHARED_DATA_DIR"])


def evaluation_choices(*, project: Project) -> list[tuple[str, str]]:
    """(spec, description) of the evaluation sets a researcher may pick for ``project``: the
    CAD splits of the project's task found under the shared data dir, and the project's own
    held-out candidates."""
    out: list[tuple[str, str]] = []
    cad = _shared_dir() / "cad"
    layouts = {"cad-nli": cad / "NLI" / "original", "cad-sentiment": cad / "sentiment" / "combined" / "paired"}
    for fmt, folder in layouts.items():
        if FORMAT_TASKS.get(fmt) != project.task or not folder.is_dir():
            continue
        for split in ("dev", "train", "test"):
            if any(p.name.startswith(split) for p in folder.iterdir()):
                out.append((f"{fmt}:{cad}:{split}", f"{fmt} {split} (shared data: originals and counterfactuals)"))
    out.append((PROJECT_EVAL, "this project's candidates: a held-out fifth of its groups"))
    return out


def _check_spec(spec: str, project: Project) -> None:
    if spec == PROJECT_EVAL:
        return
    try:
        fmt, path, _split = parse_warm_spec(spec)
    except ValueError as exc:
        raise ValidationError(str(exc)) from None
    if fmt not in FORMATS:
        raise ValidationError(f"evaluation set {spec!r}: unknown format {fmt!r}")
    if FORMAT_TASKS.get(fmt, project.task) != project.task:
        raise ValidationError(f"evaluation set {spec!r}: {fmt} holds {FORMAT_TASKS[fmt]} data, not {project.task}")
    shared = os.path.realpath(_shared_dir())
    real = os.path.realpath(path)
    if os.path.commonpath([shared, real]) != shared:
        raise ValidationError(f"evaluation set {spec!r}: only data under the shared data directory can be used")
    if not os.path.exists(real):
        raise ValidationError(f"evaluation set {spec!r}: no such file or directory")


# -- the pool -----------------------------------------------------------------------------------
def _project_pool(project: Project) -> LabelledPairs:
    rows = (
        Candidate.objects.filter(project=project)
        .exclude(state__in=NOT_IN_POOL)
        .values_list("state", "label_source", "label__name", "gold_label__name", *PAIR_VALUES)
        .order_by("id")
    )
    pairs: list[Pair] = []
    ys: list[str] = []
    for state, source, label, gold, *pair in rows.iterator(chunk_size=2000):
        human = label if state == states.HUMAN_LABELED and source in TRAIN_SOURCES else None
        y2 = human or gold
        if y2 is None or pair[2] is None:
            continue
        pairs.append(candidate_pair(*pair))
        ys.append(y2)
    return LabelledPairs(pairs, ys)


def _held_out(group: str) -> bool:
    return int(hashlib.sha1(group.encode("utf-8")).hexdigest()[:8], 16) % 100 < HOLDOUT_SHARE * 100


def _split_project(pool: LabelledPairs) -> tuple[LabelledPairs, list[EvalSet]]:
    keep = [i for i, p in enumerate(pool.pairs) if not _held_out(p.group or repr(sorted(p.original.items())))]
    out = sorted(set(range(len(pool.pairs))) - set(keep))
    seen: dict[str, tuple[dict[str, str], str]] = {}
    for i in out:
        p = pool.pairs[i]
        seen.setdefault(repr(sorted(p.original.items())), (p.original, p.y))
    evals = [
        EvalSet(f"{PROJECT_EVAL}/original", [r for r, _ in seen.values()], [y for _, y in seen.values()]),
        EvalSet(
            f"{PROJECT_EVAL}/counterfactual",
            [pool.pairs[i].counterfactual for i in out],
            [pool.y_prime[i] for i in out],
        ),
    ]
    rest = LabelledPairs([pool.pairs[i] for i in keep], [pool.y_prime[i] for i in keep])
    return rest, [e for e in evals if e.records]


# -- start and run --------------------------------------------------------------------------
def evaluation_start(
    *,
    project: Project,
    evals: list[str],
    budget: float = 0.1,
    seeds: int = 3,
    classifier: str = "minilm-lr",
    created_by: Any = None,
) -> Job:
    """Validate (cheap: no model, one count) and queue an ``evaluate`` job on the ``ml``
    queue. ``ValidationError`` with a message per field for bad input."""
    errors: dict[str, list[str]] = {}
    specs = [s.strip() for s in evals if s and s.strip()]
    if not specs:
        errors["evals"] = ["choose at least one evaluation set"]
    for spec in specs:
        try:
            _check_spec(spec, project)
        except ValidationError as exc:
            errors.setdefault("evals", []).extend(exc.messages)
    if not 0 < budget < 1:
        errors["budget"] = ["budget must be between 0 and 1"]
    if not 1 <= seeds <= MAX_SEEDS:
        errors["seeds"] = [f"seeds must be from 1 to {MAX_SEEDS}"]
    if classifier not in CLASSIFIERS:
        errors["classifier"] = [f"choose one of {', '.join(CLASSIFIERS)}"]
    if errors:
        raise ValidationError(errors)
    n = len(_project_pool(project).pairs)
    if n < MIN_POOL:
        raise ValidationError(
            {"project": [f"only {n} candidates with a known label (human or gold); the evaluation needs {MIN_POOL}"]}
        )
    return job_start(
        kind="evaluate",
        project=project,
        created_by=created_by,
        total=seeds * len(VARIANTS),
        params={"evals": specs, "budget": budget, "seeds": seeds, "classifier": classifier},
    )


def evaluation_job(job: Job, ctx: JobContext) -> dict[str, Any]:
    from labeling.ml.augmentation import classifier_factory, run_augmentation

    project = job.project
    assert project is not None
    p = job.params
    labels, fields = _label_names(project), list(project.text_fields)
    pool = _project_pool(project)
    evals: list[EvalSet] = []
    try:
        for spec in p["evals"]:
            _check_spec(spec, project)  # the shared data dir may have changed since the start
            if spec == PROJECT_EVAL:
                pool, held = _split_project(pool)
                evals += held
            else:
                evals += read_eval_sets(spec, project.task, labels, fields)
    except (ValidationError, ValueError) as exc:
        raise JobFailed(" ".join(getattr(exc, "messages", [str(exc)]))) from exc
    if len(pool.pairs) < MIN_POOL:
        raise JobFailed(f"only {len(pool.pairs)} labelled candidates left in the pool; the evaluation needs {MIN_POOL}")

    def progress(done: int, total: int) -> None:
        ctx.check_cancelled()
        ctx.progress(done, total)

    embed = embedder().encode
    try:
        factory = classifier_factory(
            p["classifier"], labels=labels, fields=fields, embed=embed, finetune=finetune_options()
        )
        result = run_augmentation(
            pool,
            evals,
            task=project.task,
            labels=labels,
            fields=fields,
            embed=embed,
            budget=float(p["budget"]),
            seeds=int(p["seeds"]),
            classifier=p["classifier"],
            make_classifier=factory,
            threshold=float(settings.COUNTERPART["MIN_CONFIDENCE"]),
            progress=progress,
        )
    except (TooFewLabels, ValueError) as exc:
        raise JobFailed(str(exc)) from exc
    return dict(result)
