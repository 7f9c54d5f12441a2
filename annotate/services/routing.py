"""Routing: pick the human share of a project's pooled candidates and turn them into items.

Bulk throughout: ids are read once with ``values_list``, sampled in Python (never
``ORDER BY RANDOM()``), moved with one ``candidates_transition`` UPDATE per chunk and turned into
items with ``bulk_create``. Each item gets a random ``priority`` key (indexed), which is what
makes the next-item order random without sorting the pool at request time.

Strategies: ``random`` and ``stratified`` sample the pooled candidates; ``uncertainty`` takes the
least confident by the stored ``Candidate.confidence``; ``active`` scores the pooled candidates
with the project's latest pairwise model and picks with ``labeling.ml.active`` (k-means over the
pair features, in each cluster the smallest top-2 margin weighted by density).
"""

from __future__ import annotations

import math
import random
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import transaction

from annotate import choices as choice_rules
from annotate.models import Item
from generation import states
from generation.models import Candidate, Project
from generation.services.candidates import candidates_transition
from labeling import services as labeling_services
from labeling.ml.active import diverse_uncertain, margin_uncertainty, reduce_features
from labeling.ml.features import Pair
from labeling.ml.pairwise import LabelingModel

STRATEGIES = ["random", "stratified", "uncertainty", "active"]
CHUNK = 5000
SCORE_CHUNK = 2000  # pairs scored by the pairwise model at a time (bounds the encoding's memory)
_LIVE_STATES = [states.POOLED, states.ROUTED, states.HUMAN_LABELED, states.AUTO_LABELED, states.ABSTAINED]


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


def _allocate(sizes: dict[Any, int], n: int) -> dict[Any, int]:
    """Proportional allocation of ``n`` over groups (largest remainder), capped by group size."""
    total = sum(sizes.values())
    if total == 0 or n <= 0:
        return {g: 0 for g in sizes}
    n = min(n, total)
    exact = {g: n * s / total for g, s in sizes.items()}
    alloc = {g: min(sizes[g], math.floor(x)) for g, x in exact.items()}
    rest = n - sum(alloc.values())
    for g in sorted(sizes, key=lambda g: (exact[g] - math.floor(exact[g]), sizes[g]), reverse=True):
        if rest <= 0:
            break
        if alloc[g] < sizes[g]:
            alloc[g] += 1
            rest -= 1
    return alloc


def _select_random(project: Project, n: int, rng: random.Random) -> list[int]:
    ids = list(Candidate.objects.filter(project=project, state=states.POOLED).values_list("id", flat=True))
    return rng.sample(ids, min(n, len(ids)))


def _select_stratified(project: Project, n: int, rng: random.Random) -> list[int]:
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for cid, gen, pert in Candidate.objects.filter(project=project, state=states.POOLED).values_list(
        "id", "generator", "perturbation"
    ):
        groups[(gen, pert)].append(cid)
    alloc = _allocate({g: len(v) for g, v in groups.items()}, n)
    picked: list[int] = []
    for g in sorted(groups):
        picked.extend(rng.sample(groups[g], alloc[g]))
    return picked


def _select_uncertainty(project: Project, n: int, rng: random.Random, messages: list[str]) -> tuple[list[int], str]:
    """Least-confident first, by the pairwise classifier's confidence stored on the candidate by
    an autolabel pass (``Candidate.confidence`` on pooled / abstained / auto-labelled ones)."""
    eligible = [states.POOLED, states.ABSTAINED, states.AUTO_LABELED]
    rows = list(
        Candidate.objects.filter(project=project, state__in=eligible, confidence__isnull=False)
        .exclude(label_source="human")
        .values_list("id", "confidence")
    )
    if not rows:
        messages.append(
            "uncertainty: no classifier confidences on this project's candidates (train a pairwise "
            "classifier and run autolabel first); fell back to random"
        )
        return _select_random(project, n, rng), "random"
    rng.shuffle(rows)  # random tie-break among equal confidences
    rows.sort(key=lambda r: r[1])
    picked = [cid for cid, _ in rows[:n]]
    if len(picked) < n:
        rest = set(Candidate.objects.filter(project=project, state=states.POOLED, confidence__isnull=True).values_list("id", flat=True))
        extra = rng.sample(sorted(rest), min(n - len(picked), len(rest)))
        if extra:
            messages.append(f"uncertainty: {len(extra)} candidates without a confidence were added at random")
        picked.extend(extra)
    return picked, "uncertainty"


