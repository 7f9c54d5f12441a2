"""``bench_loop``'s plumbing on tiny data: the loop stops and writes a labelling batch when routed
candidates have no judgement, the same seed gives the same pool and routing, and with every
routed candidate judged it runs through answers, h, auto-labelling, export and the variants.
A test generator, a stand-in encoder and the TF-IDF evaluation classifier keep it fast."""

from __future__ import annotations

import hashlib
import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from generation.ml import registry
from labeling import evaluation, services
from projects.models import Candidate
from tests.generation.run_fixtures import register_test_generators
from tests.labeling.conftest import FakeEncoder
from workspace.loop.labels import LabelsFile, merge_answers, read_labels, write_labels

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]

LABELS = ["entailment", "neutral", "contradiction"]
WORDS = "man woman dog horse field park riding sitting walking young old brown street boy girl ball".split()


@pytest.fixture(autouse=True)
def _fast(monkeypatch, _annotation_settings):
    # the product's check items and qualification, which the annotation tests switch off
    _annotation_settings.COUNTERPART = {**_annotation_settings.COUNTERPART, "GOLD_RATE": 0.05, "QUALIFICATION_GOLD": 5}
    register_test_generators()
    monkeypatch.setattr(services, "embedder", lambda: FakeEncoder())
    monkeypatch.setattr(evaluation, "embedder", lambda: FakeEncoder())
    yield
    registry.unregister("test-echo")


def _pairs_file(path: Path, n: int, prefix: str) -> str:
    """``n`` originals, each with two counterfactuals of the other labels (CAD-shaped)."""
    with path.open("w") as f:
        for i in range(n):
            words = [WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(6)]
            prem, hyp = f"A {' '.join(words[:4])} {prefix}{i}.", f"The {' '.join(words[3:])} {prefix}{i}."
            y = LABELS[i % 3]
            for j, y2 in enumerate(lab for lab in LABELS if lab != y):
                cf = {"premise": prem, "hypothesis": f"{hyp[:-1]} not{j}."}
                f.write(
                    json.dumps(
                        {
                            "id": f"{prefix}{i}-{j}",
                            "group": f"{prefix}{i}",
                            "original": {
                                "id": f"{prefix}{i}",
                                "fields": {"premise": prem, "hypothesis": hyp},
                                "label": y,
                            },
                            "counterfactual": {"fields": cf, "label": y2, "label_source": "gold"},
                        }
                    )
                    + "\n"
                )
    return str(path)


def _loop(tmp_path: Path, originals: str, evals: str, labels: Path, batch: Path, *extra: str) -> tuple[str, dict]:
    out = StringIO()
    call_command(
        "bench_loop",
        "--in-place",
        "--originals",
        f"pairs-jsonl:{originals}",
        "--eval",
        f"pairs-jsonl:{evals}",
        "--limit",
        "16",
        "--seed",
        "3",
        "--generator",
        "test-echo",
        "--filters",
        "dedup,artifacts",
        "--budget",
        "0.3",
        "--labels",
        str(labels),
        "--batch-dir",
        str(batch),
        "--work-dir",
        str(tmp_path / "work"),
        "--classifier",
        "tfidf-lr",
        "--seeds",
        "2",
        "--json",
        *extra,
        stdout=out,
    )
    text = out.getvalue()
    return text, json.loads(text.strip().splitlines()[-1])


def _answer(batch: Path, reader: str, flip: bool) -> None:
    """A reader's answers: the control's known label, else a label fixed by the text's key
    (``flip``: a different one, so the readers disagree on some lines); a few marked invalid."""
    cad = dict(line.split("\t") for line in (batch / "controls.tsv").read_text().splitlines())
    rows = []
    for line in (batch / "batch.tsv").read_text().splitlines():
        key = line.split("\t")[0]
        if key in cad:
            rows.append(f"{key}\t{cad[key]}\tyes")
            continue
        h = int(hashlib.md5(key.encode()).hexdigest()[:6], 16)
        label = LABELS[(h + (1 if flip and h % 5 == 0 else 0)) % 3]
        rows.append(f"{key}\t{label}\t{'no' if h % 11 == 0 else 'yes'}")
    (batch / f"{reader}.tsv").write_text("\n".join(rows) + "\n")


def _labelled(tmp_path: Path) -> tuple[str, str, Path, Path]:
    """Tiny data, and a labels file answering every routed candidate (two readers)."""
    originals = _pairs_file(tmp_path / "train.jsonl", 30, "t")
    evals = _pairs_file(tmp_path / "dev.jsonl", 9, "d")
    labels, batch = tmp_path / "labels.jsonl", tmp_path / "batch"
    _loop(tmp_path, originals, evals, labels, batch)
    _answer(batch, "reader1", flip=False)
    _answer(batch, "reader2", flip=True)
    lf = LabelsFile({}, {}, {})
    merge_answers(batch, lf, labels=LABELS)
    write_labels(labels, lf)
    return originals, evals, labels, batch


