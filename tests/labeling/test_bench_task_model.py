"""Issue 26.5: ``bench_pairwise --task-model`` adds f alone, capc+f and chosen (with their
exports and the candidates h's CV chose), keeping the JSON contract of docs/formats.md §3."""

from __future__ import annotations

import json

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from labeling.ml.bench import run_benchmark
from labeling.ml.pairs import LabelledPairs

from .conftest import FIELDS, LABELS, fake_embed
from .test_task_model_h import scrambled


def test_the_task_model_methods_and_their_exports():
    pairs, ys, task = scrambled(200, seed=4)
    valid = [bool(v) for v in np.random.default_rng(0).random(200) < 0.8]
    result = run_benchmark(
        LabelledPairs(pairs, ys, valid),
        task="nli",
        labels=LABELS,
        fields=FIELDS,
        embed=fake_embed,
        seeds=2,
        budget=0.3,
        task_model=task,
        skip=("random-pairs", "training-only", "capc+active", "curve"),
        min_valid_sweep=(0.5, 0.95),
        alpha_sweep=(0.1, 1.0),
    )
    m = result["methods"]
    assert {"invariant", "pc", "capc", "f alone", "capc+f", "chosen", "chosen+shrink"} <= set(m)
    assert not {"random-pairs", "training-only", "capc+active"} & set(m)
    assert result["budget_curve"]["capc"] == {}
    # the edits say nothing here; only the task model (right 85 % of the time) knows
    assert m["capc"]["accuracy"] < 0.5
    assert m["f alone"]["accuracy"] > 0.75 and m["chosen"]["accuracy"] > 0.75 and m["capc+f"]["accuracy"] > 0.7
    assert set(result["exports"]) == {"pc", "capc", "f alone", "capc+f", "chosen", "chosen+shrink"}
    # issue 30's levers: shrinking toward the transition prior keeps h's labels (it reweighs its
    # probabilities), and a stricter validity threshold exports less (the validity sweep)
    assert m["chosen+shrink"]["accuracy"] > 0.7
    sweep = result["export_min_valid"]["chosen"]
    assert sweep["0.5"] == result["exports"]["chosen"]
    assert sweep["0.95"]["coverage"] <= sweep["0.5"]["coverage"]
    # and a looser bound on the strata labels at least as much (alpha 0.1 is the product's)
    by_alpha = result["export_strata_alpha"]
    assert by_alpha["0.1"] == result["exports"]["chosen"]
    assert by_alpha["1.0"]["coverage"] >= by_alpha["0.1"]["coverage"]
    assert all(0.0 <= v["coverage"] <= 1.0 for v in result["exports"].values())
    assert sum(result["chosen_candidates"].values()) == 2
    json.dumps(result)  # the contract: one JSON object


def test_the_command_refuses_a_missing_task_model(tmp_path):
    path = tmp_path / "pairs.jsonl"
    pairs, ys, _ = scrambled(30)
    with path.open("w") as fh:
        for i, (p, y2) in enumerate(zip(pairs, ys, strict=True)):
            row = {
                "id": str(i),
                "original": {"fields": p.original, "label": p.y},
                "counterfactual": {"fields": p.counterfactual, "label": y2},
            }
            fh.write(json.dumps(row) + "\n")
    base = ["bench_pairwise", "--task", "nli", "--format", "pairs-jsonl", str(path), "--seeds", "1"]
    with pytest.raises(CommandError, match="task model directory not found"):
        call_command(*base, "--task-model", str(tmp_path / "nope"))
    with pytest.raises(CommandError, match="--skip: unknown method"):
        call_command(*base, "--skip", "pc")
    (tmp_path / "leaky").mkdir()
    from projects.ml.textkeys import text_hash

    meta = {"text_hashes": [text_hash(p.counterfactual, ["premise", "hypothesis"]) for p in pairs[:3]]}
    (tmp_path / "leaky" / "counterpart_task_model.json").write_text(json.dumps(meta))
    with pytest.raises(CommandError, match="trained on 3 counterfactuals"):
        call_command(*base, "--task-model", str(tmp_path / "leaky"))
