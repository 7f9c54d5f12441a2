"""Password rules: Django's standard validators, a configurable minimum length (never below 8)."""

from __future__ import annotations

import importlib
import sys

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.password_validation import (
    get_password_validators,
    validate_password,
)
from django.core.exceptions import ValidationError

from config.env import ImproperlyConfiguredEnv

User = get_user_model()


@pytest.mark.parametrize("password", ["password", "12345678", "aaaaaaaa", "jane.doe.lab"])
def test_weak_passwords_are_refused(password):
    user = User(username="jane.doe.lab", email="jane@example.org")
    with pytest.raises(ValidationError):
        validate_password(password, user)


@pytest.mark.parametrize(
    ("password", "code"),
    [
        ("password", "password_too_common"),
        ("12345678", "password_entirely_numeric"),
        ("aaaaaaaa", "password_too_common"),
        ("jane.doe.lab", "password_too_similar"),
    ],
)
def test_refused_for_more_than_length(settings, password, code):
    """With the minimum at 8 each example is still refused, by the validator meant for it."""
    validators = [
        {**v, "OPTIONS": {"min_length": 8}} if v["NAME"].endswith("MinimumLengthValidator") else v
        for v in settings.AUTH_PASSWORD_VALIDATORS
    ]
    user = User(username="jane.doe.lab")
    with pytest.raises(ValidationError) as err:
        validate_password(password, user, password_validators=get_password_validators(validators))
    assert code in [e.code for e in err.value.error_list]


def test_the_demo_password_passes(settings):
    for username in ("researcher", "annotator"):
        validate_password(settings.COUNTERPART["DEMO_PASSWORD"], User(username=username))


def test_minimum_length_is_configurable_but_not_below_8(monkeypatch):
    def base():
        sys.modules.pop("config.settings.base", None)
        try:
            return importlib.import_module("config.settings.base")
        finally:
            sys.modules.pop("config.settings.base", None)

    monkeypatch.setenv("COUNTERPART_PASSWORD_MIN_LENGTH", "12")
    options = [
        v.get("OPTIONS") for v in base().AUTH_PASSWORD_VALIDATORS if v["NAME"].endswith("MinimumLengthValidator")
    ]
    assert options == [{"min_length": 12}]
    monkeypatch.setenv("COUNTERPART_PASSWORD_MIN_LENGTH", "6")
    with pytest.raises(ImproperlyConfiguredEnv, match="below 8"):
        base()
    monkeypatch.delenv("COUNTERPART_PASSWORD_MIN_LENGTH")
    assert base().PASSWORD_MIN_LENGTH == 10
