"""An answer, skip, undo or heartbeat sent with a CSRF token the session no longer has (logged
out and in again in another tab) is refused as before — nothing recorded — but answered with the
item's stage: the same item, a fresh token, and a message that nothing was saved (it was
Django's bare "Form expired (403)" card). The browser side: tests/browser/test_form_expired.py."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.utils.crypto import get_random_string

from annotate.models import Annotation, Assignment
from annotate.services.routing import project_route
from annotate.views import FORM_EXPIRED, PAGE_REFRESHED
from tests.annotate.factories import annotator, project_with_candidates

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]

HX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def leased(annotation_settings_fast):
    project = project_with_candidates(n=3, k=1)
    project_route(project=project, budget=1.0, seed=0)
    user = annotator(project, username="ann")
    client = Client(enforce_csrf_checks=True)
    client.force_login(user)
    page = client.get(f"/annotate/projects/{project.pk}/")
    aid = int(re.search(rb'data-assignment="(\d+)"', page.content).group(1))
    stale = _token(page)
    # a log-in in another tab gives the browser a new CSRF cookie (django.middleware.csrf.rotate_token)
    client.cookies["csrftoken"] = get_random_string(32)
    return client, aid, stale


@pytest.fixture
def annotation_settings_fast(settings):
    settings.COUNTERPART = {**settings.COUNTERPART, "GOLD_RATE": 0.0, "QUALIFICATION_GOLD": 0}


def _token(resp) -> str:
    return re.search(rb'name="csrfmiddlewaretoken" value="([^"]+)"', resp.content).group(1).decode()


@pytest.mark.parametrize("action", ["answer", "skip", "undo"])
def test_an_action_with_a_stale_token_shows_the_item_again_with_a_fresh_one(leased, action) -> None:
    client, aid, stale = leased
    data = (
        {"choice": "entailment", "csrfmiddlewaretoken": stale} if action == "answer" else {"csrfmiddlewaretoken": stale}
    )
    resp = client.post(f"/annotate/assignments/{aid}/{action}/", data, **HX)
    assert resp.status_code == 200
    html = resp.content.decode()
    assert 'id="stage"' in html and f'data-assignment="{aid}"' in html and "Form expired" not in html
    assert "Not saved" in html
    assert not Annotation.objects.exists() and Assignment.objects.get(pk=aid).status == "leased"

    fresh = _token(resp)  # the stage's own token is the session's: the answer now goes through
    resp = client.post(
        f"/annotate/assignments/{aid}/answer/", {"choice": "entailment", "csrfmiddlewaretoken": fresh}, **HX
    )
    assert resp.status_code == 200 and Annotation.objects.filter(assignment_id=aid).count() == 1


def test_a_heartbeat_with_a_stale_token_refreshes_the_whole_stage(leased) -> None:
    client, aid, stale = leased
    resp = client.post(f"/annotate/assignments/{aid}/heartbeat/", {}, HTTP_X_CSRFTOKEN=stale, **HX)
    assert resp.status_code == 200
    assert resp["HX-Retarget"] == "#stage" and resp["HX-Reswap"] == "outerHTML"
    assert PAGE_REFRESHED in resp.content.decode().replace("&#x27;", "'")


def test_without_javascript_the_message_comes_with_the_item_page(leased) -> None:
    client, aid, stale = leased
    resp = client.post(f"/annotate/assignments/{aid}/answer/", {"choice": "entailment", "csrfmiddlewaretoken": stale})
    assert resp.status_code == 302
    page = client.get(resp["Location"])
    assert FORM_EXPIRED in page.content.decode().replace("&#x27;", "'")
    assert not Annotation.objects.exists()


def test_a_stale_token_on_someone_elses_lease_says_not_yours(leased) -> None:
    client, aid, stale = leased
    other = annotator(None, username="other")
    client.force_login(other)
    for action in ("answer", "heartbeat"):
        resp = client.post(
            f"/annotate/assignments/{aid}/{action}/", {"choice": "entailment", "csrfmiddlewaretoken": stale}, **HX
        )
        assert b'data-gone="1"' in resp.content and not Annotation.objects.exists()
        assert resp["HX-Retarget"] == "#stage"  # in place of the stage, not nested in the item


def test_no_session_and_no_token_leads_to_log_in() -> None:
    resp = Client(enforce_csrf_checks=True).post(
        "/annotate/assignments/3/answer/", HTTP_HX_CURRENT_URL="http://testserver/annotate/projects/7/", **HX
    )
    assert resp["HX-Redirect"] == "/accounts/login/?next=/annotate/projects/7/"


def test_a_valid_token_still_works_and_a_get_is_still_refused(leased) -> None:
    client, aid, _ = leased
    assert client.get(f"/annotate/assignments/{aid}/answer/").status_code == 405