def _pooled_pairs(project: Project) -> tuple[list[int], list[Pair], list[int]]:
    """The pooled candidates (``_select_random``'s population) as model inputs, in id order:
    ``(ids, pairs, unscorable ids)``; a candidate whose original has no label cannot be a
    ``Pair`` (h needs y), so it is returned apart."""
    ids: list[int] = []
    pairs: list[Pair] = []
    unscorable: list[int] = []
    rows = (
        Candidate.objects.filter(project=project, state=states.POOLED)
        .values_list("id", *labeling_services.PAIR_VALUES)
        .order_by("id")
    )
    for cid, *pair in rows.iterator(chunk_size=CHUNK):
        if pair[2] is None:  # the original's label
            unscorable.append(cid)
            continue
        ids.append(cid)
        pairs.append(labeling_services.candidate_pair(*pair))
    return ids, pairs, unscorable


def _active_scores(bundle: LabelingModel, pairs: list[Pair], messages: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Class probabilities and pair features (``emb_c - emb_o`` per field, flattened, next to
    the edit features, as in the benchmark) of ``pairs``. A model without pair inputs is
    clustered on its probabilities instead."""
    has_inputs = callable(getattr(bundle, "inputs", None))
    if not has_inputs:
        messages.append("active: this model exposes no pair features; clusters are formed on its class probabilities")
    probas: list[np.ndarray] = []
    feats: list[np.ndarray] = []
    for start in range(0, len(pairs), SCORE_CHUNK):
        block = pairs[start : start + SCORE_CHUNK]
        inputs = bundle.inputs(block) if has_inputs else None
        proba = np.asarray(bundle.predict_proba(block, inputs=inputs) if inputs is not None
                           else bundle.predict_proba(block), dtype=np.float64)
        probas.append(proba)
        if inputs is not None:
            enc = inputs.enc
            n = len(block)
            feats.append(
                np.hstack([enc.emb_c.reshape(n, -1) - enc.emb_o.reshape(n, -1), enc.edits]).astype(np.float32)
            )
        else:
            feats.append(proba.astype(np.float32))
    return np.vstack(probas), np.vstack(feats)


def _select_active(project: Project, n: int, rng: random.Random, messages: list[str]) -> tuple[list[int], str]:
    """Uncertain and diverse: the pooled candidates scored by the project's latest pairwise
    model, k-means into ``n`` clusters of their reduced pair features, the smallest top-2 margin
    (density-weighted) of each. Without a usable model: random, with a message saying why."""

    def fall_back(why: str) -> tuple[list[int], str]:
        messages.append(f"active: {why}; fell back to random")
        return _select_random(project, n, rng), "random"

    try:
        model = labeling_services.latest_model(project)
    except ValidationError:
        return fall_back("no pairwise model for this project yet (train one with train_pairwise)")
    try:
        bundle = labeling_services.load_model(project, model)
    except ValidationError as exc:
        return fall_back(f"pairwise model v{model.version}: {exc.messages[0]}")

    ids, pairs, unscorable = _pooled_pairs(project)
    if unscorable:
        messages.append(
            f"active: {len(unscorable)} pooled candidates have an original without a label and cannot be "
            "scored; they are only used to fill up at random"
        )
    if len(ids) <= n:
        picked = list(ids)
    else:
        seed = rng.getrandbits(30)
        proba, feats = _active_scores(bundle, pairs, messages)
        rows = diverse_uncertain(
            reduce_features(feats, seed=seed), margin_uncertainty(proba), np.arange(len(ids)), n, seed=seed
        )
        picked = [ids[i] for i in rows.tolist()]
    if len(picked) < n and unscorable:
        picked.extend(rng.sample(unscorable, min(n - len(picked), len(unscorable))))
    return picked, "active"


def _items_for(project: Project, candidate_ids: list[int], *, gold: bool, rng: random.Random) -> list[Item]:
    k = int(settings.COUNTERPART["GOLD_ANNOTATIONS_PER_ITEM"]) if gold else project.annotators_per_item
    caption = project.task == "image-caption"
    gold_names: dict[int, str] = {}
    if gold:
        gold_names = dict(
            Candidate.objects.filter(pk__in=candidate_ids).values_list("id", "gold_label__name")
        )
    out: list[Item] = []
    for cid in candidate_ids:
        if caption:
            sides = ["counterfactual"] if gold else ["original", "counterfactual"]
            for side in sides:
                out.append(
                    Item(project=project, candidate_id=cid, kind="caption_choice", side=side, is_gold=gold,
                         gold_choice=gold_names.get(cid, "") if gold else "", k=k, priority=rng.getrandbits(31))
                )
        else:
            out.append(
                Item(project=project, candidate_id=cid, kind="task_label", side="", is_gold=gold,
                     gold_choice=gold_names.get(cid, "") if gold else "", k=k, priority=rng.getrandbits(31))
            )
    return out


def project_route(
    *,
    project: Project,
    budget: float | None = None,
    strategy: str = "random",
    gold_rate: float | None = None,
    seed: int | None = None,
) -> RoutingResult:
    """Route ``budget`` (a fraction of the project's live candidates; default the project's
    human budget) to humans. Re-running tops up to the budget; it never routes twice.
    Gold items (candidates with a known ``gold_label``) are added at ``gold_rate`` of the
    routed count (at least the qualification size) without changing those candidates' state."""
    if strategy not in STRATEGIES:
        raise ValidationError(f"unknown strategy {strategy!r}; choose one of {', '.join(STRATEGIES)}")
    budget = project.human_budget if budget is None else float(budget)
    if not 0 <= budget <= 1:
        raise ValidationError("budget must be between 0 and 1")
    gold_rate = float(settings.COUNTERPART["GOLD_RATE"]) if gold_rate is None else float(gold_rate)
    rng = random.Random(seed)
    messages: list[str] = []

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
        routed_ids: list[int] = []
        for chunk in _chunks(picked):
            candidates_transition(candidates=chunk, to=states.ROUTED)
            routed_ids.extend(Candidate.objects.filter(pk__in=chunk, state=states.ROUTED).values_list("id", flat=True))
        items = _items_for(project, routed_ids, gold=False, rng=rng)
        Item.objects.bulk_create(items, batch_size=CHUNK)

        gold_items: list[Item] = []
        have_gold = Item.objects.filter(project=project, is_gold=True).count()
        want_gold = 0
        if routed_ids or have_gold == 0:
            want_gold = math.ceil(gold_rate * (already + len(routed_ids)))
            want_gold = max(want_gold, int(settings.COUNTERPART["QUALIFICATION_GOLD"])) if (already + len(routed_ids)) else 0
        want_gold -= have_gold
        if want_gold > 0:
            allowed = set(
                choice_rules.CAPTION_CANONICAL + choice_rules.CAPTION_EXTRA
                if project.task == "image-caption"
                else project.labels.values_list("name", flat=True)
            )
            used_ids = set(Item.objects.filter(project=project).values_list("candidate_id", flat=True))
            pool = [
                cid
                for cid, name in Candidate.objects.filter(
                    project=project, gold_label__isnull=False, state__in=_LIVE_STATES
                ).values_list("id", "gold_label__name")
                if cid not in used_ids and name in allowed
            ]
            gold_ids = rng.sample(pool, min(want_gold, len(pool)))
            if len(gold_ids) < want_gold:
                messages.append(f"gold: wanted {want_gold} more gold items, only {len(gold_ids)} candidates with a gold label were free")
            gold_items = _items_for(project, gold_ids, gold=True, rng=rng)
            Item.objects.bulk_create(gold_items, batch_size=CHUNK)
    if requested and len(routed_ids) < requested:
        messages.append(f"only {len(routed_ids)} pooled candidates were available for {requested} requested")
    return RoutingResult(
        strategy=used,
        requested=requested,
        routed=len(routed_ids),
        items=len(items),
        gold_items=len(gold_items),
        messages=messages,
    )


def project_add_annotators(*, project: Project, users: list[Any]) -> int:
    """Give annotators access to a project (idempotent)."""
    from annotate.models import ProjectMembership

    before = ProjectMembership.objects.filter(project=project).count()
    ProjectMembership.objects.bulk_create(
        [ProjectMembership(project=project, user=u) for u in users], ignore_conflicts=True
    )
    return ProjectMembership.objects.filter(project=project).count() - before
