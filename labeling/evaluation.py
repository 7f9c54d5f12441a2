"""The augmentation evaluation as a job (kind ``evaluate``, queue ``ml``): does the labelled
set make models robust? The ML is ``labeling/ml/augmentation.py``; this module validates the
inputs, reads the pool and the evaluation sets, and runs it inside the one job mechanism.

- Pool: the project's candidates with a known counterfactual label — the human label where
  humans labelled (state ``human_labeled``, source ``human``/``gold``), else the known (gold)
  label — whose original has a label. Per seed the evaluation gives a ``budget`` share of
  that pool to "humans" exactly as ``bench_augmentation`` does.
- Evaluation sets: the keys of :func:`evaluation_choices` (``cad-nli:dev``: a CAD split found
  under ``COUNTERPART["SHARED_DATA_DIR"]``; the page posts only these, so no path is ever
  typed or shown), ``FORMAT:PATH[:SPLIT]`` specs whose path lies inside that directory (the API
  refuses any other path), and ``project``: a held-out fifth of the project's own groups
  (removed from the pool, evaluated as originals and counterfactuals). Sets are named by a
  title without any server path (``CAD NLI dev/original``).
- "Your export" (variant ``export``): the project's human- and auto-labelled candidates as the
  export selects them (``projects.services.exports.candidates_for_export``), with their labels
  as they are now (a researcher's override is a human label), without the held-out groups.
- Test examples whose text also occurs in the training data (the pool's or the export's
  originals and counterfactuals) are left out and counted (``labeling/ml/augmentation.py``);
  so are an external set's examples that are the project's held-out pairs (``excluded_own``),
  and a CAD split the project was imported from is refused (issue 32.4): no row is labelled
  as one set while scoring another.
- Result: the structure of ``bench_augmentation --json`` (FORMATS.md §3), plus ``excluded``
  (per set and in all), ``export_pairs`` and the variant ``export``.
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db.models import Q

from labeling.ml.augmentation import (
    CLASSIFIERS,
    EMBEDDING_CLASSIFIERS,
    EvalSet,
    FineTuneOptions,
    eval_sets_from_records,
)
from labeling.ml.base_classifier import TooFewLabels
from labeling.ml.features import Pair
from labeling.ml.pairs import LabelledPairs, parse_warm_spec
from labeling.services import (
    CAPTIONS_HAVE_NO_CLASS,
    NOT_IN_POOL,
    PAIR_VALUES,
    TRAIN_SOURCES,
    _label_names,
    candidate_pair,
    embedder,
)
from projects import states
from projects.formats import FORMAT_TASKS, FORMATS, SPEC_SPLITS, FormatError, parse_spec, read
from projects.models import Candidate, Example, Job, Project
from projects.services.exports import candidates_for_export
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


def read_eval_sets(
    spec: str,
    task: str,
    labels: list[str],
    fields: list[str] | None = None,
    *,
    name: str = "",
    problems: list[str] | None = None,
    warnings: list[str] | None = None,
) -> list[EvalSet]:
    """The evaluation sets of one ``FORMAT:PATH[:SPLIT]`` spec, named ``name`` (default: the
    spec as given), with ``/original`` and ``/counterfactual`` appended for pair formats.
    ValueError with a clear message (naming the set by ``name``) when it cannot be read or
    holds no labelled record. ``problems`` receives the rows that were skipped (malformed, a
    label not in ``labels``, other text fields), each as ``file:line: what is wrong``; ``warnings``
    the reader's notes (rows read with a note, or left out as CAD's misaligned rows)."""
    titled = bool(name) and name != spec  # a titled set: its server path stays out of messages
    name = name or spec
    fmt, path, split = parse_spec(spec, f"evaluation set {name!r}")  # its ValueError names the set
    try:
        noted = (lambda p: warnings.append(str(p))) if warnings is not None else None
        records = list(read(fmt, [path], task=task, split=split, labels=labels, text_fields=fields, warn=noted))
    except (FormatError, ValueError) as exc:
        message = str(exc).replace(path, "…") if titled else str(exc)
        raise ValueError(f"evaluation set {name!r}: {message}") from None
    sets, skipped = eval_sets_from_records(name, records, labels)
    if problems is not None:
        problems.extend(skipped)
    sets = [s for s in sets if s.records]
    if not sets:
        raise ValueError(f"evaluation set {name!r}: no record with a label of this task")
    return sets


# -- what the page offers ---------------------------------------------------------------------
def _shared_dir() -> Path:
    return Path(settings.COUNTERPART["SHARED_DATA_DIR"])


@dataclass(frozen=True)
class EvalChoice:
    """An evaluation set the page offers: the ``key`` it posts, a ``title`` (no path) and a
    ``description``; ``spec`` (``FORMAT:PATH:SPLIT``, or ``project``) stays on the server."""

    key: str
    title: str
    description: str
    spec: str
    imported: int = 0  # the project's originals imported from this very set (then it is refused)


CAD_TITLES = {"cad-nli": "CAD NLI", "cad-sentiment": "CAD sentiment"}
PROJECT_TITLE = "this project (held-out fifth)"


def imported_from(*, project: Project, fmt: str, split: str) -> int:
    """How many of ``project``'s originals were imported from the ``fmt`` set's ``split`` (the
    CAD readers stamp ``source`` and ``split`` on every original): such a set is the project's
    own data, not a test set (issue 32.4)."""
    if fmt not in CAD_TITLES or not split:
        return 0
    return Example.objects.filter(project=project, source=fmt, split=split).count()


def imported_message(title: str, n: int) -> str:
    return (
        f"{title} is the data this project was imported from ({n} of its originals): scored on it, the classifier "
        f"would be tested on the project's own pairs under another name; choose “{PROJECT_TITLE}” instead"
    )


def evaluation_choices(*, project: Project) -> list[EvalChoice]:
    """The evaluation sets a researcher may pick for ``project``: the CAD splits of the
    project's task found under the shared data dir, and the project's own held-out
    candidates. Nothing is pre-selected: a CAD split may be the very data the project was
    imported from: such a split is named so (``imported``) and refused by
    :func:`evaluation_start` (issue 32.4); any other overlap with the training data is left out
    and counted at run time."""
    out: list[EvalChoice] = []
    cad = _shared_dir() / "cad"
    layouts = {"cad-nli": cad / "NLI" / "original", "cad-sentiment": cad / "sentiment" / "combined" / "paired"}
    for fmt, folder in layouts.items():
        if FORMAT_TASKS.get(fmt) != project.task or not folder.is_dir():
            continue
        for split in ("dev", "train", "test"):
            if any(p.name.startswith(split) for p in folder.iterdir()):
                title = f"{CAD_TITLES[fmt]} {split}"
                n = imported_from(project=project, fmt=fmt, split=split)
                what = (
                    f"the data this project was imported from ({n} of its originals), not a test set"
                    if n
                    else "human-written originals and counterfactuals (shared data)"
                )
                out.append(EvalChoice(f"{fmt}:{split}", title, f"{title}: {what}", f"{fmt}:{cad}:{split}", n))
    out.append(
        EvalChoice(
            PROJECT_EVAL,
            PROJECT_TITLE,
            "this project's candidates: a fifth of its originals (with their candidates) held out of training",
            PROJECT_EVAL,
        )
    )
    return out


def _title(spec: str) -> str:
    """A name for a set given as a spec, without its path: ``FORMAT SPLIT`` or ``FORMAT FILE``."""
    if spec == PROJECT_EVAL:
        return PROJECT_TITLE
    try:
        fmt, path, split = parse_warm_spec(spec)
    except ValueError:
        return "evaluation set"
    return f"{fmt} {split or os.path.basename(os.path.normpath(path))}"


def _check_spec(spec: str, project: Project, name: str = "") -> None:
    if spec == PROJECT_EVAL:
        return
    name = name or spec
    try:
        fmt, path, split = parse_warm_spec(spec)
    except ValueError as exc:
        raise ValidationError(str(exc)) from None
    if n := imported_from(project=project, fmt=fmt, split=split):
        raise ValidationError(imported_message(name, n))
    if fmt not in FORMATS:
        raise ValidationError(f"evaluation set {name!r}: unknown format {fmt!r}")
    if FORMAT_TASKS.get(fmt, project.task) != project.task:
        raise ValidationError(f"evaluation set {name!r}: {fmt} holds {FORMAT_TASKS[fmt]} data, not {project.task}")
    shared = os.path.realpath(_shared_dir())
    real = os.path.realpath(path)
    if os.path.commonpath([shared, real]) != shared:
        raise ValidationError(f"evaluation set {name!r}: only data under the shared data directory can be used")
    if not os.path.exists(real):
        raise ValidationError(f"evaluation set {name!r}: no such file or directory")


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


def _held_out(pair: Pair) -> bool:
    """Whether ``pair``'s group (or, without one, its original) is in the held-out fifth."""
    group = pair.group or repr(sorted(pair.original.items()))
    return int(hashlib.sha1(group.encode("utf-8")).hexdigest()[:8], 16) % 100 < HOLDOUT_SHARE * 100


