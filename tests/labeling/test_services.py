"""Training and auto-labelling through the services, with the database (stand-in encoder)."""

from __future__ import annotations

import numpy as np
import pytest
from django.contrib.auth.models import Group, User
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from labeling import services
from labeling.models import AutolabelRun, PairwiseModel
from labeling.selectors import flip_rates_for
from projects import states
from projects.models import Candidate, Example, Label
from projects.services.projects import project_create

from .conftest import FakeEncoder, sibling_pairs, synthetic_pairs
from .synthetic_project import make_project

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


@pytest.fixture(autouse=True)
def _fake_encoder(monkeypatch, settings, tmp_path):
    settings.COUNTERPART = {**settings.COUNTERPART, "MODEL_DIR": str(tmp_path / "models")}
    monkeypatch.setattr(services, "embedder", lambda: FakeEncoder())


def test_train_then_autolabel_moves_pooled_candidates():
    project, _ = make_project()
    model = services.pairwise_train(project=project, mode="capc")
    assert model.version == 1 and model.n_train == 60 and model.mode == "capc"
    # calibrated: cross-validated ECE 0.02 here (0.19 with the temperature stuck at 1.0)
    assert 0.0 <= model.cv_ece < 0.08 and model.cv_accuracy >= 0.8
    assert model.label_counts and sum(model.label_counts.values()) == 60
    # the out-of-fold predictions the dashboard draws h's reliability and coverage from
    conf, ok = model.metrics["oof_confidence"], model.metrics["oof_correct"]
    assert len(conf) == len(ok) == 60 and all(0.0 <= c <= 1.0 for c in conf)
    assert sum(ok) / 60 == pytest.approx(model.cv_accuracy)
    # the invariant baseline ("nothing flips") on the same pairs, for the dashboard's warning:
    # every synthetic pair flips, so it is never right, and h is far better
    assert model.metrics["invariant_accuracy"] == 0.0 and model.metrics["invariant_correct"] == [0] * 60
    from workspace.dashboard.selectors import science_warnings

    assert "h-not-better-than-invariant" not in {w.code for w in science_warnings(project=project)}
    run = services.autolabel(project=project, min_confidence=0.5)
    assert run.considered == 100
    assert run.auto_labeled + run.abstained == 100 and run.auto_labeled >= 80
    auto = Candidate.objects.filter(project=project, state=states.AUTO_LABELED)
    assert auto.count() == run.auto_labeled
    assert not auto.filter(confidence__lt=0.5).exists()
    assert set(auto.values_list("label_source", flat=True)) == {"auto"}
    correct = sum(1 for c in auto.select_related("label", "gold_label") if c.label_id == c.gold_label_id)
    assert correct / auto.count() >= 0.85
    # the run measures h where the answer is known: those it labelled with a gold label (QA: no
    # page showed h's accuracy against known answers), and the models page says it
    with_gold = auto.filter(gold_label__isnull=False)
    assert run.known_answers == with_gold.count() > 0
    assert run.known_correct == sum(1 for c in with_gold if c.label_id == c.gold_label_id)
    assert run.known_accuracy == pytest.approx(run.known_correct / run.known_answers)
    assert services.autolabel_summary(run)["known_answers"] == run.known_answers
    assert flip_rates_for(project=project).last_run.pk == run.pk
    from django.template.loader import render_to_string

    html = render_to_string("labeling/_flip_rates.html", {"project": project, "rates": flip_rates_for(project=project)})
    assert 'id="h-known-answers"' in html and f"<strong>{run.known_correct}</strong> right" in html
    # confidences are per row: each is h's own confidence on that candidate (h here is sure
    # of nearly every pair, so they may all round to the same value)
    bundle = services.load_model(project, model)
    rows = list(auto.order_by("id").values_list("confidence", *services.PAIR_VALUES))
    expected = bundle.predict_proba([services.candidate_pair(*r[1:]) for r in rows]).max(axis=1)
    assert np.allclose([r[0] for r in rows], expected, atol=1e-5)
    # human labels untouched
    assert Candidate.objects.filter(project=project, state=states.HUMAN_LABELED, label_source="human").count() == 60
    # a second model gets the next version; re-running moves nothing new
    assert services.pairwise_train(project=project, mode="pc").version == 2


