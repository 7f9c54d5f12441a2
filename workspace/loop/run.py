"""The whole loop, end to end, on the product's own services (``manage.py bench_loop``):

import → generate → route 10 % (check items included) → answers from the labels file → f + h →
auto-label → export → the robustness evaluation of the training-set variants.

When a routed candidate has no judgement yet from every reader of the labels file, the loop
writes those candidates (with control pairs mixed in) as a labelling batch and stops
(:class:`LabelsNeeded`). The same seed gives the same originals, pool and routing, so the loop
run again after the readers answered finds every routed candidate judged.
"""

from __future__ import annotations

import time
import uuid
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from labeling.evaluation import calibration_error, h_predictions, task_model_predict, text_key, variants_evaluate
from labeling.services import autolabel, pairwise_train
from projects import states
from projects.formats import TASK_FIELDS, TASK_LABELS, PairRecord, parse_spec, read
from projects.models import Candidate, Project
from projects.services.exports import data_export
from workspace.loop import pool as P
from workspace.loop.answers import answer_routed, routed_lines
from workspace.loop.data import LoopData, load
from workspace.loop.labels import BatchLine, LabelsFile, read_labels, write_batch

DEFAULT_READERS = ("reader1", "reader2")
VARIANTS = ("originals", "cad-human", "export", "nothing-flips", "f-alone", "human-10", "gold-pool")
VARIANT_TITLES = {
    "originals": "originals only",
    "cad-human": "+ CAD human counterfactuals (gold gain)",
    "export": "+ the export",
    "nothing-flips": '+ whole pool, "nothing flips"',
    "f-alone": "+ whole pool labelled by f alone",
    "human-10": "+ only the routed, human-labelled 10 %",
    "gold-pool": "+ whole pool, readers' labels (reference)",
}


class LabelsNeeded(Exception):
    """Routed candidates without a judgement: a batch was written to ``folder``."""

    def __init__(self, missing: int, lines: int, folder: Path) -> None:
        super().__init__(
            f"{missing} routed candidates have no judgement in the labels file; wrote a labelling batch of "
            f"{lines} lines (controls mixed in) to {folder}"
        )
        self.missing, self.lines, self.folder = missing, lines, folder


@dataclass(frozen=True)
class LoopConfig:
    originals: str
    task: str = "nli"
    limit: int = 70
    seed: int = 0
    generator: str = "rules"
    filters: str = ""  # the run's filters ("" : the generator's defaults)
    labels_file: str = ""
    batch_dir: str = "var/bench_loop/batch"
    work_dir: str = "var/bench_loop/work"
    task_model: str = ""  # a task-model folder, "train" (through the product, capped) or "" (none)
    task_data: str = ""  # FORMAT:PATH for "train"
    task_model_max_examples: int = 2000
    warm_start: str = ""
    evals: tuple[str, ...] = ()
    seeds: int = 3
    classifier: str = "minilm-lr"
    check_pairs: int = 10
    budget: float | None = None  # routed share (None: the project's, 10 % by default)
    controls: int = 40
    batch_all: bool = False  # write the whole pool as a batch and stop (labels for every measurement)
    brief: str = ""
    name: str = ""


