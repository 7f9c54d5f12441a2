"""Double submits of a job start (QA probe: the same POST sent twice at once, a double click on
"Train h"): each request created its own job, so a double click trained h twice (two model
versions, twice the CPU), exported twice, queued two evaluations. Now the same start again
(kind, project, parameters, user) within ``DOUBLE_SUBMIT_SECONDS`` while the first job is still
queued or running answers with that job: one effect. Another user's, other parameters, or a
start after the first job ended make a new job as before."""

from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from projects.models import Job
from tests.annotate.factories import project_with_candidates, researcher
from tests.concurrency import at_once

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


@pytest.fixture(autouse=True)
def _broker(sent_messages):
    """No worker runs the jobs: they stay queued."""
    return sent_messages


def _api(user=None) -> APIClient:  # type: ignore[no-untyped-def]
    api = APIClient()
    api.force_authenticate(user or researcher())
    return api


ROUTE = {"budget": 0.5, "strategy": "random"}
EXPORT = {"run_as_job": True}


def test_the_same_start_twice_gives_one_job(django_capture_on_commit_callbacks, sent_messages):
    project = project_with_candidates(name="twice", n=10)
    api = _api()
    for path, body in (
        (f"/api/v1/projects/{project.pk}/route/", ROUTE),
        (f"/api/v1/projects/{project.pk}/export/", EXPORT),
    ):
        with django_capture_on_commit_callbacks(execute=True):
            first = api.post(path, body, format="json")
            second = api.post(path, body, format="json")
        assert first.status_code == second.status_code == 202
        assert first.json()["id"] == second.json()["id"]
    assert Job.objects.count() == 2 and sorted(sent_messages) == sorted(Job.objects.values_list("pk", flat=True))


def test_the_route_page_double_click_queues_one_job(django_capture_on_commit_callbacks, sent_messages):
    project = project_with_candidates(name="page", n=10)
    page = Client()
    page.force_login(researcher())
    with django_capture_on_commit_callbacks(execute=True):
        for _ in range(2):
            page.post(f"/annotate/projects/{project.pk}/route/", {"budget": "0.5", "strategy": "random"})
    assert Job.objects.filter(kind="route").count() == 1 and len(sent_messages) == 1


def test_other_parameters_another_user_or_an_ended_job_start_a_new_one(django_capture_on_commit_callbacks):
    project = project_with_candidates(name="new", n=10)
    api = _api()
    path = f"/api/v1/projects/{project.pk}/route/"
    with django_capture_on_commit_callbacks(execute=True):
        first = api.post(path, ROUTE, format="json").json()["id"]
        other_budget = api.post(path, {**ROUTE, "budget": 0.3}, format="json").json()["id"]
        other_user = _api(researcher()).post(path, ROUTE, format="json").json()["id"]
    assert len({first, other_budget, other_user}) == 3
    Job.objects.filter(pk=first).update(status="succeeded")
    with django_capture_on_commit_callbacks(execute=True):
        again = api.post(path, ROUTE, format="json").json()["id"]
    assert again not in {first, other_budget, other_user}


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_starts_at_once_on_postgresql_make_one_job(require_postgres, sent_messages):
    """Real concurrent requests: the project's row lock makes the second see the first's job."""
    project = project_with_candidates(name="at-once", n=10)
    user = researcher()

    def post() -> tuple[int, int]:
        r = _api(user).post(f"/api/v1/projects/{project.pk}/export/", EXPORT, format="json")
        return r.status_code, r.json()["id"]

    answers = at_once(post)
    assert len(answers) == 2 and {status for status, _ in answers} == {202}
    assert len({job for _, job in answers}) == 1
    assert Job.objects.filter(kind="export").count() == 1 and len(sent_messages) == 1
