"""``python manage.py import_task_data --project NAME --format FORMAT [--split SPLIT]
[--label-map OLD=NEW,…] [--clear] PATH…``

Imports **task training data**: labelled examples that train the project's task model f and
nothing else (docs/labelling.md, "Task model"). Any labelled import format: ``labelled-jsonl``
(nli-public's ``{"premise", "hypothesis", "label", "source"}`` lines), ``cad-nli``,
``cad-sentiment``, ``pairs-jsonl``, ``csv``. The rows are kept apart from the pool: never routed,
exported, counted or shown in the data browser. ``--clear`` removes the project's task training
data first.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from labeling.task_training import task_data_clear, task_data_counts, task_data_import
from projects.formats import FORMATS, FormatError, parse_label_map
from projects.models import Project


class Command(BaseCommand):
    help = "Import labelled examples as the project's task training data (kept apart from the pool)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+", metavar="PATH")
        parser.add_argument("--project", required=True)
        parser.add_argument("--format", required=True, choices=[f for f in FORMATS if not f.startswith("coco")])
        parser.add_argument("--split", default="", help="train|dev|test (required for cad-*)")
        parser.add_argument("--label-map", default="", help="OLD=NEW,… renames of labels as written")
        parser.add_argument("--clear", action="store_true", help="remove the project's task training data first")

    def handle(self, *args: Any, **o: Any) -> None:
        project = Project.objects.filter(name=o["project"]).first()
        if project is None:
            raise CommandError(f"no project called {o['project']!r}")
        try:
            label_map = parse_label_map(o["label_map"]) if o["label_map"] else None
        except FormatError as exc:
            raise CommandError(str(exc)) from None
        if o["clear"]:
            self.stdout.write(f"removed {task_data_clear(project=project)} task training examples")
        try:
            out = task_data_import(
                project=project, format=o["format"], paths=o["paths"], split=o["split"], label_map=label_map
            )
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        for msg in out["problem_messages"]:
            self.stderr.write(msg)
        counts = task_data_counts(project=project)
        self.stdout.write(
            f"imported {out['imported']} task training examples ({out['duplicates']} already there, "
            f"{out['problems']} rows with problems, {out['warnings']} warnings); the project now has "
            f"{sum(counts.values())}: " + ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        )
