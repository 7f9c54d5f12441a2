"""``python manage.py bench_pages --project NAME [--requests R] [--rounds N] [--annotators K] [--json]``

Times every page a researcher opens on an existing project and every list endpoint of the
API, through Django's test client (middleware, session, templates: everything but the
network), each cold (the first request, after the cache is cleared) and warm (R more
requests: p50/p95), with the number of SQL queries each request ran. Then the annotator's
hot path: K annotator accounts (``bench-pages-annotator-<i>``, added as members when they
are not) each take N rounds of the API flow (next item, answer; every tenth round an undo and
the answer again, every tenth a skip) and N rounds of the browser flow (the item page, the
htmx answer that returns the next item, undo, skip); p50/p95 per request. The answers are
real ones (the item's first choice), written through the services, so the project keeps
them.

Build the project with the ordinary commands (``import_data``, ``generate``, ``route``);
docs/benchmarks.md names the setting the figures came from. A benchmark prints figures; it
asserts nothing about time.
"""

from __future__ import annotations

import json
import re
import statistics
import time
from html import unescape as html_unescape
from typing import Any

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.cache import cache
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from generation.models import GenerationRun
from projects.models import Candidate, Job, Project, ProjectMembership
from projects.permissions import ANNOTATOR, RESEARCHER
from projects.services.memberships import membership_add

HOST = "127.0.0.1"
ANSWER_FORM = re.compile(r'id="answer-form" method="post" action="/annotate/assignments/(\d+)/answer/"')
CHOICE = re.compile(r'name="choice" value="([^"]*)"')


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return round(ordered[min(len(ordered) - 1, int(q * len(ordered)))], 2)


