"""python manage.py route --project NAME [--budget 0.1] [--strategy random|stratified|uncertainty|active]"""

from __future__ import annotations

import argparse
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from annotate.services.routing import STRATEGIES, project_route
from projects.models import Project
from projects.validators import validate_budget


def _budget(raw: str) -> float:
    """``--budget``, checked as the route form and API check it."""
    try:
        return validate_budget(raw)
    except ValidationError as exc:
        raise argparse.ArgumentTypeError(" ".join(exc.messages)) from exc


class Command(BaseCommand):
    help = "Pick the human share of a project's pooled candidates and create annotation items (plus gold checks)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--project", required=True, help="project name")
        parser.add_argument(
            "--budget",
            type=_budget,
            default=None,
            help="fraction of the project's candidates for humans (default: the project's budget)",
        )
        parser.add_argument("--strategy", choices=STRATEGIES, default="random")
        parser.add_argument(
            "--gold-rate", type=float, default=None, help="gold items per routed item (default COUNTERPART_GOLD_RATE)"
        )
        parser.add_argument("--seed", type=int, default=None)

    def handle(self, *args: Any, **opts: Any) -> None:
        project = Project.objects.filter(name=opts["project"]).first()
        if project is None:
            raise CommandError(f"no project called {opts['project']!r}")
        try:
            r = project_route(
                project=project,
                budget=opts["budget"],
                strategy=opts["strategy"],
                gold_rate=opts["gold_rate"],
                seed=opts["seed"],
            )
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        for m in r.messages:
            self.stderr.write(self.style.WARNING(m))
        self.stdout.write(
            f"strategy: {r.strategy}; requested {r.requested}, routed {r.routed} candidates "
            f"→ {r.items} items (k={project.annotators_per_item}), {r.gold_items} gold items"
        )
