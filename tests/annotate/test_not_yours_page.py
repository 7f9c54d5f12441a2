"""An annotator who belongs to no project (or not to this one) and opens a project's annotator
page — an old bookmark, a link from a colleague, the page after being removed — got Django's
technical 404 page under DEBUG (the URL patterns of the whole site, "You're seeing this error
because you have DEBUG = True"), since the views raised ``Http404``. Now the app's own 404 page
says what happened and links back, with DEBUG on or off."""

from __future__ import annotations

from html import unescape
from typing import Any

import pytest
from django.test import override_settings

from annotate.models import Assignment
from annotate.services.routing import project_route
from annotate.views import NOT_YOUR_ASSIGNMENT, NOT_YOUR_PROJECT
from projects.services.deletion import project_delete

from .factories import annotator, login, project_with_candidates

pytestmark = pytest.mark.postgres_too


@pytest.mark.django_db
@pytest.mark.parametrize("debug", [True, False])
def test_an_annotator_of_no_project_gets_the_apps_404_page(debug):
    project = project_with_candidates(n=2)
    lonely = login(annotator())
    with override_settings(DEBUG=debug):
        for path in [f"/annotate/projects/{project.pk}/", f"/annotate/projects/{project.pk}/instructions/"]:
            resp = lonely.get(path)
            html = unescape(resp.content.decode())
            assert resp.status_code == 404, path
            assert "DEBUG = True" not in html and "URLconf" not in html
            assert NOT_YOUR_PROJECT in html and 'id="way-back"' in html
        resp = lonely.get("/annotate/projects/999999/")
        assert resp.status_code == 404 and NOT_YOUR_PROJECT in unescape(resp.content.decode())


@pytest.mark.django_db
@override_settings(DEBUG=True)
def test_someone_elses_lease_gets_the_apps_404_page_too():
    project = project_with_candidates(n=2)
    project_route(project=project, budget=1.0, seed=0)
    owner = annotator(project, qualified_at="2026-01-01T00:00:00Z")
    login(owner).get(f"/annotate/projects/{project.pk}/")
    a = Assignment.objects.get(annotator=owner)
    other = login(annotator())
    for action in ["answer", "skip", "undo"]:
        resp = other.post(f"/annotate/assignments/{a.pk}/{action}/", {"choice": "neutral"})
        html = unescape(resp.content.decode())
        assert resp.status_code == 404 and NOT_YOUR_ASSIGNMENT in html and "DEBUG = True" not in html
    assert Assignment.objects.get(pk=a.pk).status == "leased"


def _item_page_open() -> tuple[Any, Any, Assignment]:
    """A project with an annotator whose item page is open: (project, their client, their lease)."""
    project = project_with_candidates(n=2)
    project_route(project=project, budget=1.0, seed=0)
    u = annotator(project, qualified_at="2026-01-01T00:00:00Z")
    c = login(u)
    c.get(f"/annotate/projects/{project.pk}/")
    return project, c, Assignment.objects.get(annotator=u)


@pytest.mark.django_db
def test_a_project_deleted_while_its_item_page_is_open_says_so_on_the_next_key_press():
    """htmx swaps no 404: the answer to a key press on a lease whose project was deleted left
    the page as it was, and every further press did nothing. The stage now says what happened."""
    project, c, a = _item_page_open()
    project_delete(project=project)  # as the researcher's delete page does
    for action in ["answer", "skip", "undo"]:
        resp = c.post(f"/annotate/assignments/{a.pk}/{action}/", {"choice": "neutral"}, HTTP_HX_REQUEST="true")
        html = unescape(resp.content.decode())
        assert resp.status_code == 200, action  # swapped by htmx
        assert html.startswith('<section id="stage"') and NOT_YOUR_ASSIGNMENT in html and 'href="/annotate/"' in html
    # the plain page (reload) is the app's 404 page
    assert c.get(f"/annotate/projects/{project.pk}/").status_code == 404


@pytest.mark.django_db
def test_the_heartbeat_of_an_item_whose_project_was_deleted_says_it_is_gone_not_released():
    """The item page's heartbeat after its project was deleted said "This item was released
    (the page was idle too long). Reload for a new one": it now replaces the stage with what an
    answer on that page says (the lease is gone, the way back), and stops polling."""
    project, c, a = _item_page_open()
    project_delete(project=project)
    resp = c.post(f"/annotate/assignments/{a.pk}/heartbeat/", HTTP_HX_REQUEST="true")
    html = unescape(resp.content.decode())
    assert resp.status_code == 286  # htmx stops polling
    assert resp["HX-Retarget"] == "#stage" and resp["HX-Reswap"] == "outerHTML"
    assert html.startswith('<section id="stage"') and NOT_YOUR_ASSIGNMENT in html and "released" not in html


@pytest.mark.django_db
def test_the_heartbeat_of_an_expired_lease_still_says_released():
    _project, c, a = _item_page_open()
    Assignment.objects.filter(pk=a.pk).update(expires_at="2000-01-01T00:00:00Z")
    resp = c.post(f"/annotate/assignments/{a.pk}/heartbeat/", HTTP_HX_REQUEST="true")
    assert resp.status_code == 286 and "released" in resp.content.decode() and "HX-Retarget" not in resp