class Command(BaseCommand):
    help = "Time every researcher page and API list endpoint, and the annotator's hot path, on a project."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, help="project name")
        parser.add_argument("--requests", type=int, default=5, help="warm requests per page")
        parser.add_argument("--rounds", type=int, default=100, help="hot-path rounds per annotator and flow")
        parser.add_argument("--annotators", type=int, default=2)
        parser.add_argument("--hot-only", action="store_true", help="only the annotator hot path")
        parser.add_argument("--pages-only", action="store_true", help="no annotator hot path")
        parser.add_argument("--json", action="store_true", help="only the JSON line")

    def handle(self, *args: Any, **opts: Any) -> None:
        project = Project.objects.filter(name=opts["project"]).first()
        if project is None:
            raise CommandError(f"no project named {opts['project']!r}")
        self.quiet = opts["json"]
        out: dict[str, Any] = {
            "project": project.name,
            "database": connection.vendor,
            "candidates": Candidate.objects.filter(project=project).count(),
            "requests_per_page": opts["requests"],
        }
        self._say(f"{project.name}: {out['candidates']} candidates on {connection.vendor}")
        if not opts["hot_only"]:
            out["pages"] = self._pages(project, opts["requests"])
        if not opts["pages_only"]:
            out["hot_path"] = self._hot_path(project, opts["annotators"], opts["rounds"])
        self.stdout.write(json.dumps(out))

    def _say(self, line: str) -> None:
        if not self.quiet:
            self.stdout.write(line)

    # -- the researcher's pages and the API's lists -----------------------------------------

    def _researcher(self, project: Project) -> Any:
        user, _ = get_user_model().objects.get_or_create(username="bench-pages-researcher")
        user.groups.add(Group.objects.get_or_create(name=RESEARCHER)[0])
        if not ProjectMembership.objects.filter(project=project, user=user, role=RESEARCHER).exists():
            membership_add(project=project, username=user.username, role=RESEARCHER)
        return user

    def _urls(self, project: Project) -> dict[str, str]:
        p = project.pk
        cands = Candidate.objects.filter(project=project)
        first = cands.order_by("id").values_list("id", flat=True).first()
        last_ids = list(cands.order_by("-id").values_list("id", flat=True)[:60])
        deep = last_ids[-1] if last_ids else 0
        run = GenerationRun.objects.filter(project=project).order_by("-id").first()
        job = Job.objects.filter(project=project).order_by("-id").first()
        human = cands.filter(state="human_labeled").values_list("id", flat=True).first() or first
        urls = {
            "project list": reverse("project-list"),
            "overview": reverse("project-detail", args=[p]),
            "dashboard": reverse("project-dashboard", args=[p]),
            "warnings": reverse("project-warnings", args=[p]),
            "data page": reverse("project-data", args=[p]),
            "browser: first page": reverse("candidate-list", args=[p]),
            "browser: deep (after=)": reverse("candidate-list", args=[p]) + f"?after={deep}",
            "browser: state=routed": reverse("candidate-list", args=[p]) + "?state=routed",
            "browser: generator=rules, deep": reverse("candidate-list", args=[p]) + f"?generator=rules&after={deep}",
            "browser: disagreement": reverse("candidate-list", args=[p]) + "?disagreement=1",
            "browser: search": reverse("candidate-list", args=[p]) + "?q=dog",
            "pair page": reverse("candidate-detail", args=[human]),
            "runs": reverse("run-list", args=[p]),
            "new run": reverse("run-new", args=[p]),
            "jobs": reverse("job-list") + f"?project={p}",
            "models": reverse("project-models", args=[p]),
            "quality": reverse("annotate-dashboard", args=[p]),
            "route": reverse("annotate-route", args=[p]),
            "members": reverse("annotate-members", args=[p]),
            "export": reverse("project-export", args=[p]),
            "import": reverse("project-import", args=[p]),
            "evaluation": reverse("project-evaluation", args=[p]),
            "flip rates": reverse("labeling-flip-rates", args=[p]),
            "task model": reverse("labeling-task-model", args=[p]),
            "API projects": reverse("api-projects"),
            "API candidates": reverse("api-candidate-list", args=[p]),
            "API candidates deep": reverse("api-candidate-list", args=[p]) + f"?after={deep}",
            "API candidates state=routed": reverse("api-candidate-list", args=[p]) + "?state=routed",
            "API candidate": reverse("api-candidate-detail", args=[human]),
            "API jobs": reverse("api-job-list") + f"?project={p}",
            "API members": reverse("api-member-list", args=[p]),
            "API runs": reverse("api-run-list", args=[p]),
            "API quality": reverse("api-project-quality", args=[p]),
            "API generators": reverse("api-generators") + "?task=" + project.task,
        }
        if run is not None:
            urls["run page"] = reverse("run-detail", args=[run.pk])
            urls["API run"] = reverse("api-run-detail", args=[run.pk])
        if job is not None:
            urls["job box"] = reverse("job-fragment", args=[job.pk])
            urls["API job"] = reverse("api-job-detail", args=[job.pk])
        return urls

    def _pages(self, project: Project, reps: int) -> dict[str, Any]:
        client = Client(HTTP_HOST=HOST)
        client.force_login(self._researcher(project))
        results: dict[str, Any] = {}
        for label, url in self._urls(project).items():
            cache.clear()
            cold_ms, cold_q = self._get(client, url)
            warm = [self._get(client, url) for _ in range(reps)]
            times = [t for t, _ in warm]
            results[label] = {
                "url": url,
                "cold_ms": round(cold_ms, 2),
                "warm_p50_ms": round(statistics.median(times), 2) if times else None,
                "warm_p95_ms": _pct(times, 0.95) if times else None,
                "queries_cold": cold_q,
                "queries_warm": warm[-1][1] if warm else None,
            }
            r = results[label]
            self._say(
                f"  {label:<34} cold {r['cold_ms']:>8.1f} ms ({cold_q:>3} q)   warm p50 {r['warm_p50_ms']:>8.1f}"
                f"  p95 {r['warm_p95_ms']:>8.1f} ms ({r['queries_warm']:>3} q)"
            )
        return results

    def _get(self, client: Client, url: str) -> tuple[float, int]:
        with CaptureQueriesContext(connection) as ctx:
            start = time.perf_counter()
            response = client.get(url)
            if getattr(response, "streaming", False):
                b"".join(response.streaming_content)  # type: ignore[attr-defined]
            elapsed = (time.perf_counter() - start) * 1000
        if response.status_code != 200:
            raise CommandError(f"{url}: HTTP {response.status_code}")
        return elapsed, len(ctx.captured_queries)

    # -- the annotator's hot path ----------------------------------------------------------

    def _annotators(self, project: Project, k: int) -> list[Any]:
        group = Group.objects.get_or_create(name=ANNOTATOR)[0]
        users = []
        for i in range(k):
            user, _ = get_user_model().objects.get_or_create(username=f"bench-pages-annotator-{i}")
            user.groups.add(group)
            if not ProjectMembership.objects.filter(project=project, user=user, role=ANNOTATOR).exists():
                membership_add(project=project, username=user.username, role=ANNOTATOR)
            users.append(user)
        return users

    def _hot_path(self, project: Project, k: int, rounds: int) -> dict[str, Any]:
        self.times: dict[str, list[float]] = {}
        self.queries: dict[str, list[int]] = {}
        for user in self._annotators(project, k):
            client = Client(HTTP_HOST=HOST)
            client.force_login(user)
            self._api_rounds(project, client, rounds)
            self._browser_rounds(project, client, rounds)
        out = {
            op: {
                "n": len(t),
                "p50_ms": round(statistics.median(t), 2),
                "p95_ms": _pct(t, 0.95),
                "queries_max": max(self.queries[op]),
            }
            for op, t in self.times.items()
        }
        for op, r in out.items():
            self._say(
                f"  {op:<34} n {r['n']:>5}  p50 {r['p50_ms']:>7.2f} ms  p95 {r['p95_ms']:>7.2f} ms"
                f"  (≤ {r['queries_max']} q)"
            )
        return out

    def _timed(self, op: str, client: Client, url: str, data: dict[str, str] | None = None, **extra: Any) -> Any:
        """POST (GET when ``data`` is None and ``op`` is a page) and record time and queries."""
        with CaptureQueriesContext(connection) as ctx:
            start = time.perf_counter()
            response = (
                client.get(url, **extra) if op.startswith("page: item") else client.post(url, data or {}, **extra)
            )
            self.times.setdefault(op, []).append((time.perf_counter() - start) * 1000)
        self.queries.setdefault(op, []).append(len(ctx.captured_queries))
        # an undo after the item was aggregated (its last answer came in) is refused: 409
        if response.status_code >= 400 and not (op.endswith("undo") and response.status_code == 409):
            raise CommandError(f"{op}: HTTP {response.status_code} {response.content[:300]!r}")
        return response

    def _api_rounds(self, project: Project, client: Client, rounds: int) -> None:
        next_url = reverse("api-next-item", args=[project.pk])
        for i in range(rounds):
            r = self._timed("API next item", client, next_url)
            if r.status_code == 204:
                return
            lease = r.json()
            a, choice = lease["assignment"], lease["choices"][0]
            if i % 10 == 5:
                self._timed("API skip", client, reverse("api-skip", args=[a]), {"reason": "bench"})
                continue
            answer = reverse("api-annotation", args=[a])
            self._timed("API answer", client, answer, {"choice": choice})
            undone = i % 10 == 0 and self._timed("API undo", client, reverse("api-undo", args=[a])).status_code == 200
            if undone:
                self._timed("API answer", client, answer, {"choice": choice})

    def _browser_rounds(self, project: Project, client: Client, rounds: int) -> None:
        htmx: dict[str, Any] = {"HTTP_HX_REQUEST": "true"}
        r = self._timed("page: item (next)", client, reverse("annotate-work", args=[project.pk]))
        for i in range(rounds):
            # the stage as the browser sees it: the answer form's action and its first button
            html = r.content.decode()
            found = ANSWER_FORM.search(html)
            button = CHOICE.search(html, found.end()) if found else None
            if found is None or button is None:
                return
            a, choice = int(found.group(1)), html_unescape(button.group(1))
            if i % 10 == 5:
                r = self._timed("page: skip", client, reverse("annotate-skip", args=[a]), **htmx)
                continue
            answer = reverse("annotate-answer", args=[a])
            r = self._timed("page: answer (+ next)", client, answer, {"choice": choice}, **htmx)
            if i % 10 == 0:
                # undo gives the same item back; answering it again returns the next one
                undone = self._timed("page: undo", client, reverse("annotate-undo", args=[a]), **htmx)
                if f"/assignments/{a}/answer/".encode() in undone.content:
                    r = self._timed("page: answer (+ next)", client, answer, {"choice": choice}, **htmx)
