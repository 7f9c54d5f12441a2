"""The plumbing of the load scenarios (issue 33) that runs without Locust or gunicorn: the
browser scenario reads the real annotator page with its own patterns (so a template change that
would blind it fails here), the sessions the command writes are accepted by the server, the
figures of a Locust dump over the steady window, and the commands' refusals of bad options.
The runs themselves are in test_load_command.py (slow, PostgreSQL)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from annotate.management.commands.bench_annotation_load import CpuSampler, signed_in_sessions, steady_stats
from annotate.models import Assignment
from annotate.services.routing import project_route

from .factories import annotator, login, project_with_candidates

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]

LOCUSTFILE = Path(__file__).resolve().parents[2] / "annotate" / "locustfile.py"


def _patterns() -> dict[str, re.Pattern[str]]:
    """The scenario's ``re.compile`` patterns, read from the locustfile without importing it
    (importing Locust would monkey-patch this process with gevent)."""
    found = {}
    for node in ast.parse(LOCUSTFILE.read_text(encoding="utf-8")).body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            call = node.value
            if getattr(call.func, "attr", "") == "compile" and isinstance(call.args[0], ast.Constant):
                found[node.targets[0].id] = re.compile(call.args[0].value)  # type: ignore[attr-defined]
    return found


@pytest.fixture
def project():
    p = project_with_candidates(n=6, k=2)
    project_route(project=p, budget=1.0, seed=0)
    return p


def test_browser_scenario_reads_the_real_page_answer_undo_and_heartbeat(project, settings):
    settings.COUNTERPART = {**settings.COUNTERPART, "HEARTBEAT_SECONDS": 17}
    pat = _patterns()
    assert {"_STAGE", "_CHOICE", "_UNDO", "_HEARTBEAT", "_ERROR", "_CSRF_INPUT"} <= set(pat)
    u = annotator(project)
    c = login(u)
    page = c.get(f"/annotate/projects/{project.pk}/").content.decode()
    leased = Assignment.objects.get(annotator=u, status="leased")
    assert int(pat["_STAGE"].search(page)[1]) == leased.pk
    choices = pat["_CHOICE"].findall(page)
    assert set(choices) == {"entailment", "neutral", "contradiction", "unclear"}
    assert pat["_HEARTBEAT"].search(page)[1] == "17"
    assert pat["_UNDO"].search(page) is None  # nothing answered yet
    stage = c.post(
        f"/annotate/assignments/{leased.pk}/answer/",
        {"choice": choices[0], "duration_ms": "900"},
        HTTP_HX_REQUEST="true",
    ).content.decode()
    assert pat["_ERROR"].search(stage) is None
    nxt = Assignment.objects.get(annotator=u, status="leased")
    assert int(pat["_STAGE"].search(stage)[1]) == nxt.pk
    assert pat["_UNDO"].search(stage)[1] == f"/annotate/assignments/{leased.pk}/undo/"
    again = c.post(
        f"/annotate/assignments/{leased.pk}/answer/", {"choice": "not-offered"}, HTTP_HX_REQUEST="true"
    ).content.decode()
    assert pat["_ERROR"].search(again) is not None  # a refusal on the stage is seen as one
    login_page = Client().get("/accounts/login/").content.decode()
    assert pat["_CSRF_INPUT"].search(login_page) is not None


def test_signed_in_sessions_are_accepted_by_the_server(project):
    users = [annotator(project), annotator(project)]
    lines = signed_in_sessions(users)
    assert [line.split()[0] for line in lines] == [u.username for u in users]
    c = Client()
    c.cookies["sessionid"] = lines[1].split()[1]
    r = c.get(f"/annotate/projects/{project.pk}/")
    assert r.status_code == 200
    assert Assignment.objects.filter(annotator=users[1], status="leased").count() == 1


class _Sampler(CpuSampler):
    def __init__(self, samples):
        self.samples = samples


def test_steady_stats_counts_the_window_cpu_and_errors():
    t0 = 1000.0
    requests = [("answer", t0 + 0.5, 5.0, 201)]  # in the ramp: left out
    requests += [("answer", t0 + 2 + i, 10.0 + i, 200) for i in range(10)]
    requests += [("heartbeat", t0 + 3, 4.0, 204), ("undo", t0 + 4, 8.0, 200), ("next-item", t0 + 5, 3.0, 404)]
    requests += [("answer", t0 + 6, 0.0, 0)]  # no response: an error
    requests += [("login", t0 + 0.2, 30.0, 302)]  # a log-in's redirect is not one
    samples = [(t0 + s, 0.1 * s, 1.0 * s, 2.0 * s, 3.0) for s in range(14)]
    stats = steady_stats(data={"requests": requests}, t_start=t0, ramp=1.5, sampler=_Sampler(samples))
    assert stats["counts"]["answer"] == 10 and stats["counts"]["heartbeat"] == 1
    assert stats["errors"] == 1 and stats["error_kinds"] == {"answer 0": 1}  # Label Studio's 404 "no task" is not one
    assert stats["answer_p95_ms"] == 19.0 and stats["p50_ms"] == 13.0  # of 4, 8, 10 … 19
    assert 0.8 < stats["answers_per_s"] < 1.2  # 10 answers, one undone, over ~9.5 s
    assert stats["locust_cpu_share"] == pytest.approx(0.05, abs=0.01)  # 0.1 CPU-s/s of 2 cores
    assert stats["server_cpu_share"] == pytest.approx(0.5, abs=0.01)
    assert stats["server_cpu_ms_per_answer"] > 0


def test_load_commands_refuse_bad_options(tmp_path):
    with pytest.raises(CommandError, match="--skip-rate"):
        call_command("bench_annotation_load", "--scenario", "browser", "--skip-rate", "2")
    with pytest.raises(CommandError, match=r"no manage\.py"):
        call_command("bench_annotation_load", "--app-dir", str(tmp_path))
    with pytest.raises(CommandError, match="no Label Studio virtualenv"):
        call_command("bench_annotation_anchor", "--ls-venv", str(tmp_path / "none"))
    with pytest.raises(CommandError, match="--sweep"):
        call_command("bench_annotation_table", "--sweep", "10,many")
    with pytest.raises(CommandError, match="--baseline"):
        call_command("bench_annotation_table", "--baseline", "x;rm", "--sweep", "", "--anchor-annotators", "0")


def test_flame_graphs_keep_no_machine_paths(settings):
    import sys

    from annotate.management.commands.bench_annotation_load import machine_paths_out

    venv = Path(sys.executable).resolve().parents[1]
    svg = (
        f"<title>process 7:&quot;{venv}/bin/python {settings.BASE_DIR}/.venv/bin/gunicorn config.wsgi</title>"
        f"<title>answer ({settings.BASE_DIR}/annotate/views.py:153)</title><text>process 7:&quot;/wo..</text>"
    )
    out = machine_paths_out(svg)
    assert str(settings.BASE_DIR) not in out and str(venv) not in out and "/wo.." not in out
    assert ".venv/bin/python .venv/bin/gunicorn" in out and "(./annotate/views.py:153)" in out
