"""Generator name -> factory, with option checking. No Django imports.

Every built-in generator lives in its own module and is imported only when a run asks
for it, so a generator whose module (or model, or optional dependency) is missing fails
that generator alone — with a :class:`GeneratorConfigError` at the start of the run —
and never the others.

A built-in generator module exposes a class whose ``name`` attribute is the registered
name and which has a ``generate`` method (``generation.ml.base.Generator``). The registry
builds it with keyword arguments taken from the run's generator options, filling
model-path style parameters (``mlm_path``, ``causal_lm_path``, ``device``…) from the
``context`` the caller passes (the service passes ``settings.COUNTERPART``, lower-cased).
An option the constructor does not take is refused by name before anything is built.

Tests (and plug-ins) add their own generators with :func:`register`.
"""

from __future__ import annotations

import importlib
import inspect
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from generation.ml.base import Generator, GeneratorConfigError

Factory = Callable[..., Generator]


TEXT_TASKS = ("sentiment", "nli", "paraphrase", "boolean-qa")


@dataclass(frozen=True)
class GeneratorEntry:
    name: str
    module: str = ""  # dotted path imported lazily (built-ins)
    factory: Factory | None = None  # a callable taking keyword options (plug-ins, tests)
    description: str = ""
    tasks: tuple[str, ...] | None = None  # the tasks it makes sense for; None: every task
    # Settings (lower-case COUNTERPART keys) of which at least one must be set, or an option
    # of the same meaning given with the run (``needs_option``), for it to produce anything.
    needs_any: tuple[str, ...] = ()
    needs_option: tuple[str, ...] = ()

    def can_run(
        self, task: str, settings: Mapping[str, object], options: Mapping[str, object] | None = None
    ) -> tuple[bool, str]:
        """Whether a run on a ``task`` project with these settings can produce candidates,
        and if not, why (a sentence for the run form)."""
        if self.tasks is not None and task not in self.tasks:
            return False, f"not for {task} projects (only {', '.join(self.tasks)})"
        if self.needs_any:
            given = dict(options or {})
            if not any(settings.get(k) for k in self.needs_any) and not any(given.get(o) for o in self.needs_option):
                names = " or ".join(f"COUNTERPART_{k.upper()}" for k in self.needs_any)
                hint = f" (or the {' / '.join(self.needs_option)} option)" if self.needs_option else ""
                return False, f"no model configured: set {names}{hint}"
        return True, ""


_BUILTINS: tuple[GeneratorEntry, ...] = (
    GeneratorEntry(
        "rules", "generation.ml.rules", description="Control-code perturbations (WordNet, lexicons, POS tags); offline."
    ),
    GeneratorEntry(
        "rationale-infill",
        "generation.ml.rationale_infill",
        description="Mask the words the base classifier relies on, infill for each other label.",
        tasks=TEXT_TASKS,
    ),
    GeneratorEntry(
        "llm-prompt",
        "generation.ml.llm_prompt",
        description="Masked-span prompting of a language model (local, or a model server) with a teacher filter.",
        tasks=TEXT_TASKS,
        needs_any=("causal_lm_path", "seq2seq_path", "llm_base_url"),
        needs_option=("model_path",),
    ),
    GeneratorEntry(
        "concept-constrained",
        "generation.ml.concept_constrained",
        description="Label-steered decoding constrained to keep the original's concepts.",
        tasks=TEXT_TASKS,
        needs_any=("causal_lm_path", "seq2seq_path"),
        needs_option=("model_path", "steer_paths"),
    ),
    GeneratorEntry(
        "coco-cf",
        "generation.ml.captions",
        description="COCO-Counterfactuals: one noun of a caption replaced, MiniLM band, "
        "an image pair per caption pair when a diffusion model is configured.",
        tasks=("image-caption",),
    ),
)

_registry: dict[str, GeneratorEntry] = {e.name: e for e in _BUILTINS}


