"""The kernel moved to ``projects``: foreign keys now name ``projects.*`` (same tables, so
state only), and ProjectMembership belongs to ``projects`` (same table)."""

import django.db.models.deletion
from django.db import migrations, models


def _fk(to, related_name):
    return models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name=related_name, to=to)


class Migration(migrations.Migration):

    dependencies = [
        ("annotate", "0003_next_item_index_excludes_full"),
        ("projects", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.AlterField(model_name="item", name="project", field=_fk("projects.project", "items")),
                migrations.AlterField(model_name="item", name="candidate", field=_fk("projects.candidate", "items")),
                migrations.AlterField(model_name="assignment", name="project", field=_fk("projects.project", "+")),
                migrations.AlterField(model_name="annotation", name="project", field=_fk("projects.project", "+")),
                migrations.DeleteModel(name="ProjectMembership"),
            ],
        ),
    ]
