"""``python manage.py demo [--password P] [--no-data] [--no-route] [--url URL]``

Creates the ``researcher`` and ``annotator`` groups, a researcher account and three annotator
accounts (``annotator``, ``annotator2``, ``annotator3``: the project wants 3 answers per item,
so it takes three people — or three private windows — to close the loop), and a demo
project: CAD NLI dev (200 originals, 800 human-written counterfactuals) from
``COUNTERPART["SHARED_DATA_DIR"]`` when it is there, else the 40-pair excerpt shipped in
``projects/fixtures/demo_nli_pairs.jsonl``. The annotators become members of the demo
project, and the project's human budget (10%) is routed to annotators so there is something
to label at once (``--no-route``: leave everything pooled). A second project,
``demo-image-caption``, holds four image pairs (scikit-image's public-domain / CC0 photos,
one-noun caption swaps) routed as caption-choice items (see workspace/services/demo_captions.py).
Running it again is harmless: it imports nothing twice, routes nothing more into a project that
was routed before, and writes a password only when it changed (so the sessions of those
logged in survive a second ``make run``).

It prints the address to open (``--url``, default http://127.0.0.1:8000; ``make run`` passes the
one its ``PORT`` serves) and the accounts.

Under the production settings (``settings.PRODUCTION``) it refuses unless given ``--force``:
it would create accounts with a published password on a real server.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import transaction

from annotate.services.routing import project_add_annotators, project_route
from labeling.services import MIN_LABELS
from projects import states
from projects.models import Candidate, Project
from projects.permissions import ANNOTATOR, RESEARCHER
from projects.services.imports import data_import
from projects.services.projects import project_get_or_create
from workspace.services.demo_captions import demo_was_routed

DEMO_PROJECT = "demo-nli"
RESEARCHER_USERNAME = "researcher"
ANNOTATOR_USERNAME = "annotator"
# The demo project wants 3 answers per item, so it takes three annotators to close the loop.
ANNOTATOR_USERNAMES = [ANNOTATOR_USERNAME, "annotator2", "annotator3"]
URL = "http://127.0.0.1:8000"
FIXTURE = Path(__file__).resolve().parents[3] / "projects" / "fixtures" / "demo_nli_pairs.jsonl"


def demo_source() -> tuple[str, list[str], str, str]:
    """(format, paths, split, description) of the data the demo project is built from."""
    cad = os.path.join(settings.COUNTERPART["SHARED_DATA_DIR"], "cad")
    if os.path.isfile(os.path.join(cad, "NLI", "original", "dev.tsv")):
        return "cad-nli", [cad], "dev", f"CAD NLI dev from {cad}"
    return "pairs-jsonl", [str(FIXTURE)], "", f"the shipped excerpt {FIXTURE.name}"


def demo_budget(project: Project) -> tuple[float | None, str]:
    """The share of the demo project to route, and what to say of it: the project's budget
    (10 %), or, on a pool so small that the budget gives h fewer items than the human labels it
    needs (the 40-pair excerpt: 4), enough items for those labels, so the loop can be closed."""
    pooled = Candidate.objects.filter(project=project, state=states.POOLED).count()
    if not pooled or pooled * project.human_budget >= MIN_LABELS:
        return None, ""
    budget = min(1.0, MIN_LABELS / pooled)
    return budget, (
        f"; {budget:.0%} of this small pool, not {project.human_budget:.0%}, so that the {MIN_LABELS} "
        "human labels h needs can be reached"
    )


class Command(BaseCommand):
    help = "Create demo accounts (researcher, annotator, annotator2, annotator3) and a demo project."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--password",
            default=None,
            help="password for both demo accounts (default COUNTERPART_DEMO_PASSWORD or 'counterpart-demo')",
        )
        parser.add_argument("--no-data", action="store_true", help="only the groups and accounts, no demo project")
        parser.add_argument("--no-route", action="store_true", help="leave every demo candidate in the pool")
        parser.add_argument(
            "--url", default=URL, help=f"the address printed for the app (default {URL}; make run passes its PORT's)"
        )
        parser.add_argument(
            "--force", action="store_true", help="run even under the production settings (creates the demo accounts)"
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        if getattr(settings, "PRODUCTION", False) and not opts["force"]:
            raise CommandError(
                "refusing to create the demo accounts (researcher, annotator, annotator2, annotator3) and projects "
                f"under the production settings ({settings.SETTINGS_MODULE}); pass --force if you really mean it"
            )
        password = opts["password"] or settings.COUNTERPART.get("DEMO_PASSWORD") or "counterpart-demo"
        with transaction.atomic():
            groups = {name: Group.objects.get_or_create(name=name)[0] for name in (RESEARCHER, ANNOTATOR)}
            researcher = self._user(RESEARCHER_USERNAME, password, groups[RESEARCHER])
            annotators = [self._user(name, password, groups[ANNOTATOR]) for name in ANNOTATOR_USERNAMES]

        if not opts["no_data"]:
            fmt, paths, split, described = demo_source()
            project, created = project_get_or_create(
                name=DEMO_PROJECT,
                task="nli",
                created_by=researcher,
                description=f"Demo project: {described}. Human-written counterfactuals (Kaushik et al., ICLR 2020).",
            )
            report = data_import(project=project, format=fmt, paths=paths, split=split)
            project_add_annotators(project=project, users=annotators)
            self.stdout.write(
                f"demo project {project.name!r} ({'created' if created else 'exists'}; {described}): {report.summary()}"
            )
            for line in report.problems[:10]:
                self.stderr.write(line)
            if not opts["no_route"]:
                # Route the project's human budget so the annotator has items right away — once:
                # a project that was ever routed is left as the researcher left it (a second
                # `make run` routes nothing more, whatever was labelled or re-budgeted since).
                if demo_was_routed(project):
                    self.stdout.write("routed 0 candidates (the demo project was routed before; left as it is)")
                else:
                    budget, why = demo_budget(project)
                    routed = project_route(project=project, budget=budget, seed=0)
                    self.stdout.write(
                        f"routed {routed.routed} candidates to annotators ({routed.gold_items} gold checks){why}"
                    )

        if not opts["no_data"]:
            self._caption_demo(researcher, annotators, route=not opts["no_route"])

        self.stdout.write(f"Counterpart: {opts['url']}")
        self.stdout.write(f"  researcher: username {RESEARCHER_USERNAME}  password {password}")
        self.stdout.write(f"  annotator:  username {ANNOTATOR_USERNAME}  password {password}")
        for name in ANNOTATOR_USERNAMES[1:]:
            self.stdout.write(f"  annotator:  username {name}  password {password}")
        self.stdout.write(
            f"Each item needs {len(ANNOTATOR_USERNAMES)} answers before it gets a human label. To close the loop "
            "alone, log in as annotator, annotator2 and annotator3 in three browser profiles or private windows "
            "(one session per window), answer the same items in each, then watch the labels arrive on the "
            "researcher's project page and the quality dashboard."
        )

    def _caption_demo(self, researcher: Any, annotators: list[Any], *, route: bool) -> None:
        """The second demo project: image-caption choice (workspace/services/demo_captions.py)."""
        from workspace.services.demo_captions import demo_caption_project

        line, report, routed = demo_caption_project(researcher=researcher, annotators=annotators, route=route)
        self.stdout.write(line)
        for problem in report.problems[:10]:
            self.stderr.write(problem)
        if route and routed is None:  # as the NLI demo says it on a second `make run`
            self.stdout.write("routed 0 image pairs (the image-caption demo was routed before; left as it is)")
        elif route:
            self.stdout.write(f"routed {routed} image pairs to annotators (caption choice)")

    def _user(self, username: str, password: str, group: Group) -> Any:
        User = get_user_model()
        user, _ = User.objects.get_or_create(username=username, defaults={"email": f"{username}@example.org"})
        if not user.check_password(password):
            # Only a new password is written: re-hashing the same one would change the session
            # hash and log everybody out on every `make run`.
            user.set_password(password)
            user.save(update_fields=["password"])
        user.groups.add(group)
        return user
