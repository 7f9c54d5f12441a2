"""bench_validity on the real data with the shipped validity model: the figures that
docs/generation.md ("Validity filter") reports. Slow: MiniLM reads 1,040 edits."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.conf import settings
from django.core.management import call_command

JUDGED = Path(settings.COUNTERPART["SHARED_DATA_DIR"]) / "generated-gold" / "cad-nli-dev-rules.jsonl"

# docs/generation.md, "Validity filter (issue 19)"
DOCUMENTED = {"auc": 0.616, "invalid_removed": 0.378, "valid_kept": 0.779, "human_pass": 0.900, "held_out_pass": 0.9025}


@pytest.mark.slow
@pytest.mark.skipif(not JUDGED.is_file(), reason="the generated-gold dev set is not in SHARED_DATA_DIR")
def test_bench_validity_reports_the_documented_figures():
    out = StringIO()
    call_command("bench_validity", "--json", stdout=out)
    result = json.loads(out.getvalue().strip().splitlines()[-1])
    assert result["n"] == 340 and result["n_invalid"] == 127 and result["human_edits_dev"] == 300
    for key, value in DOCUMENTED.items():
        assert result[key] == pytest.approx(value, abs=0.01), key
    # the bar is not met: the filter stays optional (off by default)
    assert result["invalid_removed"] < 0.8 or result["valid_kept"] < 0.9
    assert "head" not in result["model"] and result["model"]["pass_rate"] == 0.9


@pytest.mark.slow
def test_train_validity_writes_a_calibrated_model(tmp_path, shared_data):  # reads CAD-NLI train
    from generation.ml.validity import ValidityDiscriminator
    from tests.generation._tiny_hf import save_bert_classifier

    encoder = save_bert_classifier(tmp_path / "tiny", labels=("invalid", "valid"))
    out = StringIO()
    call_command("train_validity", "--out", str(tmp_path / "vm"), "--encoder", str(encoder), stdout=out)
    assert "threshold" in out.getvalue()
    model = ValidityDiscriminator(str(tmp_path / "vm"))
    assert model.encoder_path == str(encoder) and model.meta["pass_rate"] == 0.9
    assert model.meta["trained_on"]["human"] == 600 and model.meta["trained_on"]["safe"] == 150
    assert sum(v for k, v in model.meta["trained_on"].items() if k not in ("human", "safe")) == 750
    assert 0.0 < model.threshold < 1.0


def test_bench_validity_refuses_a_judged_set_it_cannot_score(tmp_path):
    """A missing file, a file that is not pairs-jsonl, or one without both valid and invalid
    candidates: a CommandError naming the file (was a FileNotFoundError / ValueError traceback)."""
    from django.core.management import CommandError

    def bench(path):
        call_command("bench_validity", "--judged", str(path), "--json", stdout=StringIO())

    with pytest.raises(CommandError, match=r"missing\.jsonl: cannot read it"):
        bench(tmp_path / "missing.jsonl")
    (tmp_path / "bad.jsonl").write_text("not json\n")
    with pytest.raises(CommandError, match=r"bad\.jsonl: 0 candidates with counterfactual\.valid"):
        bench(tmp_path / "bad.jsonl")
    row = {
        "id": "p1",
        "original": {"fields": {"premise": "a man runs", "hypothesis": "a man moves"}, "label": "entailment"},
        "counterfactual": {"fields": {"premise": "a man sleeps", "hypothesis": "a man moves"}, "valid": True},
    }
    (tmp_path / "valid.jsonl").write_text(json.dumps(row) + "\n")
    with pytest.raises(CommandError, match=r"1 candidates with counterfactual\.valid, 1 of them valid"):
        bench(tmp_path / "valid.jsonl")
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(CommandError, match="0 candidates"):
        bench(tmp_path / "empty.jsonl")


def test_bench_validity_names_the_rows_of_a_judged_set_it_skips(tmp_path):
    """One truncated line in a held-out judged set stopped the run with "cannot read it as
    pairs-jsonl (JSONDecodeError('Expecting value: line 2 column 1 …'))" — a line of the
    decoder's buffer, not of the file — and ``"valid": "false"`` (a string) counted as valid.
    Both rows are now skipped and named (``problem: FILE:LINE: …``); the rest is scored."""
    from generation.services.validity_bench import judged_rows

    def row(premise, valid):
        original = {"fields": {"premise": "a man runs", "hypothesis": "a man moves"}, "label": "entailment"}
        cf = {"fields": {"premise": premise, "hypothesis": "a man moves"}, "valid": valid}
        return json.dumps({"id": premise, "original": original, "counterfactual": cf})

    path = tmp_path / "held-out.jsonl"
    path.write_text("\n".join([row("a man sleeps", True), '{"original": ', row("a man man", "false"), row("x", False)]))
    problems: list[str] = []
    assert [(b, v) for _a, b, v, _c in judged_rows(str(path), problems)] == [("a man sleeps", True), ("x", False)]
    assert problems[0].startswith(f"{path}:2: not valid JSON")
    assert problems[1] == f"{path}:3: counterfactual.valid must be true, false or null, not 'false'"
