"""The "active" routing strategy: the project's latest pairwise model scores the pooled
candidates and ``labeling.ml.active`` picks uncertain, diverse ones (stand-in encoder, SQLite)."""

from __future__ import annotations

import random

import numpy as np
import pytest
from django.core.management import call_command
from django.test import Client
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from annotate.models import Item
from annotate.services import routing
from annotate.services.routing import project_route
from labeling import selectors as labeling_selectors
from labeling import services as labeling_services
from labeling.ml.active import margin_uncertainty
from labeling.ml.features import Pair
from labeling.ml.pairwise import LabelingModel
from labeling.models import PairwiseModel
from projects import states
from projects.models import Candidate, Example, Label
from tests.labeling.conftest import LABELS, FakeEncoder, synthetic_pairs

from .factories import project_with_candidates, researcher

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


@pytest.fixture(autouse=True)
def _fake_encoder(monkeypatch, settings, tmp_path):
    settings.COUNTERPART = {**settings.COUNTERPART, "MODEL_DIR": str(tmp_path / "models")}
    monkeypatch.setattr(labeling_services, "embedder", lambda: FakeEncoder())


def _deletion(p: Pair) -> Pair:
    """A pair whose edit deletes a hypothesis word: humans label these either way (below),
    so h learns to be unsure about them."""
    hyp = p.original["hypothesis"].split()
    del hyp[1]
    return Pair(p.original, {**p.original, "hypothesis": " ".join(hyp)}, p.y, "delete", p.group)


