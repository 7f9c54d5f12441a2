"""``Candidate.job`` replaced the old ``generation_run_id`` column (generation 0002 copied the
values across): drop it, with its foreign key."""

from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ("projects", "0001_initial"),
        ("generation", "0003_kernel_moved"),
    ]

    operations = [
        migrations.RemoveField(model_name="candidate", name="old_generation_run"),
    ]
