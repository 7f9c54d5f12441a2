"""``python manage.py autolabel --project NAME [--min-confidence P]``

Applies the project's latest pairwise model to its pooled and abstained candidates: those at
or above P become ``auto_labeled`` (with their confidence), the rest ``abstained`` (back to
humans). P defaults to the threshold stored with the model.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from labeling.services import autolabel
from projects.models import Project


def _prob(value: str) -> float:
    p = float(value)
    if not 0 <= p <= 1:
        raise ValueError("must be between 0 and 1")
    return p


class Command(BaseCommand):
    help = "Label a project's unlabelled candidates with its latest pairwise model."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True)
        parser.add_argument("--min-confidence", type=_prob, default=None, metavar="P")

    def handle(self, *args: Any, **opts: Any) -> None:
        project = Project.objects.filter(name=opts["project"]).first()
        if project is None:
            raise CommandError(f"no project called {opts['project']!r}")
        try:
            run = autolabel(project=project, min_confidence=opts["min_confidence"])
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        self.stdout.write(
            f"model v{run.model.version}: considered {run.considered}, auto-labelled {run.auto_labeled}, "
            f"abstained {run.abstained} (below {run.min_confidence:.2f}, or where h did not earn it), "
            f"skipped {run.skipped}; {run.seconds:.1f}s"
        )
        for v in getattr(run, "held_back", []):
            self.stdout.write(f"  left to humans: {v['held_back']} candidates — {v['reason']}")
