"""Inputs (issue 32.8): every numeric option of a generation run is bounded in the API and the
form (a limit of 1e26 was accepted, 202, and its cancel took 110 s to land); the form shows
each error next to its field."""

from __future__ import annotations

import re

import pytest
from rest_framework.test import APIClient

from generation.ml import registry
from generation.models import GenerationRun
from generation.services.runs import MAX_LIMIT, MAX_PER_ORIGINAL, MAX_SEED
from tests.generation.run_fixtures import make_project, register_test_generators

pytestmark = pytest.mark.postgres_too


@pytest.fixture(autouse=True)
def _generators():
    register_test_generators()
    yield
    registry.unregister("test-echo")


@pytest.fixture
def project(db):
    return make_project(name="bounds", n=5)


@pytest.mark.parametrize(
    "option, value, message",
    [
        ("limit", 1e26, f"limit must be between 1 and {MAX_LIMIT}"),
        ("limit", 10**30, f"limit must be between 1 and {MAX_LIMIT}"),
        ("limit", MAX_LIMIT + 1, f"limit must be between 1 and {MAX_LIMIT}"),
        ("limit", 0, f"limit must be between 1 and {MAX_LIMIT}"),
        ("limit", 2.5, "limit must be a whole number"),
        ("limit", True, "limit must be a whole number"),
        ("max_per_original", MAX_PER_ORIGINAL + 1, f"max_per_original must be between 1 and {MAX_PER_ORIGINAL}"),
        ("batch_size", 10**9, "batch_size must be between 1 and 1000"),
        ("seed", -1, f"seed must be between 0 and {MAX_SEED}"),
        ("seed", 2**64, f"seed must be between 0 and {MAX_SEED}"),
        ("seed", 1.5, "seed must be a whole number"),
        ("validity_threshold", 1e26, "validity_threshold must be a number between 0 and 1"),
    ],
)
def test_the_api_refuses_out_of_bounds_numbers_with_a_message(project, researcher, option, value, message):
    api = APIClient()
    api.force_authenticate(researcher)
    body = {"generator": "test-echo", "options": {option: value}}
    resp = api.post(f"/api/v1/generation/projects/{project.pk}/runs/", body, format="json")
    assert resp.status_code == 400, resp.content
    assert message in str(resp.json()[option])
    assert not GenerationRun.objects.exists()


def test_the_api_takes_the_largest_allowed_numbers(project, researcher, django_capture_on_commit_callbacks):
    api = APIClient()
    api.force_authenticate(researcher)
    body = {"generator": "test-echo", "options": {"limit": MAX_LIMIT, "seed": MAX_SEED, "max_per_original": 1000}}
    with django_capture_on_commit_callbacks(execute=True):
        resp = api.post(f"/api/v1/generation/projects/{project.pk}/runs/", body, format="json")
    assert resp.status_code == 201, resp.content
    assert GenerationRun.objects.get().options["limit"] == MAX_LIMIT


@pytest.mark.parametrize(
    "field, value",
    [("limit", "1e26"), ("limit", "100000000000000000000000000"), ("max_per_original", "5000"), ("seed", "-3")],
)
def test_the_form_shows_the_error_next_to_its_field(client, researcher, project, field, value):
    client.force_login(researcher)
    page = client.get(f"/projects/{project.pk}/runs/new/").content.decode()
    assert re.search(rf'name="{field}"[^>]*max="\d+"', page)  # the browser knows the bound too
    resp = client.post(f"/projects/{project.pk}/runs/new/", {"generator": "test-echo", field: value})
    assert resp.status_code == 400
    html = resp.content.decode()
    # the message sits in the field's own block, after its input, not at the top of the form
    field_block = html.split(f'name="{field}"', 1)[1].split("<label", 1)[0]
    assert "error" in field_block and (
        "less than or equal" in field_block
        or "greater than or equal" in field_block
        or "whole number" in field_block
        or "Enter a whole number" in field_block
    ), field_block
    assert not GenerationRun.objects.exists()