@dataclass
class Loop:
    cfg: LoopConfig
    log: Callable[[str], None]
    labels: list[str] = field(default_factory=list)
    fields: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)

    def _timed(self, name: str, t0: float) -> None:
        self.timings[name] = round(time.perf_counter() - t0, 1)
        self.log(f"{name}: {self.timings[name]} s")

    # -- the pool ------------------------------------------------------------------------------
    def build_pool(self, lf: LabelsFile) -> tuple[Project, LoopData, list[P.PoolCandidate]]:
        cfg = self.cfg
        t0 = time.perf_counter()
        data = load(
            cfg.originals,
            task=cfg.task,
            labels=self.labels,
            text_fields=self.fields,
            limit=cfg.limit,
            seed=cfg.seed,
            n_controls=max(cfg.controls, cfg.check_pairs),
        )
        readers = lf.readers or list(DEFAULT_READERS)
        name = cfg.name or f"bench-loop-{cfg.task}-{cfg.limit}-s{cfg.seed}-{uuid.uuid4().hex[:8]}"
        project = P.project_for_loop(name=name, task=cfg.task, annotators=len(readers))
        work = Path(cfg.work_dir)
        P.import_originals(project=project, data=data, work=work)
        self.log(f"project {project.name}: {len(data.originals)} originals of {data.available}")
        self._timed("import", t0)
        t0 = time.perf_counter()
        P.generate(
            project=project,
            generator=cfg.generator,
            seed=cfg.seed,
            filters=cfg.filters,
            on_phase=lambda n, m: self.log(m or n),
        )
        pool = P.pool_candidates(project=project)
        self._timed("generate", t0)
        self.log(f"pool: {len(pool)} candidates")
        return project, data, pool

    def _controls(self, data: LoopData) -> list[BatchLine]:
        out = []
        for p in data.controls[: self.cfg.controls]:
            rec = {k: p.cf_fields.get(k, "") for k in self.fields}
            out.append(BatchLine(text_key(rec, self.fields), rec, p.cf_label))
        return out

    def write_pool_batch(self, data: LoopData, pool: list[P.PoolCandidate], lf: LabelsFile) -> LabelsNeeded:
        """Every pooled candidate not yet judged by every reader, as a batch (``batch_all``)."""
        readers = lf.readers or list(DEFAULT_READERS)
        lines = [
            BatchLine(text_key(c.fields, self.fields), {k: c.fields.get(k, "") for k in self.fields}) for c in pool
        ]
        todo = [x for x in lines if any(r not in lf.entries.get(x.key, {}) for r in readers)]
        n = write_batch(
            self.cfg.batch_dir,
            todo + self._controls(data),
            task=self.cfg.task,
            text_fields=self.fields,
            seed=self.cfg.seed,
            brief_text=self.cfg.brief,
        )
        return LabelsNeeded(len(todo), n, Path(self.cfg.batch_dir))

    # -- the whole loop ------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        cfg = self.cfg
        t_all = time.perf_counter()
        self.labels, self.fields = list(TASK_LABELS[cfg.task]), list(TASK_FIELDS[cfg.task])
        lf = read_labels(cfg.labels_file, labels=self.labels) if cfg.labels_file else LabelsFile({}, {}, {})
        project, data, pool = self.build_pool(lf)
        if cfg.batch_all:
            raise self.write_pool_batch(data, pool, lf)
        P.import_check_pairs(project=project, pairs=data.controls[: cfg.check_pairs], work=Path(cfg.work_dir))
        readers = lf.readers or list(DEFAULT_READERS)
        users = P.annotator_accounts(project=project, names=readers)
        routing = P.route(project=project, seed=cfg.seed, budget=cfg.budget)
        self.log(
            f"routed {routing.routed} candidates ({routing.strategy}), {routing.gold_items} check items"
            + "".join(f"; {m}" for m in routing.messages)
        )
        _routed, missing = routed_lines(project=project, lf=lf)
        if missing:
            n = write_batch(
                cfg.batch_dir,
                missing + self._controls(data),
                task=cfg.task,
                text_fields=self.fields,
                seed=cfg.seed,
                brief_text=cfg.brief,
            )
            raise LabelsNeeded(len(missing), n, Path(cfg.batch_dir))
        t0 = time.perf_counter()
        answered = answer_routed(project=project, lf=lf, annotators=dict(zip(readers, users, strict=True)))
        self._timed("answers", t0)

        f_path = self._task_model(project)
        t0 = time.perf_counter()
        model = pairwise_train(project=project, task_model=f_path, warm_start=cfg.warm_start)
        self._timed("train h", t0)
        t0 = time.perf_counter()
        run = autolabel(project=project)
        self._timed("autolabel", t0)
        t0 = time.perf_counter()
        export_path = Path(cfg.work_dir) / "export.jsonl"
        data_export(project=project, format="pairs-jsonl", out=str(export_path))
        exported = [r for r in read("pairs-jsonl", [str(export_path)], task=cfg.task) if isinstance(r, PairRecord)]
        self._timed("export", t0)

        result = self.measure(project, data, pool, lf, exported, f_path)
        result["routing"] = {
            "strategy": routing.strategy,
            "routed": routing.routed,
            "check_items": routing.gold_items,
            "answers": answered.submitted,
            "refused": answered.refused,
            "messages": routing.messages,
        }
        result["h"].update(
            {
                "model": {"mode": model.mode, "threshold": model.threshold, "task_model": bool(f_path)},
                "autolabel": {"auto_labeled": run.auto_labeled, "abstained": run.abstained},
                "held_back": [
                    {k: v for k, v in s.items() if k in ("kind", "value", "held_back")}
                    for s in getattr(run, "held_back", [])
                ],
            }
        )
        result["timings"] = self.timings
        result["seconds"] = round(time.perf_counter() - t_all, 1)
        return result

    def _task_model(self, project: Project) -> str:
        cfg = self.cfg
        if cfg.task_model != "train":
            return cfg.task_model
        from labeling.task_training import task_data_import, task_model_train

        t0 = time.perf_counter()
        if cfg.task_data:
            fmt, path, split = parse_spec(cfg.task_data)
            task_data_import(project=project, format=fmt, paths=[path], split=split)
        tm = task_model_train(project=project, epochs=1, max_examples=cfg.task_model_max_examples)
        self._timed("train f", t0)
        self.log(f"f: {tm.n_train} examples, held-out accuracy {tm.held_out_accuracy}")
        return tm.path

    # -- the measurements ----------------------------------------------------------------------
    def _gold(self, lf: LabelsFile, key: str) -> tuple[str | None, bool | None]:
        """The readers' label where they all agree (None otherwise), and valid where all say so."""
        js = lf.entries.get(key) or {}
        if not js:
            return None, None
        labels = {j.label for j in js.values()}
        return (labels.pop() if len(labels) == 1 else None), all(j.valid for j in js.values())

    def measure(
        self,
        project: Project,
        data: LoopData,
        pool: list[P.PoolCandidate],
        lf: LabelsFile,
        exported: list[PairRecord],
        f_path: str,
    ) -> dict[str, Any]:
        cfg, fields = self.cfg, self.fields
        keys = {c.id: text_key(c.fields, fields) for c in pool}
        gold = {c.id: self._gold(lf, keys[c.id]) for c in pool}
        judged = [c for c in pool if gold[c.id][1] is not None]
        agreed = [c for c in judged if gold[c.id][0] is not None]
        valid_agreed = [c for c in agreed if gold[c.id][1]]
        state = dict(Candidate.objects.filter(project=project).values_list("id", "state"))
        human_label = dict(
            Candidate.objects.filter(project=project, state=states.HUMAN_LABELED).values_list("id", "label__name")
        )
        routed_ids = {c.id for c in pool if state[c.id] in (states.ROUTED, states.HUMAN_LABELED)}

        # h on the pool (not what humans labelled), where the readers agree
        hp = h_predictions(project=project)
        h_rows = [(c, hp[c.id]) for c in agreed if c.id in hp and c.id not in routed_ids]
        h_valid = [(c, p) for c, p in h_rows if gold[c.id][1]]

        def acc(rows: list[tuple[P.PoolCandidate, tuple[str, float]]]) -> float | None:
            return round(sum(p[0] == gold[c.id][0] for c, p in rows) / len(rows), 4) if rows else None

        def ece(rows: list[tuple[P.PoolCandidate, tuple[str, float]]]) -> float | None:
            if not rows:
                return None
            return round(calibration_error([p[1] for _, p in rows], [p[0] == gold[c.id][0] for c, p in rows]), 4)

        invariant_rows = [(c, (c.original_label, 1.0)) for c, _ in h_valid]

        # f alone on the pool
        f_pred: dict[int, tuple[str, float]] = {}
        if f_path:
            preds = task_model_predict(path=f_path, records=[c.fields for c in pool], labels=self.labels)
            f_pred = {c.id: p for c, p in zip(pool, preds, strict=True)}
        f_rows = [(c, f_pred[c.id]) for c in valid_agreed if c.id in f_pred and c.id not in routed_ids]

        # the export (the generated candidates in it: the imported check pairs are left out)
        check_keys = {text_key(dict(p.cf_fields), fields) for p in data.controls}
        written = [r for r in exported if text_key(dict(r.cf_fields), fields) not in check_keys]
        # the export's defaults also write the unlabelled candidates (no label: h abstained, or
        # contested); what a model can train on is the labelled ones
        export_gen = [r for r in written if r.cf_label]
        by_key = {keys[c.id]: c for c in pool}
        ex_gold = [(r, gold[by_key[k].id]) for r in export_gen if (k := text_key(dict(r.cf_fields), fields)) in by_key]
        ex_agreed = [(r, g) for r, g in ex_gold if g[0] is not None]
        ex_judged = [(r, g) for r, g in ex_gold if g[1] is not None]
        sources = Counter(r.label_source or "" for r in export_gen)

        summary = {
            "originals": len(data.originals),
            "pool": len(pool),
            "judged": len(judged),
            "readers_agree": len(agreed),
            "valid_share": _share(sum(bool(gold[c.id][1]) for c in judged), len(judged)),
            "flip_share": _share(sum(gold[c.id][0] != c.original_label for c in agreed), len(agreed)),
            "flip_share_valid": _share(sum(gold[c.id][0] != c.original_label for c in valid_agreed), len(valid_agreed)),
            "per_code": _per_code(pool, gold),
        }
        export = {
            "pairs": len(export_gen),
            "written": len(written),
            "by_source": dict(sources),
            "coverage": _share(len(export_gen), len(pool)),
            "correct": _share(sum(r.cf_label == g[0] for r, g in ex_agreed), len(ex_agreed)),
            "correct_of": len(ex_agreed),
            "invalid": _share(sum(not g[1] for _, g in ex_judged), len(ex_judged)),
            "check_pairs_left_out": len(exported) - len(written),
        }
        h = {
            "n": len(h_rows),
            "accuracy": acc(h_rows),
            "accuracy_valid": acc(h_valid),
            "ece_valid": ece(h_valid),
            "n_valid": len(h_valid),
            "invariant_valid": acc(invariant_rows),
            "f_alone_valid": acc(f_rows),
            "f_alone_ece_valid": ece(f_rows),
        }

        # the training-set variants
        base = [(dict(o.fields), str(o.label)) for o in data.originals]
        variants: dict[str, list[tuple[dict[str, str], str]]] = {
            "originals": [],
            "cad-human": [(dict(p.cf_fields), str(p.cf_label)) for p in data.human if p.cf_label],
            "export": [(dict(r.cf_fields), str(r.cf_label)) for r in export_gen if r.cf_label],
            "nothing-flips": [(dict(c.fields), c.original_label) for c in pool],
        }
        if f_pred:
            variants["f-alone"] = [(dict(c.fields), f_pred[c.id][0]) for c in pool]
        variants["human-10"] = [(dict(c.fields), human_label[c.id]) for c in pool if c.id in human_label]
        variants["gold-pool"] = [(dict(c.fields), str(gold[c.id][0])) for c in valid_agreed]
        evals = list(cfg.evals) or [default_eval_spec(cfg.originals)]
        t0 = time.perf_counter()
        evaluation = variants_evaluate(
            task=cfg.task,
            labels=self.labels,
            fields=fields,
            base=base,
            variants=variants,
            evals=evals,
            seeds=cfg.seeds,
            classifier=cfg.classifier,
            gold="cad-human",
        )
        self._timed("evaluate", t0)
        return {
            "task": cfg.task,
            "originals": cfg.originals,
            "limit": cfg.limit,
            "seed": cfg.seed,
            "generator": cfg.generator,
            "readers": lf.readers,
            "pool": summary,
            "h": h,
            "export": export,
            "classifier": cfg.classifier,
            "seeds": cfg.seeds,
            "evals": evals,
            "variants": {k: VARIANT_TITLES[k] for k in variants},
            "eval": evaluation["eval"],
        }


def _share(k: int, n: int) -> float | None:
    return round(k / n, 4) if n else None


def _per_code(pool: list[P.PoolCandidate], gold: dict[int, tuple[str | None, bool | None]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for code in sorted({c.perturbation for c in pool}):
        cs = [c for c in pool if c.perturbation == code]
        judged = [c for c in cs if gold[c.id][1] is not None]
        agreed = [c for c in judged if gold[c.id][0] is not None]
        out[code or "-"] = {
            "n": len(cs),
            "valid": _share(sum(bool(gold[c.id][1]) for c in judged), len(judged)),
            "flips": _share(sum(gold[c.id][0] != c.original_label for c in agreed), len(agreed)),
        }
    return out


def default_eval_spec(originals: str) -> str:
    """The evaluation set by default: the originals' data set, split ``dev``."""
    fmt, path, _split = parse_spec(originals)
    return f"{fmt}:{path}:dev"