def _project_with_model():
    """120 human-labelled pairs (a quarter of them deletions labelled at random between the two
    flips), 120 pooled, 10 abstained deletions (uncertain, but not routable), one pooled
    candidate whose original has no label; then h is trained on the human labels."""
    project = project_with_candidates(name="act", n=0)
    labels = {lab.name: lab for lab in Label.objects.filter(project=project)}
    pairs, ys = synthetic_pairs(251, seed=1)
    rows = []
    for i, (p, y) in enumerate(zip(pairs, ys, strict=True)):
        if i % 4 == 0 or i >= 240:
            p, y = _deletion(p), LABELS[(LABELS.index(p.y) + 1 + (i // 4) % 2) % 3]
        state = states.HUMAN_LABELED if i < 120 else states.POOLED if i < 240 else states.ABSTAINED
        rows.append((p, y, state))
    examples = Example.objects.bulk_create(
        [
            Example(project=project, external_id=f"e{i}", fields=p.original, label=labels[p.y] if i < 250 else None)
            for i, (p, _y, _st) in enumerate(rows)
        ]
    )
    Candidate.objects.bulk_create(
        [
            Candidate(
                project=project,
                external_id=f"c{i}",
                example=examples[i],
                fields=p.counterfactual,
                perturbation=p.perturbation,
                state=states.POOLED if i == 250 else st,
                label=labels[y] if st == states.HUMAN_LABELED else None,
                label_source="human" if st == states.HUMAN_LABELED else "",
                confidence=0.4 if st == states.ABSTAINED else None,
            )
            for i, (p, y, st) in enumerate(rows)
        ]
    )
    model = labeling_services.pairwise_train(project=project, mode="pc")
    return project, model


def test_active_routes_n_uncertain_pooled_candidates_then_tops_up():
    project, model = _project_with_model()
    pooled = list(
        Candidate.objects.filter(project=project, state=states.POOLED).select_related("example__label").order_by("id")
    )
    scorable = [c for c in pooled if c.external_id != "c250"]
    assert len(pooled) == 121
    # h's own top-2 margin on the pool: the deletions are the unsure ones
    bundle = LabelingModel.load(model.path, embed=FakeEncoder().encode)
    u = margin_uncertainty(
        bundle.predict_proba([Pair(c.example.fields, c.fields, c.example.label.name, c.perturbation) for c in scorable])
    )
    top_quarter = np.quantile(u, 0.75)
    row = {c.pk: i for i, c in enumerate(scorable)}

    # uncertain first, over several seeds: a random 10 of these 120 has ~2.5 in h's top
    # quarter and the pool's mean uncertainty; the one most central pair per cluster (density
    # without uncertainty) ~4.7 and 1.5x; uncertainty x density ~7.8 and 2.2x
    picks = []
    for seed in range(6):
        ids, used = routing._select_active(project, 10, random.Random(seed), [])
        assert used == "active" and len(set(ids)) == 10
        picks.append(np.array([row[i] for i in ids]))
    assert sum(int((u[p] >= top_quarter).sum()) for p in picks) >= 40
    assert np.mean([u[p].mean() for p in picks]) > 1.9 * u.mean()
    # ... and not simply the 10 least sure: one per cluster (diversity)
    assert any(set(p) != set(np.argsort(-u)[:10]) for p in picks)

    total = Candidate.objects.filter(project=project).count()  # 251, all live
    r = project_route(project=project, budget=10 / total, strategy="active", seed=3)

    assert (r.strategy, r.requested, r.routed, r.items) == ("active", 10, 10, 10)
    assert any("1 pooled candidates have an original without a label" in m for m in r.messages)
    picked = set(Item.objects.filter(project=project).values_list("candidate_id", flat=True))
    assert len(picked) == 10
    # only from the routable population: pooled before routing (not the unsure abstained ones)
    assert picked <= {c.pk for c in pooled}
    assert Candidate.objects.filter(pk__in=picked, state=states.ROUTED).count() == 10
    assert Candidate.objects.filter(project=project, state=states.ABSTAINED).count() == 10
    assert (u[[row[i] for i in picked]] >= top_quarter).sum() >= 6

    # topping up to everything routes the rest of the pool, the unscorable one included
    r2 = project_route(project=project, budget=1.0, strategy="active", seed=3)
    assert r2.strategy == "active" and r2.routed == 111
    assert not Candidate.objects.filter(project=project, state=states.POOLED).exists()
    assert Candidate.objects.filter(project=project, state=states.ABSTAINED).count() == 10


def test_active_without_a_usable_model_falls_back_to_random_with_a_message(tmp_path):
    project = project_with_candidates(name="nomodel", n=20)
    r = project_route(project=project, budget=0.5, strategy="active", seed=0)
    assert r.strategy == "random" and r.routed == 10
    assert any("no pairwise model" in m and "fell back to random" in m for m in r.messages)

    other = project_with_candidates(name="lostfile", n=20)
    PairwiseModel.objects.create(
        project=other,
        mode="pc",
        version=1,
        n_train=10,
        cv_accuracy=1,
        cv_macro_f1=1,
        cv_ece=0,
        threshold=0.7,
        path=str(tmp_path / "gone.joblib"),
    )
    r2 = project_route(project=other, budget=0.25, strategy="active", seed=0)
    assert r2.strategy == "random" and r2.routed == 5
    assert any("model file" in m and "missing" in m and "fell back to random" in m for m in r2.messages)


def test_a_model_without_pair_inputs_is_clustered_on_its_probabilities():
    class ProbaOnly:  # like a model that reads the texts itself and exposes no pair encoding
        def predict_proba(self, pairs):
            return np.tile([0.6, 0.3, 0.1], (len(pairs), 1))

    pairs, _ = synthetic_pairs(5)
    messages: list[str] = []
    proba, feats = labeling_selectors._active_scores(ProbaOnly(), pairs, messages)  # type: ignore[arg-type]
    assert proba.shape == feats.shape == (5, 3)
    assert any("no pair features" in m for m in messages)


def test_active_is_offered_by_the_command_the_dashboard_and_the_api(capsys, django_capture_on_commit_callbacks):
    project = project_with_candidates(name="cmd", n=30)
    call_command("route", "--project", "cmd", "--budget", "0.1", "--strategy", "active", "--seed", "4")
    out = capsys.readouterr()
    assert "strategy: random" in out.out and "routed 3 candidates" in out.out
    assert "fell back to random" in out.err

    user = researcher()
    c = Client()
    c.force_login(user)
    assert "<option>active</option>" in c.get(f"/annotate/projects/{project.pk}/dashboard/").content.decode()
    api = APIClient()
    api.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=user).key}")
    with django_capture_on_commit_callbacks(execute=True):  # the job runs eagerly on commit
        r = api.post(f"/api/v1/projects/{project.pk}/route/", {"strategy": "active", "budget": 0.2}, format="json")
    assert r.status_code == 202 and r.json()["kind"] == "route" and r.json()["status"] == "queued"
    job = api.get(f"/api/v1/jobs/{r.json()['id']}/").json()
    assert job["status"] == "succeeded", job
    assert job["result"]["strategy"] == "random" and job["result"]["routed"] == 3


def test_the_workspace_app_registers_labelling_ranking_and_without_it_active_falls_back(monkeypatch):
    """annotate does not import labeling: the ranking is registered at start-up by workspace."""
    assert routing._active_selectors == [labeling_selectors.active_selection_for]
    monkeypatch.setattr(routing, "_active_selectors", [])
    project = project_with_candidates(n=8, k=1)
    r = project_route(project=project, budget=0.5, strategy="active", seed=0)
    assert r.strategy == "random" and r.routed == 4
    assert any("no pairwise-model ranking is installed" in m for m in r.messages)
