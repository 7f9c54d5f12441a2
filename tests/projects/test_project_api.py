"""Projects through the API: create (the page's rule and service), the list with its counts in
one query, and an OpenAPI schema in which every operation is described."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from drf_spectacular.generators import SchemaGenerator
from rest_framework.authtoken.models import Token
from rest_framework.test import APIClient

from projects import states
from projects.aggregates import project_stats_recompute
from projects.models import Candidate, Example, Project
from tests.annotate.factories import annotator, project_with_candidates, researcher

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def client_for(user):
    c = APIClient()
    c.credentials(HTTP_AUTHORIZATION=f"Token {Token.objects.get_or_create(user=user)[0].key}")
    return c


def test_a_researcher_creates_a_project_with_its_own_labels_and_the_task_defaults():
    c = client_for(researcher())
    r = c.post(
        "/api/v1/projects/",
        {"name": "qa", "task": "boolean-qa", "labels": ["no", "yes"], "human_budget": 0.2, "annotators_per_item": 5},
        format="json",
    )
    assert r.status_code == 201, r.content
    qa = Project.objects.get(name="qa")
    body = r.json()
    assert body["id"] == qa.pk and body["labels"] == ["no", "yes"] and body["task"] == "boolean-qa"
    assert (qa.human_budget, qa.annotators_per_item) == (0.2, 5)
    assert body["counts"] == {"originals": 0, "candidates": 0, **dict.fromkeys(states.STATES, 0)}
    r = c.post("/api/v1/projects/", {"name": "senti", "task": "sentiment"}, format="json")
    assert r.status_code == 201 and r.json()["labels"] == ["negative", "positive"]
    assert r.json()["text_fields"] == ["text"]


def test_only_researchers_create_projects_as_on_the_page():
    project = project_with_candidates(n=2)
    a = annotator(project)
    r = client_for(a).post("/api/v1/projects/", {"name": "mine", "task": "nli"}, format="json")
    assert r.status_code == 403 and not Project.objects.filter(name="mine").exists()
    assert client_for(a).get("/api/v1/projects/").status_code == 200  # reading the list stays open
    assert APIClient().post("/api/v1/projects/", {"name": "x", "task": "nli"}, format="json").status_code == 401


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "x" * 201, "task": "nli"}, "name"),
        ({"name": "long label", "task": "nli", "labels": ["a", "b" * 65]}, "labels"),
        ({"name": "long field", "task": "nli", "text_fields": ["f" * 65]}, "text_fields"),
        ({"name": "bad task", "task": "poetry"}, "task"),
        ({"name": "budget", "task": "nli", "human_budget": 1.5}, "human_budget"),
        ({"name": "k", "task": "nli", "annotators_per_item": 0}, "annotators_per_item"),
        ({"task": "nli"}, "name"),
    ],
)
def test_bad_input_is_a_400_per_field_before_the_database(body, field):
    r = client_for(researcher()).post("/api/v1/projects/", body, format="json")
    assert r.status_code == 400 and field in r.json(), r.content
    assert Project.objects.count() == 0


def test_the_service_itself_refuses_over_long_names_before_the_database():
    from django.core.exceptions import ValidationError

    from projects.services.projects import project_create

    for kw in ({"labels": ["a", "b" * 65]}, {"text_fields": ["f" * 65]}, {"name": "n" * 201}):
        with pytest.raises(ValidationError, match="at most"):
            project_create(**{"name": "p", "task": "nli", **kw})
    assert Project.objects.count() == 0


def test_repeated_labels_are_refused_by_the_service_and_a_taken_name_is_a_conflict():
    c = client_for(researcher())
    r = c.post("/api/v1/projects/", {"name": "rep", "task": "nli", "labels": ["a", "a"]}, format="json")
    assert r.status_code == 400 and "without repeats" in r.json()["labels"][0]
    assert c.post("/api/v1/projects/", {"name": "once", "task": "nli"}, format="json").status_code == 201
    r = c.post("/api/v1/projects/", {"name": "once", "task": "sentiment"}, format="json")
    assert r.status_code == 409 and "already exists" in r.json()["name"][0]
    assert Project.objects.filter(name="once").count() == 1


@pytest.mark.parametrize("name", ["unclear", "Unclear", "UNCLEAR", " unclear "])
def test_a_label_named_as_the_reserved_unclear_choice_is_refused_naming_the_field(name):
    """``unclear`` is the "Unclear / invalid" answer every item offers: as a label it was offered
    twice and the quality and dashboard pages failed (labels must be unique)."""
    c = client_for(researcher())
    r = c.post("/api/v1/projects/", {"name": "p", "task": "nli", "labels": [name, "b"]}, format="json")
    assert r.status_code == 400, r.content
    assert "reserved" in r.json()["labels"][0]
    assert not Project.objects.exists()


def test_the_service_and_the_import_command_refuse_a_reserved_label():
    from django.core.exceptions import ValidationError
    from django.core.management import call_command
    from django.core.management.base import CommandError

    from projects.services.projects import project_create

    with pytest.raises(ValidationError) as exc:
        project_create(name="p", task="nli", labels=["a", "Unclear"])
    assert list(exc.value.message_dict) == ["labels"]
    with pytest.raises(CommandError, match="--labels: 'unclear' is reserved"):
        call_command(
            "import_data",
            "--project",
            "q",
            "--task",
            "nli",
            "--labels",
            "a,unclear",
            "--format",
            "cad-nli",
            "/nonexistent",
        )
    assert not Project.objects.exists()


def _seed(name: str, n: int) -> Project:
    project = project_with_candidates(name=name, n=n)
    ids = list(Candidate.objects.filter(project=project).order_by("pk").values_list("pk", flat=True))
    label = project.labels.first()
    Candidate.objects.filter(pk__in=ids[:1]).update(state=states.HUMAN_LABELED, label=label, label_source="human")
    Candidate.objects.filter(pk__in=ids[1:2]).update(state=states.AUTO_LABELED, label=label, label_source="auto")
    Candidate.objects.filter(pk__in=ids[2:]).update(state=states.POOLED)
    project_stats_recompute(project_id=project.pk)  # written around the services: recount
    return project


def test_the_list_has_counts_per_state_in_one_query_whatever_the_number_of_projects():
    c = client_for(researcher())
    _seed("a", 4)

    def listed():
        with CaptureQueriesContext(connection) as ctx:
            r = c.get("/api/v1/projects/")
        assert r.status_code == 200
        return r.json(), len(ctx.captured_queries)

    one, queries_for_one = listed()
    for i in range(4):
        _seed(f"b{i}", 3 + i)
    a = Project.objects.get(name="a")
    Example.objects.create(project=a, external_id="extra", fields={})
    project_stats_recompute(project_id=a.pk)
    many, queries_for_five = listed()
    assert queries_for_five == queries_for_one  # no query per project
    by_name = {p["name"]: p for p in many}
    assert len(by_name) == 5
    assert by_name["a"]["counts"] == {
        "originals": 5,
        "candidates": 4,
        **dict.fromkeys(states.STATES, 0),
        "pooled": 2,
        "human_labeled": 1,
        "auto_labeled": 1,
    }
    assert by_name["b3"]["counts"]["candidates"] == 6 and by_name["b3"]["counts"]["originals"] == 6
    assert one[0]["labels"] == list(Project.objects.get(name="a").labels.values_list("name", flat=True))


def test_an_annotator_lists_only_their_projects_with_counts():
    mine = _seed("mine", 3)
    _seed("other", 2)
    body = client_for(annotator(mine)).get("/api/v1/projects/").json()
    assert [p["name"] for p in body] == ["mine"] and body[0]["counts"]["candidates"] == 3


def test_every_operation_in_the_schema_has_a_summary_and_a_description():
    schema = SchemaGenerator().get_schema(request=None, public=True)
    operations = [(m.upper(), path, op) for path, item in schema["paths"].items() for m, op in item.items()]
    assert len(operations) >= 30
    undescribed = [f"{m} {p}" for m, p, op in operations if not (op.get("description") or "").strip()]
    unsummarised = [f"{m} {p}" for m, p, op in operations if not (op.get("summary") or "").strip()]
    assert undescribed == [] and unsummarised == []
    assert ("POST", "/api/v1/projects/") in {(m, p) for m, p, _ in operations}


def test_the_navigation_links_the_api_docs_for_every_signed_in_account():
    project = project_with_candidates(n=2)
    for user, page in ((researcher(), "/projects/"), (annotator(project), "/annotate/")):
        c = Client()
        c.force_login(user)
        html = c.get(page).content.decode()
        assert '<a href="/api/docs/"' in html, page
        assert c.get("/api/docs/").status_code == 200
    assert '<a href="/api/docs/"' not in Client().get("/accounts/login/").content.decode()
