"""Shared fixtures.

Services: tests that need PostgreSQL, Redis or Chromium skip with a reason when the
server or binary is missing — unless ``COUNTERPART_REQUIRE_SERVICES=1`` (set by ``.ci/run``),
in which case a missing service fails the test instead of skipping it.
"""

from __future__ import annotations

import importlib
import os
import shutil
import socket
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("COUNTERPART_SHARED_DATA", REPO.parent / "shared" / "data"))
CHROMIUM = "/usr/bin/chromium"
REQUIRE_SERVICES = os.environ.get("COUNTERPART_REQUIRE_SERVICES") == "1"


def _reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=1):
            return True
    except OSError:
        return False


def need(condition: bool, reason: str) -> None:
    """Skip (locally) or fail (in CI) when a required service is missing. Works inside a
    test and at module level."""
    if condition:
        return
    if REQUIRE_SERVICES:
        pytest.fail(f"required service missing: {reason}")
    pytest.skip(reason, allow_module_level=True)


def need_module(name: str) -> Any:
    """``import name`` — or :func:`need` fails (CI) / skips (locally) when it is missing.
    Use instead of ``pytest.importorskip``, which would skip in CI too."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        need(False, f"{name} is not installed ({exc})")


@pytest.fixture
def shared_data() -> Path:
    need(SHARED_DATA.is_dir(), f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture
def redis_url() -> str:
    url = os.environ.get("COUNTERPART_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
    need(_reachable("127.0.0.1", 6379), "Redis not reachable on 127.0.0.1:6379")
    return url


@pytest.fixture
def require_postgres(db):
    from django.db import connection

    need(connection.vendor == "postgresql", "needs DATABASE_URL=postgres://... (scripts/test.sh runs these)")


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    need(Path(CHROMIUM).exists(), f"{CHROMIUM} not installed (apt-get install chromium)")
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "headless": True,
        "args": [
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
        ],
    }


@pytest.fixture(autouse=True)
def _tmp_media(settings, tmp_path):
    """Media, models and exports under the test's tmp_path, and the test's tmp_path as the
    image root (tests write their images there); tests of the image root set ``IMAGE_ROOT``
    themselves."""
    settings.MEDIA_ROOT = str(tmp_path / "media")
    # models and exports per test too: tests run in parallel processes (pytest-xdist), whose
    # projects share primary keys (project-1/…, export-1.jsonl)
    settings.COUNTERPART = {
        **settings.COUNTERPART,
        "IMAGE_ROOT": str(tmp_path),
        "MODEL_DIR": str(tmp_path / "models"),
        "EXPORT_DIR": str(tmp_path / "exports"),
    }
    return settings.MEDIA_ROOT


@pytest.fixture(autouse=True)
def _fresh_cache():
    """Each test starts with an empty cache: the API-token throttle counts failures per
    address in it, and one test's bad tokens must not lock the next test out."""
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


def pytest_report_header(config):
    return [
        f"shared data: {SHARED_DATA} ({'present' if SHARED_DATA.is_dir() else 'missing'})",
        f"chromium: {'present' if shutil.which('chromium') else 'missing'}",
        f"services required: {REQUIRE_SERVICES}",
    ]
