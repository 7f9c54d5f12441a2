"""A sentence rewriter learnt from CAD's human revisions (issue 31: a generator that writes).

The word flip of a whole review swaps the verdict words a lexicon finds; readers rejected it on
reviews of several sentences (0.09 valid), because a person turns a sentence around with words a
swap does not know ("It is a shame it did not get a major release" -> "It is a good thing …").
Kaushik et al.'s annotators did exactly that, sentence by sentence, for 1,707 IMDb reviews: CAD
sentiment **train** holds 8,232 sentences an annotator rewrote to carry the other label, each
beside its original. This module teaches the bundled SmolLM2-135M-Instruct that edit, with a
low-rank adapter (LoRA, Hu et al. 2021) on every linear layer, small enough to ship
(``rewriter_model/``, a few MB) and trained on two CPU cores by ``python manage.py
train_rewriter``. NeuroCounterfactuals and AutoCAD fine-tune an LM to write counterfactuals; this
is that, at the size the machine allows.

No Django; torch and transformers are imported lazily. :func:`cad_sentence_pairs` reads the
pairs, :func:`train` fits an adapter, :class:`Rewriter` loads base + adapter (merged into the
weights) and rewrites a batch of sentences toward a label.
"""

from __future__ import annotations

import difflib
import json
import math
import os
import random
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from generation.ml.base import Original, by_label_in_turn

if TYPE_CHECKING:  # pragma: no cover
    import torch

MODEL_DIR = Path(__file__).parent / "rewriter_model"
REVIEW_MODEL_DIR = Path(__file__).parent / "review_writer_model"  # the whole-review writer
UNITS = ("sentence", "review")
ADAPTER_FILE = "adapter.pt"
META_FILE = "meta.json"
# the linear layers of a llama block that get an adapter
TARGETS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
LABELS = ("positive", "negative")


def prompt(text: str, source: str, target: str, unit: str = "sentence") -> str:
    """What the model reads before it writes the rewrite of a sentence or of a whole review (no
    chat template: the adapter learns this one format)."""
    head = "Review sentence" if unit == "sentence" else "Review"
    return f"{head} ({source}): {text.strip()}\nRewritten ({target}):"


def _say(message: str) -> None:
    print(message, flush=True)


# --- data --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RevisionPair:
    """A sentence (or, for the whole-review writer, a review) beside the CAD revision of it that
    carries the other label."""

    source: str  # the label of the review the original stands in
    original: str
    revised: str


def cad_sentence_pairs(
    path: str | os.PathLike[str],
    sentence_spans: Callable[[str], Sequence[tuple[int, int]]],
    *,
    min_ratio: float = 0.4,
    max_words: int = 60,
) -> list[RevisionPair]:
    """The sentences a CAD revision rewrote, each beside its rewrite: the revision's sentences
    aligned to the original's (one for one inside a changed run), kept when the two share at
    least ``min_ratio`` of their words (an edit, not a new sentence) and the original has at
    most ``max_words`` words. ``sentence_spans`` splits a review (``rules.tokens.sentence_spans``,
    passed in as the rules package reads this module)."""
    from generation.ml.opinion import cad_changed_runs

    out: list[RevisionPair] = []
    for l1, l2, op, old, new in cad_changed_runs(path, sentence_spans):
        if l1 == l2 or op != "replace" or len(old) != len(new):
            continue
        for a, b in zip(old, new, strict=True):
            words_a, words_b = a.split(), b.split()
            if not words_a or len(words_a) > max_words or a == b:
                continue
            if difflib.SequenceMatcher(a=words_a, b=words_b, autojunk=False).ratio() < min_ratio:
                continue
            out.append(RevisionPair(l1, a, b))
    return out


def cad_review_pairs(path: str | os.PathLike[str], *, max_words: int = 400) -> list[RevisionPair]:
    """Every whole CAD batch as one pair: the original review beside the revision an annotator
    wrote to carry the other label (the whole-review writer's data). Reviews of more than
    ``max_words`` words are left out (the longest CAD review has 347)."""
    from generation.ml.opinion import cad_batches

    out: list[RevisionPair] = []
    for pair in cad_batches(path):
        if len(pair) != 2:
            continue
        (l1, t1), (l2, t2) = pair
        if l1 == l2 or not t1.split() or not t2.split() or len(t1.split()) > max_words or t1 == t2:
            continue
        out.append(RevisionPair(l1, t1, t2))
    return out