def register(name: str, *, factory: Factory | None = None, module: str = "", description: str = "") -> None:
    """Add (or replace) a generator. Give either ``factory`` or ``module``."""
    if bool(factory) == bool(module):
        raise ValueError("register() takes exactly one of factory= or module=")
    _registry[name] = GeneratorEntry(name=name, module=module, factory=factory, description=description)


def unregister(name: str) -> None:
    """Remove a generator added with :func:`register`; built-ins come back as they were."""
    _registry.pop(name, None)
    for entry in _BUILTINS:
        if entry.name == name:
            _registry[name] = entry


def can_run(
    name: str, task: str, settings: Mapping[str, object], options: Mapping[str, object] | None = None
) -> tuple[bool, str]:
    """``(True, "")`` when generator ``name`` can produce candidates for a ``task`` project
    with these settings (lower-case keys), else ``(False, reason)``."""
    try:
        return entry(name).can_run(task, settings, options)
    except GeneratorConfigError as exc:
        return False, str(exc)


def names() -> list[str]:
    return sorted(_registry)


def is_registered(name: str) -> bool:
    return name in _registry


def entry(name: str) -> GeneratorEntry:
    try:
        return _registry[name]
    except KeyError:
        raise GeneratorConfigError(f"unknown generator {name!r}; choose one of {', '.join(names())}") from None


def _load_factory(e: GeneratorEntry) -> Factory:
    if e.factory is not None:
        return e.factory
    try:
        mod = importlib.import_module(e.module)
    except ImportError as exc:  # the module, or one of its optional dependencies, is missing
        raise GeneratorConfigError(f"generator {e.name!r} is not available: {exc}") from exc
    for attr in vars(mod).values():
        if (
            inspect.isclass(attr)
            and getattr(attr, "name", None) == e.name
            and callable(getattr(attr, "generate", None))
            and (attr.__module__ == mod.__name__ or attr.__module__.startswith(mod.__name__ + "."))
        ):
            return attr
    raise GeneratorConfigError(f"generator {e.name!r}: module {e.module} defines no generator class named {e.name!r}")


def _parameters(factory: Factory) -> tuple[dict[str, inspect.Parameter], bool]:
    """Keyword parameters of the factory (its __init__ for a class) and whether it takes **kwargs."""
    try:
        sig = inspect.signature(factory)
    except (TypeError, ValueError):
        return {}, True
    params: dict[str, inspect.Parameter] = {}
    var_kw = False
    for p in sig.parameters.values():
        if p.kind is inspect.Parameter.VAR_KEYWORD:
            var_kw = True
        elif p.kind in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
            params[p.name] = p
    return params, var_kw


def options_for(name: str) -> dict[str, object]:
    """The options a generator takes, with their defaults (``None`` where required or unknown).
    Importing the generator's module is needed; a missing one gives ``{}``."""
    try:
        factory = _load_factory(entry(name))
    except GeneratorConfigError:
        return {}
    params, _ = _parameters(factory)
    return {k: (None if p.default is inspect.Parameter.empty else p.default) for k, p in params.items()}


def _unknown_options(
    name: str, params: Mapping[str, inspect.Parameter], var_kw: bool, options: Mapping[str, object]
) -> str:
    unknown = [] if var_kw else sorted(set(options) - set(params))
    if not unknown:
        return ""
    takes = ", ".join(sorted(params)) or "no options"
    return f"generator {name!r} does not take option(s) {', '.join(unknown)}; it takes: {takes}"


_BOOL_WORDS = ("1", "0", "true", "false", "yes", "no", "on", "off")


def _as_declared_bool(default: object, value: object) -> object:
    """``value`` as a bool where the option's default is one and ``value`` is one of
    :data:`_BOOL_WORDS`; anything else unchanged (the constructor checks it)."""
    if isinstance(default, bool) and isinstance(value, str) and value.strip().lower() in _BOOL_WORDS:
        return value.strip().lower() in ("1", "true", "yes", "on")
    return value


