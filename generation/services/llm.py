"""Which language model answers a prompting run: the bundled SmolLM2, a local path, or an
OpenAI-compatible model server (``COUNTERPART_LLM_BASE_URL``). Settings are read here and
passed to the ML code (:mod:`generation.ml.endpoint`), which knows no Django.

The API key (``settings.LLM_API_KEY``, from ``COUNTERPART_LLM_API_KEY``) is put only into the
:class:`~generation.ml.endpoint.EndpointConfig` handed to the generator: it is never in a run's
options, its metrics, a page or a log line."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from generation.ml.endpoint import BACKENDS, EndpointConfig

# generators that prompt a language model and take the ``backend`` option
PROMPTING = ("llm-prompt", "concept-constrained")
# those that can use a plain endpoint (concept-constrained steers decoding token by token)
ENDPOINT_CAPABLE = ("llm-prompt",)
ENDPOINT_REFUSED = (
    "concept-constrained steers decoding token by token (it adds label and concept scores to the "
    "model's next-token logits), which an OpenAI-compatible endpoint does not expose: it runs only "
    "on a local model (backend bundled or local)"
)
# options only the service sets (never taken from a user: the key must not reach the database)
RESERVED_OPTIONS = ("endpoint", "llm_api_key")


def _cfg(key: str) -> Any:
    counterpart: Mapping[str, Any] = settings.COUNTERPART
    return counterpart[key]


def bundled_available() -> bool:
    """The bundled SmolLM2 can answer: ``COUNTERPART_BUNDLED_LM`` is on and its package is
    installed (or its converted folder is already in ``MODEL_DIR``)."""
    if not _cfg("BUNDLED_LM"):
        return False
    from generation.ml import bundled_lm

    return bundled_lm.is_converted(_cfg("MODEL_DIR")) or bundled_lm.gguf_path() is not None


def endpoint_configured() -> bool:
    return bool(str(_cfg("LLM_BASE_URL")).strip())


def endpoint_config() -> EndpointConfig:
    return EndpointConfig(
        base_url=str(_cfg("LLM_BASE_URL")),
        model=str(_cfg("LLM_MODEL")),
        api_key=str(getattr(settings, "LLM_API_KEY", "") or ""),
        concurrency=max(1, int(_cfg("LLM_CONCURRENCY"))),
        timeout=float(_cfg("LLM_TIMEOUT")),
        max_retries=max(0, int(_cfg("LLM_MAX_RETRIES"))),
        cache_path=str(_cfg("LLM_CACHE") or ""),
    )


def resolve_backend(generator: str, options: Mapping[str, Any]) -> str:
    """The backend a run of ``generator`` with these generator options uses: ``endpoint``,
    ``bundled`` or ``local`` ("auto": the endpoint when one is configured and the generator can
    use it, else a local path when one is set, else the bundled model)."""
    chosen = str(options.get("backend") or "auto")
    if chosen != "auto":
        return chosen
    if generator in ENDPOINT_CAPABLE and endpoint_configured():
        return "endpoint"
    if options.get("model_path") or _cfg("CAUSAL_LM_PATH") or _cfg("SEQ2SEQ_PATH"):
        return "local"
    return "bundled"


def backend_problem(generator: str, options: Mapping[str, Any]) -> str:
    """Why these options cannot run (a sentence for the ``backend`` field), or ``""``."""
    reserved = sorted(set(options) & set(RESERVED_OPTIONS))
    if reserved:
        return (
            f"option(s) {', '.join(reserved)} cannot be given: the model server and its key come from "
            "COUNTERPART_LLM_BASE_URL, COUNTERPART_LLM_MODEL and COUNTERPART_LLM_API_KEY"
        )
    chosen = options.get("backend")
    if chosen in (None, ""):
        return ""
    if generator not in PROMPTING:
        return f"{generator} takes no backend: it does not prompt a language model"
    if chosen not in BACKENDS:
        return f"backend must be one of {', '.join(BACKENDS)}"
    if chosen == "endpoint":
        if generator not in ENDPOINT_CAPABLE:
            return ENDPOINT_REFUSED
        if not endpoint_configured():
            return "no model server configured: set COUNTERPART_LLM_BASE_URL and COUNTERPART_LLM_MODEL"
    if chosen == "local" and not (options.get("model_path") or _cfg("CAUSAL_LM_PATH") or _cfg("SEQ2SEQ_PATH")):
        return "no local model path: set COUNTERPART_CAUSAL_LM_PATH or give the model_path option"
    return ""


@dataclass(frozen=True)
class BackendChoice:
    value: str
    label: str
    model: str  # what answers, in words ("" when it cannot)
    available: bool


def backend_choices() -> list[BackendChoice]:
    """The run form's backend choices, each saying which model answers."""
    bundled = "SmolLM2-135M-Instruct (bundled, in the worker)" if bundled_available() else ""
    local = str(_cfg("CAUSAL_LM_PATH") or _cfg("SEQ2SEQ_PATH") or "")
    served = ""
    if endpoint_configured():
        cfg = endpoint_config()
        served = f"{cfg.model or '(COUNTERPART_LLM_MODEL not set)'} at {cfg.root}"
    auto = (
        f"endpoint: {served}"
        if served
        else (f"local path: {local}" if local else (f"bundled: {bundled}" if bundled else "no language model"))
    )
    return [
        BackendChoice("auto", f"automatic: {auto}", auto, True),
        BackendChoice(
            "bundled",
            f"bundled: {bundled or ('not installed' if _cfg('BUNDLED_LM') else 'off (COUNTERPART_BUNDLED_LM)')}",
            bundled,
            bool(bundled),
        ),
        BackendChoice(
            "local",
            f"local path: {local or 'none set (COUNTERPART_CAUSAL_LM_PATH or the model_path option)'}",
            local,
            True,
        ),
        BackendChoice(
            "endpoint",
            f"endpoint: {served or 'none set (COUNTERPART_LLM_BASE_URL)'} — llm-prompt only",
            served,
            bool(served),
        ),
    ]
