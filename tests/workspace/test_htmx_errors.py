"""An htmx request whose page view answers 404 or 403 — the overview's counts polled after
another researcher deleted the project, a section's button pressed by an account that lost
the researcher role — got the whole error page (under DEBUG, Django's technical 404 page with
its inline style, refused by the CSP), and htmx swapped it into the section. It now gets the
error card alone, with HTTP 286 (htmx swaps it and stops polling)
(``projects.middleware.HtmxErrorMiddleware``)."""

from __future__ import annotations

from html import unescape

import pytest
from django.contrib.auth.models import Group
from django.test import Client, override_settings

from projects.services.deletion import project_delete
from projects.services.projects import project_create
from tests.annotate.factories import researcher

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


@pytest.mark.parametrize("debug", [False, True])
def test_the_counts_poll_of_a_deleted_project_gets_the_404_card_and_stops(debug) -> None:
    project = project_create(name="gone soon", task="nli")
    c = Client()
    c.force_login(researcher())
    assert c.get(f"/projects/{project.pk}/", HTTP_HX_REQUEST="true").status_code == 200
    project_delete(project=project)
    with override_settings(DEBUG=debug):
        resp = c.get(f"/projects/{project.pk}/", HTTP_HX_REQUEST="true")
        html = unescape(resp.content.decode())
        assert resp.status_code == 286  # htmx stops polling
        assert '<h2 id="error-heading">Not found (404)</h2>' in html and 'id="way-back"' in html
        assert "<html" not in html and "<header" not in html and "<style" not in html
        page = c.get(f"/projects/{project.pk}/")  # the page itself is still the whole 404 page
        assert page.status_code == 404


def test_a_section_button_pressed_after_the_role_was_taken_gets_the_403_card() -> None:
    project = project_create(name="p", task="nli")
    user = researcher()
    c = Client()
    c.force_login(user)
    user.groups.remove(Group.objects.get(name="researcher"))
    resp = c.post(f"/labeling/projects/{project.pk}/train/", {"mode": "pc"}, HTTP_HX_REQUEST="true")
    html = unescape(resp.content.decode())
    assert resp.status_code == 286 and '<h2 id="error-heading">Not allowed (403)</h2>' in html
    assert "<html" not in html and "<header" not in html
    plain = c.post(f"/labeling/projects/{project.pk}/train/", {"mode": "pc"})
    assert plain.status_code == 403 and "<html" in plain.content.decode()
