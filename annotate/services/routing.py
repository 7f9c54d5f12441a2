"""Routing: pick the human share of a project's pooled candidates and turn them into items.

Bulk throughout: ids are read once with ``values_list``, sampled in Python (never
``ORDER BY RANDOM()``), moved with one ``candidates_transition`` UPDATE per chunk and turned into
items with ``bulk_create``. Each item gets a random ``priority`` key (indexed), which is what
makes the next-item order random without sorting the pool at request time.

Strategies: ``random`` and ``stratified`` sample the pooled candidates; ``uncertainty`` takes the
least confident by the stored ``Candidate.confidence`` (the sampling itself is the Django-free
``annotate.ml.routing``); ``active`` asks the selector registered with
:func:`active_selector_register` to rank the pooled candidates with the project's latest
pairwise model (k-means over the pair features, in each cluster the smallest top-2 margin
weighted by density). That selector is the labelling app's
``labeling.selectors.active_selection_for``, registered by the workspace app at start-up
(``workspace/apps.py``): annotate and labeling sit side by side and import neither the other.
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, cast

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from annotate import kinds
from annotate.ml import routing as sampling
from annotate.models import Item
from annotate.selectors import LIVE_STATES, check_items_shortfall, free_gold_candidates
from projects import states
from projects.models import Candidate, Job, Project
from projects.services.candidates import candidates_transition
from projects.services.jobs import JobContext, JobFailed, job_start, stop_if_cancelled
from projects.validators import validate_budget, validate_gold_rate

STRATEGIES = ["random", "stratified", "uncertainty", "active"]
CHUNK = 5000
_LIVE_STATES = LIVE_STATES


class ActiveChoice(Protocol):
    """What an active selector answers: ``ids``, the pooled candidates picked (None when it has
    no usable model: ``unavailable`` says why); ``messages`` for the researcher."""

    @property
    def ids(self) -> list[int] | None: ...

    @property
    def messages(self) -> list[str]: ...

    @property
    def unavailable(self) -> str: ...


# (project=, n=, seed=) -> ActiveChoice
ActiveSelector = Callable[..., ActiveChoice]
_active_selectors: list[ActiveSelector] = []


def active_selector_register(selector: ActiveSelector) -> None:
    """Register the ``active`` strategy's ranking (called once at start-up; a second call
    replaces the first)."""
    _active_selectors[:] = [selector]


@dataclass(frozen=True)
class RoutingResult:
    strategy: str  # the strategy actually used (uncertainty and active may fall back to random)
    requested: int  # how many candidates the budget still asked for
    routed: int  # candidates moved to "routed"
    items: int  # items created for them (2 per image pair)
    gold_items: int
    messages: list[str] = field(default_factory=list)


def _chunks(seq: list[int], size: int = CHUNK) -> list[list[int]]:
    return [seq[i : i + size] for i in range(0, len(seq), size)]


def _with_item(project: Project) -> Any:
    """The ids of the project's candidates that are an item already: a check item's candidate
    keeps its state (pooled, mostly) but can never be routed too (one item per candidate and side)."""
    return Item.objects.filter(project=project).values("candidate_id")


def _routable(qs: Any, project: Project) -> Any:
    return qs.exclude(pk__in=_with_item(project))


def _drop_items(project: Project, ids: list[int]) -> list[int]:
    """``ids`` without the candidates that are an item already (a check item's, mostly)."""
    have: set[int] = set()
    for chunk in _chunks(ids):
        have.update(_with_item(project).filter(candidate_id__in=chunk).values_list("candidate_id", flat=True))
    return [i for i in ids if i not in have] if have else list(ids)


def _pooled(project: Project) -> Any:
    return _routable(Candidate.objects.filter(project=project, state=states.POOLED), project)


def _select_random(project: Project, n: int, rng: random.Random) -> list[int]:
    return sampling.random_sample(_pooled(project).values_list("id", flat=True), n, seed=rng)


def _select_stratified(project: Project, n: int, rng: random.Random) -> list[int]:
    rows = _pooled(project).values_list("id", "generator", "perturbation")
    return sampling.stratified_sample(((cid, (gen, pert)) for cid, gen, pert in rows), n, seed=rng)


def _select_uncertainty(project: Project, n: int, rng: random.Random, messages: list[str]) -> tuple[list[int], str]:
    """Least-confident first, by the pairwise classifier's confidence stored on the candidate by
    an autolabel pass (``Candidate.confidence`` on pooled / abstained / auto-labelled ones)."""
    eligible = [states.POOLED, states.ABSTAINED, states.AUTO_LABELED]
    # confidence__isnull=False: the stubs type the column as float | None, here it is a float
    rows = cast(
        list[tuple[int, float]],
        list(
            _routable(Candidate.objects.filter(project=project, state__in=eligible, confidence__isnull=False), project)
            .exclude(label_source="human")
            .values_list("id", "confidence")
        ),
    )
    if not rows:
        messages.append(
            "uncertainty: no classifier confidences on this project's candidates (press “Train h” and "
            "then “Auto-label the rest” on the project's Task model and h page first); fell back to random"
        )
        return _select_random(project, n, rng), "random"
    picked = sampling.uncertainty_sample([r[0] for r in rows], [r[1] for r in rows], n, seed=rng)
    if len(picked) < n:
        rest = _pooled(project).filter(confidence__isnull=True).values_list("id", flat=True)
        extra = sampling.random_sample(rest, n - len(picked), seed=rng)
        if extra:
            messages.append(f"uncertainty: {len(extra)} candidates without a confidence were added at random")
        picked.extend(extra)
    return picked, "uncertainty"


def scored_pool_count(*, project: Project) -> int:
    """How many pooled or abstained candidates carry h's confidence (from an auto-label pass):
    with any, ``uncertainty`` routes the least confident first, and the routing page offers it."""
    return (
        Candidate.objects.filter(project=project, state__in=[states.POOLED, states.ABSTAINED], confidence__isnull=False)
        .exclude(label_source="human")
        .count()
    )


def _select_active(project: Project, n: int, rng: random.Random, messages: list[str]) -> tuple[list[int], str]:
    """Uncertain and diverse, as ranked by the project's latest pairwise model (the labelling
    app's selector); without a usable model: random, with a message saying why."""
    if not _active_selectors:
        messages.append("active: no pairwise-model ranking is installed (the workspace app); fell back to random")
        return _select_random(project, n, rng), "random"
    choice = _active_selectors[0](project=project, n=n, seed=rng.getrandbits(30))
    messages.extend(choice.messages)
    if choice.ids is None:
        messages.append(f"active: {choice.unavailable}; fell back to random")
        return _select_random(project, n, rng), "random"
    picked = _drop_items(project, choice.ids)
    if len(picked) < len(choice.ids):  # check items' candidates stay pooled: fill their places at random
        taken = set(picked)
        rest = [i for i in _pooled(project).values_list("id", flat=True) if i not in taken]
        picked += sampling.random_sample(rest, n - len(picked), seed=rng)
    return picked, "active"


def _items_for(
    project: Project, candidate_ids: list[int], *, gold: bool, rng: random.Random, k: int | None = None
) -> list[Item]:
    if k is None:
        k = int(settings.COUNTERPART["GOLD_ANNOTATIONS_PER_ITEM"]) if gold else project.annotators_per_item
    kind = kinds.kind_for_task(project.task)
    gold_names: dict[int, str] = {}
    if gold:
        gold_names = dict(Candidate.objects.filter(pk__in=candidate_ids).values_list("id", "gold_label__name"))
    return [
        Item(
            project=project,
            candidate_id=cid,
            kind=kind.name,
            side=side,
            is_gold=gold,
            gold_choice=gold_names.get(cid, "") if gold else "",
            k=k,
            priority=rng.getrandbits(31),
        )
        for cid in candidate_ids
        for side in kind.sides(gold=gold)
    ]


def _add_check_items(project: Project, n: int, rng: random.Random, messages: list[str]) -> list[Item]:
    """Make up to ``n`` new check items from the free candidates with a known answer."""
    if n <= 0:
        return []
    pool = free_gold_candidates(project=project)
    gold_ids = rng.sample(pool, min(n, len(pool)))
    if len(gold_ids) < n:
        messages.append(
            f"gold: wanted {n} more check items, only {len(gold_ids)} candidates with a gold label were free; "
            f"import {n - len(gold_ids)} more pairs with a gold label"
        )
    gold_items = _items_for(project, gold_ids, gold=True, rng=rng)
    Item.objects.bulk_create(gold_items, batch_size=CHUNK)
    return gold_items


def project_add_check_items(*, project: Project, seed: int | None = None) -> RoutingResult:
    """The one-click remedy for members whose qualification window ran out of check items:
    add as many new check items as ``check_items_shortfall`` says (from the free candidates
    with a known answer; the message says how many more to import when those are too few)."""
    messages: list[str] = []
    with transaction.atomic():
        gold_items = _add_check_items(
            project, check_items_shortfall(project=project).needed, random.Random(seed), messages
        )
    return RoutingResult(strategy="gold", requested=0, routed=0, items=0, gold_items=len(gold_items), messages=messages)


def no_annotators_warning(project: Project) -> str:
    """The warning routing gives when nobody could answer what it routes: '' when the project
    has at least one annotator member, else a sentence naming the members page."""
    from django.urls import reverse

    from projects.models import ProjectMembership

    if ProjectMembership.objects.filter(project=project, role="annotator").exists():
        return ""
    members = reverse("annotate-members", kwargs={"project_id": project.pk})
    return (
        f"Project {project.name!r} has no annotator members: nobody will be served the routed items "
        f"until you add annotators on the members page ({members})."
    )


def project_route(
    *,
    project: Project,
    budget: float | None = None,
    strategy: str = "random",
    gold_rate: float | None = None,
    seed: int | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> RoutingResult:
    """Route ``budget`` (a fraction of the project's live candidates; default the project's
    human budget) to humans. Re-running tops up to the budget; it never routes twice.
    Gold items (candidates with a known ``gold_label``) are added at ``gold_rate`` of the
    routed count (at least the qualification size) without changing those candidates' state.
    ``should_stop()`` (a job's cancel) is asked before the routing commits: true, nothing is
    routed (``JobCancelled``)."""
    if strategy not in STRATEGIES:
        raise ValidationError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    budget = validate_budget(project.human_budget if budget is None else budget)
    gold_rate = validate_gold_rate(settings.COUNTERPART["GOLD_RATE"] if gold_rate is None else gold_rate)
    rng = random.Random(seed)
    messages: list[str] = [w for w in [no_annotators_warning(project)] if w]

    total = Candidate.objects.filter(project=project, state__in=_LIVE_STATES).count()
    already = Item.objects.filter(project=project, is_gold=False).values("candidate_id").distinct().count()
    requested = max(0, round(budget * total) - already)

    with transaction.atomic():
        used = strategy
        if requested == 0:
            picked: list[int] = []
        elif strategy == "random":
            picked = _select_random(project, requested, rng)
        elif strategy == "stratified":
            picked = _select_stratified(project, requested, rng)
        elif strategy == "active":
            picked, used = _select_active(project, requested, rng, messages)
        else:
            picked, used = _select_uncertainty(project, requested, rng, messages)
        routed_ids, items, gold_items = _route_ids(project, picked, already, gold_rate, rng, messages)
        stop_if_cancelled(should_stop)  # inside the transaction: a cancel rolls the routing back
    if requested and len(routed_ids) < requested:
        messages.append(f"only {len(routed_ids)} pooled candidates were available for {requested} requested")
    if requested == 0:  # say why nothing moved (issue 32.2): the budget is already routed
        messages.append(
            f"nothing to route: the budget ({budget:.0%} of {total} candidates = {round(budget * total)}) is "
            f"already routed ({already} candidates); raise the budget to route more"
        )
    return RoutingResult(
        strategy=used,
        requested=requested,
        routed=len(routed_ids),
        items=len(items),
        gold_items=len(gold_items),
        messages=messages,
    )


def _route_ids(
    project: Project,
    picked: list[int],
    already: int,
    gold_rate: float,
    rng: random.Random,
    messages: list[str],
    k: int | None = None,
) -> tuple[list[int], list[Item], list[Item]]:
    """Move ``picked`` to ``routed``, make their items, and top up the check items: the gold
    rate's share of all routed items (at least the qualification size), topped up on every
    run, plus whatever members in a fresh qualification window still lack (issue 25.3).
    Inside the caller's transaction. A picked candidate that is an item already is left out."""
    routed_ids: list[int] = []
    for chunk in _chunks(_drop_items(project, picked)):
        candidates_transition(candidates=chunk, to=states.ROUTED)
        routed_ids.extend(Candidate.objects.filter(pk__in=chunk, state=states.ROUTED).values_list("id", flat=True))
    items = _items_for(project, routed_ids, gold=False, rng=rng, k=k)
    Item.objects.bulk_create(items, batch_size=CHUNK)
    have_gold = Item.objects.filter(project=project, is_gold=True).count()
    real_total = already + len(routed_ids)
    want_gold = 0
    if real_total:
        want_gold = max(math.ceil(gold_rate * real_total), int(settings.COUNTERPART["QUALIFICATION_GOLD"]))
    want_gold = max(want_gold - have_gold, check_items_shortfall(project=project).needed)
    gold_items = _add_check_items(project, want_gold, rng, messages)
    return routed_ids, items, gold_items


# -- targeted routing: the remedies' buttons (issue 32.2) -----------------------------------

TARGETS = ("abstained", "strata")
# The states a targeted route takes candidates from, most wanted first: those nobody labelled.
TARGET_STATES = (states.POOLED, states.ABSTAINED, states.AUTO_LABELED)
GROUP_KEYS = ("generator", "perturbation", "source", "original_label", "target_label")
MIN_STRATUM_ROUTE = 10  # per stratum: the labels h's per-stratum check needs (labeling/ml/strata.py)
HUMAN_GENERATOR = "human"  # the generator of human-written counterfactuals (labeling/ml/strata.py)


def _group_filter(group: dict[str, str]) -> dict[str, Any]:
    """The candidate filter of a stratum: ``(none)`` is the empty value; ``source`` is
    ``human-written`` (the ``human`` generator) or ``generated`` (any other)."""
    out: dict[str, Any] = {}
    for key in ("generator", "perturbation"):
        if key in group:
            out[key] = "" if group[key] == "(none)" else group[key]
    if "original_label" in group:
        out["example__label__name"] = group["original_label"]
    if "target_label" in group:
        out["target_label__name"] = group["target_label"]
    return out


def _group_name(group: dict[str, str]) -> str:
    return ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in group.items())


def _in_group(project: Project, group: dict[str, str]) -> Any:
    qs = Candidate.objects.filter(project=project, **_group_filter(group))
    if group.get("source") == "human-written":
        qs = qs.filter(generator__iexact=HUMAN_GENERATOR)
    elif group.get("source") == "generated":
        qs = qs.exclude(generator__iexact=HUMAN_GENERATOR)
    return qs


def route_target_check(
    *, target: str, groups: list[dict[str, str]] | None, per_group: int | None, k: int | None = None
) -> None:
    """Refuse a targeted route that cannot mean anything (``ValidationError``)."""
    if target not in TARGETS:
        raise ValidationError(f"unknown target {target!r}; choose one of {', '.join(TARGETS)}")
    if target == "strata":
        if not groups:
            raise ValidationError("name at least one stratum to route")
        for g in groups:
            if not g or set(g) - set(GROUP_KEYS) or not all(isinstance(v, str) for v in g.values()):
                raise ValidationError(f"a stratum is a map of {', '.join(GROUP_KEYS)} to values")
    if per_group is not None and per_group < 1:
        raise ValidationError("per stratum: 1 or more")
    k_max = int(settings.COUNTERPART["MAX_ANNOTATORS_PER_ITEM"])
    if k is not None and not 1 <= k <= k_max:
        raise ValidationError(f"annotators per item: from 1 to {k_max}")


def project_route_target(
    *,
    project: Project,
    target: str,
    groups: list[dict[str, str]] | None = None,
    per_group: int | None = None,
    k: int | None = None,
    seed: int | None = None,
    should_stop: Callable[[], bool] | None = None,
) -> RoutingResult:
    """Route a chosen set beyond the budget (the remedies' buttons): ``abstained``: every
    candidate h abstained on; ``strata``: up to ``per_group`` candidates of each stratum in
    ``groups`` (``generator``, ``perturbation``, ``source``, ``original_label`` /
    ``target_label``) that nobody has labelled (pooled first, then abstained, then auto-labelled).
    ``k``: answers wanted per item (default the project's; higher where people disagree).
    Routes something or says why it cannot, per stratum. ``should_stop``: as for
    :func:`project_route`."""
    route_target_check(target=target, groups=groups, per_group=per_group, k=k)
    rng = random.Random(seed)
    messages: list[str] = [w for w in [no_annotators_warning(project)] if w]
    gold_rate = float(settings.COUNTERPART["GOLD_RATE"])
    already = Item.objects.filter(project=project, is_gold=False).values("candidate_id").distinct().count()
    picked: list[int] = []
    if target == "abstained":
        abstained = Candidate.objects.filter(project=project, state=states.ABSTAINED)
        picked = list(_routable(abstained, project).values_list("id", flat=True))
        if not picked:
            messages.append("no candidate is abstained: h labelled every pair it was asked about (or none yet)")
    else:
        per = per_group or MIN_STRATUM_ROUTE
        taken: set[int] = set()
        for group in groups or []:
            qs = _in_group(project, group)
            chosen: list[int] = []
            for state in TARGET_STATES:
                in_state = _routable(qs.filter(state=state), project)
                ids = [i for i in in_state.values_list("id", flat=True) if i not in taken]
                chosen += sampling.random_sample(ids, per - len(chosen), seed=rng)
                if len(chosen) >= per:
                    break
            if not chosen:
                n = qs.count()
                why = (
                    "it has no candidate"
                    if n == 0
                    else f"its {n} candidates are all routed, labelled by people, check items or filtered out already"
                )
                messages.append(f"{_group_name(group)}: nothing to route, {why}")
            elif len(chosen) < per:
                messages.append(f"{_group_name(group)}: {len(chosen)} routed, all it had left (of {per} wanted)")
            picked += chosen
            taken.update(chosen)
    with transaction.atomic():
        routed_ids, items, gold_items = _route_ids(project, picked, already, gold_rate, rng, messages, k=k)
        stop_if_cancelled(should_stop)  # inside the transaction: a cancel rolls the routing back
    return RoutingResult(
        strategy=target,
        requested=len(picked),
        routed=len(routed_ids),
        items=len(items),
        gold_items=len(gold_items),
        messages=messages,
    )


def project_add_annotators(*, project: Project, users: list[Any]) -> int:
    """Give annotators access to a project (idempotent)."""
    from projects.models import ProjectMembership

    before = ProjectMembership.objects.filter(project=project).count()
    ProjectMembership.objects.bulk_create(
        [ProjectMembership(project=project, user=u) for u in users], ignore_conflicts=True
    )
    return ProjectMembership.objects.filter(project=project).count() - before


# -- the ``route`` job kind (registered in AnnotateConfig.ready) ----------------------------


def project_route_start(
    *,
    project: Project,
    budget: float | None = None,
    strategy: str = "random",
    seed: int | None = None,
    created_by: Any = None,
) -> Job:
    """Check the arguments, then queue routing as a job (the ``active`` strategy loads h and
    MiniLM, so routing never runs inside a web request)."""
    if strategy not in STRATEGIES:
        raise ValidationError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    if budget is not None:
        budget = validate_budget(budget)
    return job_start(
        kind="route",
        project=project,
        created_by=created_by,
        params={"budget": budget, "strategy": strategy, "seed": seed},
    )


def project_route_target_start(
    *,
    project: Project,
    target: str,
    groups: list[dict[str, str]] | None = None,
    per_group: int | None = None,
    k: int | None = None,
    seed: int | None = None,
    created_by: Any = None,
) -> Job:
    """Queue a targeted route (:func:`project_route_target`) as a ``route`` job."""
    route_target_check(target=target, groups=groups, per_group=per_group, k=k)
    return job_start(
        kind="route",
        project=project,
        created_by=created_by,
        params={"target": target, "groups": groups or [], "per_group": per_group, "k": k, "seed": seed},
    )


def project_route_job(job: Job, ctx: JobContext) -> dict[str, Any]:
    assert job.project is not None
    p = job.params
    try:
        if p.get("target"):
            result = project_route_target(
                project=job.project,
                target=p["target"],
                groups=p.get("groups") or None,
                per_group=p.get("per_group"),
                k=p.get("k"),
                seed=p.get("seed"),
                should_stop=ctx.cancel_requested,
            )
        else:
            result = project_route(
                project=job.project,
                budget=p.get("budget"),
                strategy=p.get("strategy", "random"),
                seed=p.get("seed"),
                should_stop=ctx.cancel_requested,
            )
    except ValidationError as exc:
        raise JobFailed(" ".join(exc.messages)) from exc
    ctx.progress(result.routed, result.requested)
    return asdict(result)
