"""Every generation run becomes a ``projects.Job`` of kind ``generation``: its lifecycle
(status, done/total, error, who started it, timestamps) moves onto the job, the run keeps what
only a run has. Each run's candidates point to its job (``Candidate.job``)."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

LIFECYCLE = ("status", "done", "total", "error", "cancel_requested", "started_at", "finished_at", "created_by_id")


def runs_to_jobs(apps, schema_editor):
    Run = apps.get_model("generation", "GenerationRun")
    Job = apps.get_model("projects", "Job")
    qn = schema_editor.connection.ops.quote_name
    for run in Run.objects.order_by("pk").iterator():
        job = Job.objects.create(
            kind="generation", project_id=run.project_id, params={"generator": run.generator},
            **{f: getattr(run, f) for f in LIFECYCLE},
        )
        Job.objects.filter(pk=job.pk).update(created_at=run.created_at, enqueued_at=run.created_at)
        Run.objects.filter(pk=run.pk).update(job=job)
        schema_editor.execute(
            f"UPDATE {qn('generation_candidate')} SET {qn('job_id')} = %s WHERE {qn('generation_run_id')} = %s",
            [job.pk, run.pk],
        )
    if schema_editor.connection.vendor == "postgresql":
        # Fire the deferred foreign-key checks now: PostgreSQL refuses the ALTER TABLEs below
        # while a table has pending trigger events in this transaction.
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")


def jobs_to_runs(apps, schema_editor):
    Run = apps.get_model("generation", "GenerationRun")
    for run in Run.objects.select_related("job").iterator():
        Run.objects.filter(pk=run.pk).update(created_at=run.job.created_at,
                                             **{f: getattr(run.job, f) for f in LIFECYCLE})


class Migration(migrations.Migration):

    dependencies = [
        ("generation", "0001_initial"),
        ("projects", "0001_initial"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.AddField(
            model_name="generationrun",
            name="job",
            field=models.OneToOneField(null=True, on_delete=django.db.models.deletion.CASCADE,
                                       related_name="generation_run", to="projects.job"),
        ),
        migrations.RunPython(runs_to_jobs, jobs_to_runs),
        migrations.RemoveConstraint(model_name="generationrun", name="run_status_valid"),
        migrations.RemoveField(model_name="generationrun", name="status"),
        migrations.RemoveField(model_name="generationrun", name="done"),
        migrations.RemoveField(model_name="generationrun", name="total"),
        migrations.RemoveField(model_name="generationrun", name="error"),
        migrations.RemoveField(model_name="generationrun", name="cancel_requested"),
        migrations.RemoveField(model_name="generationrun", name="started_at"),
        migrations.RemoveField(model_name="generationrun", name="finished_at"),
        migrations.RemoveField(model_name="generationrun", name="created_at"),
        migrations.RemoveField(model_name="generationrun", name="created_by"),
        migrations.AlterField(
            model_name="generationrun",
            name="job",
            field=models.OneToOneField(on_delete=django.db.models.deletion.CASCADE,
                                       related_name="generation_run", to="projects.job"),
        ),
        migrations.AlterModelOptions(name="generationrun", options={"ordering": ["-job__created_at", "-id"]}),
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name="generationrun",
                    name="project",
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                            related_name="generation_runs", to="projects.project"),
                ),
            ],
        ),
    ]
