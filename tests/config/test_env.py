import pytest

from config.env import (
    ImproperlyConfiguredEnv,
    env,
    env_bool,
    env_float,
    env_int,
    env_list,
)


def test_env_default_and_required(monkeypatch):
    monkeypatch.delenv("CP_X", raising=False)
    assert env("CP_X", "d") == "d"
    with pytest.raises(ImproperlyConfiguredEnv, match="CP_X is required"):
        env("CP_X")
    monkeypatch.setenv("CP_X", "v")
    assert env("CP_X") == "v"


@pytest.mark.parametrize(("raw", "value"), [("1", True), ("true", True), ("no", False), ("OFF", False)])
def test_env_bool(monkeypatch, raw, value):
    monkeypatch.setenv("CP_B", raw)
    assert env_bool("CP_B", not value) is value


def test_env_bad_values_are_clear(monkeypatch):
    monkeypatch.setenv("CP_B", "maybe")
    with pytest.raises(ImproperlyConfiguredEnv, match="not a boolean"):
        env_bool("CP_B", False)
    monkeypatch.setenv("CP_I", "ten")
    with pytest.raises(ImproperlyConfiguredEnv, match="not an integer"):
        env_int("CP_I", 1)
    monkeypatch.setenv("CP_F", "x")
    with pytest.raises(ImproperlyConfiguredEnv, match="not a number"):
        env_float("CP_F", 1.0)


def test_env_list(monkeypatch):
    monkeypatch.setenv("CP_L", "a, b,,c")
    assert env_list("CP_L", []) == ["a", "b", "c"]


def test_production_settings_refuse_missing_secret(monkeypatch):
    import importlib
    import sys

    monkeypatch.delenv("DJANGO_SECRET_KEY", raising=False)
    sys.modules.pop("config.settings.production", None)
    with pytest.raises(ImproperlyConfiguredEnv, match="DJANGO_SECRET_KEY"):
        importlib.import_module("config.settings.production")


def test_debug_defaults_off_outside_local(monkeypatch):
    import importlib
    import sys

    monkeypatch.delenv("DJANGO_DEBUG", raising=False)
    sys.modules.pop("config.settings.base", None)
    base = importlib.import_module("config.settings.base")
    assert base.DEBUG is False
    assert "*" not in base.ALLOWED_HOSTS
