"""The task model's commands (issue 26): import_task_data, train_task_model, bench_task_model
(on a miniature shared-data folder; a tiny random BERT stands in for MiniLM)."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command

from labeling.models import TaskModel, TaskTrainingExample
from projects.models import Example
from projects.services.projects import project_create

from .test_task_training import TEXTS, _many, _task_file, _tiny  # noqa: F401  (the fixture)

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def test_import_then_train_then_cached(tmp_path, capsys):
    project_create(name="cmd", task="nli")
    call_command("import_task_data", _task_file(tmp_path, _many(30)), project="cmd", format="labelled-jsonl")
    assert "imported 30 task training examples" in capsys.readouterr().out
    assert TaskTrainingExample.objects.count() == 30 and not Example.objects.exists()
    call_command("train_task_model", project="cmd", epochs=1, batch_size=8)
    out = capsys.readouterr()
    assert "trained in" in out.out and "held-out accuracy" in out.out and "step" in out.err
    call_command("train_task_model", project="cmd", epochs=1, batch_size=8)
    assert "found in the cache (nothing trained)" in capsys.readouterr().out
    assert TaskModel.objects.count() == 2
    with pytest.raises(CommandError, match="no project"):
        call_command("train_task_model", project="nope")
    with pytest.raises(CommandError, match="file not found"):
        call_command("import_task_data", str(tmp_path / "x.jsonl"), project="cmd", format="labelled-jsonl")


def _mini_shared(root, dev_is_train=False):
    """CAD-NLI train (TEXTS[2:4]) and dev (TEXTS[:2], or the train rows again), nli-public and
    generated gold, in the shared data folder's layout."""
    cad = root / "cad" / "NLI"
    for split in ("train", "dev"):
        rows = TEXTS[2:4] if split == "train" or dev_is_train else TEXTS[:2]
        for part in ("original", "revised_premise", "revised_hypothesis"):
            (cad / part).mkdir(parents=True, exist_ok=True)
        (cad / "original" / f"{split}.tsv").write_text(
            "sentence1\tsentence2\tgold_label\n" + "".join(f"{p}\t{h}\t{y}\n" for p, h, y in rows)
        )
        rp = "".join(f"{p} x\t{h}\tneutral\n{p} y\t{h}\tcontradiction\n" for p, h, _ in rows)
        rh = "".join(f"{p}\t{h} x\tneutral\n{p}\t{h} y\tentailment\n" for p, h, _ in rows)
        (cad / "revised_premise" / f"{split}.tsv").write_text("sentence1\tsentence2\tgold_label\n" + rp)
        (cad / "revised_hypothesis" / f"{split}.tsv").write_text("sentence1\tsentence2\tgold_label\n" + rh)
    (root / "nli-public").mkdir()
    _task_file(root / "nli-public", _many(20), name="train.jsonl")
    (root / "generated-gold").mkdir()
    gold = {
        "id": "g1",
        "original": {
            "id": "o1",
            "fields": {"premise": "a man runs", "hypothesis": "a man moves"},
            "label": "entailment",
        },
        "counterfactual": {
            "fields": {"premise": "a man sleeps", "hypothesis": "a man moves"},
            "label": "contradiction",
            "valid": True,
        },
    }
    (root / "generated-gold" / "cad-nli-dev-rules.jsonl").write_text(json.dumps(gold) + "\n")
    return root


def test_bench_task_model_trains_on_train_only_and_scores_the_dev_sets(tmp_path, capsys):
    shared = _mini_shared(tmp_path / "shared")
    call_command("bench_task_model", shared=str(shared), epochs=1, batch_size=8, json=True)
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["n_train"] == 20 + 2 + 8 and out["cached"] is False and out["trained_on_this_data"]
    assert set(out["eval"]) == {
        "cad-nli:dev/original",
        "cad-nli:dev/counterfactual",
        "generated-gold:cad-nli-dev-rules",
        "generated-gold:cad-nli-dev-rules/valid",
    }
    assert (
        out["eval"]["cad-nli:dev/counterfactual"]["n"] == 8
        and out["eval"]["generated-gold:cad-nli-dev-rules"]["n"] == 1
    )
    # the second time: the cached model, and --model says whether a folder was trained on this data
    call_command("bench_task_model", shared=str(shared), epochs=1, batch_size=8, json=True)
    again = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert again["cached"] is True and again["model"] == out["model"]
    call_command("bench_task_model", shared=str(shared), model=out["model"], max_public=5, json=True)
    other = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert other["trained_on_this_data"] is False
    call_command("bench_task_model", shared=str(shared), epochs=1, batch_size=8, probe_steps=3, json=True)
    probe = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert probe["probe_steps"] == 3 and probe["steps_per_s"] > 0 and probe["steps_per_epoch"] == 4
    assert probe["estimated_total_s"] == pytest.approx(4 / probe["steps_per_s"], abs=0.1)
    assert set(out) - {"trained_on_this_data", "train_device", "device"} <= set(probe)  # the same keys
    assert probe["model"] is probe["held_out_accuracy"] is None and probe["eval"] == {}


