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

from generation.ml.base import GeneratorConfigError

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
