"""Schemathesis against the generated OpenAPI schema: every operation, with requests
generated from its schema, for a signed-in researcher and a signed-in annotator (token
auth), through the WSGI app in-process (the test database, eager jobs). No 5xx, ever. Most
generated requests use the fixture's real ids (random ids only reach 404s); the others keep
schemathesis' ids, which found the out-of-range-id 500 (tests/config/test_out_of_range_ids.py).

Also the bodies the schema does not describe: a deeply nested JSON body and a body with a
NUL, on every operation that takes a body."""

from __future__ import annotations

import pytest
from django.core.signals import request_finished, request_started
from django.core.wsgi import get_wsgi_application
from django.db import close_old_connections
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.authtoken.models import Token

from annotate.services.routing import project_route
from tests.annotate.factories import annotator, project_with_candidates, researcher
from tests.conftest import need_module

schemathesis = need_module("schemathesis")

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]

MAX_EXAMPLES = 12
# derandomize: the same requests on every run, so CI does not flake (vary the seed locally
# with --hypothesis-seed after removing it to explore).
FUZZ = settings(
    max_examples=MAX_EXAMPLES,
    deadline=None,
    database=None,
    derandomize=True,
    suppress_health_check=list(HealthCheck),
)


@pytest.fixture
def app():
    """The WSGI app, with the database connection kept open between requests (as Django's
    test client does): otherwise request_finished closes the test's connection and, on
    PostgreSQL, the test transaction with it."""
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    try:
        yield get_wsgi_application()
    finally:
        request_started.connect(close_old_connections)
        request_finished.connect(close_old_connections)


@pytest.fixture
def users():
    from annotate.services import assignments as svc
    from generation.services.runs import run_create

    project = project_with_candidates(n=6, k=2)
    project_route(project=project, budget=1.0, seed=0)
    ann = annotator(project)
    lease = svc.assignment_next(project=project, annotator=ann)
    run = run_create(project=project, generator="rules")
    return {
        "researcher": Token.objects.create(user=researcher()).key,
        "annotator": Token.objects.create(user=ann).key,
        # real ids, used in most generated requests (random ones only find 404s)
        "ids": {"project_id": project.pk, "assignment_id": lease.pk, "run_id": run.pk, "job_id": run.job_id},
    }


def _operations(app, token: str):
    headers = {"Authorization": f"Token {token}"}
    schema = schemathesis.openapi.from_wsgi("/api/schema/?format=json", app, headers=headers)
    ops = [result.ok() for result in schema.get_all_operations()]
    assert len(ops) >= 10
    return ops, headers


@pytest.mark.parametrize("role", ["researcher", "annotator"])
def test_no_operation_answers_5xx_to_schema_generated_requests(app, users, role):
    ops, headers = _operations(app, users[role])
    failures: list[str] = []
    for op in ops:
        _fuzz(op, headers, users["ids"], failures)()
    assert not failures, "\n".join(failures)


def _fuzz(op, headers: dict[str, str], ids: dict[str, int], failures: list[str]):
    @FUZZ
    @given(case=op.as_strategy(), real_ids=st.integers(0, 3))
    def check(case, real_ids):
        if real_ids and case.path_parameters:  # 3 in 4: the fixture's objects
            case.path_parameters = {k: ids.get(k, v) for k, v in case.path_parameters.items()}
        response = case.call(headers=headers)
        if response.status_code >= 500:
            where = f"{op.method.upper()} {op.path}: {response.status_code}"
            failures.append(f"{where} for {case.path_parameters} {case.query} {case.body!r}"[:400])

    return check


@pytest.mark.parametrize("role", ["researcher", "annotator"])
def test_nested_and_nul_bodies_are_4xx_on_every_operation(app, users, role):
    from django.test import Client

    ops, _ = _operations(app, users[role])
    client = Client(HTTP_AUTHORIZATION=f"Token {users[role]}")
    deep = "[" * 100_000 + "]" * 100_000
    nul = '{"choice": "a\\u0000b", "reason": "a\\u0000b", "options": {"x": "a\\u0000b"}, "generator": "rules"}'
    checked = 0
    for op in ops:
        if op.method.lower() not in ("post", "put", "patch"):
            continue
        path = op.path
        for name, value in users["ids"].items():
            path = path.replace("{" + name + "}", str(value))
        for body in (deep, nul):
            resp = getattr(client, op.method.lower())(path, body, content_type="application/json")
            assert resp.status_code < 500, (op.method, op.path, resp.status_code, body[:40])
            checked += 1
    assert checked >= 6