def _project_export(project: Project, *, hold_out: bool) -> LabelledPairs:
    """ "Your export": the human- and auto-labelled candidates the export would write
    (``candidates_for_export``), with their current labels, whose original has a label; the
    held-out groups left out when the ``project`` set is evaluated."""
    rows = (
        candidates_for_export(project=project, state=[states.HUMAN_LABELED, states.AUTO_LABELED])
        .filter(label__isnull=False, example__label__isnull=False)
        .values_list("label__name", *PAIR_VALUES)
    )
    pairs: list[Pair] = []
    ys: list[str] = []
    for y2, *values in rows.iterator(chunk_size=2000):
        pair = candidate_pair(*values)
        if hold_out and _held_out(pair):
            continue
        pairs.append(pair)
        ys.append(y2)
    return LabelledPairs(pairs, ys)


def _split_project(pool: LabelledPairs) -> tuple[LabelledPairs, list[EvalSet]]:
    keep = [i for i, p in enumerate(pool.pairs) if not _held_out(p)]
    out = sorted(set(range(len(pool.pairs))) - set(keep))
    seen: dict[str, tuple[dict[str, str], str]] = {}
    for i in out:
        p = pool.pairs[i]
        seen.setdefault(repr(sorted(p.original.items())), (p.original, p.y))
    evals = [
        EvalSet(f"{PROJECT_TITLE}/original", [r for r, _ in seen.values()], [y for _, y in seen.values()]),
        EvalSet(
            f"{PROJECT_TITLE}/counterfactual",
            [pool.pairs[i].counterfactual for i in out],
            [pool.y_prime[i] for i in out],
        ),
    ]
    rest = LabelledPairs([pool.pairs[i] for i in keep], [pool.y_prime[i] for i in keep])
    return rest, [e for e in evals if e.records]


