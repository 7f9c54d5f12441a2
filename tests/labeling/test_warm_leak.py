"""Issue 26.4: a warm start whose texts are also the project's (its originals or its pool, by
the evaluation's normalised text hash) is stripped of them, or refused when nothing is left,
and says so in the training report, the command's output and the project page."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from django.core.exceptions import ValidationError
from django.core.management import call_command
from django.db.models import F

from labeling import services
from projects import states
from projects.models import Candidate, Example
from projects.services.imports import data_import
from projects.services.projects import project_create

from .conftest import FakeEncoder, synthetic_pairs
from .test_services import make_project

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


@pytest.fixture(autouse=True)
def _fake_encoder(monkeypatch, settings, tmp_path):
    settings.COUNTERPART = {
        **settings.COUNTERPART,
        "MODEL_DIR": str(tmp_path / "models"),
        "EMBEDDING_CACHE_DIR": str(tmp_path / "embeddings"),
    }
    monkeypatch.setattr(services, "embedder", lambda: FakeEncoder())
    services._WARM_CACHES.clear()
    yield
    services._WARM_CACHES.clear()


def _pairs_file(path: Path, pairs, ys) -> str:
    with path.open("w") as fh:
        for i, (p, y2) in enumerate(zip(pairs, ys, strict=True)):
            row = {
                "id": f"w{i}",
                # the same text, written differently: case, spacing and end punctuation
                "original": {"fields": {k: f"  {v.upper()}. " for k, v in p.original.items()}, "label": p.y},
                "counterfactual": {"fields": p.counterfactual, "label": y2, "label_source": "human"},
            }
            fh.write(json.dumps(row) + "\n")
    return f"pairs-jsonl:{path}"


def test_a_warm_start_sharing_texts_with_the_project_is_stripped_and_says_so(tmp_path, capsys):
    project, _ = make_project(n_pairs=120, n_human=60)  # synthetic_pairs(120, seed=7)
    own, own_y = synthetic_pairs(120, seed=7)
    other, other_y = synthetic_pairs(150, seed=11)
    spec = _pairs_file(tmp_path / "warm.jsonl", own[:50] + other, own_y[:50] + other_y)
    model = services.pairwise_train(project=project, mode="pc", warm_start=spec)
    assert model.n_warm == 150
    [note] = [n for n in model.metrics["notes"] if "warm start" in n]
    assert "50 of its 200 pairs share a text with this project's originals or candidates and were left out" in note
    call_command("train_pairwise", "--project", project.name, "--mode", "pc", "--warm-start", spec)
    assert "note: warm start" in capsys.readouterr().out
    # made of the project's own pairs only: refused, nothing saved
    same = _pairs_file(tmp_path / "same.jsonl", own[:40], own_y[:40])
    with pytest.raises(ValidationError, match="all 40 of its pairs share a text"):
        services.pairwise_train(project=project, mode="pc", warm_start=same)
    assert project.pairwise_models.count() == 2


@pytest.mark.slow
def test_warm_start_from_cad_nli_dev_on_a_project_imported_from_cad_nli_dev(shared_data):
    """The case of the issue: h's CV accuracy jumped 0.730 -> 0.910 with no warning."""
    project = project_create(name="cad-dev", task="nli")
    data_import(project=project, format="cad-nli", paths=[str(shared_data / "cad")], split="dev", strict=False)
    # half the originals (and their pairs) leave the project; humans label a third of the rest
    examples = list(Example.objects.filter(project=project).order_by("id").values_list("pk", flat=True))
    Example.objects.filter(pk__in=examples[100:]).delete()
    labelled = list(Candidate.objects.filter(project=project).order_by("id").values_list("pk", flat=True))[::3]
    Candidate.objects.filter(pk__in=labelled).update(
        state=states.HUMAN_LABELED, label=F("gold_label"), label_source="gold"
    )
    spec = f"cad-nli:{shared_data / 'cad'}:dev"
    model = services.pairwise_train(project=project, mode="pc", warm_start=spec)
    [note] = [n for n in model.metrics["notes"] if "warm start" in n]
    # every pair of the project's 100 originals, and a few more whose text one of them shares
    n_pairs = Candidate.objects.filter(project=project).count()
    removed = 800 - model.n_warm
    assert f"{removed} of its 800 pairs share a text" in note
    assert n_pairs <= removed <= n_pairs + 10 and model.n_warm > 0
    # the whole of CAD-NLI dev in the project: nothing is left to warm-start from
    whole = project_create(name="cad-dev-whole", task="nli")
    data_import(project=whole, format="cad-nli", paths=[str(shared_data / "cad")], split="dev", strict=False)
    labelled = list(Candidate.objects.filter(project=whole).order_by("id").values_list("pk", flat=True))[::10]
    Candidate.objects.filter(pk__in=labelled).update(
        state=states.HUMAN_LABELED, label=F("gold_label"), label_source="gold"
    )
    with pytest.raises(ValidationError, match="share a text with this project's originals or candidates"):
        services.pairwise_train(project=whole, mode="pc", warm_start=spec)
