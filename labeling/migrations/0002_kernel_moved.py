"""The kernel moved to ``projects``: foreign keys now name ``projects.project`` (same table,
so state only)."""

import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("labeling", "0001_pairwise_models"),
        ("projects", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(
                    model_name="pairwisemodel", name="project",
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                            related_name="pairwise_models", to="projects.project"),
                ),
                migrations.AlterField(
                    model_name="autolabelrun", name="project",
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                            related_name="autolabel_runs", to="projects.project"),
                ),
            ],
        ),
    ]
