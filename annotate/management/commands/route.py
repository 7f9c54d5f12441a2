"""python manage.py route --project NAME [--budget 0.1] [--strategy random|stratified|uncertainty|active]"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from dataclasses import asdict
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError

from annotate.services.routing import STRATEGIES, RoutingResult, project_route
from projects.models import Project
from projects.services.jobs import JobCancelled, JobContext, job_run_here
from projects.validators import validate_budget, validate_gold_rate


def _checked(validate: Callable[[str], float]) -> Callable[[str], float]:
    """An argparse type from a validator: ``--budget`` checked as the route form and API check
    it, ``--gold-rate`` as the service does."""

    def parse(raw: str) -> float:
        try:
            return validate(raw)
        except ValidationError as exc:
            raise argparse.ArgumentTypeError(" ".join(exc.messages)) from exc

    return parse


class Command(BaseCommand):
    help = "Pick the human share of a project's pooled candidates and create annotation items (plus gold checks)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("--project", required=True, help="project name")
        parser.add_argument(
            "--budget",
            type=_checked(validate_budget),
            default=None,
            help="fraction of the project's candidates for humans (default: the project's budget)",
        )
        parser.add_argument("--strategy", choices=STRATEGIES, default="random")
        parser.add_argument(
            "--gold-rate",
            type=_checked(validate_gold_rate),
            default=None,
            help="gold items per routed item, 0 to 1 (default COUNTERPART_GOLD_RATE)",
        )
        parser.add_argument("--seed", type=int, default=None)

    def handle(self, *args: Any, **opts: Any) -> None:
        project = Project.objects.filter(name=opts["project"]).first()
        if project is None:
            raise CommandError(f"no project called {opts['project']!r}")
        params = {k: opts[k] for k in ("budget", "strategy", "gold_rate", "seed")}

        def work(ctx: JobContext) -> RoutingResult:
            result = project_route(project=project, **params, should_stop=ctx.cancel_requested)
            ctx.progress(result.routed, result.requested)  # as the page's route job reports it
            return result

        try:  # a route job, listed by `jobs` and the Jobs page as the page's are
            r = job_run_here(
                kind="route", project=project, params=params, work=work, summary=asdict, on_wait=self.stderr.write
            )
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from exc
        except JobCancelled as exc:
            raise CommandError(str(exc)) from None
        for m in r.messages:
            self.stderr.write(self.style.WARNING(m))
        self.stdout.write(
            f"strategy: {r.strategy}; requested {r.requested}, routed {r.routed} candidates "
            f"→ {r.items} items (k={project.annotators_per_item}), {r.gold_items} gold items"
        )
