"""``python manage.py import_data --project NAME --task TASK --format FORMAT [--split S] PATH…``

Imports originals and/or counterfactual pairs (docs/formats.md §2). Creates the project when it
does not exist (``--labels`` / ``--text-fields`` override the task's defaults then). Prints
each problem (the first 50, then how many more) and ends with
``imported N originals, M pairs; skipped K; problems P`` (plus ``; warnings W`` when rows
were imported with a warning, each printed as ``warning: file:line: …``). Labels are matched
to the project's case-insensitively; ``--label-map old=new[,old=new]`` renames others.

``--async`` queues an ``import`` job instead (a Celery worker runs it; follow it with
``manage.py jobs``) and prints its id: the worker must be able to read the PATHs, which are
never removed. The job checks the whole input first and writes all or nothing.
"""

from __future__ import annotations

import os
import time
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from projects.formats import FORMAT_TASKS, FORMATS, FormatError, input_files, parse_label_map
from projects.inputs import unstorable
from projects.models import TASKS, Project
from projects.services.import_jobs import ImportNotStarted, import_start, import_summary
from projects.services.imports import ImportRefused, ImportReport, data_import
from projects.services.jobs import BrokerUnavailable, JobCancelled, JobContext, job_run_here
from projects.services.projects import project_get_or_create

SHOW_PROBLEMS = 50


