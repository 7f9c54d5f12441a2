"""A database created before the kernel moved out of ``generation``/``annotate`` (and before
jobs existed) migrates to the new layout with its data intact: the test rolls the schema
back to the old migration state, fills it through the historical models, migrates forward,
and reads everything back through today's models. Runs on SQLite and on PostgreSQL."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

pytestmark = pytest.mark.postgres_too

OLD = [
    ("generation", "0001_initial"),
    ("annotate", "0003_next_item_index_excludes_full"),
    ("labeling", "0001_pairwise_models"),
    ("auth", "0012_alter_user_first_name_max_length"),
]


def _migrate(targets):
    executor = MigrationExecutor(connection)
    executor.loader.build_graph()
    executor.migrate(targets)
    return executor.loader.project_state(targets).apps


@pytest.mark.django_db(transaction=True)
def test_old_database_migrates_to_the_kernel_layout_with_its_rows():
    old = _migrate(OLD)
    User = old.get_model("auth", "User")
    Project = old.get_model("generation", "Project")
    Label = old.get_model("generation", "Label")
    Example = old.get_model("generation", "Example")
    Candidate = old.get_model("generation", "Candidate")
    Run = old.get_model("generation", "GenerationRun")
    Membership = old.get_model("annotate", "ProjectMembership")
    Item = old.get_model("annotate", "Item")
    PairwiseModel = old.get_model("labeling", "PairwiseModel")

    user = User.objects.create(username="res")
    project = Project.objects.create(name="old", task="nli", text_fields=["premise", "hypothesis"], created_by=user)
    labels = {
        n: Label.objects.create(project=project, name=n, position=i)
        for i, n in enumerate(["entailment", "neutral", "contradiction"])
    }
    ex = Example.objects.create(
        project=project,
        external_id="e1",
        fields={"premise": "p", "hypothesis": "h"},
        label=labels["neutral"],
        split="dev",
    )
    started = timezone.now() - timedelta(hours=2)
    run = Run.objects.create(
        project=project,
        generator="rules",
        options={"seed": 3},
        status="succeeded",
        total=1,
        done=1,
        skipped=0,
        metrics={"candidates": 2},
        error="",
        created_by=user,
        started_at=started,
        finished_at=started + timedelta(minutes=5),
    )
    failed = Run.objects.create(
        project=project, generator="llm-prompt", status="failed", total=1, done=0, error="no model configured"
    )
    generated = Candidate.objects.create(
        project=project,
        external_id=f"{run.pk}:e1:0",
        example=ex,
        fields={"premise": "p", "hypothesis": "not h"},
        generator="rules",
        perturbation="negation",
        state="human_labeled",
        label=labels["contradiction"],
        label_source="human",
        generation_run=run,
    )
    imported = Candidate.objects.create(
        project=project,
        external_id="imp-1",
        example=ex,
        fields={"premise": "p2", "hypothesis": "h"},
        state="pooled",
        gold_label=labels["entailment"],
    )
    Membership.objects.create(
        project=project, user=user, gold_answered=4, gold_correct=3, flagged=True, flag_reason="slow"
    )
    Item.objects.create(project=project, candidate=generated, kind="task_label", k=3, priority=7)
    PairwiseModel.objects.create(
        project=project,
        mode="capc",
        version=1,
        n_train=10,
        cv_accuracy=0.8,
        cv_macro_f1=0.7,
        cv_ece=0.04,
        threshold=0.7,
        path="/x.joblib",
    )

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    from annotate.models import Item as NewItem
    from generation.models import GenerationRun
    from labeling.models import PairwiseModel as NewPairwiseModel
    from projects.models import Candidate as NewCandidate
    from projects.models import Job, ProjectMembership
    from projects.models import Project as NewProject

    p = NewProject.objects.get(pk=project.pk)
    assert (p.name, p.task, p.created_by.username) == ("old", "nli", "res")
    assert list(p.labels.values_list("name", flat=True)) == ["entailment", "neutral", "contradiction"]
    assert p.examples.get().label.name == "neutral" and p.examples.get().split == "dev"

    r = GenerationRun.objects.select_related("job").get(pk=run.pk)
    assert (r.generator, r.options, r.metrics) == ("rules", {"seed": 3}, {"candidates": 2})
    assert (r.status, r.done, r.total, r.created_by.username) == ("succeeded", 1, 1, "res")
    assert r.job.kind == "generation" and r.job.project_id == project.pk
    assert r.started_at == started and r.finished_at == started + timedelta(minutes=5)
    assert r.created_at == run.created_at
    f = GenerationRun.objects.get(pk=failed.pk)
    assert (f.status, f.error) == ("failed", "no model configured")
    assert Job.objects.count() == 2

    c = NewCandidate.objects.get(pk=generated.pk)
    assert c.job_id == r.job_id and c.label.name == "contradiction" and c.state == "human_labeled"
    assert NewCandidate.objects.get(pk=imported.pk).job_id is None
    assert NewCandidate.objects.get(pk=imported.pk).gold_label.name == "entailment"
    m = ProjectMembership.objects.get()
    assert (m.user.username, m.gold_answered, m.gold_correct, m.flagged, m.flag_reason) == ("res", 4, 3, True, "slow")
    assert NewItem.objects.get().candidate_id == generated.pk
    assert NewPairwiseModel.objects.get().project_id == project.pk
    # the old column is gone, the tables kept their names
    with connection.cursor() as cur:
        cols = [col.name for col in connection.introspection.get_table_description(cur, "generation_candidate")]
    assert "job_id" in cols and "generation_run_id" not in cols
    # new rows still get fresh ids after the copied ones (PostgreSQL sequences)
    assert Job.objects.create(kind="export", project=p).pk > r.job_id
