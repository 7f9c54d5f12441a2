"""The annotation-quality figures read what the answers need, not the whole pool: the
agreement-by-perturbation map is built for the answered items only. Before, every item of the
project was read with its candidate's perturbation on each request of the quality page and its
API (6,897 rows joined, 73-90 ms on the 97,284-candidate project, docs/workspace.md)."""

from __future__ import annotations

import pytest

from annotate import selectors
from annotate.ml import agreement
from annotate.models import Annotation
from annotate.services import assignments as svc
from annotate.services.routing import project_route

from .factories import annotator, project_with_candidates

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def test_agreement_by_perturbation_reads_only_the_answered_items(monkeypatch):
    project = project_with_candidates(n=200, k=2)
    project_route(project=project, budget=1.0, seed=0)
    for user in (annotator(project), annotator(project)):
        for choice in ("neutral", "entailment", "neutral"):
            a = svc.assignment_next(project=project, annotator=user)
            svc.annotation_submit(assignment_id=a.pk, annotator=user, choice=choice)
    seen: list[dict] = []
    real_by = agreement.agreement_by

    def spy(rows, key, **kw):
        seen.append(dict(key))
        return real_by(rows, key, **kw)

    monkeypatch.setattr(agreement, "agreement_by", spy)
    quality = selectors.project_quality(project=project)
    answered = set(Annotation.objects.filter(project=project).values_list("item_id", flat=True))
    assert set(seen[0]) == answered  # 3 items (breadth-first), not the 200 of the pool
    assert sum(g["annotations"] for g in quality["by_perturbation"]) == 6
