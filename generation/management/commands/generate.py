"""``python manage.py generate --project NAME --generator NAME [options] [--async]``

Runs a generation job in the foreground with a progress bar, or enqueues it on the
``generation`` queue with ``--async`` (prints the run and job ids, then the job id alone on the
last line, as ``/api/v1/jobs/{id}/`` and ``manage.py jobs`` address it). ``--resume RUN_ID`` continues
a run that was interrupted (Ctrl-C, a killed process) from its last committed batch.
``--list-generators [--project NAME | --task TASK]`` lists every generator and whether it can
run with the configured models (and why not): the answer the run form and the API give
(``generation/services/availability.py``); a run of one that cannot run is refused with it.
"""

from __future__ import annotations

import json
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from generation.ml import registry
from generation.models import GenerationRun
from generation.services.runs import run_create, run_execute, run_start
from projects.models import Project
from projects.services.jobs import BrokerUnavailable, waiting_message


def _option_pair(text: str) -> tuple[str, Any]:
    key, sep, raw = text.partition("=")
    if not sep or not key:
        raise CommandError(f"--option needs KEY=VALUE, got {text!r}")
    try:
        value: Any = json.loads(raw)
    except json.JSONDecodeError:
        value = raw
    except RecursionError:
        raise CommandError(f"--option {key}: the JSON value is nested too deeply") from None
    return key.strip().replace("-", "_"), value