def _without_held_out(
    evals: list[EvalSet], held: list[EvalSet], fields: list[str]
) -> tuple[list[EvalSet], dict[str, int]]:
    """The external sets without the examples that are the project's held-out pairs (by
    normalized text), and how many each lost: such a set would otherwise score the held-out
    fifth under its own name (issue 32.4: "CAD NLI dev" reported the held-out fifth's figures
    on a project imported from it)."""
    from projects.ml.textkeys import text_hash

    mine = {text_hash(r, fields) for e in held for r in e.records}
    if not mine:
        return evals, {}
    kept, own = [], {}
    for e in evals:
        keep = [i for i, r in enumerate(e.records) if text_hash(r, fields) not in mine]
        own[e.name] = len(e.records) - len(keep)
        kept.append(EvalSet(e.name, [e.records[i] for i in keep], [e.y[i] for i in keep]))
    return kept, own


NOT_FOR_CAPTIONS = (
    f"{CAPTIONS_HAVE_NO_CLASS}, so no classifier (f or f') can be trained on them: the evaluation is for "
    "text-classification projects (sentiment, NLI, paraphrase, boolean QA)"
)


def not_applicable(*, project: Project) -> str:
    """Why the evaluation cannot run on ``project`` whatever its labels, or "" (cheap: the task)."""
    return NOT_FOR_CAPTIONS if project.task == "image-caption" else ""