def _value_problem(option: str, default: object, value: object) -> str:
    """Why ``value`` cannot be option ``option`` whose default is ``default`` (its kind read
    from the default: a whole number, a number, true/false), or ``""``. Other options (no
    default, a text, a list) are the constructor's to check when the run starts."""
    if value is None or default is None or default is inspect.Parameter.empty:
        return ""
    if isinstance(default, bool):
        ok = isinstance(value, bool) or (isinstance(value, str) and value.strip().lower() in _BOOL_WORDS)
        return "" if ok else f"{option} must be true or false, got {value!r}"
    if isinstance(default, int):
        try:
            number = float(value) if isinstance(value, int | float) else int(str(value).strip())
            ok = not isinstance(value, bool) and float(number).is_integer()
        except (TypeError, ValueError, OverflowError):
            ok = False
        return "" if ok else f"{option} must be a whole number, got {value!r}"
    if isinstance(default, float):
        try:
            ok = not isinstance(value, bool) and math.isfinite(float(str(value).strip()))
        except (TypeError, ValueError):
            ok = False
        return "" if ok else f"{option} must be a number, got {value!r}"
    return ""


def options_problem(name: str, options: Mapping[str, object] | None) -> str:
    """Why generator ``name`` refuses ``options`` (an option its constructor does not take, or
    a value that is not of its option's kind: ``per_original`` "abc", ``temperature`` "hot"),
    or ``""``: what :func:`create` would refuse first, checked when a run is created. Imports
    the generator's module only (no model is loaded, nothing is built); a module that cannot
    be imported gives ``""`` (the run's start reports it)."""
    try:
        params, var_kw = _parameters(_load_factory(entry(name)))
    except GeneratorConfigError:
        return ""
    options = dict(options or {})
    if unknown := _unknown_options(name, params, var_kw, options):
        return unknown
    bad = [_value_problem(k, params[k].default, v) for k, v in options.items() if k in params]
    bad = [b for b in bad if b]
    return f"generator {name!r}: {'; '.join(bad)}" if bad else ""


def create(
    name: str,
    options: Mapping[str, object] | None = None,
    context: Mapping[str, object] | None = None,
    run_options: Mapping[str, object] | None = None,
) -> Generator:
    """Build generator ``name`` with ``options``.

    ``context`` (model paths, device…) fills only parameters the factory names explicitly.
    ``run_options`` (``seed``, ``max_per_original``) fill parameters it names, or go through
    its ``**kwargs`` when it has them (retried without them if it refuses them there).

    Raises :class:`GeneratorConfigError` with a message fit for a user when the generator
    is unknown or unavailable, an option is not one it takes, or its constructor refuses
    the configuration (a bad value, a model path that does not exist)."""
    e = entry(name)
    factory = _load_factory(e)
    options = dict(options or {})
    context = dict(context or {})
    run_options = dict(run_options or {})
    params, var_kw = _parameters(factory)
    if problem := _unknown_options(name, params, var_kw, options):
        raise GeneratorConfigError(problem)
    # an option of a true/false kind given as text ("false", "off", as a form or a JSON script
    # may send it) is that truth value: bool("false") is True, so llm-prompt's chat stayed on
    kwargs = {k: _as_declared_bool(params[k].default, v) if k in params else v for k, v in options.items()}
    for key, value in context.items():
        if key in params and key not in kwargs:
            kwargs[key] = value
    extras = {k: v for k, v in run_options.items() if k not in kwargs and (k in params or var_kw)}
    try:
        try:
            generator = factory(**kwargs, **extras)
        except TypeError as exc:
            if not extras or not any(repr(k) in str(exc) for k in extras if k not in params):
                raise
            generator = factory(**kwargs, **{k: v for k, v in extras.items() if k in params})
    except GeneratorConfigError:
        raise
    except (TypeError, ValueError, OSError, LookupError) as exc:
        raise GeneratorConfigError(f"generator {name!r} is misconfigured: {exc}") from exc
    if not callable(getattr(generator, "generate", None)):
        raise GeneratorConfigError(f"generator {name!r}: the factory did not return a generator")
    return generator
