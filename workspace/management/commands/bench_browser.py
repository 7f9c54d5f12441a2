"""``python manage.py bench_browser [--candidates N] [--requests R] [--keep] [--reuse] [--pages-only] [--json]``

Times the data browser's pages (``/projects/<id>/candidates/``, rendered by the real view and
template; and, separately, the selector alone: the page's queries and row building), the project
dashboard (``/projects/<id>/dashboard/``) and the project page over a
synthetic project of N candidates: the first page, pages deep in the id range (``?after=``,
``?before=``), and the filters. The rows are written with PostgreSQL ``COPY`` (bulk inserts on
SQLite) and the tables analysed, the project's aggregates counted once (as at the end of an
import job; ``stats_seconds``), then each scenario is requested R times; p50/p95 in
milliseconds are printed, with a JSON object on the last line. With each data-browser
scenario, the total of matching rows alone (``matching_total``: estimate or bounded count) and
what the page shows. The project is deleted at the end unless ``--keep``; ``--reuse`` times the
project an earlier ``--keep`` left (building 1M rows takes minutes) and keeps it;
``--pages-only`` times only the dashboard, the project page and the project list.
A benchmark prints figures; it asserts nothing about time.
"""

from __future__ import annotations

import json
import random
import statistics
import time
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.contrib.messages.storage.fallback import FallbackStorage
from django.contrib.sessions.backends.base import SessionBase
from django.core.management.base import BaseCommand, CommandParser
from django.db import connection, transaction
from django.test import RequestFactory
from django.utils import timezone
from django_htmx.middleware import HtmxDetails

from projects import views as project_views
from projects.aggregates import project_stats_recompute
from projects.models import Candidate, Example, Label, Project
from projects.permissions import RESEARCHER
from projects.services.projects import project_create
from workspace.dashboard import views as views_dashboard
from workspace.data import views as data_views
from workspace.data.forms import CandidateFiltersForm
from workspace.data.selectors import candidates_browse, candidates_filtered
from workspace.data.totals import matching_total
from workspace.overview import views as views_overview

GENERATORS = ["rules", "rationale-infill", "llm-prompt", "human"]
PERTURBATIONS = ["negation", "quantifier", "lexical", "insert", "delete", "shuffle"]
STATES = ["pooled", "auto_labeled", "abstained", "human_labeled", "filtered_out", "routed"]


