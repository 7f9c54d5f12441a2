"""The augmentation evaluation with a fine-tuned f' whose fine-tuning runs on another machine
(a GPU machine with torch and transformers but without the app's stack). Three steps, each from
the repository root; the middle one needs no Django:

    python experiments/augmentation_on_gpu.py record --task nli --format cad-nli --split train ../shared/data/cad \
        --eval cad-nli:../shared/data/cad:dev --seeds 3 --out fits.json
    python experiments/augmentation_on_gpu.py fit fits.json --model PATH_TO_MINILM --device cuda --epochs 2 \
        --out preds.json
    python experiments/augmentation_on_gpu.py replay ... (the record arguments) --preds preds.json

``record`` runs ``run_augmentation`` (the code of ``bench_augmentation``: same seeds, same h)
with an f' that only writes down what it is asked to train on; ``fit`` fine-tunes
``FineTunedClassifier`` on each of those training sets and predicts the evaluation sets;
``replay`` runs ``run_augmentation`` again, f' answering with those predictions in the same
order, and prints its JSON (docs/formats.md §3). docs/labelling.md has the H100 figures.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from typing import Any

import numpy as np

sys.path.insert(0, os.getcwd())


def _django_run(args: argparse.Namespace, preds: list[list[list[int]]] | None) -> tuple[dict[str, Any], dict[str, Any]]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")
    import django

    django.setup()
    from labeling.evaluation import read_eval_sets
    from labeling.ml.augmentation import run_augmentation
    from labeling.ml.pairs import pairs_from_records
    from labeling.services import embedder
    from projects.formats import TASK_FIELDS, TASK_LABELS, read

    labels, fields = list(TASK_LABELS[args.task]), list(TASK_FIELDS[args.task])
    data, _ = pairs_from_records(list(read(args.format, args.paths, task=args.task, split=args.split)), labels)
    evals = [e for spec in args.eval for e in read_eval_sets(spec, args.task, labels)]
    table: list[list[str]] = []
    index: dict[str, int] = {}

    def rid(r: dict[str, str]) -> int:
        key = json.dumps([r.get(f, "") for f in fields])
        if key not in index:
            index[key] = len(table)
            table.append([r.get(f, "") for f in fields])
        return index[key]

    calls: list[dict[str, Any]] = []

    class Recorded:
        def __init__(self, seed: int) -> None:
            self.seed, self.k, self.j = seed, -1, 0

        def fit(self, recs: list[dict[str, str]], ys: list[str]) -> Recorded:
            calls.append({"seed": self.seed, "x": [rid(r) for r in recs], "y": [labels.index(v) for v in ys]})
            self.k = len(calls) - 1
            return self

        def predict_proba(self, recs: list[dict[str, str]]) -> np.ndarray:
            if preds is None:
                return np.full((len(recs), len(labels)), 1.0 / len(labels))
            p = np.eye(len(labels))[np.asarray(preds[self.k][self.j])]
            self.j += 1
            return p

    result = run_augmentation(
        data,
        evals,
        task=args.task,
        labels=labels,
        fields=fields,
        embed=embedder().encode,
        budget=args.budget,
        seeds=args.seeds,
        classifier="finetune",
        make_classifier=Recorded,
        threshold=0.7,
    )
    ev = [{"name": e.name, "x": [rid(r) for r in e.records]} for e in evals]
    return dict(result), {"fields": fields, "labels": labels, "table": table, "calls": calls, "evals": ev}


def _fit(args: argparse.Namespace) -> None:
    from labeling.ml.finetune import FineTunedClassifier

    with open(args.fits) as fh:
        d = json.load(fh)
    fields, labels, table = d["fields"], d["labels"], d["table"]

    def rec(i: int) -> dict[str, str]:
        return dict(zip(fields, table[i], strict=True))

    evals = [[rec(i) for i in e["x"]] for e in d["evals"]]
    out, t0 = [], time.time()
    for k, c in enumerate(d["calls"]):
        f = FineTunedClassifier(
            labels, fields, args.model, device=args.device, seed=c["seed"], epochs=args.epochs, batch_size=32
        )
        f.fit([rec(i) for i in c["x"]], [labels[y] for y in c["y"]])
        out.append([f.predict_proba(e).argmax(1).tolist() for e in evals])
        print(f"fit {k + 1}/{len(d['calls'])}: {len(c['x'])} records, {time.time() - t0:.1f} s", flush=True)
    with open(args.out, "w") as fh:
        json.dump({"preds": out, "seconds": round(time.time() - t0, 1), "epochs": args.epochs}, fh)


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="step", required=True)
    for name in ("record", "replay"):
        p = sub.add_parser(name)
        p.add_argument("paths", nargs="+")
        p.add_argument("--task", required=True)
        p.add_argument("--format", required=True)
        p.add_argument("--split", default="")
        p.add_argument("--eval", action="append", required=True)
        p.add_argument("--budget", type=float, default=0.1)
        p.add_argument("--seeds", type=int, default=3)
        if name == "record":
            p.add_argument("--out", required=True)
        else:
            p.add_argument("--preds", required=True)
    p = sub.add_parser("fit")
    p.add_argument("fits")
    p.add_argument("--model", required=True)
    p.add_argument("--device", default="cuda")
    p.add_argument("--epochs", type=int, default=2)
    p.add_argument("--out", required=True)
    args = ap.parse_args()
    if args.step == "fit":
        _fit(args)
    elif args.step == "record":
        _, fits = _django_run(args, None)
        with open(args.out, "w") as fh:
            json.dump(fits, fh)
        print(f"recorded {len(fits['calls'])} fits over {len(fits['table'])} distinct texts")
    else:
        with open(args.preds) as fh:
            result, _ = _django_run(args, json.load(fh)["preds"])
        print(json.dumps(result))


if __name__ == "__main__":
    main()
