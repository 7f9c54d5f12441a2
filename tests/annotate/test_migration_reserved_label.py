"""Projects created before the label name ``unclear`` was refused (commit 7475ea8) still carried
such a label: the items offered it twice, beside the reserved "Unclear / invalid" answer, and
the annotation-quality figures failed on the repeated choice (``ValueError`` from the agreement
functions, a 500 on the page and its API). Migration ``annotate 0005`` renames the label and
what holds its name; this test builds such projects on the schema before it, migrates, and reads
them back through today's code."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

pytestmark = pytest.mark.postgres_too

BEFORE = [("annotate", "0004_kernel_moved"), ("projects", "0009_job_kind_task_model")]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


def _project(apps, name, labels):
    Project = apps.get_model("projects", "Project")
    Label = apps.get_model("projects", "Label")
    Example = apps.get_model("projects", "Example")
    Candidate = apps.get_model("projects", "Candidate")
    p = Project.objects.create(name=name, task="nli", text_fields=["premise", "hypothesis"], annotators_per_item=2)
    rows = {n: Label.objects.create(project=p, name=n, position=i) for i, n in enumerate(labels)}
    ex = Example.objects.create(project=p, external_id="e", fields={"premise": "p", "hypothesis": "h"})
    cands = [
        Candidate.objects.create(
            project=p, example=ex, external_id=f"c{i}", fields={"premise": "p", "hypothesis": f"h{i}"}
        )
        for i in range(3)
    ]
    return p, rows, cands


def _answer(apps, project, item, user, choice, order):
    Assignment = apps.get_model("annotate", "Assignment")
    Annotation = apps.get_model("annotate", "Annotation")
    now = timezone.now()
    a = Assignment.objects.create(
        project=project,
        item=item,
        annotator=user,
        status="submitted",
        display_order=order,
        expires_at=now + timedelta(minutes=5),
        finished_at=now,
    )
    Annotation.objects.create(
        project=project,
        assignment=a,
        item=item,
        annotator=user,
        choice=choice,
        shown_choice=choice,
        display_order=order,
        is_gold=item.is_gold,
        correct=(choice == item.gold_choice) if item.is_gold else None,
    )


@pytest.mark.django_db(transaction=True)
def test_old_projects_with_a_label_named_unclear_migrate_to_a_free_name():
    old = _migrate(BEFORE)
    User = old.get_model("auth", "User")
    Item = old.get_model("annotate", "Item")
    u1, u2 = User.objects.create(username="a1"), User.objects.create(username="a2")

    # 1. "Unclear" (another case): its answers name the label, not the reserved answer
    cased, _, cands = _project(old, "cased", ["pos", "Unclear", "Unclear_label"])
    order = ["pos", "Unclear", "Unclear_label", "unclear"]
    item = Item.objects.create(project=cased, candidate=cands[0], kind="task_label", k=2, taken=2, done=2, priority=1)
    _answer(old, cased, item, u1, "Unclear", order)
    _answer(old, cased, item, u2, "unclear", order)
    done = Item.objects.create(
        project=cased,
        candidate=cands[1],
        kind="task_label",
        k=2,
        taken=2,
        done=2,
        priority=2,
        status="complete",
        result="Unclear",
    )
    _answer(old, cased, done, u1, "Unclear", order)
    _answer(old, cased, done, u2, "Unclear", order)

    # 2. exactly "unclear": offered twice, answers indistinguishable from the reserved one
    exact, _, cands = _project(old, "exact", ["entailment", "unclear", "contradiction"])
    order2 = ["entailment", "unclear", "contradiction", "unclear"]
    item2 = Item.objects.create(project=exact, candidate=cands[0], kind="task_label", k=2, taken=2, done=2, priority=1)
    _answer(old, exact, item2, u1, "unclear", order2)
    _answer(old, exact, item2, u2, "entailment", order2)
    gold = Item.objects.create(
        project=exact,
        candidate=cands[1],
        kind="task_label",
        k=2,
        taken=1,
        done=1,
        priority=2,
        is_gold=True,
        gold_choice="unclear",
    )
    _answer(old, exact, gold, u1, "unclear", order2)

    # 3. a project without the problem is left alone
    _project(old, "fine", ["entailment", "neutral", "contradiction"])

    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(executor.loader.graph.leaf_nodes())

    from annotate import selectors
    from annotate.models import Annotation, Assignment
    from annotate.models import Item as NewItem
    from projects.models import Label, Project

    def names(project_name):
        rows = Label.objects.filter(project__name=project_name).order_by("position")
        return list(rows.values_list("name", flat=True))

    assert names("cased") == ["pos", "Unclear_label_2", "Unclear_label"]
    assert names("exact") == ["entailment", "unclear_label", "contradiction"]
    assert names("fine") == ["entailment", "neutral", "contradiction"]

    c = Project.objects.get(name="cased")
    assert sorted(Annotation.objects.filter(project=c).values_list("choice", flat=True)) == [
        "Unclear_label_2",
        "Unclear_label_2",
        "Unclear_label_2",
        "unclear",
    ]
    assert set(Annotation.objects.filter(project=c).values_list("shown_choice", flat=True)) == {
        "Unclear_label_2",
        "unclear",
    }
    assert NewItem.objects.get(project=c, status="complete").result == "Unclear_label_2"
    new_order = ["pos", "Unclear_label_2", "Unclear_label", "unclear"]
    assert {tuple(o) for o in Assignment.objects.filter(project=c).values_list("display_order", flat=True)} == {
        tuple(new_order)
    }
    assert {tuple(o) for o in Annotation.objects.filter(project=c).values_list("display_order", flat=True)} == {
        tuple(new_order)
    }

    e = Project.objects.get(name="exact")
    assert sorted(Annotation.objects.filter(project=e).values_list("choice", flat=True)) == [
        "entailment",
        "unclear",
        "unclear",
    ]
    assert NewItem.objects.get(project=e, is_gold=True).gold_choice == "unclear_label"
    expected = ["entailment", "unclear_label", "contradiction", "unclear"]
    assert {tuple(o) for o in Assignment.objects.filter(project=e).values_list("display_order", flat=True)} == {
        tuple(expected)
    }

    # today's code reads them: the quality figures no longer fail on a repeated choice
    for p in (c, e):
        q = selectors.project_quality(project=p)
        assert len(q["choices"]) == len(set(q["choices"])) == 4
        assert q["agreement"] is not None
