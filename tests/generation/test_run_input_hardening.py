"""Run options the database cannot store are a 400 with a field message (API) or a form
error (page) — never a 503 "could not enqueue" carrying SQL, never a 500."""

from __future__ import annotations

import json

import pytest
from django.core.exceptions import ValidationError
from rest_framework.test import APIClient

from generation.models import GenerationRun
from generation.services.runs import run_options_clean
from projects.models import Job
from tests.generation.run_fixtures import make_project

pytestmark = pytest.mark.postgres_too

BAD_OPTIONS = {
    "NUL in generator_options": ({"generator_options": {"x": "a\u0000b"}}, "generator_options", "NUL character"),
    "NUL in a generator_options key": ({"generator_options": {"a\u0000": 1}}, "generator_options", "NUL character"),
    "lone surrogate": ({"generator_options": {"x": ["\ud800"]}}, "generator_options", "lone surrogate"),
    "NUL in split": ({"split": "tr\u0000ain"}, "split", "NUL character"),
    "deep generator_options": (
        {"generator_options": {"x": json.loads("[" * 200 + "]" * 200)}},
        "generator_options",
        "nested",
    ),
    "NaN": ({"generator_options": {"x": float("nan")}}, "generator_options", "NaN"),
}


@pytest.fixture
def project(db):
    return make_project()


@pytest.mark.parametrize("kind", sorted(BAD_OPTIONS))
def test_run_options_clean_refuses_unstorable_values_with_a_field_message(project, kind):
    options, field, message = BAD_OPTIONS[kind]
    with pytest.raises(ValidationError) as exc:
        run_options_clean(project=project, options=options)
    assert message in " ".join(exc.value.message_dict[field])


@pytest.mark.parametrize("kind", ["NUL in generator_options", "NUL in split", "NUL in a generator_options key"])
def test_the_run_api_answers_400_without_sql(project, researcher, kind):
    options, field, message = BAD_OPTIONS[kind]
    c = APIClient()
    c.force_authenticate(researcher)
    resp = c.post(
        f"/api/v1/generation/projects/{project.pk}/runs/", {"generator": "rules", "options": options}, format="json"
    )
    assert resp.status_code == 400, resp.content
    detail = resp.json()["detail"]  # refused by projects.middleware before the view: where, not the value
    assert message in detail and field in detail, detail
    assert "LINE 1" not in resp.content.decode() and "escape sequence" not in resp.content.decode()
    assert GenerationRun.objects.count() == 0 and Job.objects.count() == 0


@pytest.mark.parametrize(
    "raw, message",
    [
        ('{"x": "a\\u0000b"}', "NUL character"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('{"x": NaN}', "NaN"),
    ],
)
def test_the_run_form_shows_a_field_error(client, researcher, project, raw, message):
    client.force_login(researcher)
    resp = client.post(f"/projects/{project.pk}/runs/new/", {"generator": "rules", "generator_options": raw})
    assert resp.status_code == 400
    assert message in resp.content.decode()
    assert GenerationRun.objects.count() == 0


@pytest.mark.postgres
def test_on_postgresql_a_nul_in_options_is_a_400_not_a_503(require_postgres, researcher, project):
    c = APIClient()
    c.force_authenticate(researcher)
    resp = c.post(
        f"/api/v1/generation/projects/{project.pk}/runs/",
        {"generator": "rules", "options": {"generator_options": {"x": "a\u0000b"}}},
        format="json",
    )
    assert resp.status_code == 400 and "NUL character" in resp.content.decode()
