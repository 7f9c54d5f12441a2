"""Celery app for the generation-worker integration test: the project's app, plus the
test generators registered (a prefork child inherits them from the parent).

Also ``seed()``: creates the project and originals and starts a run, in a separate
process that shares the test's SQLite file with the worker."""

from __future__ import annotations

import os
import sys

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")

import django

django.setup()

from config.celery import app  # noqa: E402
from tests.generation.run_fixtures import register_test_generators  # noqa: E402

register_test_generators()

__all__ = ["app"]


def seed(name: str, n: int, options_json: str) -> None:
    import json

    from django.core.management import call_command

    from generation.services.runs import run_start
    from tests.generation.run_fixtures import make_project

    call_command("migrate", verbosity=0)
    project = make_project(name=name, n=n)
    run = run_start(project=project, generator="test-echo", options=json.loads(options_json))
    sys.stdout.write(f"{run.pk}\n")