@pytest.mark.slow
def test_f_trained_through_the_product_labels_the_pool_alone(tmp_path, settings):
    """``--task-model train``: f trained on the project (task data imported, capped) by the
    product's service, used by h and as the "f alone" variant (a tiny random BERT as the base)."""
    from tests.labeling._tiny_bert import save_tiny_bert

    settings.COUNTERPART = {
        **settings.COUNTERPART,
        "TASK_MODEL_DIR": str(tmp_path / "task-models"),
        "MINILM_PATH": str(save_tiny_bert(tmp_path / "tiny-base", ["a", "b"])),
        "DEVICE": "cpu",
    }
    originals, evals, labels, batch = _labelled(tmp_path)
    task = tmp_path / "task.jsonl"
    task.write_text(
        "\n".join(
            json.dumps({"premise": f"a {w} runs {i}", "hypothesis": f"a {w}", "label": LABELS[i % 3]})
            for i, w in enumerate(WORDS * 2)
        )
    )
    _text, result = _loop(
        tmp_path,
        originals,
        evals,
        labels,
        batch,
        "--task-model",
        "train",
        "--task-data",
        f"labelled-jsonl:{task}",
        "--task-model-max-examples",
        "20",
    )
    assert result["h"]["model"]["task_model"] is True
    # only the routed candidates are judged here: no gold outside them for h's or f's accuracy
    assert result["h"]["f_alone_valid"] is None and result["h"]["n"] == 0
    ev = result["eval"][f"pairs-jsonl:{evals}/original"]
    assert ev["variants"]["f-alone"]["n_train"] == 16 + result["pool"]["pool"]


def test_stops_with_a_batch_then_runs_through_with_the_answers(tmp_path):
    originals = _pairs_file(tmp_path / "train.jsonl", 30, "t")
    evals = _pairs_file(tmp_path / "dev.jsonl", 9, "d")
    labels, batch = tmp_path / "labels.jsonl", tmp_path / "batch"

    # 1. no labels: the routed candidates (and the controls) are written as a batch; it stops
    text, first = _loop(tmp_path, originals, evals, labels, batch)
    assert first["labels_needed"] > 0 and "routed candidates have no judgement" in text
    keys1 = (batch / "batch.tsv").read_text()
    controls = (batch / "controls.tsv").read_text().splitlines()
    assert controls and all(line.split("\t")[1] in LABELS for line in controls)
    # the routed check items are controls too: each text once
    assert first["batch_lines"] == len(keys1.splitlines()) == len({line.split("\t")[0] for line in keys1.splitlines()})
    assert len(controls) < first["labels_needed"] < first["batch_lines"]
    assert (batch / "README.md").exists() and not list(batch.glob("reader*.tsv"))

    # 2. the same seed: the same pool, the same routing, the same batch
    _loop(tmp_path, originals, evals, labels, batch)
    assert (batch / "batch.tsv").read_text() == keys1

    # 3. the readers answer; their answers fold into the labels file (one annotator each)
    _answer(batch, "reader1", flip=False)
    _answer(batch, "reader2", flip=True)
    lf = LabelsFile({}, {}, {})
    n_lines = len(keys1.splitlines())
    assert merge_answers(batch, lf, labels=LABELS) == {"reader1": n_lines, "reader2": n_lines}
    write_labels(labels, lf)
    assert read_labels(labels, labels=LABELS).entries == lf.entries

    # 4. every routed candidate judged: the whole loop runs
    text, result = _loop(tmp_path, originals, evals, labels, batch)
    assert set(result["routing"]["answers"]) == {"reader1", "reader2"}
    assert result["routing"]["answers"]["reader1"] >= result["routing"]["routed"] > 0
    assert result["routing"]["check_items"] > 0, (result["routing"]["messages"], result["routing"]["refused"])
    assert result["pool"]["pool"] == 16 * 3  # test-echo: three candidates per original
    assert Candidate.objects.filter(state="human_labeled", label_source="human").exists()
    e = result["export"]
    assert 0 < e["pairs"] <= e["written"] and e["pairs"] == ev_export_size(result)
    ev = result["eval"][f"pairs-jsonl:{evals}/counterfactual"]
    assert ev["n"] == 18
    assert set(ev["variants"]) == {"originals", "cad-human", "export", "nothing-flips", "human-10", "gold-pool"}
    orig = ev["variants"]["originals"]
    assert "gain" not in orig and orig["n_train"] == 16
    assert ev["variants"]["cad-human"]["n_train"] == 16 + 32
    lo, hi = ev["variants"]["export"]["gain_ci95"]
    assert lo <= ev["variants"]["export"]["gain"] <= hi
    assert "+ the export" in text


def ev_export_size(result: dict) -> int:
    """The export variant trains on the labelled exported pairs beside the originals."""
    some = next(iter(result["eval"].values()))
    return some["variants"]["export"]["n_train"] - some["variants"]["originals"]["n_train"]


