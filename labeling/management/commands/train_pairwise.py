"""``python manage.py train_pairwise --project NAME [--mode pc|capc] [--warm-start DATA]``

Trains h on the project's human labels (docs/formats.md §2) and prints the model version, the
training size and the cross-validated accuracy, macro-F1 and ECE. Too few labels (or a label
class with none) is an error with a clear message; no model is saved then.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import ValidationError
from django.core.management.base import BaseCommand, CommandError, CommandParser

from labeling.models import MODES, PairwiseModel
from labeling.services import pairwise_train, pairwise_train_summary
from projects.models import Project
from projects.services.jobs import JobCancelled, JobContext, job_run_here


class Command(BaseCommand):
    help = "Train the pairwise classifier h on a project's human-labelled pairs."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True)
        parser.add_argument("--mode", choices=MODES, default="capc")
        parser.add_argument(
            "--warm-start",
            default="",
            metavar="FORMAT:PATH[:SPLIT]",
            help="pre-train on public pairs, e.g. cad-nli:../shared/data/cad:train",
        )
        parser.add_argument(
            "--base",
            choices=["minilm", "tfidf", "hf"],
            default="minilm",
            help="base classifier f (hf: COUNTERPART_BASE_CLASSIFIER_PATH)",
        )
        parser.add_argument(
            "--learner",
            choices=["linear", "cross-encoder"],
            default="linear",
            help="h's learner: logistic regression on features (seconds), or fine-tuning the "
            "MiniLM cross-encoder (PC only; needs 200+ labels; minutes on CPU)",
        )
        parser.add_argument(
            "--task-model",
            default="",
            metavar="PATH|latest",
            help="a trained task model (Hugging Face folder, e.g. from train_task_model, or 'latest': the "
            "project's newest) that h reads as features and as the 'f alone' candidate of its "
            "cross-validation (issue 26)",
        )
        parser.add_argument(
            "--threshold",
            type=float,
            default=None,
            help="abstain threshold stored with the model (default COUNTERPART_MIN_CONFIDENCE)",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        project = Project.objects.filter(name=opts["project"]).first()
        if project is None:
            raise CommandError(f"no project called {opts['project']!r}")
        params = {k: opts[k] for k in ("mode", "warm_start", "base", "threshold", "learner", "task_model")}

        def work(ctx: JobContext) -> PairwiseModel:
            return pairwise_train(project=project, **params, progress=ctx, should_stop=ctx.cancel_requested)

        try:  # a train job, listed by `jobs` and the Jobs page as the page's are
            m = job_run_here(
                kind="train",
                project=project,
                params=params,
                work=work,
                summary=pairwise_train_summary,
                on_wait=self.stderr.write,
            )
        except ValidationError as exc:
            raise CommandError("; ".join(exc.messages)) from None
        except JobCancelled as exc:
            raise CommandError(str(exc)) from None
        warm = f", warm start {m.warm_start} ({m.n_warm} pairs)" if m.warm_start else ""
        self.stdout.write(
            f"trained {m.mode} v{m.version} on {m.n_train} human-labelled pairs{warm}: "
            f"cv accuracy {m.cv_accuracy:.3f}, macro-F1 {m.cv_macro_f1:.3f}, ECE {m.cv_ece:.3f} "
            f"({m.cv_folds}-fold); threshold {m.threshold:.2f}; {m.seconds:.1f}s; saved {m.path}"
        )
        metrics = m.metrics or {}
        for c in metrics.get("candidates", []):
            acc = "–" if c["cv_accuracy"] is None else f"{c['cv_accuracy']:.3f}"
            self.stdout.write(f"  {'*' if c['chosen'] else ' '} {c['name']}: cv accuracy {acc}")
        for note in metrics.get("notes", []):
            self.stdout.write(f"  note: {note}")
        for s in metrics.get("strata", []):
            self.stdout.write(f"  {s.get('sentence') or s['reason']}")