def pool_problem(*, project: Project, pool: LabelledPairs, held_out: bool) -> str:
    """Why ``pool`` (the project's, without the held-out fifth when ``held_out``) cannot be
    evaluated, in words, or "": fewer than ``MIN_POOL`` pairs, or originals missing a label (f,
    which labels the rest for the variants and gives h its inputs, is trained on the pool's
    originals and needs every label). :func:`evaluation_start` refuses with it, so a job it
    accepts does not fail on it after encoding every text."""
    labels = _label_names(project)
    n = len(pool.pairs)
    where = " after the held-out fifth of this project's originals is taken out" if held_out else ""
    if n < MIN_POOL:
        unlabelled = (
            Candidate.objects.filter(project=project, example__label__isnull=True)
            .exclude(state__in=NOT_IN_POOL)
            .filter(Q(gold_label__isnull=False) | Q(state=states.HUMAN_LABELED, label_source__in=TRAIN_SOURCES))
            .count()
        )
        why = f" ({unlabelled} more have an original without a label)" if unlabelled else ""
        if reason := not_applicable(project=project):
            why = ": " + reason
        return (
            f"only {n} candidates with a known label (human or gold) whose original has a label{where}; "
            f"the evaluation needs {MIN_POOL}{why}"
        )
    have = {p.y for p in pool.pairs}
    if missing := [lab for lab in labels if lab not in have]:
        return (
            f"the pool's {len({repr(sorted(p.original.items())) for p in pool.pairs})} originals{where} have no "
            f"label {', '.join(missing)}: f (trained on them, it labels the rest for the variants and gives h its "
            "inputs) needs originals of every label; import or label originals of every class"
        )
    return ""


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
    """Validate (cheap: no model, one count) and queue an ``evaluate`` job on the
    ``interactive`` queue. ``evals``: keys of :func:`evaluation_choices` or ``FORMAT:PATH[:SPLIT]`` specs.
    ``ValidationError`` with a message per field for bad input."""
    errors: dict[str, list[str]] = {}
    choices = {c.key: c for c in evaluation_choices(project=project)}
    specs: list[str] = []
    titles: dict[str, str] = {}
    for value in (s.strip() for s in evals if s and s.strip()):
        choice = choices.get(value)
        fmt, _, split = value.partition(":")
        if choice is None and fmt in FORMATS and split in SPEC_SPLITS:  # a key's shape, but not listed here
            errors.setdefault("evals", []).append(
                f"evaluation set {value!r} is not one of this project's sets ({', '.join(choices)}): the shared "
                f"data directory has no {fmt} {split} split; a file of your own is FORMAT:PATH[:SPLIT], its path "
                "under the shared data directory"
            )
            continue
        spec = choice.spec if choice else value
        if spec not in titles:
            specs.append(spec)
            titles[spec] = choice.title if choice else _title(spec)
    if not specs and not errors:
        errors["evals"] = ["choose at least one evaluation set"]
    for spec in specs:
        try:
            _check_spec(spec, project, titles[spec] if spec != titles[spec] else "")
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
    pool = _project_pool(project)
    if PROJECT_EVAL in specs:
        pool, _held = _split_project(pool)
    if problem := pool_problem(project=project, pool=pool, held_out=PROJECT_EVAL in specs):
        raise ValidationError({"project": [problem]})
    return job_start(
        kind="evaluate",
        project=project,
        created_by=created_by,
        total=len(STEPS),  # done / total count the steps, fixed before the first one starts
        params={"evals": specs, "titles": titles, "budget": budget, "seeds": seeds, "classifier": classifier},
    )


ENCODE_CHUNK = 256  # texts per encoder call while the evaluation reports its encoding step
STEPS = ("load MiniLM and encode the texts", "fit the classifiers (seeds × variants)")