def test_a_bad_labels_file_is_a_clear_error(tmp_path):
    bad = tmp_path / "labels.jsonl"
    bad.write_text('{"key": "k", "judgements": {"r1": {"label": "maybe", "valid": true}}}\n')
    with pytest.raises(CommandError, match=r"labels.jsonl:1: reader 'r1'"):
        call_command("bench_loop", "--in-place", "--originals", "cad-nli:x:train", "--labels", str(bad))


def test_a_missing_task_model_folder_is_refused_before_anything_runs(tmp_path, monkeypatch):
    # docs/loop.md's command names var/models/nli-f, absent from a fresh clone: it failed only
    # after the scratch database, the import and the generation run (about a minute)
    from workspace.management.commands import bench_loop

    monkeypatch.setattr(bench_loop.Command, "_in_scratch", lambda *a, **k: pytest.fail("started the loop"))
    with pytest.raises(CommandError, match=r"--task-model: task model directory not found: .*nli-f"):
        call_command("bench_loop", "--originals", "cad-nli:x:train", "--task-model", str(tmp_path / "nli-f"))


def _cad_split(root: Path, split: str) -> Path:
    """A two-original CAD-NLI folder holding only ``split``."""
    cad = root / "NLI"
    header = "sentence1\tsentence2\tgold_label\n"
    rows = [("A man rides a horse.", "A man is outside.", "entailment"), ("A dog runs.", "A cat sleeps.", "neutral")]
    for part in ("original", "revised_premise", "revised_hypothesis"):
        (cad / part).mkdir(parents=True)
    (cad / "original" / f"{split}.tsv").write_text(header + "".join(f"{p}\t{h}\t{y}\n" for p, h, y in rows))
    rp = "".join(f"{p} x\t{h}\tneutral\n{p} y\t{h}\tcontradiction\n" for p, h, _ in rows)
    rh = "".join(f"{p}\t{h} x\tneutral\n{p}\t{h} y\tcontradiction\n" for p, h, _ in rows)
    (cad / "revised_premise" / f"{split}.tsv").write_text(header + rp)
    (cad / "revised_hypothesis" / f"{split}.tsv").write_text(header + rh)
    return root


def test_the_loops_originals_read_a_split_as_every_other_data_spec_does(tmp_path, monkeypatch):
    """``bench_loop --originals cad-nli:DIR:validation`` took ``DIR:validation`` for the path and
    failed with "this format needs --split", and ``~/cad`` was not the home folder, while
    ``--warm-start`` and ``--eval`` read both: the loop kept its own, narrower spec parser. Every
    data spec is now read by ``projects.formats.parse_spec``."""
    from projects.formats import parse_spec
    from workspace.loop.data import load

    _cad_split(tmp_path / "cad", "validation")
    monkeypatch.setenv("HOME", str(tmp_path))
    setting = {
        "task": "nli",
        "labels": ["entailment", "neutral", "contradiction"],
        "text_fields": ["premise", "hypothesis"],
    }
    for spec in (f"cad-nli:{tmp_path / 'cad'}:validation", "cad-nli:~/cad:validation"):
        data = load(spec, **setting, limit=0, seed=0, n_controls=0)
        assert [o.label for o in data.originals] == ["entailment", "neutral"] and len(data.human) == 8, spec
    assert parse_spec("cad-nli:~/cad:val") == ("cad-nli", str(tmp_path / "cad"), "val")
    with pytest.raises(ValueError, match="must be FORMAT:PATH"):
        parse_spec("cad-nli")


def test_a_variant_that_could_not_run_and_a_missing_evaluation_file(tmp_path):
    """A variant that could not run is ``{"accuracy": null, …, "error": …}`` (the export when
    nothing was exported): the table read its ``n_train`` and the loop ended in a KeyError
    after everything had run, its JSON never printed; it now prints the error. And an
    ``--eval`` file that does not exist was found only at the evaluation, after the labelling
    batch had been written and answered: it is now refused before anything runs."""
    from workspace.management.commands.bench_loop import Command

    originals, evals, labels, batch = _labelled(tmp_path)
    _text, result = _loop(tmp_path, originals, evals, labels, batch, "--seeds", "1")
    name = f"pairs-jsonl:{evals}/counterfactual"
    nothing = "nothing to export yet: no human- or auto-labelled candidate"
    result["eval"][name]["variants"]["export"] = {"accuracy": None, "macro_f1": None, "ci95": None, "error": nothing}
    out = StringIO()
    Command(stdout=out)._table(result)
    assert f"error: {nothing}" in out.getvalue()
    missing = tmp_path / "held-out.jsonl"
    with pytest.raises(CommandError, match=f"--eval pairs-jsonl:{missing}: {missing}: file not found"):
        _loop(tmp_path, originals, str(missing), labels, tmp_path / "batch2")
    assert not (tmp_path / "batch2").exists()
    # held-out data with no dev split next to it, and no --eval: said before anything runs too
    held_out = _cad_split(tmp_path / "heldout", "test")
    no_dev = r"the originals' dev split, cad-nli:.*heldout:dev: .*dev\.tsv: file not found"
    with pytest.raises(CommandError, match=no_dev):
        call_command("bench_loop", "--in-place", "--originals", f"cad-nli:{held_out}:test")
