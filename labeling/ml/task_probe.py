"""How long training the task model f will take on this machine, measured (issue 30). No
Django; torch and transformers imported lazily.

The task-model form's defaults were 3 epochs over 53,674 examples with no word of the cost: on
CPU that is days. :func:`probe_training` runs a few real training steps (forward, backward,
optimiser step) of the base model on a sample of the actual data, on the device training would
use, and one scoring pass; :func:`propose` turns the measured seconds per example into the
estimate for the requested settings and a cap and epoch count that fit the budget (an hour).
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from labeling.ml.task_model import Records, TaskModelConfig, _autocast, _Encoder, resolve_device

BUDGET_SECONDS = 3600
PROBE_STEPS = 4  # the first is a warm-up and is not timed


@dataclass(frozen=True)
class Probe:
    device: str
    batch_size: int
    steps: int  # timed training steps
    seconds_per_example: float  # training (forward + backward + step)
    eval_seconds_per_example: float  # scoring (held-out slice and dev sets, once per epoch)
    load_seconds: float

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def probe_training(
    base: str,
    records: Records,
    y: Sequence[str],
    config: TaskModelConfig,
    *,
    device: str | None = None,
    steps: int = PROBE_STEPS,
) -> Probe:
    """Time ``steps`` training steps of ``config.batch_size`` examples drawn (with
    ``config.seed``) from ``records``, after one untimed warm-up step, and one scoring batch."""
    import torch
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    if not records:
        raise ValueError("no examples to probe")
    labels = list(config.labels)
    dev = resolve_device(device)
    t0 = time.perf_counter()
    tokenizer = AutoTokenizer.from_pretrained(str(base), local_files_only=True)
    model = AutoModelForSequenceClassification.from_pretrained(
        str(base),
        local_files_only=True,
        num_labels=len(labels),
        id2label=dict(enumerate(labels)),
        label2id={lab: i for i, lab in enumerate(labels)},
        ignore_mismatched_sizes=True,
        dtype=torch.float32,
    ).to(dev)
    load_seconds = time.perf_counter() - t0
    enc = _Encoder(model, tokenizer, config.fields, config.max_length, dev)
    opt = torch.optim.AdamW(model.parameters(), lr=config.learning_rate)
    rng = np.random.default_rng(config.seed)
    bs = config.batch_size
    model.train()
    timings: list[float] = []
    for step in range(steps + 1):
        rows = rng.choice(len(records), size=min(bs, len(records)), replace=len(records) < bs)
        t = time.perf_counter()
        batch = enc.encode([records[int(i)] for i in rows])
        target = torch.as_tensor([labels.index(y[int(i)]) for i in rows], device=dev)
        with _autocast(dev):
            loss = model(**batch, labels=target).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad()
        if dev.startswith("cuda"):
            torch.cuda.synchronize()
        if step:  # the first step warms up (allocations, kernels)
            timings.append((time.perf_counter() - t) / len(rows))
    sample = [records[int(i)] for i in rng.choice(len(records), size=min(config.eval_batch_size, len(records)))]
    t = time.perf_counter()
    enc.proba(sample, config.eval_batch_size)
    eval_spe = (time.perf_counter() - t) / len(sample)
    return Probe(dev, bs, len(timings), statistics.median(timings), eval_spe, round(load_seconds, 3))


def estimate_seconds(probe: Probe, *, examples: int, epochs: int, scored_per_epoch: int) -> float:
    """Training ``examples`` for ``epochs``, scoring ``scored_per_epoch`` examples after each."""
    per_epoch = examples * probe.seconds_per_example + scored_per_epoch * probe.eval_seconds_per_example
    return probe.load_seconds + epochs * per_epoch


def _round_down(n: int) -> int:
    """A readable cap: down to 2 significant digits (12,345 -> 12,000)."""
    if n < 100:
        return max(n, 0)
    step = int(10 ** (int(math.log10(n)) - 1))
    return int(n // step * step)


def propose(
    probe: Probe,
    *,
    available: int,
    epochs: int,
    scored_per_epoch: int,
    budget: float = BUDGET_SECONDS,
) -> dict[str, Any]:
    """The requested settings' estimate and a proposal that fits ``budget``: all ``available``
    examples for ``epochs`` when that fits; else as many epochs over all of them as fit (at least
    one); else one epoch over the largest cap that fits (0 in ``max_examples`` means all)."""

    def cost(n: int, e: int) -> float:
        return estimate_seconds(probe, examples=n, epochs=e, scored_per_epoch=scored_per_epoch)

    if cost(available, epochs) <= budget:
        e, cap = epochs, 0
    elif cost(available, 1) <= budget:
        e, cap = max(1, min(epochs, int(budget // cost(available, 1)))), 0
    else:
        e = 1
        room = budget - probe.load_seconds - scored_per_epoch * probe.eval_seconds_per_example
        cap = _round_down(max(0, int(room / probe.seconds_per_example)))
    n = cap or available
    return {
        "epochs": e,
        "max_examples": cap,
        "examples": n,
        "estimate_seconds": round(cost(n, e), 3),
        "budget_seconds": budget,
    }