def make_sibling_project(n_originals: int = 150, human_share: float = 0.4):
    """Every original with two candidates whose labels are the two other labels (siblings,
    ``sibling_pairs``), a random ``human_share`` of them human-labelled."""
    project = project_create(name="siblings", task="nli")
    labels = {lab.name: lab for lab in Label.objects.filter(project=project)}
    pairs, ys = sibling_pairs(n_originals, seed=11, noise=0.3)
    examples = {}
    for p in pairs:
        if p.group not in examples:
            examples[p.group] = Example.objects.create(
                project=project, external_id=p.group, fields=p.original, label=labels[p.y]
            )
    rng = np.random.default_rng(0)
    human = rng.random(len(pairs)) < human_share
    Candidate.objects.bulk_create(
        Candidate(
            project=project,
            external_id=f"c{i}",
            example=examples[p.group],
            fields=p.counterfactual,
            perturbation=p.perturbation,
            gold_label=labels[y2],
            state=states.HUMAN_LABELED if human[i] else states.POOLED,
            label=labels[y2] if human[i] else None,
            label_source="human" if human[i] else "",
        )
        for i, (p, y2) in enumerate(zip(pairs, ys, strict=True))
    )
    return project


def _auto_accuracy(project) -> float:
    auto = Candidate.objects.filter(project=project, state=states.AUTO_LABELED)
    return sum(1 for c in auto if c.label_id == c.gold_label_id) / auto.count()


def test_siblings_label_each_other_through_train_and_autolabel(client):
    project = make_sibling_project()
    model = services.pairwise_train(project=project, mode="pc")
    assert model.metrics["sibling_stage"] is True and "siblings" in model.metrics["features"]
    researcher = User.objects.create_user("r", password="pw")
    researcher.groups.add(Group.objects.get_or_create(name="researcher")[0])
    client.force_login(researcher)
    html = client.get(f"/labeling/projects/{project.pk}/flip-rates/", HTTP_HX_REQUEST="true").content.decode()
    assert "+ siblings" in html and "label each other (sibling stage" in html
    pooled = Candidate.objects.filter(project=project, state=states.POOLED).count()
    # a small chunk size: blocks must still keep every original's candidates together
    run = services.autolabel(project=project, min_confidence=0.0, chunk_size=7)
    assert run.considered == pooled and run.auto_labeled == pooled
    with_stage = _auto_accuracy(project)
    # the same labels without the sibling stage: h's first stage alone (about 70 % here)
    bundle = services.load_model(project, model)
    bundle.h.sibling_stage = None
    bundle.save(model.path)
    Candidate.objects.filter(project=project, state=states.AUTO_LABELED).update(
        state=states.POOLED, label=None, label_source="", confidence=None
    )
    services.autolabel(project=project, min_confidence=0.0, chunk_size=7)
    assert with_stage >= _auto_accuracy(project) + 0.1
    # human labels were never touched, and only pooled candidates were written
    assert Candidate.objects.filter(project=project, state=states.HUMAN_LABELED, label_source="human").count() == (
        Candidate.objects.filter(project=project).count() - pooled
    )


