"""``python manage.py train_task_model --project NAME [--base minilm|mpnet|PATH] [--epochs N]
[--max-examples N] [--edited N] [--batch-size N] [--learning-rate LR] [--max-length N]``

Trains the project's task model f in the foreground (the page and the API run the same as a
job): a sequence-classification cross-encoder fine-tuned on the project's labelled originals,
its human-labelled counterfactuals and its task training data (less any text that is in the
pool; the count is printed). Progress and ETA go to stderr; Ctrl-C leaves a checkpoint, and
the same command resumes from it. The same base, data and hyperparameters find the cached
model (``COUNTERPART_TASK_MODEL_DIR``) and train nothing. ``--edited N`` adds up to N edited
examples whose label is known by construction (``labeling/ml/edited_pairs.py``: negated entailed
hypotheses → contradiction, monotone deletions → entailment; NLI), made from the task data.
"""

from __future__ import annotations

import json
import signal
import sys
import time
from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from labeling.ml.task_model import TaskModelCancelled
from labeling.task_training import task_model_as_dict, task_model_train
from projects.models import Project
from projects.services.jobs import JobContext, job_run_here


class Command(BaseCommand):
    help = "Train the project's task model f (a fine-tuned cross-encoder)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True)
        parser.add_argument("--base", default="minilm", help="minilm (bundled), mpnet (COUNTERPART_MPNET_PATH) or PATH")
        parser.add_argument("--epochs", type=int, default=3)
        parser.add_argument("--max-examples", type=int, default=0, help="cap on task training data (0: all)")
        parser.add_argument(
            "--with-counterfactuals",
            action="store_true",
            help="also train on the project's human-labelled counterfactuals (h then cannot use this model)",
        )
        parser.add_argument(
            "--edited",
            type=int,
            default=0,
            metavar="N",
            help="also up to N edited examples labelled by construction (negation, monotone deletion; NLI)",
        )
        parser.add_argument("--batch-size", type=int, default=32)
        parser.add_argument("--learning-rate", type=float, default=5e-5)
        parser.add_argument("--max-length", type=int, default=128)

    def handle(self, *args: Any, **o: Any) -> None:
        project = Project.objects.filter(name=o["project"]).first()
        if project is None:
            raise CommandError(f"no project called {o['project']!r}")
        last = [0.0]

        def progress(e: dict[str, Any]) -> None:
            if "epoch_done" in e:
                sys.stderr.write(f"epoch {json.dumps(e['epoch_done'])}\n")
            elif time.monotonic() - last[0] > 10:
                last[0] = time.monotonic()
                eta = e.get("eta_s")
                left = f", about {eta:.0f} s left" if eta is not None else ""
                sys.stderr.write(f"step {e['step']}/{e['total']} (epoch {e['epoch']}), loss {e['loss']:.3f}{left}\n")

        stop = {"asked": False}

        def on_interrupt(signum: int, frame: Any) -> None:
            stop["asked"] = True  # stop at the next step boundary, after saving a checkpoint

        params = {k: o[k] for k in ("base", "epochs", "max_examples", "edited")} | {
            "counterfactuals": o["with_counterfactuals"]
        }

        def work(ctx: JobContext) -> Any:
            written = [0.0]

            def report(e: dict[str, Any]) -> None:
                progress(e)
                if "loss" in e and time.monotonic() - written[0] >= 1.0:  # the job's done/total: examples
                    written[0] = time.monotonic()
                    ctx.progress(int(e.get("examples") or 0), int(e.get("examples_total") or 0))

            try:
                return self._train(project, o, report, lambda: stop["asked"] or ctx.cancel_requested())
            except TaskModelCancelled as exc:  # Ctrl-C, or a cancel from the Jobs page: the job is cancelled
                raise KeyboardInterrupt from exc

        previous = signal.signal(signal.SIGINT, on_interrupt)
        try:  # a task_model job, listed by `jobs` and the Jobs page as the page's are
            m = job_run_here(
                kind="task_model",
                project=project,
                params=params,
                work=work,
                summary=lambda model: task_model_as_dict(model=model),
                on_wait=self.stderr.write,
            )
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        except KeyboardInterrupt:
            raise CommandError("interrupted: a checkpoint was saved; the same command resumes from it") from None
        finally:
            signal.signal(signal.SIGINT, previous)
        self._report(m)

    def _train(self, project: Project, o: dict[str, Any], progress: Any, cancel: Any) -> Any:
        return task_model_train(
            project=project,
            base=o["base"],
            epochs=o["epochs"],
            max_examples=o["max_examples"],
            counterfactuals=o["with_counterfactuals"],
            edited=o["edited"],
            options={
                "batch_size": o["batch_size"],
                "learning_rate": o["learning_rate"],
                "max_length": o["max_length"],
            },
            progress=progress,
            cancel=cancel,
        )

    def _report(self, m: Any) -> None:
        info = m.metrics.get("training_set", {})
        if info.get("message"):
            self.stderr.write(info["message"])
        how = "found in the cache (nothing trained)" if m.cached else f"trained in {m.seconds:.0f} s on {m.device}"
        held = f"{m.held_out_accuracy:.3f}" if m.held_out_accuracy is not None else "n/a"
        evals = ", ".join(f"{k} {v:.3f}" for k, v in m.metrics.get("eval", {}).items())
        self.stdout.write(
            f"task model {m.key}: {how}; {m.n_train} examples ({info.get('originals', 0)} originals, "
            f"{info.get('counterfactuals', 0)} counterfactuals, {info.get('task_data', 0)} task training data, "
            f"{info.get('edited', 0)} edited, "
            f"{m.n_stripped} left out as pool overlap); held-out accuracy {held} (n={m.n_held_out})"
            + (f"; {evals}" if evals else "")
            + f"; saved {m.path}"
        )
