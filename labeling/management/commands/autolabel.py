"""``python manage.py autolabel --project NAME [--min-confidence P]``

Applies the project's latest pairwise model to its pooled and abstained candidates: those at
or above P become ``auto_labeled`` (with their confidence), the rest ``abstained`` (back to
humans). P defaults to the threshold stored with the model.
"""

from __future__ import annotations

import argparse
import math
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from labeling.models import AutolabelRun
from labeling.services import autolabel, autolabel_summary
from projects.models import Job, Project
from projects.services.jobs import JobCancelled, JobContext, job_run_here


def _prob(value: str) -> float:
    """``--min-confidence``: argparse prints this message (a ValueError's it drops for "invalid
    _prob value")."""
    try:
        p = float(value)
    except ValueError:
        p = math.nan
    if not 0 <= p <= 1:  # NaN fails this too
        raise argparse.ArgumentTypeError("min confidence must be a number between 0 and 1")
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

        def work(ctx: JobContext) -> AutolabelRun:
            return autolabel(
                project=project,
                min_confidence=opts["min_confidence"],
                progress=ctx.progress,
                job=Job.objects.get(pk=ctx.job_id),
                should_stop=ctx.cancel_requested,
            )

        try:  # an autolabel job, listed by `jobs` and the Jobs page as the page's are
            run = job_run_here(
                kind="autolabel",
                project=project,
                params={"min_confidence": opts["min_confidence"]},
                work=work,
                summary=autolabel_summary,
                on_wait=self.stderr.write,
            )
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        except JobCancelled as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(
            f"model v{run.model.version}: considered {run.considered}, auto-labelled {run.auto_labeled}, "
            f"abstained {run.abstained} (below {run.min_confidence:.2f}, or where h did not earn it), "
            f"skipped {run.skipped}; {run.seconds:.1f}s"
        )
        if run.known_answers:
            self.stdout.write(
                f"  against known answers (gold): {run.known_correct} of {run.known_answers} labelled right "
                f"({run.known_correct / run.known_answers:.3f})"
            )
        for v in getattr(run, "held_back", []):
            self.stdout.write(f"  left to humans: {v['held_back']} candidates — {v['reason']}")