def test_bench_task_model_leaves_out_dev_examples_it_trains_on(tmp_path, capsys, settings):
    """A data folder whose dev files repeat training rows (held-out data that is not): those
    examples are left out and counted, never scored; the model path in the JSON is not this
    machine's absolute path; a folder that is not a model is a CommandError."""
    settings.BASE_DIR = tmp_path
    settings.COUNTERPART = {**settings.COUNTERPART, "TASK_MODEL_DIR": str(tmp_path / "var" / "task-models")}
    shared = _mini_shared(tmp_path / "shared", dev_is_train=True)
    call_command("bench_task_model", shared=str(shared), epochs=1, batch_size=8, json=True)
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["eval"]["cad-nli:dev/original"] == {"n": 0, "accuracy": None, "macro_f1": None, "excluded": 2}
    assert out["eval"]["cad-nli:dev/counterfactual"]["excluded"] == 8
    assert out["eval"]["generated-gold:cad-nli-dev-rules"]["n"] == 1  # not in the training data
    assert "excluded" not in out["eval"]["generated-gold:cad-nli-dev-rules"]
    assert out["model"].startswith("var/task-models/")
    with pytest.raises(CommandError, match="cannot load the task model"):
        call_command("bench_task_model", shared=str(shared), model=str(tmp_path / "missing"), json=True)
    with pytest.raises(CommandError, match="cannot load the task model"):
        call_command("bench_task_model", shared=str(shared), model=str(shared), json=True)
    # a model folder whose metadata file is damaged: the same one-line error, not a JSONDecodeError
    damaged = tmp_path / "damaged"
    damaged.mkdir()
    (damaged / "counterpart_task_model.json").write_text('{"data_hash": ')
    with pytest.raises(CommandError, match=r"cannot load the task model .*damaged: counterpart_task_model\.json: "):
        call_command("bench_task_model", shared=str(shared), model=str(damaged), json=True)
    (damaged / "counterpart_task_model.json").write_text("[1, 2]")
    with pytest.raises(CommandError, match=r"counterpart_task_model\.json is not a JSON object"):
        call_command("bench_task_model", shared=str(shared), model=str(damaged), json=True)


def test_bench_task_model_skips_and_names_bad_rows_of_a_data_folder(tmp_path, capsys):
    """A held-out data folder with a label outside the task's set in nli-public stopped the
    benchmark with a traceback (``ValueError: labels not in the task's label set``); one in the
    generated-gold file would have failed scoring (``labels.index``), and a malformed line
    vanished without a word. Each is now skipped and said as ``problem: FILE:LINE: …`` on
    stderr, with what was read; the rest is trained on and scored."""
    shared = _mini_shared(tmp_path / "shared")
    public = shared / "nli-public" / "train.jsonl"
    rows = public.read_text().splitlines()
    rows[1] = json.dumps({**json.loads(rows[1]), "label": "maybe"})
    rows[2] = '{"premise": "cut short'
    public.write_text("\n".join(rows) + "\n")
    gold_file = shared / "generated-gold" / "cad-nli-dev-rules.jsonl"
    gold = json.loads(gold_file.read_text())
    odd = {**gold, "id": "g2", "counterfactual": {**gold["counterfactual"], "label": "unsure"}}
    gold_file.write_text(json.dumps(gold) + "\n" + json.dumps(odd) + "\n")
    call_command("bench_task_model", shared=str(shared), epochs=1, batch_size=8, json=True)
    captured = capsys.readouterr()
    out = json.loads(captured.out.strip().splitlines()[-1])
    assert out["n_train"] == 18 + 2 + 8 and out["eval"]["generated-gold:cad-nli-dev-rules"]["n"] == 1
    assert f"problem: {public}:2: unknown label 'maybe'" in captured.err
    assert f"problem: {public}:3: not valid JSON" in captured.err
    assert f"problem: {gold_file}:2: counterfactual.label: unknown label 'unsure'" in captured.err
    assert f"read {shared}: 28 training examples" in captured.err and "3 rows skipped" in captured.err