def _csv_list(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


class Command(BaseCommand):
    help = (
        "Import a data file (cad-nli, cad-sentiment, pairs-jsonl, csv, coco-captions, coco-cf, labelled-jsonl) "
        "or an hf-datasets export folder into a project."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "paths",
            nargs="+",
            metavar="PATH",
            help="input file(s); for cad-* the cad/ directory; for hf-datasets the exported folder",
        )
        parser.add_argument("--project", required=True, help="project name (created if missing)")
        parser.add_argument(
            "--task", choices=TASKS, help="the project's task (default: the project's, or the format's)"
        )
        parser.add_argument("--format", required=True, choices=FORMATS, dest="data_format")
        parser.add_argument(
            "--split", default="", help="train|dev|test (required for cad-*; default split of originals)"
        )
        parser.add_argument("--labels", type=_csv_list, help="ordered label names for a new project, e.g. a,b,c")
        parser.add_argument("--text-fields", type=_csv_list, help="text field names for a new project")
        parser.add_argument(
            "--skip-bad-rows",
            action="store_true",
            help="import the good rows and report the bad ones (default: any bad row refuses the whole input)",
        )
        parser.add_argument(
            "--label-map",
            default="",
            metavar="OLD=NEW[,OLD=NEW]",
            help="rename labels as written in the file before matching them (case-insensitively) to the project's",
        )
        parser.add_argument(
            "--batch-size", type=int, help="rows per transaction (default COUNTERPART_IMPORT_BATCH_SIZE)"
        )
        parser.add_argument(
            "--async",
            action="store_true",
            dest="run_async",
            help="queue an import job for a worker and print its id (all or nothing; see `manage.py jobs`)",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        fmt = opts["data_format"]
        if opts["split"] and (problem := unstorable(opts["split"])) is not None:
            # checked before the job row that records it (PostgreSQL refuses it in JSON too)
            raise CommandError(f"--split holds {problem}, which cannot be stored; nothing was imported")
        try:
            label_map = parse_label_map(opts["label_map"])
        except ValueError as exc:
            raise CommandError(f"--label-map: {exc}") from None
        existing = Project.objects.filter(name=opts["project"]).first()
        task = opts["task"] or (existing.task if existing else FORMAT_TASKS.get(fmt))
        if task is None:
            raise CommandError(f"--task is required to create project {opts['project']!r} from {fmt} data")
        try:
            project, created = project_get_or_create(
                name=opts["project"], task=task, labels=opts["labels"], text_fields=opts["text_fields"]
            )
        except ValidationError as exc:  # a field's error names its option (--labels)
            fields = exc.message_dict.items() if hasattr(exc, "error_dict") else [("", exc.messages)]
            raise CommandError("; ".join(f"--{f}: {m}" if f else m for f, ms in fields for m in ms)) from None
        if not created:
            names = list(project.labels.order_by("position").values_list("name", flat=True))
            if opts["labels"] and opts["labels"] != names:
                raise CommandError(
                    f"project {project.name!r} exists with labels {','.join(names)}, not {','.join(opts['labels'])}"
                )
            if opts["text_fields"] and opts["text_fields"] != list(project.text_fields):
                raise CommandError(
                    f"project {project.name!r} exists with text fields {','.join(project.text_fields)}, "
                    f"not {','.join(opts['text_fields'])}"
                )

        if opts["run_async"]:
            self._start_job(project, fmt, label_map, opts)
            return

        def progress(report: Any) -> None:
            if opts["verbosity"] >= 2:
                self.stderr.write(f"batch {report.batches}: {report.summary()}")

        def work(ctx: JobContext) -> ImportReport:
            last = [0.0]

            def rows(phase: str, n: int, of: int | None) -> None:  # the job's done/total, once a second
                if of is not None and (n >= of or time.monotonic() - last[0] >= 1.0):
                    last[0] = time.monotonic()
                    ctx.progress(min(n, of), of)

            return data_import(
                project=project,
                format=fmt,
                paths=opts["paths"],
                split=opts["split"],
                strict=not opts["skip_bad_rows"],
                batch_size=opts["batch_size"],
                on_batch=progress,
                on_progress=rows,
                label_map=label_map,
            )

        params = {"format": fmt, "paths": [os.path.abspath(p) for p in opts["paths"]], "split": opts["split"]}
        try:  # an import job, listed by `jobs` and the Jobs page as the page's are
            report = job_run_here(
                kind="import",
                project=project,
                params={**params, "strict": not opts["skip_bad_rows"], "label_map": label_map},
                work=work,
                summary=import_summary,
                refusals=(ImportRefused,),
                on_wait=self.stderr.write,
            )
        except JobCancelled as exc:
            raise CommandError(str(exc)) from None
        except ImportRefused as exc:
            if created:  # nothing was imported: leave no empty project behind either
                project.delete()
            for line in exc.problems[:SHOW_PROBLEMS]:
                self.stderr.write(line)
            if len(exc.problems) > SHOW_PROBLEMS:
                self.stderr.write(f"… and {len(exc.problems) - SHOW_PROBLEMS} more problems")
            self.stdout.write(f"imported 0 originals, 0 pairs; skipped 0; problems {len(exc.problems)}")
            raise CommandError(f"import refused: {exc}") from None
        if created and opts["verbosity"] >= 1:
            self.stdout.write(f"created project {project.name!r} (task {project.task})")
        for line in report.problems[:SHOW_PROBLEMS]:
            self.stderr.write(line)
        if report.problem_count > SHOW_PROBLEMS:
            self.stderr.write(f"… and {report.problem_count - SHOW_PROBLEMS} more problems")
        for line in report.warnings[:SHOW_PROBLEMS]:
            self.stderr.write(f"warning: {line}")
        if report.warning_count > SHOW_PROBLEMS:
            self.stderr.write(f"… and {report.warning_count - SHOW_PROBLEMS} more warnings")
        self.stdout.write(report.summary())

    def _start_job(self, project: Project, fmt: str, label_map: dict[str, str], opts: dict[str, Any]) -> None:
        try:
            input_files(fmt, opts["paths"], split=opts["split"])  # a missing file is refused here
        except FormatError as exc:
            raise CommandError(f"import not started: {exc}") from None
        try:
            job = import_start(
                project=project,
                format=fmt,
                paths=[os.path.abspath(p) for p in opts["paths"]],
                split=opts["split"],
                strict=not opts["skip_bad_rows"],
                label_map=label_map,
                batch_size=opts["batch_size"],
            )
        except (ImportNotStarted, BrokerUnavailable) as exc:
            raise CommandError(f"import not started: {exc}") from None
        self.stdout.write(
            f"queued import job {job.pk} into project {project.name!r}; "
            f"follow it with: python manage.py jobs --project {project.name!r}"
        )