def test_abstained_below_threshold_and_routed_left_alone():
    project, _ = make_project()
    routed = Candidate.objects.filter(project=project, state=states.POOLED).order_by("id")[:5]
    routed_ids = list(routed.values_list("id", flat=True))
    Candidate.objects.filter(pk__in=routed_ids).update(state=states.ROUTED)
    services.pairwise_train(project=project, mode="pc")
    run = services.autolabel(project=project, min_confidence=1.0)  # nothing is that sure
    assert run.auto_labeled == 0 and run.abstained == 95
    ab = Candidate.objects.filter(project=project, state=states.ABSTAINED)
    assert ab.count() == 95 and not ab.filter(label__isnull=False).exists()
    assert not ab.filter(confidence__isnull=True).exists()
    assert Candidate.objects.filter(pk__in=routed_ids, state=states.ROUTED).count() == 5
    # the abstained ones are picked up by a later, laxer run
    run2 = services.autolabel(project=project, min_confidence=0.0)
    assert run2.considered == 95 and run2.auto_labeled == 95
    assert AutolabelRun.objects.filter(project=project).count() == 2


def test_too_few_human_labels_is_a_clear_error_and_no_model():
    project, _ = make_project(n_pairs=40, n_human=6)
    with pytest.raises(ValidationError, match="need at least 10"):
        services.pairwise_train(project=project)
    assert not PairwiseModel.objects.exists()
    with pytest.raises(ValidationError, match="no pairwise model yet") as refused:
        services.autolabel(project=project)
    # where h is trained: the Task model and h page's button (not the project page's), or the command
    assert "“Train h” on the project's Task model and h page, or python manage.py train_pairwise" in str(refused.value)


def test_a_label_class_without_human_labels_is_refused():
    project, _ = make_project(n_pairs=120, n_human=0)
    neutral = Label.objects.get(project=project, name="neutral")
    # label every pair as human *except* the ones whose label is neutral
    for c in Candidate.objects.filter(project=project).select_related("gold_label"):
        if c.gold_label_id != neutral.pk:
            Candidate.objects.filter(pk=c.pk).update(
                state=states.HUMAN_LABELED, label=c.gold_label, label_source="human"
            )
    with pytest.raises(ValidationError, match="no human-labelled pair with label neutral"):
        services.pairwise_train(project=project, mode="pc")
    with pytest.raises(CommandError, match="no human-labelled pair with label neutral"):
        call_command("train_pairwise", "--project", project.name, "--mode", "pc")
    assert not PairwiseModel.objects.exists()


def test_commands_train_and_autolabel(capsys):
    project, _ = make_project()
    call_command("train_pairwise", "--project", project.name, "--mode", "capc")
    out = capsys.readouterr().out
    assert "trained capc v1 on 60 human-labelled pairs" in out and "cv accuracy" in out
    call_command("autolabel", "--project", project.name, "--min-confidence", "0.6")
    out = capsys.readouterr().out
    assert "considered 100" in out
    with pytest.raises(CommandError, match="no project"):
        call_command("autolabel", "--project", "nope")
    for bad in ("7", "-0.5", "abc", "nan"):  # said as such, not argparse's "invalid _prob value"
        with pytest.raises(CommandError, match="min confidence must be a number between 0 and 1"):
            call_command("autolabel", "--project", project.name, "--min-confidence", bad)


def test_flip_rates_selector_and_view(client):
    project, _ = make_project()
    services.pairwise_train(project=project, mode="pc")
    services.autolabel(project=project, min_confidence=0.0)
    rates = flip_rates_for(project=project)
    assert rates.overall["human"].n == 60 and rates.overall["human"].rate == 1.0  # synthetic labels always flip
    assert rates.overall["auto"].n == 100
    assert rates.by_perturbation[0][0] == "insert"
    assert all(src != dst or counts["auto"] for src, dst, counts in rates.by_direction)
    assert rates.model is not None and rates.model.version == 1

    researcher = User.objects.create_user("r", password="pw")
    researcher.groups.add(Group.objects.get_or_create(name="researcher")[0])
    annotator = User.objects.create_user("a", password="pw")
    annotator.groups.add(Group.objects.get_or_create(name="annotator")[0])
    url = f"/labeling/projects/{project.pk}/flip-rates/"
    assert client.get(url).status_code == 302  # login first
    client.force_login(annotator)
    assert client.get(url).status_code == 403
    client.force_login(researcher)
    resp = client.get(url, HTTP_HX_REQUEST="true")
    html = resp.content.decode()
    assert resp.status_code == 200
    assert "cross-validated accuracy" in html and "entailment→" in html and "insert" in html