def test_cad_dev_figures_leave_out_what_f_trains_on(tmp_path, settings):
    from labeling import task_training as T

    shared = _mini_shared(tmp_path / "shared")
    settings.COUNTERPART = {**settings.COUNTERPART, "SHARED_DATA_DIR": str(shared)}
    project = project_create(name="dev-pool", task="nli")
    label = project.labels.get(name=TEXTS[0][2])
    # the project's pool holds a CAD-NLI dev original, labelled: f trains on it
    Example.objects.create(
        project=project, external_id="o1", fields={"premise": TEXTS[0][0], "hypothesis": TEXTS[0][1]}, label=label
    )
    T.task_data_import(project=project, format="labelled-jsonl", paths=[_task_file(tmp_path, _many(12))])
    m = T.task_model_train(project=project, epochs=1, options={"batch_size": 8})
    assert m.metrics["training_set"]["eval_excluded"] == 1
    assert set(m.metrics["eval"]) == {"cad_dev_originals", "cad_dev_revisions"}  # scored on the other original


def test_bench_task_model_sentiment_trains_on_public_and_cad_train_and_scores_cad_dev(tmp_path, capsys):
    """Issue 31: sentiment-public + CAD sentiment train; CAD sentiment dev originals and revisions."""
    shared = tmp_path / "shared"
    paired = shared / "cad" / "sentiment" / "combined" / "paired"
    paired.mkdir(parents=True)
    for split, n in (("train", 3), ("dev", 2)):
        rows = "".join(
            f"Negative\tthe dog sleeps {split} {i}<br /><br />a man\t{i}\nPositive\tthe dog runs {split} {i}\t{i}\n"
            for i in range(n)
        )
        (paired / f"{split}_paired.tsv").write_text("Sentiment\tText\tbatch_id\n" + rows)
    (shared / "sentiment-public").mkdir()
    (shared / "sentiment-public" / "train.jsonl").write_text(
        "".join(
            json.dumps({"text": f"a man runs {i}", "label": ["negative", "positive"][i % 2]}) + "\n" for i in range(10)
        )
    )
    call_command("bench_task_model", task="sentiment", shared=str(shared), epochs=1, batch_size=4, json=True)
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["task"] == "sentiment" and out["n_train"] == 10 + 3 + 3
    assert {k: v["n"] for k, v in out["eval"].items()} == {
        "cad-sentiment:dev/original": 2,
        "cad-sentiment:dev/counterfactual": 2,
    }


def test_bench_task_model_scores_held_out_sets_given_by_eval(tmp_path, capsys):
    """QA (held-out benchmarks): f could only be scored on the shared folder's dev split. --eval
    FORMAT:PATH[:SPLIT] scores it on any held-out set too (a CAD folder's test split, a pair
    file), named as bench_augmentation names its sets; a bad spec is refused before training."""
    shared = _mini_shared(tmp_path / "shared")
    held = tmp_path / "held"
    for part in ("original", "revised_premise", "revised_hypothesis"):
        (held / "NLI" / part).mkdir(parents=True)
        src = shared / "cad" / "NLI" / part / "dev.tsv"
        (held / "NLI" / part / "test.tsv").write_text(src.read_text())
    labelled = tmp_path / "labelled.jsonl"
    labelled.write_text(
        "".join(json.dumps({"premise": p, "hypothesis": h, "label": y}) + "\n" for p, h, y in TEXTS[:2])
        + '{"premise": "x", "hypothesis": "y", "label": "maybe"}\n'
    )
    with pytest.raises(CommandError, match="evaluation set"):
        call_command("bench_task_model", shared=str(shared), evals=[f"cad-nli:{tmp_path / 'nowhere'}:test"], json=True)
    spec = f"cad-nli:{held}:test"
    call_command(
        "bench_task_model",
        shared=str(shared),
        epochs=1,
        batch_size=8,
        evals=[spec, f"labelled-jsonl:{labelled}"],
        json=True,
    )
    cap = capsys.readouterr()
    out = json.loads(cap.out.strip().splitlines()[-1])
    assert out["eval"][f"{spec}/original"]["n"] == 2
    assert out["eval"][f"{spec}/counterfactual"]["n"] == 8
    assert out["eval"][f"labelled-jsonl:{labelled}"]["n"] == 2  # the row labelled "maybe" is skipped …
    assert "maybe" in cap.err  # … and named
    assert "cad-nli:dev/original" in out["eval"]  # the default sets are still scored