def seeded_slice(pairs: Sequence[RevisionPair], seed: int, *, skip: int = 0, limit: int = 0) -> list[RevisionPair]:
    """Pairs ``skip`` to ``skip + limit`` (0: to the end) of one seeded random order of all of
    them: a run on ``limit=K`` and a later one on ``skip=K`` never share a pair."""
    order = random.Random(seed).sample(list(pairs), len(pairs))
    return order[skip : skip + limit if limit else None]


def sentence_originals(pairs: Sequence[RevisionPair], prefix: str = "cad-dev-sentence") -> list[Original]:
    """Each pair's original sentence as a one-sentence sentiment original with its review's
    label (id ``{prefix}-{i}``), taken in turn from each label, as the bench takes reviews."""
    return by_label_in_turn(
        Original(f"{prefix}-{i}", {"text": p.original}, p.source, ("negative", "positive"), "sentiment")
        for i, p in enumerate(pairs)
    )


# --- the adapter -------------------------------------------------------------------------------


def _lora_linear(base: Any, rank: int, alpha: float) -> Any:
    import torch

    class LoraLinear(torch.nn.Module):
        """``base(x) + (alpha / rank) * x A^T B^T`` with ``B`` zero at the start."""

        def __init__(self) -> None:
            super().__init__()
            self.base = base
            self.scale = alpha / rank
            self.lora_a = torch.nn.Parameter(torch.randn(rank, base.in_features) / math.sqrt(base.in_features))
            self.lora_b = torch.nn.Parameter(torch.zeros(base.out_features, rank))

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            out: torch.Tensor = self.base(x) + (x @ self.lora_a.T) @ self.lora_b.T * self.scale
            return out

    return LoraLinear()


def _blocks(model: Any) -> Iterator[tuple[int, str, Any, str]]:
    """``(layer index, 'self_attn'|'mlp', parent module, linear name)`` of every adapted linear."""
    for i, layer in enumerate(model.model.layers):
        for part in ("self_attn", "mlp"):
            parent = getattr(layer, part)
            for name in TARGETS:
                if hasattr(parent, name):
                    yield i, part, parent, name


def add_adapter(model: Any, rank: int, alpha: float) -> dict[str, Any]:
    """Wrap every target linear of ``model`` in an adapter; the base weights are frozen. Returns
    the adapter's parameters by name (``"3.mlp.up_proj.lora_a"``)."""
    for p in model.parameters():
        p.requires_grad_(False)
    params: dict[str, Any] = {}
    for i, part, parent, name in _blocks(model):
        wrapped = _lora_linear(getattr(parent, name), rank, alpha)
        setattr(parent, name, wrapped)
        params[f"{i}.{part}.{name}.lora_a"] = wrapped.lora_a
        params[f"{i}.{part}.{name}.lora_b"] = wrapped.lora_b
    return params


def merge_adapter(model: Any, state: dict[str, Any], rank: int, alpha: float) -> int:
    """Add a saved adapter into ``model``'s own weights (``W += alpha/rank * B A``), so that the
    rewriter runs at the base model's speed. Returns the number of linears changed; a state that
    names a layer the model lacks raises ``ValueError``."""
    import torch

    scale = alpha / rank
    done = 0
    with torch.no_grad():
        for i, part, parent, name in _blocks(model):
            key = f"{i}.{part}.{name}"
            if f"{key}.lora_a" not in state:
                continue
            a, b = state[f"{key}.lora_a"].float(), state[f"{key}.lora_b"].float()
            weight = getattr(parent, name).weight
            if tuple(weight.shape) != (b.shape[0], a.shape[1]):
                raise ValueError(
                    f"adapter {key} is {tuple(b.shape)}x{tuple(a.shape)}, the model's is {tuple(weight.shape)}"
                )
            weight += scale * (b @ a)
            done += 1
    expected = {k.rsplit(".", 1)[0] for k in state}
    if done != len(expected):
        raise ValueError(f"the adapter names {len(expected)} layers, the model has {done} of them")
    return done


# --- training ----------------------------------------------------------------------------------


