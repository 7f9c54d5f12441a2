import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from projects import states
from projects.models import Candidate, Example, ProjectMembership
from projects.services.candidates import candidates_transition
from projects.services.projects import project_create

pytestmark = pytest.mark.postgres_too


@pytest.fixture
def project(db):
    p = project_create(name="sent", task="sentiment")
    ex = Example.objects.create(
        project=p, external_id="e", fields={"text": "great"}, label=p.labels.get(name="positive")
    )
    for i, st in enumerate([states.POOLED, states.POOLED, states.ROUTED, states.FILTERED_OUT]):
        Candidate.objects.create(project=p, example=ex, external_id=f"c{i}", fields={"text": f"t{i}"}, state=st)
    return p


def test_login_required(client, project):
    resp = client.get(f"/projects/{project.pk}/")
    assert resp.status_code == 302 and "/accounts/login/" in resp["Location"]


def test_project_page_shows_counts_per_state(client, researcher, project):
    client.force_login(researcher)
    html = client.get(f"/projects/{project.pk}/").content.decode()
    assert 'data-state="pooled">2<' in html
    assert 'data-state="routed">1<' in html
    assert 'data-state="filtered_out">1<' in html
    assert 'data-state="human_labeled">0<' in html


def test_htmx_refresh_returns_only_the_fragment(client, researcher, project):
    client.force_login(researcher)
    html = client.get(f"/projects/{project.pk}/", HTTP_HX_REQUEST="true").content.decode()
    assert html.lstrip().startswith('<section class="card" id="state-counts"')
    assert "<html" not in html


def test_project_list_counts_without_n_plus_one(client, researcher, project, django_assert_max_num_queries):
    for i in range(5):
        project_create(name=f"extra{i}", task="nli")
    client.force_login(researcher)
    client.get("/projects/")  # the first render counts each new project's aggregates once
    with django_assert_max_num_queries(8):
        html = client.get("/projects/").content.decode()
    assert "sent" in html and "extra4" in html


def test_project_list_reads_the_aggregates(client, researcher, project):
    """Issue 20.8: the list's counts come from the per-project aggregates, which the writes
    keep: no query over the candidate or example tables once they exist."""
    client.force_login(researcher)
    client.get("/projects/")
    candidates_transition(candidates=Candidate.objects.filter(project=project), to=states.ROUTED)
    with CaptureQueriesContext(connection) as ctx:
        html = client.get("/projects/").content.decode()
    tables = (f'"{Candidate._meta.db_table}"', f'"{Example._meta.db_table}"')
    assert not [q["sql"] for q in ctx.captured_queries if any(t in q["sql"] for t in tables)]
    n = Candidate.objects.filter(project=project).count()
    assert n > 0 and f">{n}<" in html.replace(" ", "")


def test_annotator_cannot_open_researcher_pages(client, annotator, project):
    ProjectMembership.objects.create(project=project, user=annotator)
    client.force_login(annotator)
    assert client.get("/projects/").status_code == 403
    assert client.get(f"/projects/{project.pk}/").status_code == 403


def test_home_redirects_by_role(client, researcher):
    client.force_login(researcher)
    assert client.get("/")["Location"] == "/projects/"


def test_login_page_renders(client, db):
    resp = client.get("/accounts/login/")
    assert resp.status_code == 200 and b'name="username"' in resp.content
