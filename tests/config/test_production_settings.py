"""Production settings: the WSGI/ASGI default, DEBUG never from the environment, a clean
``check --deploy`` with only the two required variables set."""

from __future__ import annotations

import importlib
import os
import secrets
import subprocess
import sys

import pytest

from tests.conftest import REPO

HOSTS = "counterpart.example.org"


def _production_env(**extra: str) -> dict[str, str]:
    """The caller's environment without any Django/Counterpart setting, plus the two required ones."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "COUNTERPART_"))}
    env.update(DJANGO_SECRET_KEY=secrets.token_urlsafe(64), DJANGO_ALLOWED_HOSTS=HOSTS, **extra)
    return env


def _run(args: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, *args], check=False, cwd=REPO, env=env, capture_output=True, text=True, timeout=120
    )


def test_check_deploy_is_clean_with_only_secret_and_hosts():
    proc = _run(
        ["manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        _production_env(DJANGO_SETTINGS_MODULE="config.settings.production"),
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    assert "WARNINGS" not in out and "no issues" in out, out


@pytest.mark.parametrize("module", ["config.wsgi", "config.asgi"])
def test_server_entry_points_default_to_production_without_debug(module):
    code = (
        f"import {module}; from django.conf import settings; "
        "print(settings.SETTINGS_MODULE, settings.DEBUG, settings.SECURE_SSL_REDIRECT, "
        "settings.SECURE_HSTS_SECONDS > 0)"
    )
    proc = _run(["-c", code], _production_env(DJANGO_DEBUG="true"))  # no DJANGO_SETTINGS_MODULE
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["config.settings.production", "False", "True", "True"]


def test_an_explicit_settings_module_still_wins_over_the_wsgi_default():
    code = "import config.wsgi; from django.conf import settings; print(settings.SETTINGS_MODULE)"
    proc = _run(["-c", code], _production_env(DJANGO_SETTINGS_MODULE="config.settings.local"))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "config.settings.local"


def test_manage_py_still_defaults_to_local_settings():
    assert 'setdefault("DJANGO_SETTINGS_MODULE", "config.settings.local")' in (REPO / "manage.py").read_text()


@pytest.mark.parametrize("module_env", [{}, {"DJANGO_SETTINGS_MODULE": ""}])
def test_the_celery_app_defaults_to_the_same_settings_as_wsgi(module_env):
    """``celery -A config worker`` imports ``config`` and then ``config.celery``: with no (or an
    empty) DJANGO_SETTINGS_MODULE it must load the production settings, DEBUG off, like
    ``config.wsgi`` — not the local ones with DEBUG on."""
    code = (
        "import config.celery, config.wsgi; from django.conf import settings; "
        "print(config.celery.app.main, settings.SETTINGS_MODULE, settings.DEBUG, settings.PRODUCTION)"
    )
    proc = _run(["-c", code], _production_env(DJANGO_DEBUG="true", **module_env))
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["counterpart", "config.settings.production", "False", "True"]


def test_a_celery_worker_without_settings_or_secrets_refuses_to_start():
    """The production default needs DJANGO_SECRET_KEY: a worker started bare fails loudly
    instead of running with the local settings' insecure key."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DJANGO_", "COUNTERPART_"))}
    proc = _run(["-m", "celery", "-A", "config", "inspect", "ping", "--timeout", "1"], env)
    assert proc.returncode != 0
    assert "DJANGO_SECRET_KEY" in proc.stderr + proc.stdout


def test_demo_refuses_under_production_settings_without_force():
    proc = _run(
        ["manage.py", "demo", "--no-data"], _production_env(DJANGO_SETTINGS_MODULE="config.settings.production")
    )
    assert proc.returncode != 0
    assert "refusing to create the demo accounts" in proc.stderr and "--force" in proc.stderr


def _import_production(monkeypatch, **env: str):
    monkeypatch.setenv("DJANGO_SECRET_KEY", secrets.token_urlsafe(64))
    monkeypatch.setenv("DJANGO_ALLOWED_HOSTS", HOSTS)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    sys.modules.pop("config.settings.production", None)
    try:
        return importlib.import_module("config.settings.production")
    finally:
        sys.modules.pop("config.settings.production", None)


def test_django_debug_true_does_not_turn_debug_on_in_production(monkeypatch):
    assert _import_production(monkeypatch, DJANGO_DEBUG="true").DEBUG is False


def test_https_settings_come_from_the_environment(monkeypatch):
    prod = _import_production(monkeypatch)
    assert prod.SECURE_SSL_REDIRECT is True and prod.SECURE_HSTS_SECONDS == 31536000
    assert prod.SECURE_PROXY_SSL_HEADER == ("HTTP_X_FORWARDED_PROTO", "https")
    prod = _import_production(
        monkeypatch,
        DJANGO_SECURE_SSL_REDIRECT="false",
        DJANGO_SECURE_HSTS_SECONDS="3600",
        DJANGO_SECURE_HSTS_PRELOAD="false",
        DJANGO_SECURE_PROXY_SSL_HEADER="off",
    )
    assert prod.SECURE_SSL_REDIRECT is False and prod.SECURE_HSTS_SECONDS == 3600
    assert prod.SECURE_HSTS_PRELOAD is False and prod.SECURE_PROXY_SSL_HEADER is None
    prod = _import_production(monkeypatch, DJANGO_SECURE_PROXY_SSL_HEADER="HTTP_X_FORWARDED_SCHEME,https")
    assert prod.SECURE_PROXY_SSL_HEADER == ("HTTP_X_FORWARDED_SCHEME", "https")


def test_production_refuses_missing_hosts(monkeypatch):
    from config.env import ImproperlyConfiguredEnv

    monkeypatch.setenv("DJANGO_SECRET_KEY", secrets.token_urlsafe(64))
    monkeypatch.delenv("DJANGO_ALLOWED_HOSTS", raising=False)
    sys.modules.pop("config.settings.production", None)
    with pytest.raises(ImproperlyConfiguredEnv, match="DJANGO_ALLOWED_HOSTS"):
        importlib.import_module("config.settings.production")
    sys.modules.pop("config.settings.production", None)