class Command(BaseCommand):
    help = "Run a generation job (foreground with a progress bar; --async to enqueue)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", help="project name")
        parser.add_argument("--generator", help=f"one of: {', '.join(registry.names())}")
        parser.add_argument(
            "--limit",
            type=int,
            help="at most this many originals: a sample stratified by label, drawn with --seed",
        )
        parser.add_argument("--max-per-original", type=int, help="keep at most N candidates per original")
        parser.add_argument(
            "--seed", type=int, help="random seed of the generator and of the --limit sample (default 0)"
        )
        parser.add_argument(
            "--similarity-band", metavar="LO,HI", help="MiniLM similarity band, keep LO < sim <= HI (default: per task)"
        )
        parser.add_argument(
            "--filters",
            metavar="NAMES",
            help="comma-separated: similarity,dedup,artifacts,perplexity,validity (default: all but validity), or none",
        )
        parser.add_argument(
            "--validity-threshold",
            type=float,
            metavar="P",
            help="the validity filter keeps P(valid) >= P (default: the model's calibrated threshold)",
        )
        parser.add_argument(
            "--teacher",
            choices=["on", "off", "auto"],
            help="the task model f reads every candidate: a flip is pooled only when f gives its target "
            "label >= --teacher-threshold, a label-keeping edit only when f keeps the label "
            "(default auto: on when the project has a task model)",
        )
        parser.add_argument(
            "--teacher-threshold", type=float, metavar="P", help="the teacher's P for flips (default 0.5)"
        )
        parser.add_argument("--batch-size", type=int, help="originals per transaction (default 16)")
        parser.add_argument("--split", help="only originals of this split (e.g. dev)")
        parser.add_argument(
            "--option",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="a generator option (repeatable); VALUE is parsed as JSON when it can be",
        )
        parser.add_argument(
            "--async",
            dest="run_async",
            action="store_true",
            help="enqueue on the generation queue; the last line printed is the job id",
        )
        parser.add_argument("--resume", type=int, metavar="RUN_ID", help="continue an interrupted run")
        parser.add_argument("--no-progress", action="store_true", help="no progress bar")
        parser.add_argument(
            "--list-generators",
            action="store_true",
            help="list the generators and whether each can run (for --project's task, or --task)",
        )
        parser.add_argument("--task", help="with --list-generators: the task (default: the project's, else nli)")

    def handle(self, *args: Any, **opts: Any) -> None:
        if opts["list_generators"]:
            return self._list(opts)
        if opts["resume"]:
            run = GenerationRun.objects.select_related("job").filter(pk=opts["resume"]).first()
            if run is None:
                raise CommandError(f"no run {opts['resume']}")
            return self._foreground(run, opts)
        if not opts["project"] or not opts["generator"]:
            raise CommandError("--project and --generator are required (or --resume RUN_ID)")
        project = Project.objects.filter(name=opts["project"]).first()
        if project is None:
            raise CommandError(f"no project named {opts['project']!r}")
        options: dict[str, Any] = {
            "limit": opts["limit"],
            "max_per_original": opts["max_per_original"],
            "seed": opts["seed"],
            "similarity_band": opts["similarity_band"],
            "batch_size": opts["batch_size"],
            "split": opts["split"],
            "validity_threshold": opts["validity_threshold"],
            "teacher": opts["teacher"],
            "teacher_threshold": opts["teacher_threshold"],
            "generator_options": dict(_option_pair(o) for o in opts["option"]),
        }
        if opts["filters"] is not None:
            options["filters"] = opts["filters"]
        options = {k: v for k, v in options.items() if v is not None}
        try:
            if opts["run_async"]:
                run = run_start(project=project, generator=opts["generator"], options=options)
                run.refresh_from_db()
                self.stdout.write(
                    f"run {run.pk} queued as job {run.job_id} on the generation queue ({run.status}); "
                    f"follow it with: python manage.py jobs --project {project.name!r}"
                )
                self.stdout.write(str(run.job_id))  # the last line, the one a script reads: the job id
                return None
            run = run_create(project=project, generator=opts["generator"], options=options)
        except ValidationError as exc:
            raise CommandError("; ".join(f"{k}: {' '.join(v)}" for k, v in exc.message_dict.items())) from exc
        except BrokerUnavailable as exc:  # --async with the broker down: say so, do not run in-process
            raise CommandError(str(exc)) from exc
        return self._foreground(run, opts)

    def _list(self, opts: dict[str, Any]) -> None:
        from generation.services.availability import all_availability
        from projects.models import TASKS

        task = opts.get("task") or ""
        if opts.get("project"):
            project = Project.objects.filter(name=opts["project"]).first()
            if project is None:
                raise CommandError(f"no project named {opts['project']!r}")
            task = task or project.task
        task = task or "nli"
        if task not in TASKS:
            raise CommandError(f"unknown task {task!r}; choose one of {', '.join(TASKS)}")
        gen_opts = dict(_option_pair(o) for o in opts["option"])
        self.stdout.write(f"generators for {task} projects:")
        for a in all_availability(task, gen_opts):
            where = f" [backend {a.backend}]" if a.backend else ""
            state = "can run" if a.available else f"cannot run: {a.reason}"
            self.stdout.write(f"  {a.name}: {state}{where}")

    def _foreground(self, run: GenerationRun, opts: dict[str, Any]) -> None:
        from tqdm import tqdm

        bar = None

        def progress(r: GenerationRun) -> None:
            nonlocal bar
            if opts.get("no_progress"):
                return
            if bar is None:
                bar = tqdm(
                    total=r.total,
                    unit="orig",
                    desc=f"run {r.pk} {r.generator}",
                    file=self.stderr._out,
                    initial=0,
                    dynamic_ncols=True,
                )
            bar.update(r.done - bar.n)

        self.stdout.write(f"run {run.pk}: {run.generator} on project {run.project.name}")
        try:
            waited: set[int] = set()

            def waiting(blocker: int) -> None:
                if blocker not in waited:
                    waited.add(blocker)
                    self.stderr.write(waiting_message(blocker))

            def phase(name: str, message: str) -> None:
                if not opts.get("no_progress"):
                    self.stderr.write(f"{name}: {message}" if message else name)

            run = run_execute(
                run_id=run.pk,
                on_progress=progress,
                resume=bool(opts.get("resume")),
                on_wait=waiting,
                on_phase=phase,
            )
        except KeyboardInterrupt:
            raise CommandError(f"interrupted; continue with: manage.py generate --resume {run.pk}") from None
        finally:
            if bar is not None:
                bar.close()
        m = run.metrics or {}
        self.stdout.write(
            f"run {run.pk} {run.status}: {run.done}/{run.total} originals, {run.skipped} skipped, "
            f"{m.get('candidates', 0)} candidates, {m.get('accepted', 0)} accepted"
        )
        if m.get("acceptance_by_filter"):
            self.stdout.write(
                "acceptance by filter: "
                + ", ".join(f"{k} {v:.0%}" for k, v in sorted(m["acceptance_by_filter"].items()))
            )
        keys = (
            "distinct_1",
            "distinct_2",
            "self_bleu",
            "mean_token_edit_distance",
            "mean_similarity",
            "introduced_distinct_1",
            "introduced_max_share",
            "introduced_top",
        )
        if m.get("accepted"):
            self.stdout.write(
                "accepted candidates: " + ", ".join(f"{k} {m[k]}" for k in keys if m.get(k) not in (None, ""))
            )
        if m.get("share_per_code"):
            self.stdout.write(
                "share per code: " + ", ".join(f"{k} {v:.0%}" for k, v in sorted(m["share_per_code"].items()))
            )
        if run.skipped:
            self.stdout.write(f"skipped: {run.skipped} (see run.skips for reasons)")
        for note in m.get("notes") or []:
            self.stdout.write(f"note: {note}")
        if run.status == "failed":
            raise CommandError(f"run {run.pk} failed: {run.error}")
        return None
