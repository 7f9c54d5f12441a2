"""The kernel app takes over the tables of Project, Label, Example, Candidate (from
``generation``) and ProjectMembership (from ``annotate``) without touching them
(``SeparateDatabaseAndState``: state only, same table names), and adds the one background-job
table and ``Candidate.job``."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        ("generation", "0001_initial"),
        ("annotate", "0003_next_item_index_excludes_full"),
        ("labeling", "0001_pairwise_models"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[],
            state_operations=[
                migrations.CreateModel(
                    name='Project',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=200, unique=True)),
                        ('task', models.CharField(choices=[('sentiment', 'sentiment'), ('nli', 'nli'), ('paraphrase', 'paraphrase'), ('boolean-qa', 'boolean-qa'), ('image-caption', 'image-caption')], max_length=32)),
                        ('text_fields', models.JSONField(help_text="ordered list of the task's text field names")),
                        ('human_budget', models.FloatField(default=0.1)),
                        ('annotators_per_item', models.PositiveSmallIntegerField(default=3)),
                        ('description', models.TextField(blank=True, default='')),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'generation_project',
                        'ordering': ['name'],
                    },
                ),
                migrations.CreateModel(
                    name='Label',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('name', models.CharField(max_length=64)),
                        ('position', models.PositiveSmallIntegerField()),
                        ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='labels', to='projects.project')),
                    ],
                    options={
                        'db_table': 'generation_label',
                        'ordering': ['project_id', 'position'],
                    },
                ),
                migrations.CreateModel(
                    name='Example',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('external_id', models.CharField(max_length=200)),
                        ('fields', models.JSONField()),
                        ('image', models.CharField(blank=True, default='', max_length=500)),
                        ('source', models.CharField(blank=True, default='', max_length=200)),
                        ('split', models.CharField(blank=True, default='', max_length=32)),
                        ('meta', models.JSONField(blank=True, default=dict)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('label', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.label')),
                        ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='examples', to='projects.project')),
                    ],
                    options={
                        'db_table': 'generation_example',
                        'ordering': ['id'],
                    },
                ),
                migrations.CreateModel(
                    name='Candidate',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('external_id', models.CharField(max_length=200)),
                        ('group', models.CharField(blank=True, default='', max_length=200)),
                        ('fields', models.JSONField()),
                        ('image', models.CharField(blank=True, default='', help_text='image of the counterfactual caption', max_length=500)),
                        ('generator', models.CharField(blank=True, default='', max_length=64)),
                        ('perturbation', models.CharField(blank=True, default='', max_length=32)),
                        ('scores', models.JSONField(blank=True, default=dict)),
                        ('state', models.CharField(choices=[('generated', 'generated'), ('filtered_out', 'filtered_out'), ('pooled', 'pooled'), ('routed', 'routed'), ('human_labeled', 'human_labeled'), ('auto_labeled', 'auto_labeled'), ('abstained', 'abstained')], default='pooled', max_length=16)),
                        ('label_source', models.CharField(blank=True, default='', max_length=16)),
                        ('confidence', models.FloatField(blank=True, null=True)),
                        ('meta', models.JSONField(blank=True, default=dict)),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('example', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='candidates', to='projects.example')),
                        # The old generation_run_id column, adopted as a plain integer until 0002 drops it
                        # (Candidate.job replaces it; generation 0002 copies the values across).
                        ('old_generation_run', models.BigIntegerField(blank=True, db_column='generation_run_id', db_index=True, null=True)),
                        ('gold_label', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.label')),
                        ('label', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.label')),
                        ('target_label', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.PROTECT, related_name='+', to='projects.label')),
                        ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='candidates', to='projects.project')),
                    ],
                    options={
                        'db_table': 'generation_candidate',
                        'ordering': ['id'],
                    },
                ),
                migrations.CreateModel(
                    name='ProjectMembership',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('created_at', models.DateTimeField(auto_now_add=True)),
                        ('gold_answered', models.PositiveIntegerField(default=0)),
                        ('gold_correct', models.PositiveIntegerField(default=0)),
                        ('qualified_at', models.DateTimeField(blank=True, null=True)),
                        ('flagged', models.BooleanField(default=False)),
                        ('flag_reason', models.CharField(blank=True, default='', max_length=300)),
                        ('project', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to='projects.project')),
                        ('user', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='memberships', to=settings.AUTH_USER_MODEL)),
                    ],
                    options={
                        'db_table': 'annotate_projectmembership',
                    },
                ),
                migrations.AddConstraint(
                    model_name='project',
                    constraint=models.CheckConstraint(condition=models.Q(('task__in', ['sentiment', 'nli', 'paraphrase', 'boolean-qa', 'image-caption'])), name='project_task_valid'),
                ),
                migrations.AddConstraint(
                    model_name='project',
                    constraint=models.CheckConstraint(condition=models.Q(('human_budget__gte', 0), ('human_budget__lte', 1)), name='project_budget_0_1'),
                ),
                migrations.AddConstraint(
                    model_name='project',
                    constraint=models.CheckConstraint(condition=models.Q(('annotators_per_item__gte', 1)), name='project_k_ge_1'),
                ),
                migrations.AddConstraint(
                    model_name='label',
                    constraint=models.UniqueConstraint(fields=('project', 'name'), name='label_unique_name'),
                ),
                migrations.AddConstraint(
                    model_name='label',
                    constraint=models.UniqueConstraint(fields=('project', 'position'), name='label_unique_position'),
                ),
                migrations.AddConstraint(
                    model_name='example',
                    constraint=models.UniqueConstraint(fields=('project', 'external_id'), name='example_unique_id'),
                ),
                migrations.AddIndex(
                    model_name='candidate',
                    index=models.Index(fields=['project', 'state'], name='candidate_project_state'),
                ),
                migrations.AddIndex(
                    model_name='candidate',
                    index=models.Index(fields=['example'], name='candidate_example'),
                ),
                migrations.AddConstraint(
                    model_name='candidate',
                    constraint=models.UniqueConstraint(fields=('project', 'external_id'), name='candidate_unique_id'),
                ),
                migrations.AddConstraint(
                    model_name='candidate',
                    constraint=models.CheckConstraint(condition=models.Q(('state__in', ['generated', 'filtered_out', 'pooled', 'routed', 'human_labeled', 'auto_labeled', 'abstained'])), name='candidate_state_valid'),
                ),
                migrations.AddConstraint(
                    model_name='candidate',
                    constraint=models.CheckConstraint(condition=models.Q(('label_source__in', ['', 'human', 'auto', 'gold', 'imported'])), name='candidate_label_source_valid'),
                ),
                migrations.AddConstraint(
                    model_name='candidate',
                    constraint=models.CheckConstraint(condition=models.Q(('confidence__isnull', True), models.Q(('confidence__gte', 0), ('confidence__lte', 1)), _connector='OR'), name='candidate_confidence_0_1'),
                ),
                migrations.AddConstraint(
                    model_name='candidate',
                    constraint=models.CheckConstraint(condition=models.Q(models.Q(('label__isnull', True), ('label_source', '')), models.Q(('label__isnull', False), models.Q(('label_source', ''), _negated=True)), _connector='OR'), name='candidate_label_has_source'),
                ),
                migrations.AddConstraint(
                    model_name='candidate',
                    constraint=models.CheckConstraint(condition=models.Q(models.Q(('state__in', ['human_labeled', 'auto_labeled']), _negated=True), ('label__isnull', False), _connector='OR'), name='candidate_labeled_state_has_label'),
                ),
                migrations.AddConstraint(
                    model_name='projectmembership',
                    constraint=models.UniqueConstraint(fields=('project', 'user'), name='membership_unique'),
                ),
                migrations.AddConstraint(
                    model_name='projectmembership',
                    constraint=models.CheckConstraint(condition=models.Q(('gold_correct__lte', models.F('gold_answered'))), name='membership_gold_le'),
                ),
            ],
        ),
        migrations.CreateModel(
            name='Job',
            fields=[
                ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                ('kind', models.CharField(choices=[('generation', 'generation'), ('train', 'train'), ('autolabel', 'autolabel'), ('route', 'route'), ('export', 'export'), ('evaluate', 'evaluate')], max_length=16)),
                ('status', models.CharField(choices=[('queued', 'queued'), ('running', 'running'), ('succeeded', 'succeeded'), ('failed', 'failed'), ('cancelled', 'cancelled')], default='queued', max_length=16)),
                ('params', models.JSONField(blank=True, default=dict, help_text="the job's arguments")),
                ('done', models.PositiveIntegerField(default=0)),
                ('total', models.PositiveIntegerField(default=0)),
                ('result', models.JSONField(blank=True, default=dict, help_text='summary written when the job ends')),
                ('error', models.TextField(blank=True, default='')),
                ('cancel_requested', models.BooleanField(default=False)),
                ('attempts', models.PositiveSmallIntegerField(default=0)),
                ('token', models.CharField(blank=True, default='', max_length=32)),
                ('created_at', models.DateTimeField(auto_now_add=True)),
                ('enqueued_at', models.DateTimeField(blank=True, null=True)),
                ('started_at', models.DateTimeField(blank=True, null=True)),
                ('heartbeat_at', models.DateTimeField(blank=True, null=True)),
                ('finished_at', models.DateTimeField(blank=True, null=True)),
                ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                ('project', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.CASCADE, related_name='jobs', to='projects.project')),
            ],
            options={
                'ordering': ['-created_at', '-id'],
            },
        ),
        migrations.AddIndex(
            model_name='job',
            index=models.Index(fields=['status', 'heartbeat_at'], name='job_status_heartbeat'),
        ),
        migrations.AddIndex(
            model_name='job',
            index=models.Index(fields=['project', 'kind', '-created_at'], name='job_project_kind'),
        ),
        migrations.AddConstraint(
            model_name='job',
            constraint=models.CheckConstraint(condition=models.Q(('kind__in', ['generation', 'train', 'autolabel', 'route', 'export', 'evaluate'])), name='job_kind_valid'),
        ),
        migrations.AddConstraint(
            model_name='job',
            constraint=models.CheckConstraint(condition=models.Q(('status__in', ['queued', 'running', 'succeeded', 'failed', 'cancelled'])), name='job_status_valid'),
        ),
        migrations.AddField(
            model_name='candidate',
            name='job',
            field=models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='candidates', to='projects.job'),
        ),
    ]
