"""The researcher's routing page (GET shows the page, POST acts), items left (the members page:
tests/workspace/test_members.py)."""

import pytest
from django.test import Client

from annotate.models import Item
from annotate.services.routing import project_route

from .factories import annotator, login, project_with_candidates, researcher

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


@pytest.fixture
def project():
    return project_with_candidates(n=6, k=2)


def test_route_page_answers_get_by_role(project):
    url = f"/annotate/projects/{project.pk}/route/"
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


def test_items_left_on_the_annotator_page(project):
    project_route(project=project, budget=1.0, seed=0)
    u = annotator(project)
    n = Item.objects.filter(project=project, is_gold=False).count()
    page = login(u).get(f"/annotate/projects/{project.pk}/").content.decode()
    # one item is now leased to u: the rest are left
    assert f'data-testid="left">{n - 1}<' in page
    assert "items left for you" in login(u).get("/annotate/").content.decode()
    # a member who may take no item (paused, flagged after failing the checks) is not told that
    # items are left for them above the card that says they cannot go on (QA)
    from projects.models import ProjectMembership
    from projects.services.memberships import membership_pause

    membership_pause(membership=ProjectMembership.objects.get(project=project, user=u), by=researcher())
    page = login(u).get(f"/annotate/projects/{project.pk}/").content.decode()
    assert "paused" in page and 'data-testid="left"' not in page and "items left" not in page


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
