"""``python manage.py researcher_answers [--project NAME] [--json]``

Read-only: per project, the stored answers of researchers and admins who hold no annotator
membership of it now — answers given before only annotator members could answer (commit
68d4e56) — how many sit on open items and on items already aggregated, and the candidates of
those. Nothing is changed: see docs/annotation.md ("Answers stored before the rule") for why
and what a researcher can do about them.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotate.selectors import answers_outside_annotators
from projects.models import Project


class Command(BaseCommand):
    help = "List answers by researchers/admins who are not annotator members of the project (read-only)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", help="one project (default: every project)")
        parser.add_argument("--json", action="store_true", help="one JSON array on the last line")

    def handle(self, *args: Any, **opts: Any) -> None:
        projects = Project.objects.order_by("name")
        if opts["project"]:
            projects = projects.filter(name=opts["project"])
            if not projects.exists():
                raise CommandError(f"no project called {opts['project']!r}")
        found = [answers_outside_annotators(project=p) for p in projects]
        found = [f for f in found if f.by_user]
        if opts["json"]:
            self.stdout.write(json.dumps([asdict(f) for f in found]))
            return
        if not found:
            self.stdout.write("no answers by researchers or admins outside the annotator members")
            return
        for f in found:
            who = ", ".join(f"{u} {n}" for u, n in f.by_user.items())
            self.stdout.write(
                f"{f.project}: {sum(f.by_user.values())} answers by non-annotators ({who}); "
                f"{f.on_open_items} on open items, {f.on_closed_items} on aggregated items "
                f"(candidates {', '.join(map(str, f.candidates[:20]))}{' …' if len(f.candidates) > 20 else ''})"
            )
