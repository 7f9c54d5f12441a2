"""View inputs parsed by forms and serializers (issue 20, the house): the field errors a page
shows or the API answers with, the defaults of an absent field, and the one budget rule
behind the route form, the route and project APIs, ``manage.py route`` and the services."""

from __future__ import annotations

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command
from django.test import Client
from rest_framework.test import APIClient

from annotate.forms import AnswerForm, RouteForm
from annotate.services.routing import project_route, project_route_start
from projects.services.projects import project_create
from projects.validators import BUDGET_ERROR, validate_budget
from workspace.data.forms import CandidateFiltersForm, PageQuery

from .factories import project_with_candidates, researcher

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


@pytest.mark.parametrize("value", ["2", "-0.1", "abc", "nan", None, 1.01])
def test_one_budget_rule_everywhere(value):
    with pytest.raises(ValidationError) as exc:
        validate_budget(value)
    assert exc.value.messages == [BUDGET_ERROR]
    assert validate_budget("0.25") == 0.25 and validate_budget(0) == 0.0 and validate_budget(1) == 1.0


def test_the_route_form_api_command_and_services_share_the_budget_message(settings):
    project = project_with_candidates(name="budget", n=4)
    form = RouteForm.parse({"budget": "1.5"})
    assert form.field_errors() == {"budget": BUDGET_ERROR}
    assert RouteForm.parse({}).cleaned_data == {"budget": None, "strategy": "random"}  # the defaults
    assert RouteForm.parse({"strategy": ""}).field_errors()["strategy"].startswith("choose one of")
    api = APIClient()
    api.force_authenticate(researcher())
    resp = api.post(f"/api/v1/projects/{project.pk}/route/", {"budget": 1.5}, format="json")
    assert resp.status_code == 400 and resp.json() == {"budget": [BUDGET_ERROR]}
    resp = api.post("/api/v1/projects/", {"name": "b2", "task": "nli", "human_budget": 7}, format="json")
    assert resp.status_code == 400 and resp.json()["human_budget"] == [BUDGET_ERROR]
    with pytest.raises(CommandError, match="between 0 and 1"):
        call_command("route", "--project", "budget", "--budget", "2")
    for service in (project_route, project_route_start):
        with pytest.raises(ValidationError, match="between 0 and 1"):
            service(project=project, budget=3)
    with pytest.raises(ValidationError, match="between 0 and 1"):
        project_create(name="b3", task="nli", human_budget=-1)


def test_the_route_page_shows_the_errors_next_to_the_fields_and_keeps_what_was_typed():
    project = project_with_candidates(name="page", n=4)
    c = Client()
    c.force_login(researcher())
    resp = c.post(f"/annotate/projects/{project.pk}/route/", {"budget": " 1.5 ", "strategy": "bogus"})
    html = resp.content.decode()
    assert resp.status_code == 400
    assert 'id="budget-error"' in html and BUDGET_ERROR in html and 'value="1.5"' in html
    assert 'id="strategy-error"' in html


def test_an_answer_clamps_its_duration_and_refuses_one_that_is_no_number():
    assert AnswerForm.parse({"choice": "x", "duration_ms": "12"}).cleaned_data["duration_ms"] == 12
    soon = AnswerForm.parse({"choice": "x", "duration_ms": "soon"})
    assert not soon.is_valid() and "duration_ms" in soon.error_text()  # as the API: 400, not dropped
    assert AnswerForm.parse({"choice": "x", "duration_ms": "-5"}).cleaned_data["duration_ms"] == 0
    assert AnswerForm.parse({"choice": "x", "duration_ms": str(10**12)}).cleaned_data["duration_ms"] == 24 * 3600_000
    assert AnswerForm.parse({}).cleaned_data == {"choice": "", "duration_ms": None}


def test_browser_filters_and_cursor_field_errors():
    from django.http import QueryDict

    project = project_with_candidates(name="filters", n=2)
    q = QueryDict("state=pooled&state=nope&min_confidence=0.9&max_confidence=0.2&flip=x&gold=yes")
    form = CandidateFiltersForm.parse(q, project=project)
    errors = form.field_errors()
    assert set(errors) == {"state", "flip", "max_confidence"}
    assert errors["max_confidence"] == "must not be below the minimum"
    filters = form.filters()  # shown back as typed
    assert filters.state == ("pooled", "nope") and filters.flip == "x" and filters.gold == "yes"
    assert PageQuery.parse(QueryDict("after=x&limit=500")).field_errors() == {
        "after": "a candidate id",
        "limit": "a whole number from 1 to 200",
    }
    api = APIClient()
    api.force_authenticate(researcher())
    resp = api.get(f"/api/v1/projects/{project.pk}/candidates/?after=x&flip=x")
    assert resp.status_code == 400 and resp.json() == {"flip": ["choose flip or keep"], "after": ["a candidate id"]}
    assert api.get("/api/v1/jobs/?limit=0").json() == {"limit": ["must be a whole number from 1 to 1000"]}