def test_warm_start_from_a_pairs_file(tmp_path):
    import json

    pairs, ys = synthetic_pairs(120, seed=11)
    path = tmp_path / "warm.jsonl"
    with path.open("w") as fh:
        for i, (p, y2) in enumerate(zip(pairs, ys, strict=True)):
            fh.write(
                json.dumps(
                    {
                        "id": f"w{i}",
                        "original": {"fields": p.original, "label": p.y},
                        "counterfactual": {
                            "fields": p.counterfactual,
                            "label": y2,
                            "label_source": "human",
                            "perturbation": "insert",
                        },
                    }
                )
                + "\n"
            )
    project, _ = make_project(n_pairs=80, n_human=30)
    model = services.pairwise_train(project=project, mode="capc", warm_start=f"pairs-jsonl:{path}")
    assert model.n_warm == 120 and model.warm_start == f"pairs-jsonl:{path}"
    assert model.n_originals == 80 + 120
    run = services.autolabel(project=project, min_confidence=0.0)
    assert run.auto_labeled == 50
    with pytest.raises(ValidationError, match="warm start"):
        services.pairwise_train(project=project, warm_start=f"pairs-jsonl:{tmp_path / 'missing.jsonl'}")
    with pytest.raises(ValidationError, match="FORMAT:PATH"):
        services.pairwise_train(project=project, warm_start="nonsense")


def test_autolabel_blocks_end_at_an_originals_last_candidate():
    rows = [(i, "", "", "", ex) for i, ex in enumerate([1, 1, 1, 2, 2, 3, 4, 4, 4, 4, 5])]
    blocks = list(services._blocks_by_example(rows, 2))
    assert [r for b in blocks for r in b] == rows
    assert [[r[4] for r in b] for b in blocks] == [[1, 1, 1], [2, 2], [3, 4, 4, 4, 4], [5]]


def test_candidates_judged_invalid_never_get_an_auto_label():
    """Annotators' "Unclear / invalid" answers (meta.valid false) are a first-class outcome:
    such a candidate is never auto-labelled, and a control code that annotators mostly judged
    invalid gets no auto labels either (the model's validity prior)."""
    from projects.services.candidates import candidate_judge_validity

    project, _ = make_project()
    pooled = list(Candidate.objects.filter(project=project, state=states.POOLED).order_by("id"))
    # one pooled candidate judged invalid by itself
    candidate_judge_validity(candidate_id=pooled[0].pk, valid=False)
    # a code the annotators judged invalid every time: 6 routed candidates answered "invalid"
    for c in pooled[1:7]:
        Candidate.objects.filter(pk=c.pk).update(state=states.ROUTED, perturbation="garbled")
        candidate_judge_validity(candidate_id=c.pk, valid=False)
    for c in pooled[7:10]:
        Candidate.objects.filter(pk=c.pk).update(perturbation="garbled")
    model = services.pairwise_train(project=project, mode="capc")
    prior = services.load_model(project, model).meta["validity"]
    assert prior["by_code"]["garbled"] < 0.5 < prior["overall"]
    services.autolabel(project=project, min_confidence=0.0)
    states_of = dict(Candidate.objects.filter(project=project).values_list("pk", "state"))
    assert states_of[pooled[0].pk] == states.ABSTAINED
    assert all(states_of[c.pk] == states.ABSTAINED for c in pooled[7:10])
    assert all(states_of[c.pk] == states.ROUTED for c in pooled[1:7])
    assert Candidate.objects.filter(project=project, state=states.AUTO_LABELED).count() == 100 - 10
    assert Candidate.objects.get(pk=pooled[0].pk).meta == {"valid": False, "valid_source": "human"}
