"""The cross-encoder learner on CAD-NLI, without Django (for a GPU machine that has torch and
transformers but not the app's stack). From the repository root:

    python experiments/bench_cross_encoder.py --data ../shared/data/cad --model PATH_TO_MINILM [--device cuda]

Prints one JSON line per run: h from 10 % of the train pool (666 labels, scored on the rest),
from 10 % of dev (80 labels), and trained on all of train and applied to dev, at the given
learning rate and epochs. docs/labelling.md ("Not done / limits") has the H100 figures.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.getcwd())

from labeling.ml.bench import human_split
from labeling.ml.cross_encoder import CrossEncoderH
from labeling.ml.metrics import ece
from labeling.ml.pairs import pairs_from_records
from projects.formats import read

LABELS = ["entailment", "neutral", "contradiction"]
FIELDS = ["premise", "hypothesis"]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", required=True, help="the cad/ directory")
    ap.add_argument("--model", required=True, help="a local MiniLM (or other BERT-style) folder")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--lr", type=float, default=5e-5)
    ap.add_argument("--epochs", type=int, default=4)
    ap.add_argument("--seeds", type=int, default=3)
    args = ap.parse_args()

    def load(split: str) -> tuple[list, list[str]]:
        d, _ = pairs_from_records(list(read("cad-nli", [args.data], task="nli", split=split)), LABELS)
        return d.pairs, d.y_prime

    train, train_y = load("train")
    dev, dev_y = load("dev")

    def run(name: str, pairs: list, ys: list[str], test: list, test_y: list[str], seed: int) -> None:
        t = time.time()
        h = CrossEncoderH(
            LABELS, FIELDS, args.model, device=args.device, seed=seed, min_labels=10, epochs=args.epochs, lr=args.lr
        ).fit(pairs, ys)
        fit_s = time.time() - t
        p = h.predict_proba_pairs(test)
        y = np.asarray([LABELS.index(v) for v in test_y])
        pred = p.argmax(1)
        out = {"run": name, "seed": seed, "n_train": len(pairs), "n_test": len(test), "lr": args.lr}
        out |= {"epochs": args.epochs, "accuracy": round(float((pred == y).mean()), 4)}
        out |= {"ece": round(float(ece(p.max(1), pred == y)), 4), "fit_seconds": round(fit_s, 1)}
        print(json.dumps(out), flush=True)

    for name, pool, pool_y in (("train pool, 10 %", train, train_y), ("dev pool, 10 %", dev, dev_y)):
        for seed in range(args.seeds):
            tr, te, _ = human_split(len(pool), 0.1, np.random.default_rng(seed))
            test = [pool[i] for i in te]
            run(name, [pool[i] for i in tr], [pool_y[i] for i in tr], test, [pool_y[i] for i in te], seed)
    run("all of train -> dev", train, train_y, dev, dev_y, 0)


if __name__ == "__main__":
    main()