def _encode(tokenizer: Any, pair: RevisionPair, unit: str = "sentence") -> tuple[list[int], list[int]]:
    target = "negative" if pair.source == "positive" else "positive"
    head = tokenizer(prompt(pair.original, pair.source, target, unit), add_special_tokens=False)["input_ids"]
    tail = tokenizer(" " + pair.revised.strip(), add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    return head + tail, [-100] * len(head) + tail


def train(
    pairs: Sequence[RevisionPair],
    base_path: str,
    out_dir: str | os.PathLike[str],
    *,
    rank: int = 8,
    alpha: float = 16.0,
    lr: float = 5e-4,
    batch_size: int = 16,
    epochs: float = 1.0,
    max_minutes: float = 0.0,
    seed: int = 0,
    threads: int = 0,
    unit: str = "sentence",
    init_dir: str | os.PathLike[str] | None = None,
    progress: Callable[[str], None] = _say,
) -> dict[str, Any]:
    """Fit an adapter on ``pairs`` of ``unit`` (sentences or whole reviews; the loss on the
    rewrite only), in batches of like length, for ``epochs`` passes or until ``max_minutes`` (0:
    no limit) have gone, with a linear decay of the learning rate; write ``adapter.pt`` (fp16)
    and ``meta.json`` to ``out_dir`` and return the meta. ``init_dir``: start from the adapter
    there (the whole-review writer starts from the sentence rewriter) rather than from zero."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not pairs:
        raise ValueError("no sentence pairs to train on")
    if unit not in UNITS:
        raise ValueError(f"unit is one of {UNITS}, not {unit!r}")
    if threads:
        torch.set_num_threads(threads)
    torch.manual_seed(seed)
    rng = random.Random(seed)
    tokenizer = AutoTokenizer.from_pretrained(base_path)
    model = AutoModelForCausalLM.from_pretrained(base_path, dtype=torch.float32)
    params = add_adapter(model, rank, alpha)
    start = None
    if init_dir is not None:
        start = read_meta(init_dir)
        if start is None:
            raise ValueError(f"no adapter in {init_dir} to start from")
        if int(start["rank"]) != rank or start.get("architecture") != architecture(base_path):
            raise ValueError(f"the adapter in {init_dir} has another rank or base model")
        state = torch.load(Path(init_dir) / ADAPTER_FILE, map_location="cpu", weights_only=True)
        if set(state) != set(params):
            raise ValueError(f"the adapter in {init_dir} names other layers than the model's")
        with torch.no_grad():
            for k, v in params.items():
                v.copy_(state[k].float())
    encoded = [_encode(tokenizer, p, unit) for p in pairs]
    order = sorted(range(len(encoded)), key=lambda i: (len(encoded[i][0]), rng.random()))
    batches = [order[k : k + batch_size] for k in range(0, len(order), batch_size)]
    steps = max(1, int(len(batches) * epochs))
    schedule: list[list[int]] = []
    while len(schedule) < steps:  # each pass in its own shuffled order
        schedule += rng.sample(batches, len(batches))
    optimizer = torch.optim.AdamW(list(params.values()), lr=lr, weight_decay=0.0)
    pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
    model.train()
    t0 = time.perf_counter()
    done, losses = 0, []
    for step in range(steps):
        batch = schedule[step]
        width = max(len(encoded[i][0]) for i in batch)
        ids = torch.full((len(batch), width), pad, dtype=torch.long)
        labels = torch.full((len(batch), width), -100, dtype=torch.long)
        mask = torch.zeros((len(batch), width), dtype=torch.long)
        for row, i in enumerate(batch):
            x, y = encoded[i]
            ids[row, : len(x)] = torch.tensor(x)
            labels[row, : len(y)] = torch.tensor(y)
            mask[row, : len(x)] = 1
        for group in optimizer.param_groups:
            group["lr"] = lr * (1 - step / steps)
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad()
        losses.append(float(loss.detach()))
        done = step + 1
        minutes = (time.perf_counter() - t0) / 60
        if done % 20 == 0 or done == steps:
            progress(f"step {done}/{steps} loss {sum(losses[-20:]) / len(losses[-20:]):.3f} ({minutes:.1f} min)")
        if max_minutes and minutes >= max_minutes:
            progress(f"stopping at step {done}/{steps}: {max_minutes} minutes")
            break
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    state = {k: v.detach().to(torch.float16) for k, v in params.items()}
    tmp = out / (ADAPTER_FILE + ".tmp")
    torch.save(state, tmp)
    tmp.replace(out / ADAPTER_FILE)
    meta = {
        "base": Path(base_path).name,
        "architecture": architecture(base_path),
        "unit": unit,
        "started_from": None if start is None else f"{Path(str(init_dir)).name} ({start.get('pairs')} pairs)",
        "rank": rank,
        "alpha": alpha,
        "lr": lr,
        "batch_size": batch_size,
        "pairs": len(pairs),
        "steps": done,
        "planned_steps": steps,
        "seed": seed,
        "first_loss": round(sum(losses[:20]) / len(losses[:20]), 4),
        "last_loss": round(sum(losses[-20:]) / len(losses[-20:]), 4),
        "minutes": round((time.perf_counter() - t0) / 60, 1),
    }
    (out / META_FILE).write_text(json.dumps(meta, indent=2) + "\n")
    return meta


# --- rewriting ---------------------------------------------------------------------------------


ARCHITECTURE_KEYS = ("model_type", "hidden_size", "intermediate_size", "num_hidden_layers", "vocab_size")


def architecture(base_path: str | os.PathLike[str]) -> dict[str, Any]:
    """What an adapter must match in a base model: these fields of its ``config.json`` (empty
    when there is none)."""
    path = Path(base_path) / "config.json"
    try:
        config = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return {k: config.get(k) for k in ARCHITECTURE_KEYS}


def fits(base_path: str | os.PathLike[str], model_dir: str | os.PathLike[str] = MODEL_DIR) -> bool:
    """Whether the adapter in ``model_dir`` was trained on a model of ``base_path``'s shape (the
    shipped one: SmolLM2-135M; a run configured with another causal LM gets no written flip)."""
    meta = read_meta(model_dir) or {}
    return bool(meta.get("architecture")) and meta["architecture"] == architecture(base_path)


def read_meta(model_dir: str | os.PathLike[str] = MODEL_DIR) -> dict[str, Any] | None:
    """The adapter's meta, or None when ``model_dir`` holds no adapter."""
    folder = Path(model_dir)
    if not (folder / ADAPTER_FILE).is_file() or not (folder / META_FILE).is_file():
        return None
    meta: dict[str, Any] = json.loads((folder / META_FILE).read_text())
    return meta


