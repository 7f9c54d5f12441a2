"""python manage.py project_stats [--project NAME] [--check]

Recount the per-project candidate aggregates the project page and the dashboard read
(``projects/aggregates.py``), for one project or all; ``--check`` only compares them with a
full recount and lists the cells that differ (exit status 1 when any does)."""

from __future__ import annotations

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from projects.aggregates import project_stats_check, project_stats_recompute
from projects.models import Project


class Command(BaseCommand):
    help = "Recount (or, with --check, compare) the per-project candidate aggregates."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", help="only this project")
        parser.add_argument("--check", action="store_true", help="compare with a full recount; write nothing")

    def handle(self, *args: Any, **opts: Any) -> None:
        projects = Project.objects.order_by("pk")
        if opts["project"]:
            projects = projects.filter(name=opts["project"])
            if not projects.exists():
                raise CommandError(f"no project called {opts['project']!r}")
        differ = 0
        for project in projects:
            start = time.perf_counter()
            if opts["check"]:
                diff = project_stats_check(project_id=project.pk)
                if not diff:
                    self.stdout.write(f"{project.name}: the aggregates equal a full recount")
                    continue
                differ += 1
                self.stdout.write(f"{project.name}: {len(diff)} cells differ (stored, counted):")
                for key, (stored, counted) in sorted(diff.items(), key=str)[:50]:
                    self.stdout.write(f"  {' / '.join(str(k) for k in key)}: {stored} vs {counted}")
            else:
                stats = project_stats_recompute(project_id=project.pk)
                self.stdout.write(
                    f"{project.name}: recounted in {time.perf_counter() - start:.2f} s (version {stats.version})"
                )
        if differ:
            raise CommandError(f"{differ} project(s) differ from a full recount (run without --check to recount)")
