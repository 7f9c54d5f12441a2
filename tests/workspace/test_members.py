"""The members page (workspace/members/): who may open it; add, pause, resume, remove."""

import pytest
from django.test import Client

from annotate.services.routing import project_route
from projects.models import ProjectMembership
from tests.annotate.factories import UserFactory, annotator, login, project_with_candidates, researcher

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


@pytest.fixture
def project():
    return project_with_candidates(n=6, k=2)


def test_members_page_answers_get_by_role(project):
    url = f"/annotate/projects/{project.pk}/members/"
    assert login(researcher()).get(url).status_code == 200
    assert login(annotator(project)).get(url).status_code == 403
    resp = Client().get(url)
    assert resp.status_code == 302 and "/accounts/login/" in resp["Location"]


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
