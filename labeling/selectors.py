"""Reads for the labelling pages."""

from __future__ import annotations

import os
import random
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.core.exceptions import ValidationError
from django.db.models import Q

from labeling.ml.active import diverse_uncertain, margin_uncertainty, reduce_features
from labeling.ml.features import Pair
from labeling.ml.pairs import parse_warm_spec
from labeling.ml.pairwise import LabelingModel
from labeling.models import PairwiseModel
from labeling.services import PAIR_VALUES, candidate_pair, latest_model, load_model, warm_feature_cache
from projects import states
from projects.models import Candidate, Project
from projects.selectors import project_counts

SOURCES = {"human": ("human", "gold"), "auto": ("auto",)}


@dataclass
class FlipCell:
    n: int = 0
    flipped: int = 0

    @property
    def rate(self) -> float | None:
        return self.flipped / self.n if self.n else None


@dataclass
class FlipRates:
    overall: dict[str, FlipCell] = field(default_factory=dict)  # source -> cell
    by_perturbation: list[tuple[str, dict[str, FlipCell]]] = field(default_factory=list)
    by_direction: list[tuple[str, str, dict[str, int]]] = field(default_factory=list)  # (from, to, {source: n})
    model: PairwiseModel | None = None
    last_run: Any = None  # the latest finished AutolabelRun: h measured where the answer is known


def _flip_rows(project: Project) -> list[dict[str, Any]]:
    """Human- or auto-labelled candidates whose original has a label, counted by (label
    source, perturbation, original label, final label), from the project's aggregates."""
    rows: dict[tuple[str, str, str, str], int] = defaultdict(int)
    for c in project_counts(project=project).cells:
        if c.state in (states.HUMAN_LABELED, states.AUTO_LABELED) and c.label and c.original_label:
            rows[(c.label_source, c.perturbation, c.original_label, c.label)] += c.n
    return [
        {"label_source": k[0], "perturbation": k[1], "original_label": k[2], "label": k[3], "n": n}
        for k, n in rows.items()
    ]


def flip_rates_for(*, project: Project) -> FlipRates:
    """Flip rate (counterfactual label != original label) of human and of auto labels, by
    perturbation type and by direction (original label -> counterfactual label), plus the
    latest pairwise model (its cross-validated accuracy). From the project's stored
    aggregates (``projects.selectors.project_counts``), not a count of its candidates."""
    rows = _flip_rows(project)
    out = FlipRates(overall={s: FlipCell() for s in SOURCES})
    by_pert: dict[str, dict[str, FlipCell]] = {}
    by_dir: dict[tuple[str, str], dict[str, int]] = {}
    for r in rows:
        source = next((s for s, members in SOURCES.items() if r["label_source"] in members), None)
        if source is None:
            continue
        y, y2, n = r["original_label"], r["label"], r["n"]
        flipped = n if y != y2 else 0
        for cell in (
            out.overall[source],
            by_pert.setdefault(r["perturbation"] or "(none)", {s: FlipCell() for s in SOURCES})[source],
        ):
            cell.n += n
            cell.flipped += flipped
        d = by_dir.setdefault((y, y2), dict.fromkeys(SOURCES, 0))
        d[source] += n
    out.by_perturbation = sorted(by_pert.items())
    out.by_direction = [(a, b, counts) for (a, b), counts in sorted(by_dir.items())]
    out.model = PairwiseModel.objects.filter(project=project).order_by("-version").first()
    out.last_run = _h_latest(project)
    return out


def pairwise_models_for(*, project: Project) -> Any:
    return PairwiseModel.objects.filter(project=project).order_by("-version")


# -- active selection (the boundary annotate's routing uses) --------------------------------
SCORE_CHUNK = 2000  # pairs scored by the pairwise model at a time (bounds the encoding's memory)


@dataclass(frozen=True)
class ActiveSelection:
    """``ids``: the pooled candidates picked (None when no usable model: ``unavailable`` says
    why); ``messages``: what the caller should pass on to the researcher."""

    ids: list[int] | None
    messages: list[str] = field(default_factory=list)
    unavailable: str = ""


