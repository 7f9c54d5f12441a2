from collections import Counter

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotate.models import Item
from annotate.services.routing import project_route
from projects import states
from projects.models import Candidate

from .factories import project_with_candidates

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def test_random_routes_budget_share_and_tops_up_without_double_routing():
    project = project_with_candidates(n=100)
    r = project_route(project=project, budget=0.1, strategy="random", seed=1)
    assert (r.routed, r.items) == (10, 10)
    assert Candidate.objects.filter(project=project, state=states.ROUTED).count() == 10
    assert Item.objects.filter(project=project, is_gold=False).count() == 10
    again = project_route(project=project, budget=0.1, strategy="random", seed=2)
    assert again.routed == 0
    more = project_route(project=project, budget=0.2, strategy="random", seed=3)
    assert more.routed == 10
    assert Item.objects.filter(project=project).values("candidate").distinct().count() == 20
    # every routed candidate has exactly one item; k from the project
    assert set(Item.objects.values_list("k", flat=True)) == {3}


def test_stratified_is_proportional_per_generator_and_perturbation():
    project = project_with_candidates(
        n=200, generators=("rules", "mlm"), perturbations=("negation", "insert", "delete", "shuffle")
    )
    project_route(project=project, budget=0.2, strategy="stratified", seed=0)
    got = Counter(Item.objects.values_list("candidate__generator", "candidate__perturbation"))
    pooled = Counter(Candidate.objects.values_list("generator", "perturbation"))
    assert sum(got.values()) == 40
    for key, n in pooled.items():
        assert abs(got[key] - 0.2 * n) <= 1


def test_uncertainty_picks_least_confident_or_falls_back_with_a_message():
    project = project_with_candidates(n=50, confidences=True)
    r = project_route(project=project, budget=0.2, strategy="uncertainty", seed=0)
    assert r.strategy == "uncertainty"
    picked = sorted(Item.objects.values_list("candidate__confidence", flat=True))
    rest = Candidate.objects.filter(state=states.POOLED).values_list("confidence", flat=True)
    assert max(picked) <= min(rest)

    plain = project_with_candidates(name="q", n=20)
    r2 = project_route(project=plain, budget=0.5, strategy="uncertainty", seed=0)
    assert r2.strategy == "random" and r2.routed == 10
    assert any("fell back to random" in m for m in r2.messages)


def test_image_pairs_yield_two_items_and_gold_is_injected(settings):
    settings.COUNTERPART = {**settings.COUNTERPART, "GOLD_RATE": 0.5, "QUALIFICATION_GOLD": 2}
    project = project_with_candidates(task="image-caption", n=10, gold=4)
    r = project_route(project=project, budget=0.5, strategy="random", seed=0)
    assert r.items == 2 * r.routed
    sides = Counter(Item.objects.filter(is_gold=False).values_list("side", flat=True))
    assert sides["original"] == sides["counterfactual"] == r.routed
    free_gold = Candidate.objects.filter(gold_label__isnull=False).exclude(state=states.ROUTED).count()
    assert r.gold_items == min(4, free_gold)  # ceil(0.5 * 7) = 4, limited by the free gold candidates
    assert r.gold_items > 0
    gold = Item.objects.filter(is_gold=True)
    assert all(g.gold_choice == "caption_b" and g.side == "counterfactual" for g in gold)
    # gold candidates keep their state
    assert not Candidate.objects.filter(pk__in=gold.values("candidate"), state=states.ROUTED).exists()


def test_route_command(capsys):
    project_with_candidates(name="cmd", n=30)
    call_command("route", "--project", "cmd", "--budget", "0.1", "--strategy", "stratified", "--seed", "4")
    assert "routed 3 candidates" in capsys.readouterr().out
    with pytest.raises(CommandError):
        call_command("route", "--project", "nope")
    with pytest.raises(CommandError):
        call_command("route", "--project", "cmd", "--budget", "2")
