"""Lazy loaders for Hugging Face models stored in a local directory. No Django, no hub.

Every loader takes a directory path (what ``save_pretrained`` wrote), loads the tokenizer
and model with ``local_files_only=True`` and returns a :class:`LoadedModel`. Problems a user
can cause (an empty setting, a path that does not exist, a directory that holds no model of
the wanted kind) raise :class:`~generation.ml.base.GeneratorConfigError` with a message that
names the path. torch and transformers are imported inside the functions, so importing this
module is cheap. Loaded models are cached per (kind, path, device) within a process.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from generation.ml.base import GeneratorConfigError, StopHook, stop_point

Kind = Literal["masked-lm", "seq2seq", "causal", "classifier"]

_AUTO_CLASSES: dict[str, str] = {
    "masked-lm": "AutoModelForMaskedLM",
    "seq2seq": "AutoModelForSeq2SeqLM",
    "causal": "AutoModelForCausalLM",
    "classifier": "AutoModelForSequenceClassification",
}

_cache: dict[tuple[str, str, str], LoadedModel] = {}
_lock = threading.Lock()


@dataclass(frozen=True)
class LoadedModel:
    # Any: transformers types model.to(device) wrongly and its Auto* loaders and tokenizer
    # calls as Any
    model: Any  # a transformers PreTrainedModel in eval mode
    tokenizer: Any  # a transformers tokenizer
    kind: str  # one of Kind
    path: str
    device: str = "cpu"

    @property
    def is_encoder_decoder(self) -> bool:
        return bool(getattr(self.model.config, "is_encoder_decoder", False))


def quiet() -> None:
    """Offline, quiet transformers (no hub, no progress bars)."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    except Exception:  # noqa: BLE001 - cosmetics only
        pass


def check_model_dir(path: str | os.PathLike[str] | None, what: str) -> Path:
    """The directory as a Path, or GeneratorConfigError when the setting is empty or the
    directory does not hold a saved model (no ``config.json``)."""
    if path is None or not str(path).strip():
        raise GeneratorConfigError(f"no {what} configured (empty model path)")
    p = Path(str(path)).expanduser()
    if not p.is_dir():
        raise GeneratorConfigError(f"{what} path does not exist or is not a directory: {p}")
    if not (p / "config.json").is_file():
        raise GeneratorConfigError(f"{what} path holds no saved model (config.json missing): {p}")
    return p


def model_type(path: str | os.PathLike[str]) -> tuple[str, bool]:
    """(``model_type``, ``is_encoder_decoder``) read from the directory's config."""
    p = check_model_dir(path, "model")
    quiet()
    try:
        from transformers import AutoConfig

        cfg = AutoConfig.from_pretrained(str(p), local_files_only=True)
    except Exception as exc:  # any load failure is a configuration problem
        raise GeneratorConfigError(f"cannot read the model config at {p}: {exc}") from exc
    return str(getattr(cfg, "model_type", "")), bool(getattr(cfg, "is_encoder_decoder", False))


def load(path: str | os.PathLike[str] | None, kind: Kind, device: str = "cpu", what: str | None = None) -> LoadedModel:
    """Load tokenizer + model of ``kind`` from a local directory (cached)."""
    label = what or f"{kind} model"
    p = check_model_dir(path, label)
    key = (kind, str(p.resolve()), device)
    with _lock:
        if key in _cache:
            return _cache[key]
        quiet()
        try:
            import transformers
            from transformers import AutoTokenizer
        except ImportError as exc:  # pragma: no cover - transformers is a hard requirement
            raise GeneratorConfigError(f"transformers is not installed: {exc}") from exc
        auto = getattr(transformers, _AUTO_CLASSES[kind])
        try:
            tokenizer = AutoTokenizer.from_pretrained(str(p), local_files_only=True)
        except Exception as exc:
            raise GeneratorConfigError(f"cannot load a tokenizer for the {label} at {p}: {exc}") from exc
        try:
            model = auto.from_pretrained(str(p), local_files_only=True)
        except Exception as exc:
            raise GeneratorConfigError(f"cannot load the {label} at {p} as {_AUTO_CLASSES[kind]}: {exc}") from exc
        try:
            model.to(device)
        except Exception as exc:  # e.g. device "cuda" on a CPU-only machine
            raise GeneratorConfigError(f"cannot move the {label} to device {device!r}: {exc}") from exc
        model.eval()
        if tokenizer.pad_token_id is None:
            if tokenizer.eos_token is not None:
                tokenizer.pad_token = tokenizer.eos_token
            elif tokenizer.unk_token is not None:
                tokenizer.pad_token = tokenizer.unk_token
        loaded = LoadedModel(model=model, tokenizer=tokenizer, kind=kind, path=str(p), device=device)
        _cache[key] = loaded
        return loaded


def load_masked_lm(path: str | None, device: str = "cpu") -> LoadedModel:
    return load(path, "masked-lm", device, "masked language model")


def load_seq2seq(path: str | None, device: str = "cpu") -> LoadedModel:
    return load(path, "seq2seq", device, "seq2seq model")


def load_causal_lm(path: str | None, device: str = "cpu") -> LoadedModel:
    return load(path, "causal", device, "causal language model")


def load_sequence_classifier(path: str | None, device: str = "cpu") -> LoadedModel:
    return load(path, "classifier", device, "sequence classifier")


