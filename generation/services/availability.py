"""What can run: one answer per generator, for a project's task, the settings and the run's
generator options. The run form (which generators it offers, and why not the others), the API
(``GET /api/v1/generation/generators/?project=ID`` and the 400 of a run that cannot run) and the
``generate`` command (``--list-generators``, and its refusal) all ask :func:`availability`, so
the three never disagree.

A generator that prompts a language model (``llm-prompt``, ``concept-constrained``) can run
when the backend its options resolve to (:func:`generation.services.llm.resolve_backend`) has a
model: a model server (``COUNTERPART_LLM_BASE_URL``), a local path (``COUNTERPART_CAUSAL_LM_PATH``
/ ``COUNTERPART_SEQ2SEQ_PATH`` or the ``model_path`` option), or the bundled SmolLM2
(``COUNTERPART_BUNDLED_LM`` on and its package installed)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from generation.ml import registry
from generation.services.llm import PROMPTING, backend_problem, bundled_available, resolve_backend


@dataclass(frozen=True)
class Availability:
    name: str
    description: str
    available: bool
    reason: str  # why not, a sentence ("" when it can run)
    backend: str  # the language model backend it would use ("" for generators that prompt none)

    def as_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "available": self.available,
            "reason": self.reason,
            "backend": self.backend,
        }


def _settings() -> dict[str, object]:
    return {k.lower(): v for k, v in settings.COUNTERPART.items()}


def availability(name: str, task: str, options: Mapping[str, Any] | None = None) -> Availability:
    """Whether generator ``name`` can produce candidates for a ``task`` project with the
    settings and these generator options, and if not, why."""
    options = dict(options or {})
    if not registry.is_registered(name):
        return Availability(name, "", False, f"unknown generator; choose one of {', '.join(registry.names())}", "")
    entry = registry.entry(name)
    if name not in PROMPTING:
        ok, reason = registry.can_run(name, task, _settings(), options)
        return Availability(name, entry.description, ok, reason, "")
    if entry.tasks is not None and task not in entry.tasks:
        return Availability(
            name, entry.description, False, f"not for {task} projects (only {', '.join(entry.tasks)})", ""
        )
    backend = resolve_backend(name, options)
    problem = backend_problem(name, options)
    if not problem and backend == "bundled" and not bundled_available():
        problem = (
            "no language model: the bundled SmolLM2 is "
            + ("off (COUNTERPART_BUNDLED_LM)" if not settings.COUNTERPART["BUNDLED_LM"] else "not installed")
            + "; set COUNTERPART_CAUSAL_LM_PATH"
            + (", COUNTERPART_LLM_BASE_URL" if name == "llm-prompt" else "")
            + " or give the model_path option"
        )
    return Availability(name, entry.description, not problem, problem, backend)


def all_availability(task: str, options: Mapping[str, Any] | None = None) -> list[Availability]:
    """Every registered generator's :func:`availability`, by name."""
    return [availability(name, task, options) for name in registry.names()]
