"""Fixtures shared by the browser tests."""

import pytest


@pytest.fixture
def annotation_settings(settings):
    settings.COUNTERPART = {
        **settings.COUNTERPART,
        "GOLD_RATE": 0.0,
        "QUALIFICATION_GOLD": 0,
        "LEASE_SECONDS": 120,
        "UNDO_SECONDS": 300,
    }
    return settings