def load_generator_lm(path: str | None, device: str = "cpu") -> LoadedModel:
    """A text-generating model of either architecture: seq2seq when the saved config is an
    encoder-decoder, causal otherwise."""
    _, enc_dec = model_type(check_model_dir(path, "language model"))
    return load_seq2seq(path, device) if enc_dec else load_causal_lm(path, device)


def load_infiller(path: str | None, device: str = "cpu") -> LoadedModel:
    """An infilling model: seq2seq (T5-style sentinels) for encoder-decoders, masked LM otherwise."""
    _, enc_dec = model_type(check_model_dir(path, "infilling model"))
    return load_seq2seq(path, device) if enc_dec else load_masked_lm(path, device)


def clear_cache() -> None:
    with _lock:
        _cache.clear()


_newlines: dict[int, frozenset[int]] = {}


def newline_ids(tokenizer: Any) -> frozenset[int]:
    """Ids of the tokens whose text holds a line break (worked out once per tokenizer)."""
    key = id(tokenizer)
    if key not in _newlines:
        texts = tokenizer.batch_decode([[i] for i in range(len(tokenizer))])
        _newlines[key] = frozenset(i for i, t in enumerate(texts) if "\n" in t)
    return _newlines[key]


def stop_criteria(should_stop: StopHook | None) -> Any:
    """``stopping_criteria`` for ``model.generate`` that ends generation at the next token
    once ``should_stop`` says the run was cancelled (the caller's next stop point then
    raises); None without a hook."""
    if should_stop is None:
        return None
    import torch
    from transformers import StoppingCriteria, StoppingCriteriaList

    hook = should_stop

    class _Cancelled(StoppingCriteria):
        def __call__(self, input_ids: Any, scores: Any, **kwargs: Any) -> Any:
            return torch.full((input_ids.shape[0],), bool(hook()), dtype=torch.bool, device=input_ids.device)

    return StoppingCriteriaList([_Cancelled()])


def sample_continuations(
    model: Any,
    input_ids: Any,
    attention_mask: Any,
    *,
    n: int,
    max_new_tokens: int,
    temperature: float = 0.8,
    top_p: float = 0.9,
    stop_ids: frozenset[int] = frozenset(),
    pad_id: int = 0,
    seed: int = 0,
    should_stop: StopHook | None = None,
) -> list[list[int]]:
    """``n`` sampled continuations of each left-padded prompt of a decoder-only LM, as token ids
    (row ``i * n + j`` is sample ``j`` of prompt ``i``; a sample ends at its first stop id, which
    it keeps). ``temperature`` 0 decodes greedily.

    What ``generate(num_return_sequences=n)`` computes, without its cost on a CPU: ``generate``
    copies every prompt ``n`` times before running it, so a 170-token chat prompt is run ``n``
    times; here each prompt is run once and its key/value cache copied for the samples. Decoding
    stops when every sample has hit a stop id. ``should_stop`` is checked before each token
    (:func:`generation.ml.base.stop_point`: a cancelled run stops within one decoding step)."""
    import torch

    b = int(input_ids.shape[0])
    gen = torch.Generator(device="cpu").manual_seed(seed)
    mask = attention_mask.long()
    positions = (mask.cumsum(-1) - 1).clamp(min=0)
    with torch.inference_mode():
        out = model(input_ids=input_ids, attention_mask=mask, position_ids=positions, use_cache=True)
        cache = out.past_key_values
        if n > 1:
            cache.batch_repeat_interleave(n)
        # sampling runs on the CPU (its seeded generator lives there), whatever the model's device
        logits = out.logits[:, -1, :].float().cpu().repeat_interleave(n, dim=0)
        mask = mask.cpu().repeat_interleave(n, dim=0)
        nxt_pos = mask.sum(-1, keepdim=True)
        done = torch.zeros(b * n, dtype=torch.bool)
        stop = torch.tensor(sorted(stop_ids), dtype=torch.long)
        steps: list[Any] = []
        for step in range(max_new_tokens):
            stop_point(should_stop)
            if temperature <= 0:
                tok = logits.argmax(dim=-1, keepdim=True)
            else:
                probs = torch.softmax(logits / temperature, dim=-1)
                sorted_p, order = probs.sort(dim=-1, descending=True)
                # top-p: the smallest head of the sorted distribution holding top_p of the mass
                drop = sorted_p.cumsum(dim=-1) - sorted_p > top_p
                sorted_p = sorted_p.masked_fill(drop, 0.0)
                tok = order.gather(-1, torch.multinomial(sorted_p, 1, generator=gen))
            tok = tok.cpu().masked_fill(done.unsqueeze(-1), pad_id)
            steps.append(tok)
            done |= torch.isin(tok.squeeze(-1), stop) if len(stop) else torch.zeros_like(done)
            if bool(done.all()) or step == max_new_tokens - 1:
                break
            mask = torch.cat([mask, torch.ones((b * n, 1), dtype=mask.dtype)], dim=-1)
            out = model(
                input_ids=tok.to(input_ids.device),
                attention_mask=mask.to(input_ids.device),
                position_ids=nxt_pos.to(input_ids.device),
                past_key_values=cache,
                use_cache=True,
            )
            nxt_pos = nxt_pos + 1
            logits = out.logits[:, -1, :].float().cpu()
    seqs = torch.cat(steps, dim=-1).tolist() if steps else [[] for _ in range(b * n)]
    res: list[list[int]] = []
    for row in seqs:
        cut = next((k + 1 for k, t in enumerate(row) if t in stop_ids), len(row))
        res.append(row[:cut])
    return res
