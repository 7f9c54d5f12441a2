"""Issue 30: edited NLI examples whose label is known by construction, for training f on what
generated candidates look like (``labeling/ml/edited_pairs.py``, ``train_task_model --edited``)."""

from __future__ import annotations

import json

import pytest

from labeling import task_training as T
from labeling.ml.edited_pairs import deletions, edited_examples, negate
from projects.ml.textkeys import text_hash
from projects.models import Candidate, Example
from projects.services.projects import project_create

pytestmark = pytest.mark.postgres_too

LABELS = ["entailment", "neutral", "contradiction"]


def test_negation_and_monotone_deletion():
    assert negate("A man is sleeping on a bench.") == "A man is not sleeping on a bench."
    assert negate("Dogs run.") is None  # no auxiliary: skipped, not guessed
    assert negate("A man is not sleeping.") is None  # already negative
    assert deletions("A young man is running.") == ["A man is running."]
    assert deletions("No young man is running.") == []  # downward context: deletion would not entail
    assert deletions("The man is young.") == []  # a predicate, not a modifier of the next word


def test_labels_follow_the_edit_and_the_rules_are_mixed():
    records = [
        {
            "premise": "A young man is running in the park.",
            "hypothesis": "A young man is running.",
            "label": "entailment",
        },
        {"premise": "Two dogs are playing.", "hypothesis": "Cats are sleeping.", "label": "contradiction"},
        {"premise": "A woman is singing.", "hypothesis": "A woman is singing loudly.", "label": "neutral"},
    ]
    made = edited_examples(records, LABELS, limit=100)
    by = {(e.fields["premise"], e.fields["hypothesis"]): (e.label, e.rule) for e in made}
    assert by[("A young man is running in the park.", "A young man is not running.")] == ("contradiction", "negation")
    assert by[("A young man is running in the park.", "A man is running.")] == ("entailment", "deletion")
    assert by[("Two dogs are playing.", "Two dogs are not playing.")] == ("contradiction", "negated-copy")
    assert by[("A woman is singing.", "A woman is singing.")] == ("entailment", "copy")
    # only entailed hypotheses are negated or shortened: a neutral or contradicted one is not
    assert not any(e.fields["hypothesis"].startswith("Cats") or "loudly" in e.fields["hypothesis"] for e in made)
    first4 = [e.rule for e in edited_examples(records, LABELS, limit=4)]
    assert first4 == ["negation", "deletion", "negated-copy", "copy"]
    with pytest.raises(ValueError):
        edited_examples(records, ["positive", "negative"], limit=3)


@pytest.mark.django_db
def test_train_task_model_adds_them_but_never_a_text_of_the_pool(tmp_path):
    project = project_create(name="edits", task="nli")
    rows = [
        ("A young man is running in the park.", "A young man is running.", "entailment"),
        ("A girl is reading a book.", "A girl is reading.", "entailment"),
        ("Two dogs are playing.", "Cats are sleeping.", "contradiction"),
    ]
    f = tmp_path / "task.jsonl"
    f.write_text("\n".join(json.dumps({"premise": p, "hypothesis": h, "label": y}) for p, h, y in rows))
    T.task_data_import(project=project, format="labelled-jsonl", paths=[str(f)])
    # a pool candidate that is one of the edits: it must not be trained on
    ex = Example.objects.create(project=project, external_id="o", fields={"premise": "x", "hypothesis": "y"})
    pooled = {"premise": "A girl is reading a book.", "hypothesis": "A girl is not reading."}
    Candidate.objects.create(project=project, example=ex, external_id="c", fields=pooled)
    recs, ys, info = T.task_training_set(project=project, edited=50)
    assert info["task_data"] == 3 and info["edited"] == len(recs) - 3 > 0
    fields = list(project.text_fields)
    assert text_hash(pooled, fields) not in {text_hash(r, fields) for r in recs}
    assert ("A young man is not running.", "contradiction") in {
        (r["hypothesis"], y) for r, y in zip(recs, ys, strict=True)
    }
    assert T.task_training_set(project=project)[2]["edited"] == 0
