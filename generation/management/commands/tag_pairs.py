"""``python manage.py tag_pairs --format F --task T [--split S] PATH… [--json] [--examples K]``

Tags every (original, counterfactual) pair of a data file with its control code
(``generation.ml.tagger``) and prints the distribution. Reads files only; no database.
"""

from __future__ import annotations

import json
from collections import defaultdict
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser


class Command(BaseCommand):
    help = "Control-code distribution of the pairs in a data file."
    requires_system_checks = ()

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="+")
        parser.add_argument("--format", required=True, help="cad-nli, cad-sentiment, pairs-jsonl, csv, ...")
        parser.add_argument("--task", required=True)
        parser.add_argument("--split", default="")
        parser.add_argument("--examples", type=int, default=0, help="print K examples per code")
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        from generation.ml.tagger import CODES, distribution, tag_pair
        from projects.formats import TASK_FIELDS, read, read_report
        from projects.formats.records import PairRecord, Problem

        tags = []
        problems: list[Problem] = []
        examples: dict[str, list[str]] = defaultdict(list)
        fields = TASK_FIELDS.get(opts["task"])  # a file of another task's fields is refused, not tagged
        try:
            warnings: list[Problem] = []  # e.g. CAD-NLI train's misaligned rows: skipped, reported
            records = list(
                read(
                    opts["format"],
                    list(opts["paths"]),
                    task=opts["task"],
                    split=opts["split"],
                    text_fields=list(fields) if fields else None,
                    warn=warnings.append,
                )
            )
        except Exception as exc:
            raise CommandError(str(exc)) from exc
        for rec in records:
            if isinstance(rec, Problem):
                problems.append(rec)
            elif isinstance(rec, PairRecord):
                t = tag_pair(rec.original.fields, rec.cf_fields)
                tags.append(t)
                if len(examples[t.code]) < opts["examples"]:
                    examples[t.code].append(
                        f"{rec.original.fields.get(t.field, '')!r} -> {rec.cf_fields.get(t.field, '')!r} [{t.detail}]"
                    )
        name = f"{opts['format']} {' '.join(opts['paths'])}" + (f" split {opts['split']}" if opts["split"] else "")
        for line in read_report(name, f"{len(tags)} pairs", problems, warnings):
            self.stderr.write(line)
        if not tags:
            raise CommandError(f"no pairs read from {name}")
        dist = distribution(tags)
        for code in CODES:
            self.stdout.write(f"{code:12s} {dist[code]:7.1%}")
            for ex in examples.get(code, []):
                self.stdout.write(f"    {ex[:300]}")
        self.stdout.write(f"pairs: {len(tags)}; problems: {len(problems)}; warnings: {len(warnings)}")
        if opts["json"]:
            self.stdout.write(
                json.dumps(
                    {
                        "pairs": len(tags),
                        "problems": len(problems),
                        "warnings": len(warnings),
                        "distribution": {k: round(v, 4) for k, v in dist.items()},
                    }
                )
            )