class Rewriter:
    """The base LM with the adapter merged in; :meth:`rewrite` turns sentences toward a label
    (greedy decoding, a batch at a time)."""

    def __init__(self, base_path: str, model_dir: str | os.PathLike[str] = MODEL_DIR, *, threads: int = 0) -> None:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        meta = read_meta(model_dir)
        if meta is None:
            raise FileNotFoundError(f"no rewriter adapter in {model_dir} (python manage.py train_rewriter)")
        if threads:
            torch.set_num_threads(threads)
        self.meta = meta
        self.unit = str(meta.get("unit", "sentence"))
        self.tokenizer: Any = AutoTokenizer.from_pretrained(base_path)
        self.tokenizer.padding_side = "left"
        if self.tokenizer.pad_token_id is None:
            self.tokenizer.pad_token = self.tokenizer.eos_token
        self.model: Any = AutoModelForCausalLM.from_pretrained(base_path, dtype=torch.float32)
        state = torch.load(Path(model_dir) / ADAPTER_FILE, map_location="cpu", weights_only=True)
        merge_adapter(self.model, state, int(meta["rank"]), float(meta["alpha"]))
        self.model.eval()

    def rewrite(self, sentences: Sequence[str], source: str, target: str, *, batch_size: int = 0) -> list[str]:
        """Each sentence (a review's, labelled ``source``; or each whole review, for a writer
        of reviews) rewritten to carry ``target``; ``""`` where the model wrote nothing.
        ``batch_size`` 0: 16 sentences at a time (reviews: one at a time)."""
        import torch

        if source not in LABELS or target not in LABELS:
            raise ValueError(f"labels are {LABELS}, got {source!r} -> {target!r}")
        review = self.unit == "review"
        # a review is written one at a time with prompt-lookup decoding: the written review
        # copies most of its original, and drafts taken from the prompt are checked in one
        # forward pass (the same greedy text, 2-5 times faster on CPU)
        batch_size = 1 if review else (batch_size or 16)
        out: list[str] = []
        for k in range(0, len(sentences), batch_size):
            chunk = list(sentences[k : k + batch_size])
            enc = self.tokenizer(
                [prompt(s, source, target, self.unit) for s in chunk],
                return_tensors="pt",
                padding=True,
                add_special_tokens=False,
            )
            longest = max(len(self.tokenizer(s, add_special_tokens=False)["input_ids"]) for s in chunk)
            with torch.no_grad():
                gen = self.model.generate(
                    **enc,
                    max_new_tokens=int(longest * (1.25 if review else 1.5)) + 8,
                    do_sample=False,
                    pad_token_id=self.tokenizer.pad_token_id,
                    eos_token_id=self.tokenizer.eos_token_id,
                    **({"prompt_lookup_num_tokens": 10} if review else {}),
                )
            for row in gen[:, enc["input_ids"].shape[1] :]:
                text = str(self.tokenizer.decode(row, skip_special_tokens=True))
                out.append(text.strip() if review else text.split("\n", 1)[0].strip())
        return out
