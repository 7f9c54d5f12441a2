"""The annotation-quality page (and its API) fits Dawid–Skene in the request with numpy's EM:
crowd-kit's import (pandas, scipy.stats, nltk) made the first quality page of a process take
3-4 s on this small data."""

from __future__ import annotations

import pytest

from annotate.ml import agreement
from annotate.services import assignments as svc
from annotate.services.routing import project_route

from .factories import annotator, login, project_with_candidates, researcher

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def test_the_quality_page_fits_dawid_skene_without_crowd_kit(settings, monkeypatch):
    settings.COUNTERPART = {**settings.COUNTERPART, "GOLD_RATE": 0.0, "QUALIFICATION_GOLD": 0}
    project = project_with_candidates(n=30, k=2)
    project_route(project=project, budget=0.3, seed=0)
    for name, choice in (("a1", "neutral"), ("a2", "entailment")):
        user = annotator(project, username=name)
        while (a := svc.assignment_next(project=project, annotator=user)) is not None:
            svc.annotation_submit(assignment_id=a.pk, annotator=user, choice=choice)

    def no_crowd_kit(*args, **kwargs):
        raise AssertionError("crowd-kit imported in a web request")

    monkeypatch.setattr(agreement, "_ds_crowdkit", no_crowd_kit)
    page = login(researcher(username="res")).get(f"/annotate/projects/{project.pk}/dashboard/")
    assert page.status_code == 200
    aggregation = page.context["q"]["aggregation"]
    assert "error" not in aggregation, aggregation
    assert aggregation["dawid_skene_engine"] == "numpy" and aggregation["items"] == 9
