"""``python manage.py export --project NAME --format pairs-jsonl|csv|hf-datasets|coco-cf --out PATH [filters]``

Writes a project's pairs (docs/formats.md §1 for ``pairs-jsonl``; columns in
``generation/formats/tabular.py`` for ``csv``). Filters: ``--state``, ``--label-source``
(human, auto, gold, imported, none), ``--min-confidence``, ``--split``; the list filters take
comma-separated values and may be repeated (``--state human_labeled --state auto_labeled``:
both). Pairs judged invalid are left out unless ``--include-invalid``. Pairs with no label yet
are written without a counterfactual label (``UNLABELLED_AS``) unless ``--labelled-only``; the
command says how many there were.
"""

from __future__ import annotations

import os
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from projects.inputs import unstorable
from projects.models import Project
from projects.services.exports import (
    EXPORT_FORMATS,
    NOTHING_TO_EXPORT,
    ExportError,
    data_export,
    export_unlabelled_count,
)
from projects.services.jobs import JobCancelled, JobContext, job_run_here

# What an unlabelled pair holds in each format (the note after "exported N pairs").
UNLABELLED_AS = {
    "pairs-jsonl": "written without a counterfactual.label key",
    "csv": "written with an empty counterfactual.label cell",
    "csv-spreadsheet": "written with an empty counterfactual.label cell",
    "hf-datasets": "written with label None",
    "coco-cf": "written without a label",
}


def _csv_list(value: str) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()]


class Command(BaseCommand):
    help = (
        "Export a project's counterfactual pairs as pairs-jsonl, csv, csv-spreadsheet (csv with formula-like "
        "cells quoted, to open in a spreadsheet), hf-datasets (a directory) "
        "or coco-cf (a directory)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True)
        parser.add_argument("--format", required=True, choices=EXPORT_FORMATS, dest="data_format")
        parser.add_argument(
            "--out", required=True, help="output file ('-' for stdout); a new directory for hf-datasets and coco-cf"
        )
        # action="extend": a repeated flag adds to the list (argparse's default kept only the last one)
        parser.add_argument(
            "--state", type=_csv_list, action="extend", help="e.g. human_labeled,auto_labeled (repeatable)"
        )
        parser.add_argument(
            "--label-source", type=_csv_list, action="extend", help="human,auto,gold,imported,none (repeatable)"
        )
        parser.add_argument("--min-confidence", type=float, help="only pairs with confidence >= this")
        parser.add_argument(
            "--split", type=_csv_list, action="extend", help="only pairs whose original is in these splits (repeatable)"
        )
        parser.add_argument(
            "--include-invalid",
            action="store_true",
            help="also pairs judged invalid (imported valid=false, or annotators answered 'Unclear / invalid')",
        )

        parser.add_argument(
            "--labelled-only",
            action="store_true",
            help="leave out pairs with no label yet (by default they are written without a counterfactual label)",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        for option in ("project", "state", "label_source", "split"):  # PostgreSQL refuses them even in a query
            values = opts.get(option) or []
            for value in [values] if isinstance(values, str) else values:
                if (problem := unstorable(str(value))) is not None:
                    raise CommandError(f"--{option.replace('_', '-')} holds {problem}; nothing was exported")
        project = Project.objects.filter(name=opts["project"]).first()
        if project is None:
            raise CommandError(f"no project called {opts['project']!r}")
        keys = ("state", "label_source", "min_confidence", "split", "include_invalid", "labelled_only")
        filters = {k: opts[k] for k in keys}
        out = os.path.abspath(opts["out"]) if opts["out"] != "-" else "-"

        def work(ctx: JobContext) -> int:
            n = data_export(
                project=project,
                format=opts["data_format"],
                # "-": the command's own stdout stream (so call_command(stdout=…) captures it)
                out=getattr(self.stdout, "_out", opts["out"]) if opts["out"] == "-" else opts["out"],
                progress=ctx.progress,
                **filters,
            )
            ctx.progress(n, n)  # all written (the export job's box says so too)
            return n

        try:  # an export job, listed by `jobs` and the Jobs page (its file is --out, not a download)
            n = job_run_here(
                kind="export",
                project=project,
                params={"format": opts["data_format"], **filters, "out": out},
                work=work,
                summary=lambda n: {"pairs": n, "format": opts["data_format"], "out": out},
                refusals=(ExportError, BrokenPipeError),
                on_wait=self.stderr.write,
            )
        except ExportError as exc:
            raise CommandError(str(exc)) from None
        except JobCancelled as exc:
            raise CommandError(str(exc)) from None
        except BrokenPipeError:
            if opts["out"] != "-":
                raise
            # `export --out - | head`: the reader has what it wanted; stop quietly, as cat does
            # (no traceback, and nothing left to flush into the closed pipe at exit)
            _silence(getattr(self.stdout, "_out", None))
            return
        if n == 0:  # as the page and the API say it (the empty file is still written: scripts may expect it)
            self.stderr.write(NOTHING_TO_EXPORT)
        if opts["out"] != "-":
            self.stdout.write(f"exported {n} pairs to {opts['out']}")
            filters = {k: opts[k] for k in ("state", "label_source", "min_confidence", "split", "include_invalid")}
            unlabelled = 0 if opts["labelled_only"] else export_unlabelled_count(project=project, filters=filters)
            if unlabelled:
                self.stdout.write(
                    f"{unlabelled} of them have no label yet ({UNLABELLED_AS[opts['data_format']]}); "
                    "--labelled-only leaves them out"
                )


def _silence(stream: Any) -> None:
    """Point the file descriptor behind ``stream`` at /dev/null (a stream without one: nothing)."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)
