"""python manage.py jobs [--project NAME] [--kind KIND] [--limit N] [--json]
python manage.py jobs --declare-queues

Background jobs, newest first (docs/formats.md §3: with ``--json`` the last line of stdout is a
JSON array of ``{id, kind, project, status, done, total, error, started_at, finished_at, …}``).
``--declare-queues`` lists no jobs: it declares every job queue in the broker, once, before the
workers and the web app start (``scripts/run.sh``, ``scripts/workers.sh``; docs/operations.md)."""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from projects.models import JOB_KINDS, Project
from projects.selectors import job_as_dict, jobs_list
from projects.services.jobs import BrokerUnavailable, job_queues_declare


class Command(BaseCommand):
    help = f"List background jobs ({', '.join(JOB_KINDS)}) and their progress."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", help="only this project's jobs")
        parser.add_argument("--kind", choices=JOB_KINDS, help="only jobs of this kind")
        parser.add_argument("--limit", type=int, default=50, help="at most this many (default 50; 0 for all)")
        parser.add_argument("--json", action="store_true", help="print one JSON array as the last line")
        parser.add_argument(
            "--declare-queues",
            dest="declare_queues",
            action="store_true",
            help="declare every job queue in the broker (before the workers and the web app start) and exit",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        if opts["declare_queues"]:
            try:
                names = job_queues_declare()
            except BrokerUnavailable as exc:
                raise CommandError(str(exc)) from exc
            self.stdout.write(f"declared the job queues: {', '.join(names)}")
            return
        project = None
        if opts["project"]:
            project = Project.objects.filter(name=opts["project"]).first()
            if project is None:
                raise CommandError(f"no project called {opts['project']!r}")
        if opts["limit"] < 0:
            raise CommandError("--limit must be 0 or more")
        jobs = [job_as_dict(job=j) for j in jobs_list(project=project, kind=opts["kind"], limit=opts["limit"] or None)]
        if opts["json"]:
            self.stdout.write(json.dumps(jobs))
            return
        if not jobs:
            self.stdout.write("no jobs")
            return
        for j in jobs:  # the figures of projects.job_progress, as the page and the API show them
            line = f"{j['id']:>6}  {j['kind']:<10} {j['project'] or '-'}: {j['summary']}"
            if j["stalled"]:  # its worker died or hangs, or no worker takes its queue
                line += f"  {j['stalled']}"
            if j["error"]:
                line += f"  error: {j['error'][:200]}"
            self.stdout.write(line)
