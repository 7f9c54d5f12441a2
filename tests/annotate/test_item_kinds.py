"""The item-kind registry (issue 20, "the house"): every task maps to one kind, the database's
allowed values come from the registry, each kind brings its templates, answers are validated and
mapped by the kind, and no workflow module tests a kind by its name any more."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from django.template.loader import get_template

from annotate import kinds
from annotate.kinds.caption_choice import CaptionChoice
from annotate.models import Item
from projects.models import TASKS

pytestmark = pytest.mark.postgres_too

ROOT = Path(__file__).resolve().parents[2]


def test_every_task_has_one_kind_and_the_database_allows_exactly_the_registered_ones():
    assert {t: kinds.kind_for_task(t).name for t in TASKS} == {
        "sentiment": "task_label",
        "nli": "task_label",
        "paraphrase": "task_label",
        "boolean-qa": "task_label",
        "image-caption": "caption_choice",
    }
    field = Item._meta.get_field("kind")
    assert [value for value, _ in field.choices] == kinds.ITEM_KINDS == sorted(kinds.KINDS)


@pytest.mark.parametrize("name", sorted(kinds.KINDS))
def test_each_kind_brings_its_item_partial_and_its_instructions(name):
    kind = kinds.kind_named(name)
    get_template(kind.template)
    get_template(kind.instructions_template + "#intro")
    get_template(kind.instructions_template + "#keys")


def test_task_label_answers_are_the_offered_labels_in_project_order():
    kind = kinds.kind_named("task_label")
    order = kind.display_order(["neg", "pos"], swapped=True)  # the draw does not move labels
    assert order == ["neg", "pos", "unclear"]
    assert kind.to_canonical(order, "pos") == "pos"
    assert kind.to_canonical(order, "caption 1") is None
    assert kind.choice_labels(kind.offered(order)) == ["neg", "pos", "Unclear / invalid"]
    assert kinds.kind_of_order(order) is kind
    assert kind.sides(gold=False) == kind.sides(gold=True) == [""]
    assert kind.gold_answers(["neg", "pos"]) == ["neg", "pos"]


def test_caption_answers_map_back_through_the_annotators_order():
    kind = kinds.kind_named("caption_choice")
    order = kind.display_order([], swapped=True)
    assert kind.offered(order) == ["caption 1", "caption 2", "both", "neither"]
    assert kind.to_canonical(order, "caption 1") == "caption_b"
    assert kind.to_canonical(order, "neither") == "neither"
    assert kind.to_canonical(order, "caption_a") is None  # canonical names are not offered
    assert kinds.kind_of_order(order) is kind
    assert kind.sides(gold=False) == ["original", "counterfactual"]
    assert kind.sides(gold=True) == ["counterfactual"]


def test_caption_body_shows_the_image_of_its_side_and_the_captions_in_order():
    source = kinds.ItemSource(
        side="original",
        text_fields=["caption"],
        fields={"caption": "a cat"},
        image="cf.png",
        original_fields={"caption": "a dog"},
        original_image="orig.png",
    )
    kind = CaptionChoice()
    body = kind.body(source, kind.display_order([], swapped=True), lambda p: f"/img/{p}")
    assert body.image == "/img/orig.png"
    assert body.captions == ["a cat", "a dog"]
    assert set(body.as_json()) == {"image", "captions", "instruction"}
    assert kind.choice_text("caption_a", source) == "the caption “a dog”"


def test_a_caption_pair_is_decided_by_its_counterfactual_image_once_both_are_complete():
    kind = kinds.kind_named("caption_choice")
    open_sibling = [
        {"side": "original", "status": "open", "result": "", "result_agreement": None},
        {"side": "counterfactual", "status": "complete", "result": "caption_b", "result_agreement": 1.0},
    ]
    assert kind.candidate_result(result="caption_b", share=1.0, siblings=lambda: open_sibling) is None
    both = [{**open_sibling[0], "status": "complete", "result": "caption_a", "result_agreement": 0.5}, open_sibling[1]]
    assert kind.candidate_result(result="caption_a", share=0.5, siblings=lambda: both) == ("caption_b", 1.0)
    # a task label is its own answer, without reading anything
    assert kinds.kind_named("task_label").candidate_result(result="pos", share=0.7, siblings=list) == ("pos", 0.7)
    assert kind.summarise([(1, "original", "caption_a"), (1, "counterfactual", "caption_b"), (2, "original", "")]) == {
        "complete": 1,
        "worked": 1,
    }


KIND_NAMES = set(kinds.KINDS)


def _kind_name_comparisons(path: Path) -> list[str]:
    """``x == "caption_choice"``-style tests of a kind by its name (or a conditional picking a
    kind name by task), outside the registry."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            consts = [c for c in [node.left, *node.comparators] if isinstance(c, ast.Constant)]
            if any(c.value in KIND_NAMES for c in consts):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
        if isinstance(node, ast.IfExp) and any(
            isinstance(c, ast.Constant) and c.value in KIND_NAMES for c in (node.body, node.orelse)
        ):
            found.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    return found


def test_no_module_outside_the_registry_tests_an_item_kind_by_its_name():
    apps = ["annotate", "projects", "generation", "labeling", "workspace", "config"]
    found = []
    for app in apps:
        for path in sorted((ROOT / app).rglob("*.py")) if (ROOT / app).exists() else []:
            if "kinds" in path.parts or "migrations" in path.parts:
                continue
            found += _kind_name_comparisons(path)
    assert found == [], "ask annotate.kinds instead of comparing kind names: " + ", ".join(found)
    templates = [p for p in (ROOT / "templates").rglob("*.html") if "kinds" not in p.parts]
    named = [str(p.relative_to(ROOT)) for p in templates if any(f'"{k}"' in p.read_text() for k in KIND_NAMES)]
    assert named == []
