import pytest


@pytest.fixture(autouse=True)
def _annotation_settings(settings):
    settings.COUNTERPART = {
        **settings.COUNTERPART,
        "LEASE_SECONDS": 60,
        "GOLD_RATE": 0.0,
        "QUALIFICATION_GOLD": 0,
        "UNDO_SECONDS": 120,
        "MAX_ANNOTATORS_PER_ITEM": 5,
        "MIN_AGREEMENT": 0.66,
        "GOLD_MIN_ACCURACY": 0.6,
    }
    from annotate.services import assignments

    assignments._LABEL_CACHE.clear()
    return settings
