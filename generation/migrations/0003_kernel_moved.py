"""Project, Label, Example and Candidate now belong to the ``projects`` app (same tables):
drop them from this app's migration state only."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("generation", "0002_generationrun_job"),
        ("annotate", "0004_kernel_moved"),
        ("labeling", "0002_kernel_moved"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.DeleteModel(name="Candidate"),
                migrations.DeleteModel(name="Example"),
                migrations.DeleteModel(name="Label"),
                migrations.DeleteModel(name="Project"),
            ],
        ),
    ]