def _pooled_pairs(project: Project) -> tuple[list[int], list[Pair], list[int]]:
    """The pooled candidates as model inputs, in id order: ``(ids, pairs, unscorable ids)``; a
    candidate whose original has no label cannot be a ``Pair`` (h needs y)."""
    ids: list[int] = []
    pairs: list[Pair] = []
    unscorable: list[int] = []
    rows = Candidate.objects.filter(project=project, state=states.POOLED).values_list("id", *PAIR_VALUES).order_by("id")
    for cid, *pair in rows.iterator(chunk_size=5000):
        if pair[2] is None:  # the original's label
            unscorable.append(cid)
            continue
        ids.append(cid)
        pairs.append(candidate_pair(*pair))
    return ids, pairs, unscorable


def _active_scores(bundle: LabelingModel, pairs: list[Pair], messages: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Class probabilities and pair features (``emb_c - emb_o`` per field, flattened, next to
    the edit features, as in the benchmark) of ``pairs``. A model without pair inputs is
    clustered on its probabilities instead."""
    has_inputs = callable(getattr(bundle, "inputs", None))
    if not has_inputs:
        messages.append("active: this model exposes no pair features; clusters are formed on its class probabilities")
    probas: list[np.ndarray] = []
    feats: list[np.ndarray] = []
    for start in range(0, len(pairs), SCORE_CHUNK):
        block = pairs[start : start + SCORE_CHUNK]
        inputs = bundle.inputs(block) if has_inputs else None
        proba = np.asarray(
            bundle.predict_proba(block, inputs=inputs) if inputs is not None else bundle.predict_proba(block),
            dtype=np.float64,
        )
        probas.append(proba)
        if inputs is not None:
            enc = inputs.enc
            n = len(block)
            feats.append(np.hstack([enc.emb_c.reshape(n, -1) - enc.emb_o.reshape(n, -1), enc.edits]).astype(np.float32))
        else:
            feats.append(proba.astype(np.float32))
    return np.vstack(probas), np.vstack(feats)


def active_selection_for(*, project: Project, n: int, seed: int) -> ActiveSelection:
    """Uncertain and diverse: the pooled candidates scored by the project's latest pairwise
    model, k-means into ``n`` clusters of their reduced pair features, the smallest top-2
    margin (density-weighted) of each; unscorable candidates only fill up, at random."""
    try:
        model = latest_model(project)
    except ValidationError:
        return ActiveSelection(
            None, unavailable="no pairwise model for this project yet (press “Train h” on the Task model and h page)"
        )
    try:
        bundle = load_model(project, model)
    except ValidationError as exc:
        return ActiveSelection(None, unavailable=f"pairwise model v{model.version}: {exc.messages[0]}")
    messages: list[str] = []
    ids, pairs, unscorable = _pooled_pairs(project)
    if unscorable:
        messages.append(
            f"active: {len(unscorable)} pooled candidates have an original without a label and cannot be "
            "scored; they are only used to fill up at random"
        )
    if len(ids) <= n:
        picked = list(ids)
    else:
        proba, feats = _active_scores(bundle, pairs, messages)
        rows = diverse_uncertain(
            reduce_features(feats, seed=seed), margin_uncertainty(proba), np.arange(len(ids)), n, seed=seed
        )
        picked = [ids[i] for i in rows.tolist()]
    if len(picked) < n and unscorable:
        picked.extend(random.Random(seed).sample(unscorable, min(n - len(picked), len(unscorable))))
    return ActiveSelection(picked, messages)


# -- export provenance (registered in LabelingConfig.ready) ---------------------------------


def _h_latest(project: Project) -> Any:
    from labeling.models import AutolabelRun

    return (
        AutolabelRun.objects.filter(project=project, finished=True)
        .select_related("model")
        .order_by("-created_at", "-id")
        .first()
    )


def export_provenance(project: Project, candidate_ids: list[int]) -> dict[int, dict[str, Any]]:
    """The h version behind each auto label or abstention: the model of the project's latest
    auto-label run (every run re-labels all pooled/abstained pairs it considers)."""
    run = _h_latest(project)
    if run is None:
        return {}
    ids = (
        Candidate.objects.filter(pk__in=candidate_ids)
        .filter(Q(label_source="auto") | Q(state=states.ABSTAINED))
        .values_list("id", flat=True)
    )
    return {cid: {"h_version": run.model.version} for cid in ids}


def export_manifest(project: Project) -> dict[str, Any]:
    run = _h_latest(project)
    if run is None:
        return {"h": None}
    m = run.model
    return {"h": {"version": m.version, "mode": m.mode, "threshold": run.min_confidence, "n_train": m.n_train}}


# -- warm-start data sets (the train form's select) -------------------------------------------
WARM_START_SETS = (("cad-nli", "nli"), ("cad-sentiment", "sentiment"))
WARM_START_SPLITS = ("train", "dev")


SHARED_DATA_SETTING = "COUNTERPART_SHARED_DATA"


def cad_missing_note(*, project: Project, found: bool, what: str) -> str:
    """What the train form and the evaluation say when they offer no CAD set (``what``: "warm
    starts", "CAD test sets"): '' when ``found``; else that this task has none, or which
    setting names the folder they were looked for in (no server path is shown)."""
    if found:
        return ""
    if project.task not in {task for _fmt, task in WARM_START_SETS}:
        return f"No CAD data set exists for {project.task} projects, so there are no {what}."
    return (
        f"No CAD {project.task} data was found under {SHARED_DATA_SETTING} (the folder that holds cad/; "
        f"../shared/data by default): set it to that folder and restart Counterpart to offer {what}."
    )


def warm_start_choices(*, project: Project) -> list[tuple[str, str, str]]:
    """The known data sets h may be warm-started from, for this project's task, that exist
    under ``COUNTERPART["SHARED_DATA_DIR"]``: ``(key, label, FORMAT:PATH:SPLIT)``. The page
    posts the key; the server maps it back through this list, so no path is ever typed."""
    import os

    from django.conf import settings

    from projects.formats import FormatError
    from projects.formats.cad import nli_files, sentiment_file

    cad = os.path.join(settings.COUNTERPART["SHARED_DATA_DIR"], "cad")
    out = []
    for fmt, task in WARM_START_SETS:
        if task != project.task:
            continue
        for split in WARM_START_SPLITS:
            try:
                nli_files(cad, split) if fmt == "cad-nli" else sentiment_file(cad, split)
            except FormatError:
                continue
            out.append((f"{fmt}:{split}", f"CAD {task} {split} ({fmt})", f"{fmt}:{cad}:{split}"))
    return out


# pairs encoded per second for h's features, until this machine has measured its own
# (bench_train_warm on the 2-core development machine under load; docs/labelling.md)
DEFAULT_PAIRS_PER_S = 10.0


_PAIR_COUNTS: dict[tuple[str, float], int] = {}


def _warm_pairs_estimate(spec: str) -> int:
    """About how many pairs a CAD warm-start set holds, from its files' line counts."""
    from projects.formats import FormatError
    from projects.formats.cad import nli_files, sentiment_file

    fmt, path, split = parse_warm_spec(spec)
    try:
        files = (
            [v for k, v in nli_files(path, split).items() if k != "original"]
            if fmt == "cad-nli"
            else [sentiment_file(path, split)]
        )
    except FormatError:
        return 0
    stamp = (spec, max(os.path.getmtime(f) for f in files))
    if stamp not in _PAIR_COUNTS:
        lines = 0
        for name in files:
            with open(name, "rb") as fh:
                lines += max(0, sum(1 for _ in fh) - 1)
        _PAIR_COUNTS[stamp] = lines if fmt == "cad-nli" else lines // 2
    return _PAIR_COUNTS[stamp]


def warm_start_cost(*, spec: str) -> str:
    """What the warm start adds to "Train h", for the train form: seconds when its features
    are cached on this machine, else minutes the first time (pairs / the measured rate)."""
    cache = warm_feature_cache()
    if cache.cached(spec):
        return "features cached: adds seconds"
    entry = cache.index().get(spec) or {}
    pairs = int(entry.get("pairs") or 0) or _warm_pairs_estimate(spec)
    rate = cache.pairs_per_second() or DEFAULT_PAIRS_PER_S
    minutes = max(1, round(pairs / rate / 60)) if pairs else None
    first = f"about {minutes} min the first time ({pairs:,} pairs to encode)" if minutes else "minutes the first time"
    return f"{first}, then seconds (cached)"


def warm_start_options(*, project: Project) -> list[tuple[str, str, str, str]]:
    """The train form's warm-start select: ``(key, label, expected cost, refusal)``; a set whose
    ``refusal`` is not "" would be refused by the training (``warm_start_refusal``: the project
    was imported from it) and is shown disabled, with the reason."""
    from labeling.services import warm_start_refusal

    out = []
    for key, label, spec in warm_start_choices(project=project):
        refusal = warm_start_refusal(project=project, spec=spec, title=label)
        out.append((key, label, "" if refusal else warm_start_cost(spec=spec), refusal))
    return out


# -- the dashboard's flip-rate heatmap (annotate's dashboard reads this) -------------------
@dataclass(frozen=True)
class FlipCount:
    source: str  # "human" (human or gold labels) | "auto"
    perturbation: str  # "(none)" when the candidate has none
    original_label: str
    label: str  # the counterfactual's final label
    n: int

    @property
    def flipped(self) -> bool:
        return self.label != self.original_label


def flip_counts_for(*, project: Project) -> list[FlipCount]:
    """Labelled candidates counted by (label source, perturbation, original label,
    counterfactual label): the cells behind :func:`flip_rates_for`, finer. From the stored
    aggregates."""
    rows = sorted(
        _flip_rows(project), key=lambda r: (r["perturbation"], r["original_label"], r["label"], r["label_source"])
    )
    out = []
    for r in rows:
        source = next((s for s, members in SOURCES.items() if r["label_source"] in members), None)
        if source is not None:
            out.append(FlipCount(source, r["perturbation"] or "(none)", r["original_label"], r["label"], r["n"]))
    return out


def pairwise_model_latest(*, project: Project) -> PairwiseModel | None:
    return PairwiseModel.objects.filter(project=project).order_by("-version").first()


# -- the augmentation evaluation section ---------------------------------------------------
CHART_WIDTH = 600
CHART_LEFT = 210  # room for the variant names
CHART_ROW = 22

# Every variant in plain words: (short name for the chart, what f' was trained on). The page
# never shows the internal keys.
VARIANT_NAMES: dict[str, tuple[str, str]] = {
    "originals": ("Originals only", "the originals alone, no counterfactual: the baseline every gain is measured from"),
    "export": (
        "Your export",
        "the originals plus the project's current labelled set as the export writes it (human and auto labels)",
    ),
    "human": ("Human labels only", "the originals plus only the counterfactuals humans labelled (the budget share)"),
    "invariant": (
        "“Nothing flips”",
        "plus every other counterfactual given its original's label (the invariant baseline)",
    ),
    "trust": ("Classifier f's guess", "plus every other counterfactual labelled by the base classifier f"),
    "pc": ("Pairwise h", "plus every other counterfactual labelled by the pairwise classifier h (PC)"),
    "capc": ("Pairwise h with f", "plus every other counterfactual labelled by h with f's outputs (CAPC)"),
    "capc-confident": (
        "Pairwise h, confident only",
        "plus only the counterfactuals h (CAPC) labels at or above its threshold: what auto-labelling keeps",
    ),
    "capc+warm": ("Pairwise h, warm-started", "plus every other counterfactual labelled by h warm-started on CAD"),
    # not a ceiling: "Your export" holds other pairs (auto-labelled ones outside the pool) and
    # f-prime's training is noisy, so it can score higher (issue 25: beaten 1.07–1.64×)
    "gold": (
        "Known labels (reference)",
        "plus every counterfactual of the pool with its known label (a human answer, else the label it was "
        "imported with): a reference, not a ceiling — a set with other or more pairs can score higher",
    ),
    "random": ("Random labels (floor)", "plus every other counterfactual with a random label"),
}
CLASSIFIER_NAMES = {
    "minilm-lr": "MiniLM embeddings + logistic regression",
    "tfidf-lr": "TF-IDF + logistic regression",
    "finetune": "fine-tuned MiniLM",
}
SET_PARTS = {"original": "original sentences", "counterfactual": "counterfactuals"}


def variant_name(key: str) -> str:
    return VARIANT_NAMES.get(key, (key.replace("-", " "), ""))[0]


def eval_set_title(name: str) -> str:
    """``TITLE/original`` -> ``TITLE: original sentences``. A name that still holds a path
    (a result stored before sets had titles) shows only what follows the path."""
    base, _, part = name.rpartition("/") if name.endswith(tuple(f"/{p}" for p in SET_PARTS)) else (name, "", "")
    if "/" in base:  # FORMAT:/a/path:SPLIT from an older result: no server path on the page
        fmt, _, rest = base.partition(":")
        base = f"{fmt} {rest.rsplit(':', 1)[-1] if ':' in rest else ''}".strip()
    return f"{base}: {SET_PARTS[part]}" if part else base


def gain_chart(variants: dict[str, Any]) -> dict[str, Any]:
    """SVG geometry of one evaluation set's gains over ``originals`` (accuracy points) with
    their 95 % intervals over seeds: one row per variant that has a gain, named in plain
    words. Rows without a number say "n/a" and why (an error, or no interval with one seed)."""
    rows = []
    for name, m in variants.items():
        if name == "originals":
            continue
        label = variant_name(name)
        if "error" in m:
            rows.append({"name": label, "na": m["error"]})
            continue
        g, ci = m.get("gain"), m.get("gain_ci95")
        if g is None:
            rows.append({"name": label, "na": "no gain"})
            continue
        p = m.get("p_vs_originals")
        rows.append(
            {
                "name": label,
                "gain": 100 * g,
                "lo": 100 * ci[0] if ci else None,
                "hi": 100 * ci[1] if ci else None,
                "p": p,
                # coloured only where it differs from originals only at p < ALPHA; grey is chance
                "significant": p is not None and p < EVAL_ALPHA and g != 0,
            }
        )
    nums = [0.0] + [v for r in rows for v in (r.get("gain"), r.get("lo"), r.get("hi")) if v is not None]
    lo, hi = min(nums), max(nums)
    pad = max(1.0, 0.08 * (hi - lo))
    lo, hi = lo - pad, hi + pad
    span = CHART_WIDTH - CHART_LEFT - 10

    def x(v: float) -> float:
        return round(CHART_LEFT + (v - lo) / (hi - lo) * span, 1)

    zero = x(0.0)
    for i, r in enumerate(rows):
        r["y"] = 10 + i * CHART_ROW
        r["text_y"] = r["y"] + 14
        if "gain" in r:
            gx = x(r["gain"])
            r["bar_x"], r["bar_w"] = min(zero, gx), round(abs(gx - zero), 1)
            r["positive"] = r["gain"] >= 0
            if r["lo"] is not None:
                r["ci_x1"], r["ci_x2"] = x(r["lo"]), x(r["hi"])
            r["label_x"] = max(gx, r.get("ci_x2", gx)) + 4 if r["gain"] >= 0 else min(gx, r.get("ci_x1", gx)) - 4
    ticks = []
    step = 5.0 if hi - lo > 12 else (2.0 if hi - lo > 5 else 1.0)
    t = np.ceil(lo / step) * step
    while t <= hi:
        ticks.append({"x": x(float(t)), "label": f"{t:+.0f}" if t else "0"})
        t += step
    height = 10 + len(rows) * CHART_ROW + 24
    return {
        "rows": rows,
        "zero": zero,
        "width": CHART_WIDTH,
        "height": height,
        "axis_y": height - 20,
        "ticks": ticks,
        "left": CHART_LEFT,
    }


EVAL_ALPHA = 0.05  # the evaluation section's bar for "differs from originals only"


def _against_random(export: dict[str, Any], rnd: dict[str, Any]) -> str:
    """Whether *Your export*'s labels matter: its accuracy against *Random labels* (the human
    answers plus the other counterfactuals with labels at random: the same kind of extra text,
    no label information), paired-bootstrap p. A gain over originals that random labels match
    is the extra text, not the labelling."""
    p = export.get("p_vs_random")
    if p is None or export.get("accuracy") is None or rnd.get("accuracy") is None:
        return ""
    d = 100 * (export["accuracy"] - rnd["accuracy"])
    if p < EVAL_ALPHA and d > 0:
        return f"Its labels matter: {d:+.1f} points over Random labels (p = {p:.3f})."
    return (
        f"Against Random labels (the same kind of extra text, labelled at random) it is {d:+.1f} points "
        f"(p = {p:.3f}): no better at p < {EVAL_ALPHA}, so a gain here may come from the extra text rather "
        "than its labels."
    )


def evaluation_verdict(n: int, variants: dict[str, Any]) -> str:
    """One evaluation set's answer in words, with its n: what *Your export* did against
    *Originals only* (paired-bootstrap p), or, when no variant differs at p < ``EVAL_ALPHA``,
    that the gains are within chance; with few test examples, how many points one is."""
    if not n:
        return ""
    one = f"one test example is {100 / n:.1f} accuracy points"
    differ = [
        v
        for v, m in variants.items()
        if v != "originals" and (m.get("p_vs_originals") is not None) and m["p_vs_originals"] < EVAL_ALPHA
    ]
    parts = []
    export = variants.get("export") or {}
    if export.get("gain") is not None and export.get("p_vs_originals") is not None:
        gain, p = 100 * export["gain"], export["p_vs_originals"]
        if p < EVAL_ALPHA and gain > 0:
            what = "helps"
        elif p < EVAL_ALPHA and gain < 0:
            what = "hurts"
        else:
            what = f"no difference from Originals only at p < {EVAL_ALPHA}"
        parts.append(f"Your export: {gain:+.1f} points over Originals only (p = {p:.3f}, n = {n}): {what}.")
        floor = _against_random(export, variants.get("random") or {})
        if floor:
            parts.append(floor)
    elif "export" in variants:
        parts.append(f"Your export: n/a ({export.get('error') or 'no gain'}).")
    if not differ:
        parts.append(
            f"No variant differs from Originals only at p < {EVAL_ALPHA} on these {n} test examples ({one}): "
            "the bars are within chance."
        )
    elif n < 100:
        parts.append(f"Only {n} test examples: {one}.")
    return " ".join(parts)


def evaluation_for(*, project: Project) -> dict[str, Any]:
    """The latest ``evaluate`` job (for its progress) and the latest succeeded one's result:
    a summary line and, per evaluation set, its title, size, the test examples left out for
    overlapping the training data, a gain chart and table rows, every variant in plain words."""
    from projects.models import Job
    from projects.selectors import job_latest

    latest = job_latest(project=project, kind="evaluate")
    done = (
        Job.objects.filter(project=project, kind="evaluate", status="succeeded").order_by("-finished_at", "-id").first()
    )
    sets = []
    summary: dict[str, Any] = {}
    result = done.result if done is not None and isinstance(done.result, dict) else {}
    if result:
        summary = {
            "classifier": CLASSIFIER_NAMES.get(result.get("classifier", ""), result.get("classifier", "")),
            "n_pairs": result.get("n_pairs"),
            "budget": result.get("budget"),
            "seeds": result.get("seeds"),
            "seconds": result.get("seconds"),
            "excluded": result.get("excluded"),
            "excluded_own": result.get("excluded_own"),
            "export_pairs": result.get("export_pairs"),
        }
        for name, ev in (result.get("eval") or {}).items():
            variants = ev.get("variants") or {}
            table = [
                {
                    "name": variant_name(v),
                    "description": VARIANT_NAMES.get(v, ("", ""))[1],
                    "gain_points": None if m.get("gain") is None else 100 * m["gain"],
                    **m,
                }
                for v, m in variants.items()
            ]
            sets.append(
                {
                    "title": eval_set_title(name),
                    "n": ev.get("n"),
                    "excluded": ev.get("excluded"),
                    "excluded_own": ev.get("excluded_own"),
                    "chart": gain_chart(variants) if variants else None,
                    "verdict": evaluation_verdict(int(ev.get("n") or 0), variants),
                    "table": table,
                }
            )
    return {"latest": latest, "result_job": done, "summary": summary, "sets": sets}


# -- the task model f as generation's teacher (issue 31.3) ------------------------------------
def teacher_available(*, project: Project) -> bool:
    """Whether the project has a trained task model f (a generation run's teacher is on by
    default then)."""
    from labeling.task_training import task_model_latest

    latest = task_model_latest(project=project)
    return latest is not None and os.path.isdir(latest.path)


def teacher_for(*, project: Project, device: str = "cpu") -> Any | None:
    """The project's newest task model f, loaded, with ``predict_proba(records)`` columns in the
    project's label order; None when it has none."""
    from labeling.task_training import task_model_latest

    latest = task_model_latest(project=project)
    if latest is None or not os.path.isdir(latest.path):
        return None
    return teacher_from_folder(
        path=latest.path,
        labels=list(project.labels.order_by("position").values_list("name", flat=True)),
        fields=list(project.text_fields),
        device=device,
    )


def teacher_from_folder(*, path: str, labels: list[str], fields: list[str], device: str = "cpu") -> Any:
    """A task model folder (trained here or elsewhere) as a teacher: ``predict_proba(records)``
    with columns in ``labels`` order. ``FileNotFoundError`` / ``ValueError`` say what is wrong."""
    from labeling.ml.task_inputs import load_task

    return load_task(path, labels, fields, device)