def _texts(
    pool: LabelledPairs, export: LabelledPairs, evals: list[EvalSet], fields: list[str], classifier: str
) -> list[str]:
    """Every distinct text the evaluation encodes, in a stable order (per field): the pool's
    originals and counterfactuals, which f and h read as MiniLM embeddings whatever f' is; and,
    only when f' reads embeddings too (``EMBEDDING_CLASSIFIERS``), the export's pairs and the
    test sets' records. With ``tfidf-lr`` they used to be encoded for nothing: on CAD sentiment
    dev scored on CAD sentiment train, 3,412 of the 3,902 texts (docs/labelling.md)."""
    seen: dict[str, None] = {}
    sources = (pool.pairs, export.pairs) if classifier in EMBEDDING_CLASSIFIERS else (pool.pairs,)
    records = [r for src in sources for p in src for r in (p.original, p.counterfactual)]
    if classifier in EMBEDDING_CLASSIFIERS:
        records += [r for e in evals for r in e.records]
    for r in records:
        for f in fields:
            text = r.get(f)
            if isinstance(text, str):
                seen.setdefault(text, None)
    return list(seen)


def _encode_all(encode: Any, texts: list[str], ctx: JobContext) -> None:
    """Step 1: every text through the encoder (which caches each), a chunk at a time, counted
    against the exact number of distinct texts, fixed before the step starts (issue 32.6: the
    estimate used to grow during the step, 23,632 → 26,253); the fits then hit the cache."""
    ctx.step(STEPS[0], index=1, count=len(STEPS), total=len(texts), unit="texts", plan=STEPS)
    for start in range(0, len(texts), ENCODE_CHUNK):
        ctx.check_cancelled()
        encode(texts[start : start + ENCODE_CHUNK])
        ctx.step_progress(min(start + ENCODE_CHUNK, len(texts)))


def evaluation_job(job: Job, ctx: JobContext) -> dict[str, Any]:
    from labeling.ml.augmentation import classifier_factory, run_augmentation

    project = job.project
    assert project is not None
    p = job.params
    labels, fields = _label_names(project), list(project.text_fields)
    pool = _project_pool(project)
    evals: list[EvalSet] = []
    held: list[EvalSet] = []
    titles: dict[str, str] = p.get("titles") or {}
    try:
        for spec in p["evals"]:
            name = titles.get(spec) or _title(spec)
            _check_spec(spec, project, name)  # the shared data dir may have changed since the start
            if spec == PROJECT_EVAL:
                pool, held = _split_project(pool)
            else:
                evals += read_eval_sets(spec, project.task, labels, fields, name=name)
    except (ValidationError, ValueError) as exc:
        raise JobFailed(" ".join(getattr(exc, "messages", [str(exc)]))) from exc
    evals, own = _without_held_out(evals, held, fields)
    evals += held
    export = _project_export(project, hold_out=PROJECT_EVAL in p["evals"])
    if problem := pool_problem(project=project, pool=pool, held_out=PROJECT_EVAL in p["evals"]):
        raise JobFailed(problem)  # before any text is encoded: the fits could not run

    # Two steps, each with its own progress and a total fixed when it starts (issue 25: the job
    # sat at 0/N until its end; issue 32.6: the encoding total grew during its step):
    # 1. every distinct text through MiniLM; 2. the f' fits (seeds × variants).
    encoder = embedder()
    _encode_all(encoder.encode, _texts(pool, export, evals, fields, p["classifier"]), ctx)
    fitting = False

    def progress(done: int, total: int) -> None:
        nonlocal fitting
        ctx.check_cancelled()
        if not fitting:
            fitting = True
            ctx.step(STEPS[1], index=2, count=len(STEPS), total=total, unit="fits", plan=STEPS)
        ctx.step_progress(done)

    embed = encoder.encode
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
            export=export,
            progress=progress,
        )
    except (TooFewLabels, ValueError) as exc:
        raise JobFailed(str(exc)) from exc
    out: dict[str, Any] = dict(result)
    for name, k in own.items():  # left out: the project's own held-out pairs (not training data)
        out["eval"][name]["excluded_own"] = k
    if own:
        out["excluded_own"] = sum(own.values())
    return out


