"""The researcher's routing and members pages (GET shows the page, POST acts), items left."""

import pytest
from django.test import Client

from annotate.models import Item
from annotate.services.routing import project_route
from projects.models import ProjectMembership

from .factories import UserFactory, annotator, project_with_candidates, researcher

pytestmark = pytest.mark.django_db


@pytest.fixture
def project():
    return project_with_candidates(n=6, k=2)


def login(user):
    c = Client()
    c.force_login(user)
    return c


@pytest.mark.parametrize("page", ["route", "members"])
def test_pages_answer_get_by_role(project, page):
    url = f"/annotate/projects/{project.pk}/{page}/"
    assert login(researcher()).get(url).status_code == 200
    assert login(annotator(project)).get(url).status_code == 403
    resp = Client().get(url)
    assert resp.status_code == 302 and "/accounts/login/" in resp["Location"]


def test_route_form_errors_next_to_fields_all_at_once(project):
    c = login(researcher())
    resp = c.post(f"/annotate/projects/{project.pk}/route/", {"budget": "2", "strategy": "bogus"})
    html = resp.content.decode()
    assert resp.status_code == 400
    assert 'id="budget-error"' in html and "between 0 and 1" in html
    assert 'id="strategy-error"' in html and "choose one of" in html


def test_members_add_pause_resume_remove(project):
    c = login(researcher())
    url = f"/annotate/projects/{project.pk}/members/"
    a = UserFactory(username="ann1", role="annotator")
    r2 = researcher(username="res2")
    assert c.post(url, {"action": "add", "username": "ann1", "role": "annotator"}).status_code == 302
    assert c.post(url, {"action": "add", "username": "res2", "role": "researcher"}).status_code == 302
    assert ProjectMembership.objects.get(user=r2).role == "researcher"
    # errors next to their fields: unknown account, wrong role, already a member (409)
    bad = c.post(url, {"action": "add", "username": "nobody", "role": "annotator"})
    assert bad.status_code == 400 and 'id="username-error"' in bad.content.decode()
    bad = c.post(url, {"action": "add", "username": "ann1", "role": "researcher"})
    assert bad.status_code == 400 and 'id="role-error"' in bad.content.decode()
    assert c.post(url, {"action": "add", "username": "ann1", "role": "annotator"}).status_code == 409
    m = ProjectMembership.objects.get(user=a)
    c.post(url, {"action": "pause", "membership": m.pk})
    m.refresh_from_db()
    assert m.flagged and m.flag_reason.startswith("paused by")
    page = c.get(url).content.decode()
    assert "paused" in page and "resume" in page
    c.post(url, {"action": "resume", "membership": m.pk})
    m.refresh_from_db()
    assert not m.flagged
    c.post(url, {"action": "remove", "membership": m.pk})
    assert not ProjectMembership.objects.filter(pk=m.pk).exists()


def test_paused_annotator_gets_no_item(project):
    project_route(project=project, budget=1.0, seed=0)
    u = annotator(project)
    m = ProjectMembership.objects.get(user=u)
    login(researcher()).post(f"/annotate/projects/{project.pk}/members/", {"action": "pause", "membership": m.pk})
    page = login(u).get(f"/annotate/projects/{project.pk}/").content.decode()
    assert 'data-assignment=""' in page


def test_items_left_on_the_annotator_page(project):
    project_route(project=project, budget=1.0, seed=0)
    u = annotator(project)
    n = Item.objects.filter(project=project, is_gold=False).count()
    page = login(u).get(f"/annotate/projects/{project.pk}/").content.decode()
    # one item is now leased to u: the rest are left
    assert f'data-testid="left">{n - 1}<' in page
    assert "items left for you" in login(u).get("/annotate/").content.decode()


def test_dashboard_says_why_agreement_is_na_with_one_annotator(project):
    project_route(project=project, budget=1.0, seed=0)
    u = annotator(project)
    c = login(u)
    c.get(f"/annotate/projects/{project.pk}/")
    from annotate.models import Assignment

    a = Assignment.objects.get(annotator=u)
    c.post(f"/annotate/assignments/{a.pk}/answer/", {"choice": "neutral"})
    html = login(researcher()).get(f"/annotate/projects/{project.pk}/dashboard/").content.decode()
    assert "n/a (no item has two answers yet)" in html
    assert "n/a (no item answered by two or more)" in html


def test_favicon_is_served(client):
    resp = client.get("/favicon.ico")
    assert resp.status_code == 200 and resp["Content-Type"] == "image/svg+xml" and b"<svg" in resp.content
