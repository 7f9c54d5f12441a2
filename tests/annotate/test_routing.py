from collections import Counter

import pytest
from django.core.exceptions import ValidationError
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


@pytest.mark.parametrize("rate", ["2", "-0.1", "nan", "inf", "lots"])
def test_a_gold_rate_outside_0_to_1_is_refused_and_routes_nothing(settings, rate):
    """``route --gold-rate 2`` used to make every gold candidate a check item (271 on the
    demo), and ``nan`` crashed the route job; now both are refused before anything is written."""
    project = project_with_candidates(name="gold", n=30, gold=30)
    with pytest.raises(CommandError, match="the gold rate must be a number between 0 and 1"):
        call_command("route", "--project", "gold", "--gold-rate", rate)
    with pytest.raises(ValidationError, match="the gold rate must be a number between 0 and 1"):
        project_route(project=project, budget=0.1, gold_rate=rate)
    settings.COUNTERPART = {**settings.COUNTERPART, "GOLD_RATE": 3.0}  # COUNTERPART_GOLD_RATE=3
    with pytest.raises(ValidationError, match="the gold rate"):
        project_route(project=project, budget=0.1)
    assert not Item.objects.filter(project=project).exists()
    assert not Candidate.objects.filter(project=project, state=states.ROUTED).exists()


@pytest.mark.parametrize("strategy", ["random", "stratified", "uncertainty"])
@pytest.mark.parametrize("gold_rate", [0.0, 0.5])
def test_a_second_route_never_picks_a_check_items_candidate(settings, strategy, gold_rate):
    """Check items' candidates stay pooled; a later route used to pick them again and crash on
    the one-item-per-candidate-and-side constraint (IntegrityError)."""
    settings.COUNTERPART = {**settings.COUNTERPART, "QUALIFICATION_GOLD": 5}
    project = project_with_candidates(n=40, gold=40, confidences=True)
    first = project_route(project=project, budget=0.1, strategy=strategy, gold_rate=gold_rate, seed=0)
    assert first.gold_items >= 5
    check = set(Item.objects.filter(is_gold=True).values_list("candidate_id", flat=True))
    more = project_route(project=project, budget=0.9, strategy=strategy, gold_rate=gold_rate, seed=0)
    routed = set(Item.objects.filter(is_gold=False).values_list("candidate_id", flat=True))
    assert more.routed > 0 and len(routed) == first.routed + more.routed
    assert not routed & check
    assert Candidate.objects.filter(pk__in=check, state=states.ROUTED).count() == 0


def test_an_active_pick_of_a_check_items_candidate_is_replaced(monkeypatch, settings):
    """The active selector ranks every pooled candidate, check items' included: those are left
    out and their places filled at random from the routable pool."""
    from dataclasses import dataclass, field

    from annotate.services import routing

    @dataclass(frozen=True)
    class Choice:
        ids: list[int] | None
        messages: list[str] = field(default_factory=list)
        unavailable: str = ""

    def pooled_first(*, project, n, seed):  # check items' candidates first: the worst case
        pooled = Candidate.objects.filter(project=project, state=states.POOLED).order_by("id")
        check = set(Item.objects.filter(is_gold=True).values_list("candidate_id", flat=True))
        ids = sorted(pooled.values_list("id", flat=True), key=lambda i: i not in check)
        return Choice(ids[:n])

    monkeypatch.setattr(routing, "_active_selectors", [pooled_first])
    settings.COUNTERPART = {**settings.COUNTERPART, "QUALIFICATION_GOLD": 5}
    project = project_with_candidates(n=40, gold=10)
    first = project_route(project=project, budget=0.1, strategy="active", gold_rate=0, seed=0)
    assert first.gold_items == 5
    more = project_route(project=project, budget=0.5, strategy="active", gold_rate=0, seed=0)
    assert (more.strategy, more.routed) == ("active", more.requested)
    check = set(Item.objects.filter(is_gold=True).values_list("candidate_id", flat=True))
    assert not check & set(Item.objects.filter(is_gold=False).values_list("candidate_id", flat=True))


def test_a_targeted_route_leaves_check_items_candidates_out(settings):
    from annotate.services.routing import project_route_target

    settings.COUNTERPART = {**settings.COUNTERPART, "QUALIFICATION_GOLD": 5}
    project = project_with_candidates(n=10, gold=10)
    project_route(project=project, budget=0.1, strategy="random", gold_rate=0, seed=0)
    r = project_route_target(project=project, target="strata", groups=[{"generator": "rules"}], per_group=100)
    assert r.routed == 20 - 2 - 5  # all but the 2 routed and the 5 check items' candidates
    check = set(Item.objects.filter(is_gold=True).values_list("candidate_id", flat=True))
    assert len(check) == 5 and not check & set(
        Item.objects.filter(is_gold=False).values_list("candidate_id", flat=True)
    )