# -- the loop's measurements (``bench_loop``, workspace/loop/) ------------------------------------
def text_key(record: dict[str, str], fields: list[str]) -> str:
    """The evaluation's definition of "the same text" (``projects.ml.textkeys.text_hash``):
    the key of a candidate in a labels file."""
    from projects.ml.textkeys import text_hash

    return text_hash(record, fields)


def calibration_error(confidence: list[float], correct: list[bool]) -> float:
    """Expected calibration error (10 equal-width bins) — h's, as its reports give it."""
    from labeling.ml.metrics import ece

    return ece(confidence, correct)


def task_model_predict(*, path: str, records: list[dict[str, str]], labels: list[str]) -> list[tuple[str, float]]:
    """A task model folder's (f's) label and confidence for each record, in ``labels`` order."""
    from labeling.ml.task_model import load_task_model

    if not records:
        return []
    model = load_task_model(path, labels=labels, device=str(settings.COUNTERPART.get("DEVICE") or "") or None)
    proba = model.predict_proba(records)
    return [(labels[int(row.argmax())], float(row.max())) for row in proba]


def variants_evaluate(
    *,
    task: str,
    labels: list[str],
    fields: list[str],
    base: list[tuple[dict[str, str], str]],
    variants: dict[str, list[tuple[dict[str, str], str]]],
    evals: list[str],
    seeds: int = 3,
    classifier: str = "minilm-lr",
    reference: str = "originals",
    gold: str = "",
    progress: Any = None,
) -> dict[str, Any]:
    """The robustness comparison of named training sets (``labeling/ml/variants.py``): the
    originals ``base`` plus each variant's counterfactuals, the same f' and seeds, scored on the
    ``evals`` specs (``FORMAT:PATH[:SPLIT]``, read as :func:`read_eval_sets` reads them).
    ValueError with a clear message for an unreadable set or an unknown classifier."""
    from labeling.ml.augmentation import classifier_factory
    from labeling.ml.variants import VariantSpec, evaluate_variants

    if classifier not in CLASSIFIERS:
        raise ValueError(f"unknown classifier {classifier!r}; choose one of {', '.join(CLASSIFIERS)}")
    sets: list[EvalSet] = []
    for spec in evals:
        sets += read_eval_sets(spec, task, labels, fields)
    factory = classifier_factory(
        classifier, labels=labels, fields=fields, embed=embedder().encode, finetune=finetune_options()
    )
    return evaluate_variants(
        base,
        [VariantSpec(name, list(extra)) for name, extra in variants.items()],
        sets,
        labels=labels,
        fields=fields,
        make_classifier=factory,
        classifier=classifier,
        seeds=seeds,
        reference=reference,
        gold=gold,
        progress=progress,
    )


def h_predictions(*, project: Project) -> dict[int, tuple[str, float]]:
    """h's (the latest pairwise model's) label and confidence for each candidate of the pool
    whose original has a label — what auto-labelling computes before its threshold, strata and
    validity gates decide what to write — human-labelled siblings counting as their labels where
    h has a sibling stage."""
    from labeling.services import latest_model, load_model

    bundle = load_model(project, latest_model(project))
    rows = list(
        Candidate.objects.filter(project=project, example__label__isnull=False)
        .exclude(state__in=NOT_IN_POOL)
        .values_list("pk", "state", "label_source", "label__name", *PAIR_VALUES)
        .order_by("example_id", "pk")
    )
    if not rows:
        return {}
    pairs = [candidate_pair(*r[4:]) for r in rows]
    if bundle.uses_siblings:
        known = {
            i: r[3]
            for i, r in enumerate(rows)
            if r[1] == states.HUMAN_LABELED and r[2] in TRAIN_SOURCES and r[3] is not None
        }
        proba = bundle.predict_proba_pool(pairs, known)
    else:
        proba = bundle.predict_proba(pairs)
    return {r[0]: (bundle.labels[int(p.argmax())], float(p.max())) for r, p in zip(rows, proba, strict=True)}
