"""Routing into a project with no annotator members warns, everywhere routing is started
(issue 25, item 4): the service's messages, ``manage.py route``, the route page and the API."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from rest_framework.test import APIClient

from annotate.services.routing import no_annotators_warning, project_route
from projects.models import ProjectMembership

from .factories import annotator, login, project_with_candidates, researcher

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def test_the_service_warns_until_an_annotator_is_a_member():
    project = project_with_candidates(n=10)
    members = f"/annotate/projects/{project.pk}/members/"
    r = project_route(project=project, budget=0.5, seed=0)
    assert r.routed == 5
    assert any("no annotator members" in m and members in m for m in r.messages)
    # a researcher membership is not an annotator
    ProjectMembership.objects.create(project=project, user=researcher(), role="researcher")
    assert no_annotators_warning(project)
    annotator(project)
    assert no_annotators_warning(project) == ""
    assert not any("no annotator members" in m for m in project_route(project=project, budget=0.6, seed=0).messages)


def test_the_route_command_prints_the_warning():
    project = project_with_candidates(name="lonely", n=10)
    out, err = StringIO(), StringIO()
    call_command("route", "--project", "lonely", "--budget", "0.5", stdout=out, stderr=err)
    assert "routed 5 candidates" in out.getvalue()
    assert "no annotator members" in err.getvalue() and f"/annotate/projects/{project.pk}/members/" in err.getvalue()


def test_the_route_page_warns_and_links_to_the_members_page():
    project = project_with_candidates(n=10)
    c = login(researcher())
    members = f"/annotate/projects/{project.pk}/members/"
    page = c.get(f"/annotate/projects/{project.pk}/route/").content.decode()
    assert 'id="no-annotators"' in page and f'href="{members}"' in page
    r = c.post(f"/annotate/projects/{project.pk}/route/", {"budget": "0.5", "strategy": "random"}, follow=True)
    text = r.content.decode()
    assert r.status_code == 200 and "Routing queued" in text and "no annotator members" in text
    annotator(project)
    assert 'id="no-annotators"' not in c.get(f"/annotate/projects/{project.pk}/route/").content.decode()


def test_the_route_api_answers_the_warning():
    project = project_with_candidates(n=10)
    c = APIClient()
    c.force_authenticate(researcher())
    r = c.post(f"/api/v1/projects/{project.pk}/route/", {"budget": 0.5}, format="json")
    assert r.status_code == 202
    assert len(r.json()["warnings"]) == 1 and "no annotator members" in r.json()["warnings"][0]
    annotator(project)
    r = c.post(f"/api/v1/projects/{project.pk}/route/", {"budget": 0.6}, format="json")
    assert r.status_code == 202 and r.json()["warnings"] == []
