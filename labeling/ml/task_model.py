"""The task model f (issue 26): a sequence-classification cross-encoder fine-tuned on the
project's task, trained once and cached, then loaded for prediction. No Django; torch and
transformers are imported lazily.

Trained model = a standard Hugging Face folder (``save_pretrained`` of model and tokenizer,
``config.id2label`` = the task's labels in the project's order) plus ``counterpart_task_model.json``
(:data:`META_FILE`: base, data hash, epochs, label order, fields, held-out and evaluation
accuracies). Any such folder loads through :func:`load_task_model` and through the ``hf`` base
classifier (:class:`labeling.ml.base_classifier.HFSequenceClassifier`).

Training (:func:`train_task_model`):
- the examples are put in a canonical order (by normalised text key), so the same data in any
  order is the same training run; a stratified held-out slice is set apart;
- AdamW with linear warmup and decay, gradient clipping, ``epochs`` passes, a seeded shuffle;
  bf16 autocast on CUDA;
- ``progress(dict)`` after every step (step, total, epoch, loss, elapsed and ETA seconds);
  ``cancel()`` is checked between steps: a cancelled run saves a checkpoint and raises
  :class:`TaskModelCancelled`;
- a checkpoint (model, optimiser, scheduler, position, RNG) is written at the end of each epoch
  and every ``checkpoint_every`` steps; a run started again with the same key resumes there;
- after each epoch the held-out slice and any ``eval_sets`` are scored; the epoch best on the
  held-out slice is kept;
- the output folder is ``<root>/<key>``, the key a hash of the base model's identity, the data
  and the hyperparameters: a second run with the same inputs finds it and trains nothing.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from labeling.ml.base_classifier import HFSequenceClassifier, Proba
from projects.ml.textkeys import text_hash

META_FILE = "counterpart_task_model.json"
CHECKPOINT_DIR = "checkpoint"
Records = Sequence[Mapping[str, str]]
Progress = Callable[[dict[str, Any]], None]


class TaskModelCancelled(Exception):
    """Training was cancelled between steps; a checkpoint was saved, so a new run resumes."""


@dataclass(frozen=True)
class TaskModelConfig:
    """Hyperparameters; all but ``checkpoint_every`` and ``eval_batch_size`` enter the cache key."""

    labels: tuple[str, ...]
    fields: tuple[str, ...]
    epochs: int = 3
    max_length: int = 128
    batch_size: int = 32
    learning_rate: float = 5e-5
    weight_decay: float = 0.01
    warmup: float = 0.1  # share of all steps with a rising learning rate
    seed: int = 0
    held_out: float = 0.05  # stratified share set apart to score each epoch (0: none)
    max_held_out: int = 2000
    checkpoint_every: int = 0  # steps between mid-epoch checkpoints (0: at epoch ends only)
    eval_batch_size: int = 128

    def keyed(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("checkpoint_every")
        d.pop("eval_batch_size")
        return d


@dataclass
class TrainResult:
    path: Path
    trained: bool  # False: the cached model was found and nothing was trained
    meta: dict[str, Any] = field(default_factory=dict)


def resolve_device(device: str | None = None) -> str:
    """``device``, else ``COUNTERPART_DEVICE``, else ``cuda`` when torch sees a GPU, else ``cpu``."""
    if device:
        return device
    env = os.environ.get("COUNTERPART_DEVICE", "")
    if env:
        return env
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def base_identity(base: str | os.PathLike[str]) -> str:
    """A hash of a local base model: its config and, per weight file, name, size and the SHA-1 of
    its first and last MiB (hashing whole weight files would cost seconds for mpnet)."""
    p = Path(base)
    if not p.is_dir():
        raise FileNotFoundError(f"task model base not found: {base}")
    h = hashlib.sha256()
    for name in ("config.json", "tokenizer.json", "vocab.txt"):
        f = p / name
        if f.is_file():
            h.update(name.encode())
            h.update(f.read_bytes())
    for f in sorted(p.glob("*.safetensors")) + sorted(p.glob("*.bin")):
        size = f.stat().st_size
        h.update(f"{f.name}:{size}".encode())
        with f.open("rb") as fh:
            h.update(fh.read(1 << 20))
            fh.seek(max(0, size - (1 << 20)))
            h.update(fh.read(1 << 20))
    return h.hexdigest()


def canonical_order(records: Records, y: Sequence[str], fields: Sequence[str]) -> list[int]:
    """Indices sorting the examples by (text key, label): the same data in any order trains alike."""
    keys = [(text_hash(r, fields), lab) for r, lab in zip(records, y, strict=True)]
    return sorted(range(len(keys)), key=lambda i: keys[i])


def data_hash(records: Records, y: Sequence[str], fields: Sequence[str]) -> str:
    h = hashlib.sha256()
    for i in canonical_order(records, y, fields):
        h.update("\x1e".join([*(str(records[i].get(f) or "") for f in fields), y[i]]).encode("utf-8"))
        h.update(b"\x1d")
    return h.hexdigest()


def cache_key(base: str | os.PathLike[str], records: Records, y: Sequence[str], config: TaskModelConfig) -> str:
    h = hashlib.sha256()
    h.update(base_identity(base).encode())
    h.update(data_hash(records, y, config.fields).encode())
    h.update(json.dumps(config.keyed(), sort_keys=True).encode())
    return h.hexdigest()[:24]


def stratified_split(y: Sequence[str], share: float, cap: int, seed: int) -> tuple[list[int], list[int]]:
    """(train indices, held-out indices): ``share`` of each label (at most ``cap`` in all, at least
    one per label that has two or more), drawn with ``seed``."""
    if share <= 0:
        return list(range(len(y))), []
    rng = np.random.default_rng(seed)
    n_held = min(cap, round(share * len(y)))
    held: list[int] = []
    labels = sorted(set(y))
    for lab in labels:
        idx = [i for i, v in enumerate(y) if v == lab]
        if len(idx) < 2:
            continue
        k = max(1, round(n_held * len(idx) / len(y)))
        held.extend(int(i) for i in rng.choice(idx, size=min(k, len(idx) - 1), replace=False))
    held_set = set(held)
    return [i for i in range(len(y)) if i not in held_set], sorted(held)


def accuracy(proba: Proba, y: Sequence[str], labels: Sequence[str]) -> float:
    if not len(y):
        return float("nan")
    pred = np.asarray(proba).argmax(axis=1)
    gold = np.array([list(labels).index(v) for v in y])
    return float((pred == gold).mean())


class _Encoder:
    """Tokenises records (two-field tasks as a text pair) and scores them with a model in hand."""

    def __init__(self, model: Any, tokenizer: Any, fields: Sequence[str], max_length: int, device: str) -> None:
        self.model, self.tokenizer = model, tokenizer
        self.fields, self.max_length, self.device = list(fields), max_length, device

    def encode(self, records: Records) -> Any:
        cols = [[str(r.get(f) or "") for r in records] for f in self.fields[:2]]
        return self.tokenizer(*cols, truncation=True, max_length=self.max_length, padding=True, return_tensors="pt").to(
            self.device
        )

    def proba(self, records: Records, batch_size: int = 128) -> Proba:
        import torch

        was_training = self.model.training
        self.model.eval()
        out = []
        with torch.no_grad(), _autocast(self.device):
            for s in range(0, len(records), batch_size):
                logits = self.model(**self.encode(records[s : s + batch_size])).logits
                out.append(torch.softmax(logits.float(), dim=-1).cpu().numpy())
        if was_training:
            self.model.train()
        return np.vstack(out) if out else np.zeros((0, int(self.model.config.num_labels)))


def _autocast(device: str) -> Any:
    import contextlib

    import torch

    if device.startswith("cuda"):
        return torch.autocast("cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


def _check_labels(y: Sequence[str], labels: Sequence[str]) -> None:
    unknown = sorted(set(y) - set(labels))
    if unknown:
        raise ValueError(f"labels not in the task's label set {list(labels)}: {unknown[:5]}")
    if len(set(y)) < 2:
        raise ValueError("the task model needs examples of at least two labels")


def train_task_model(
    base: str | os.PathLike[str],
    records: Records,
    y: Sequence[str],
    config: TaskModelConfig,
    root: str | os.PathLike[str],
    *,
    device: str | None = None,
    progress: Progress | None = None,
    cancel: Callable[[], bool] | None = None,
    eval_sets: Mapping[str, tuple[Records, Sequence[str]]] | None = None,
    extra_meta: Mapping[str, Any] | None = None,
) -> TrainResult:
    """Fine-tune ``base`` on ``records``/``y`` into ``root/<cache key>`` (module docstring)."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer, get_linear_schedule_with_warmup

    _check_labels(y, config.labels)
    if len(records) != len(y):
        raise ValueError("records and labels differ in length")
    key = cache_key(base, records, y, config)
    out = Path(root) / key
    if (out / META_FILE).is_file():
        return TrainResult(out, False, json.loads((out / META_FILE).read_text()))
    work = Path(root) / f"{key}.partial"
    ckpt_dir = work / CHECKPOINT_DIR
    work.mkdir(parents=True, exist_ok=True)
    dev = resolve_device(device)
    labels = list(config.labels)

    order = canonical_order(records, y, config.fields)
    recs = [dict(records[i]) for i in order]
    ys = [y[i] for i in order]
    train_idx, held_idx = stratified_split(ys, config.held_out, config.max_held_out, config.seed)
    train_recs = [recs[i] for i in train_idx]
    train_y = np.array([labels.index(ys[i]) for i in train_idx])
    held = ([recs[i] for i in held_idx], [ys[i] for i in held_idx])

    torch.manual_seed(config.seed)
    tokenizer = AutoTokenizer.from_pretrained(str(base), local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(
        str(base),
        local_files_only=True,
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={lab: i for i, lab in enumerate(labels)},
        ignore_mismatched_sizes=True,
        dtype=torch.float32,  # trained in fp32 (bf16 autocast on CUDA) whatever the checkpoint's dtype
    ).to(dev)
    no_decay = ("bias", "LayerNorm.weight", "layer_norm.weight")
    groups = [
        {
            "params": [p for n, p in model.named_parameters() if not any(k in n for k in no_decay)],
            "weight_decay": config.weight_decay,
        },
        {"params": [p for n, p in model.named_parameters() if any(k in n for k in no_decay)], "weight_decay": 0.0},
    ]
    opt = torch.optim.AdamW(groups, lr=config.learning_rate)
    steps_per_epoch = max(1, (len(train_recs) + config.batch_size - 1) // config.batch_size)
    total = steps_per_epoch * config.epochs
    sched = get_linear_schedule_with_warmup(opt, int(config.warmup * total), total)
    enc = _Encoder(model, tokenizer, config.fields, config.max_length, dev)

    start_epoch, start_step = 0, 0
    history: list[dict[str, Any]] = []
    best: dict[str, Any] = {"epoch": -1, "held_out": -1.0}
    if (ckpt_dir / "state.pt").is_file():
        state = torch.load(ckpt_dir / "state.pt", map_location=dev, weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        sched.load_state_dict(state["scheduler"])
        start_epoch, start_step = state["epoch"], state["step"]
        history, best = state["history"], state["best"]

    def save_checkpoint(epoch: int, step: int) -> None:
        tmp = work / "state.pt.tmp"
        torch.save(
            {
                "model": model.state_dict(),
                "optimizer": opt.state_dict(),
                "scheduler": sched.state_dict(),
                "epoch": epoch,
                "step": step,
                "history": history,
                "best": best,
            },
            tmp,
        )
        ckpt_dir.mkdir(exist_ok=True)
        os.replace(tmp, ckpt_dir / "state.pt")

    def evaluate(epoch: int) -> dict[str, Any]:
        row: dict[str, Any] = {"epoch": epoch + 1}
        if held[0]:
            row["held_out"] = accuracy(enc.proba(held[0], config.eval_batch_size), held[1], labels)
        for name, (er, ey) in (eval_sets or {}).items():
            row[name] = accuracy(enc.proba(er, config.eval_batch_size), ey, labels)
        return row

    t0 = time.monotonic()
    done_at_start = start_epoch * steps_per_epoch + start_step
    model.train()
    for epoch in range(start_epoch, config.epochs):
        # the epoch's shuffle depends on seed and epoch only, so a resumed run sees the same order
        perm = np.random.default_rng([config.seed, epoch]).permutation(len(train_recs))
        first = start_step if epoch == start_epoch else 0
        for step in range(first, steps_per_epoch):
            if cancel is not None and cancel():
                save_checkpoint(epoch, step)
                raise TaskModelCancelled(f"cancelled at epoch {epoch + 1}, step {step}")
            rows = perm[step * config.batch_size : (step + 1) * config.batch_size]
            batch = enc.encode([train_recs[int(i)] for i in rows])
            target = torch.as_tensor(train_y[rows], device=dev)
            with _autocast(dev):
                loss = model(**batch, labels=target).loss
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            opt.zero_grad()
            done = epoch * steps_per_epoch + step + 1
            if progress is not None:
                elapsed = time.monotonic() - t0
                rate = (done - done_at_start) / elapsed if elapsed > 0 else 0.0
                progress(
                    {
                        "step": done,
                        "total": total,
                        # examples through the model so far, of all epochs (the job's rate unit)
                        "examples": epoch * len(train_recs) + min((step + 1) * config.batch_size, len(train_recs)),
                        "examples_total": len(train_recs) * config.epochs,
                        "epoch": epoch + 1,
                        "epochs": config.epochs,
                        "loss": float(loss.detach()),
                        "elapsed_s": elapsed,
                        "eta_s": (total - done) / rate if rate > 0 else None,
                    }
                )
            if config.checkpoint_every and (step + 1) % config.checkpoint_every == 0 and step + 1 < steps_per_epoch:
                save_checkpoint(epoch, step + 1)
        row = evaluate(epoch)
        history.append(row)
        if progress is not None:
            progress({"step": (epoch + 1) * steps_per_epoch, "total": total, "epoch_done": row})
        score = row.get("held_out", 0.0)
        if best["epoch"] < 0 or score > best["held_out"]:
            best = {"epoch": epoch + 1, "held_out": score}
            best_dir = work / "best"
            if best_dir.exists():
                shutil.rmtree(best_dir)
            model.save_pretrained(best_dir)
            tokenizer.save_pretrained(best_dir)
        save_checkpoint(epoch + 1, 0)

    best_dir = work / "best"
    final = history[int(best["epoch"]) - 1] if history else {}
    meta = {
        "base": str(base),
        "base_identity": base_identity(base),
        "data_hash": data_hash(records, y, config.fields),
        "key": key,
        "labels": labels,
        "fields": list(config.fields),
        "config": config.keyed(),
        "epochs": config.epochs,
        "best_epoch": best["epoch"],
        "n_train": len(train_recs),
        "n_held_out": len(held[0]),
        "held_out_accuracy": final.get("held_out"),
        # what always answering the commonest label scores on the held-out set (f's gate, issue 30)
        "held_out_majority": (
            round(max(held[1].count(v) for v in set(held[1])) / len(held[1]), 4) if held[1] else None
        ),
        "eval": {k: v for k, v in final.items() if k not in ("epoch", "held_out")},
        "history": history,
        "device": dev,
        "train_seconds": round(time.monotonic() - t0, 1),
        **dict(extra_meta or {}),
    }
    (best_dir / META_FILE).write_text(json.dumps(meta, indent=2))
    if out.exists():
        shutil.rmtree(out)
    os.replace(best_dir, out)
    shutil.rmtree(work, ignore_errors=True)
    return TrainResult(out, True, meta)


def find_cached(
    base: str | os.PathLike[str],
    records: Records,
    y: Sequence[str],
    config: TaskModelConfig,
    root: str | os.PathLike[str],
) -> Path | None:
    p = Path(root) / cache_key(base, records, y, config)
    return p if (p / META_FILE).is_file() else None


class TaskModel(HFSequenceClassifier):
    """A trained task model: ``predict_proba(records)`` gives (n, n_labels) in :attr:`labels` order."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        meta: dict[str, Any],
        labels: Sequence[str],
        fields: Sequence[str],
        device: str,
    ) -> None:
        cfg = meta.get("config", {})
        super().__init__(labels, fields, str(path), device=device, max_length=int(cfg.get("max_length", 256)))
        self.meta = meta


def load_task_model(
    path: str | os.PathLike[str],
    *,
    labels: Sequence[str] | None = None,
    fields: Sequence[str] | None = None,
    device: str | None = None,
) -> TaskModel:
    """A trained task model folder (or any local sequence-classification folder). ``labels``
    default to the model's (``counterpart_task_model.json``, else ``config.id2label``);
    ``fields`` to the meta file's, else ``("premise", "hypothesis")`` must be given."""
    p = Path(path)
    if not p.is_dir():
        raise FileNotFoundError(f"task model directory not found: {path}")
    meta: dict[str, Any] = {}
    if (p / META_FILE).is_file():
        meta = json.loads((p / META_FILE).read_text())
    if labels is None:
        labels = meta.get("labels")
    if labels is None:
        cfg = json.loads((p / "config.json").read_text())
        id2label = cfg.get("id2label") or {}
        labels = [str(id2label[k]) for k in sorted(id2label, key=int)]
    if fields is None:
        fields = meta.get("fields")
    if not fields:
        raise ValueError(f"task model at {path} names no fields; pass fields=")
    model = TaskModel(p, meta, labels, fields, resolve_device(device))
    model._load()
    return model
