"""bench_train_warm's refusals (the timing itself is a benchmark, never asserted)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db

ROWS = [
    ("a man runs in the park", "a man runs", "entailment"),
    ("a woman is in the field", "a dog sleeps", "neutral"),
    ("the boy is not in the park", "a boy runs", "contradiction"),
]


def test_a_warm_split_the_cad_folder_lacks_is_a_command_error(tmp_path, settings):
    """``--warm cad-nli:test`` on a shared folder without CAD-NLI test printed the service's
    ValidationError as a traceback; now a CommandError, and nothing is left in the database."""
    from projects.models import Project

    nli = tmp_path / "cad" / "NLI"
    for part in ("original", "revised_premise", "revised_hypothesis"):
        (nli / part).mkdir(parents=True)
    head = "sentence1\tsentence2\tgold_label\n"
    (nli / "original" / "dev.tsv").write_text(head + "".join(f"{p}\t{h}\t{y}\n" for p, h, y in ROWS))
    premise = "".join(f"{p} x\t{h}\tneutral\n{p} y\t{h}\tcontradiction\n" for p, h, _ in ROWS)
    hypothesis = "".join(f"{p}\t{h} x\tneutral\n{p}\t{h} y\tentailment\n" for p, h, _ in ROWS)
    (nli / "revised_premise" / "dev.tsv").write_text(head + premise)
    (nli / "revised_hypothesis" / "dev.tsv").write_text(head + hypothesis)
    settings.COUNTERPART = {**settings.COUNTERPART, "SHARED_DATA_DIR": str(tmp_path)}
    with pytest.raises(CommandError, match="split 'test'"):
        call_command("bench_train_warm", "--warm", "cad-nli:test", "--pairs", "12", stdout=StringIO())
    assert not Project.objects.filter(name__startswith="bench-warm-").exists()