class Command(BaseCommand):
    help = "Time the data browser's pages at N candidates (p50/p95 per scenario)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--candidates", type=int, default=10_000)
        parser.add_argument("--requests", type=int, default=30, help="requests per scenario")
        parser.add_argument("--keep", action="store_true", help="keep the synthetic project")
        parser.add_argument("--json", action="store_true", help="only the JSON line")
        parser.add_argument(
            "--reuse",
            action="store_true",
            help="reuse the synthetic project of this size left by an earlier --keep run (and keep it)",
        )
        parser.add_argument(
            "--pages-only",
            action="store_true",
            help="time only the project dashboard, the project page and the project list, not the data browser",
        )

    def handle(self, *args: Any, **opts: Any) -> None:
        n, reps = opts["candidates"], opts["requests"]
        name = f"bench-browser-{n}"
        project = Project.objects.filter(name=name).order_by("-pk").first() if opts["reuse"] else None
        for old in Project.objects.filter(name=name):
            if project is None or old.pk != project.pk:
                self._drop(old)
        t0 = time.perf_counter()
        if project is None:
            project = self._create(name, n)
        created_s = time.perf_counter() - t0
        # The rows went in around the services (COPY): count the project's aggregates once, as
        # the end of an import or generation job does (projects/aggregates.py).
        t0 = time.perf_counter()
        project_stats_recompute(project_id=project.pk)
        stats_s = time.perf_counter() - t0
        user = self._researcher()
        ids = list(
            Candidate.objects.filter(project=project).order_by("id").values_list("id", flat=True)[:: max(1, n // 20)]
        )
        mid, late = ids[len(ids) // 2], ids[-2]
        scenarios: dict[str, dict[str, Any]] = {
            "first page": {},
            "middle (after=)": {"after": mid},
            "near the end (after=)": {"after": late},
            "back (before=)": {"before": late},
            "state=auto_labeled": {"state": "auto_labeled"},
            "generator+perturbation": {"generator": "rules", "perturbation": "negation"},
            "label_source=auto, confidence>=0.9": {"label_source": "auto", "min_confidence": "0.9"},
            "flip": {"flip": "flip"},
            "gold=yes": {"gold": "yes"},
            "disagreement": {"disagreement": "1"},
        }
        if opts["pages_only"]:
            scenarios = {}
        results: dict[str, dict[str, Any]] = {}
        for label, params in scenarios.items():
            times = sorted(self._request(project, user, params) for _ in range(reps))
            queries = sorted(self._select(project, params) for _ in range(reps))
            totals = [self._total(project, params) for _ in range(reps)]
            results[label] = {
                "total": totals[-1][1],
                "total_p50_ms": round(statistics.median(t for t, _ in totals), 2),
                "p50_ms": round(statistics.median(times), 2),
                "p95_ms": round(times[min(len(times) - 1, int(0.95 * len(times)))], 2),
                "selector_p50_ms": round(statistics.median(queries), 2),
                "selector_p95_ms": round(queries[min(len(queries) - 1, int(0.95 * len(queries)))], 2),
            }
        # The other pages a researcher opens on a project of this size (real views, templates).
        other_pages = {
            "project dashboard": (
                views_dashboard.dashboard,
                f"/projects/{project.pk}/dashboard/",
                {"project_id": project.pk},
            ),
            "project page": (views_overview.overview, f"/projects/{project.pk}/", {"pk": project.pk}),
            "project list": (project_views.project_list, "/projects/", {}),
        }
        for label, (view, path, kwargs) in other_pages.items():
            times = sorted(self._time_view(view, path, user, kwargs) for _ in range(reps))
            results[label] = {
                "p50_ms": round(statistics.median(times), 2),
                "p95_ms": round(times[min(len(times) - 1, int(0.95 * len(times)))], 2),
                "selector_p50_ms": None,
                "selector_p95_ms": None,
            }
        out = {
            "candidates": n,
            "database": connection.vendor,
            "requests_per_scenario": reps,
            "create_seconds": round(created_s, 1),
            "stats_seconds": round(stats_s, 2),
            "pages": results,
        }
        if not opts["json"]:
            self.stdout.write(
                f"{n} candidates on {connection.vendor}; created in {created_s:.1f} s; aggregates counted in "
                f"{stats_s:.2f} s; {reps} requests each"
            )
            for label, r in results.items():
                line = f"  {label:<38} page p50 {r['p50_ms']:>8.2f} ms  p95 {r['p95_ms']:>8.2f} ms"
                if r["selector_p50_ms"] is not None:
                    line += f"   | queries p50 {r['selector_p50_ms']:>8.2f} ms  p95 {r['selector_p95_ms']:>8.2f} ms"
                if r.get("total"):
                    line += f"   | total {r['total']} in {r['total_p50_ms']:.2f} ms (p50)"
                self.stdout.write(line)
        self.stdout.write(json.dumps(out))
        if not (opts["keep"] or opts["reuse"]):
            self._drop(project)

    # -- set-up ---------------------------------------------------------------------------

    def _researcher(self) -> Any:
        user, _ = get_user_model().objects.get_or_create(username="bench-browser-researcher")
        user.groups.add(Group.objects.get_or_create(name=RESEARCHER)[0])
        return user

    def _create(self, name: str, n: int) -> Project:
        project = project_create(name=name, task="nli")
        labels = list(Label.objects.filter(project=project).order_by("position").values_list("id", flat=True))
        n_ex = max(1, n // 4)
        rng = random.Random(0)
        now = timezone.now()
        examples = [
            Example(
                project=project,
                external_id=f"o{i}",
                fields={
                    "premise": f"A person number {i} walks a dog in the park.",
                    "hypothesis": "Someone is outside.",
                },
                label_id=labels[i % 3],
                split="train" if i % 5 else "dev",
            )
            for i in range(n_ex)
        ]
        Example.objects.bulk_create(examples, batch_size=5000)
        ex = list(Example.objects.filter(project=project).order_by("id").values_list("id", "label_id"))
        rows = []
        for i in range(n):
            ex_id, _ = ex[i % n_ex]
            state = STATES[rng.randrange(len(STATES))]
            label = labels[rng.randrange(3)] if state in ("auto_labeled", "human_labeled") else None
            source = {"auto_labeled": "auto", "human_labeled": "human"}.get(state, "") if label else ""
            conf = round(rng.random(), 3) if state in ("auto_labeled", "abstained", "human_labeled") else None
            gold = labels[rng.randrange(3)] if i % 10 == 0 else None
            fields = {
                "premise": f"A person number {i} runs with a cat in the park.",
                "hypothesis": "Someone is outside.",
            }
            rows.append(
                (
                    project.pk,
                    f"c{i}",
                    ex_id,
                    f"o{i % n_ex}",
                    json.dumps(fields),
                    GENERATORS[i % 4],
                    PERTURBATIONS[i % 6],
                    state,
                    label,
                    source,
                    conf,
                    gold,
                    now,
                    now,
                )
            )
        cols = (
            'project_id, external_id, example_id, "group", fields, generator, perturbation, state, label_id,'
            " label_source, confidence, gold_label_id, created_at, updated_at"
        )
        table = Candidate._meta.db_table
        if connection.vendor == "postgresql":
            with transaction.atomic(), connection.cursor() as cur:
                with cur.connection.cursor().copy(f"COPY {table} ({cols}, image, scores, meta) FROM STDIN") as copy:
                    for r in rows:
                        copy.write_row((*r, "", "{}", "{}"))
                cur.execute(f"ANALYZE {table}")
                cur.execute(f"ANALYZE {Example._meta.db_table}")
        else:
            Candidate.objects.bulk_create(
                [
                    Candidate(
                        project_id=r[0],
                        external_id=r[1],
                        example_id=r[2],
                        group=r[3],
                        fields=json.loads(r[4]),
                        generator=r[5],
                        perturbation=r[6],
                        state=r[7],
                        label_id=r[8],
                        label_source=r[9],
                        confidence=r[10],
                        gold_label_id=r[11],
                    )
                    for r in rows
                ],
                batch_size=5000,
            )
        return project

    def _drop(self, project: Project) -> None:
        with transaction.atomic(), connection.cursor() as cur:
            cur.execute(f"DELETE FROM {Candidate._meta.db_table} WHERE project_id = %s", [project.pk])
            cur.execute(f"DELETE FROM {Example._meta.db_table} WHERE project_id = %s", [project.pk])
        project.delete()

    def _select(self, project: Project, params: dict[str, Any]) -> float:
        """The selector alone (the page's queries and row building, no template)."""
        from django.http import QueryDict

        query = QueryDict(mutable=True)
        for k, v in params.items():
            query[k] = str(v)
        start = time.perf_counter()
        filters = CandidateFiltersForm.parse(query, project=project).filters()
        after, before = params.get("after"), params.get("before")
        candidates_browse(project=project, filters=filters, after=after, before=before)
        return (time.perf_counter() - start) * 1000

    def _total(self, project: Project, params: dict[str, Any]) -> tuple[float, str]:
        """The filters' total alone (workspace/data/totals.py), as the page shows it."""
        from django.http import QueryDict

        query = QueryDict(mutable=True)
        for k, v in params.items():
            if k not in ("after", "before"):
                query[k] = str(v)
        filters = CandidateFiltersForm.parse(query, project=project).filters()
        start = time.perf_counter()
        total = matching_total(candidates_filtered(project=project, filters=filters))
        return (time.perf_counter() - start) * 1000, total.text

    # -- one request ------------------------------------------------------------------------

    def _time_view(self, view: Any, path: str, user: Any, kwargs: dict[str, Any]) -> float:
        request = RequestFactory().get(path)
        request.user = user
        request.session = SessionBase()
        request._messages = FallbackStorage(request)  # type: ignore[attr-defined]
        request.htmx = HtmxDetails(request)  # type: ignore[attr-defined]
        start = time.perf_counter()
        response = view(request, **kwargs)
        elapsed = (time.perf_counter() - start) * 1000
        if response.status_code != 200:
            raise RuntimeError(f"{path}: HTTP {response.status_code}")
        return elapsed

    def _request(self, project: Project, user: Any, params: dict[str, Any]) -> float:
        request = RequestFactory().get(f"/projects/{project.pk}/candidates/", params)
        request.user = user
        request.session = SessionBase()
        request._messages = FallbackStorage(request)  # type: ignore[attr-defined]
        request.htmx = HtmxDetails(request)  # type: ignore[attr-defined]
        start = time.perf_counter()
        response = data_views.candidate_list(request, pk=project.pk)
        elapsed = (time.perf_counter() - start) * 1000
        if response.status_code != 200:
            raise RuntimeError(f"{params}: HTTP {response.status_code}")
        return elapsed
