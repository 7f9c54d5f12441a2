"""AutolabelRun.known_answers / known_correct: h measured on what it labelled whose answer is known."""

from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("labeling", "0004_task_model"),
    ]

    operations = [
        migrations.AddField(
            model_name="autolabelrun",
            name="known_answers",
            field=models.PositiveIntegerField(
                default=0, help_text="candidates it auto-labelled whose answer is known (a gold label)"
            ),
        ),
        migrations.AddField(
            model_name="autolabelrun",
            name="known_correct",
            field=models.PositiveIntegerField(default=0, help_text="of those, how many h labelled as the answer"),
        ),
    ]
