"""The job box of a succeeded training says what came out in words (version, how many labels,
cross-validated accuracy, calibration, the abstain threshold, notes) instead of the raw
result keys (``n_train``, ``cv_ece``, ``notes []``)."""

from __future__ import annotations

from html import unescape

import pytest
from django.utils import timezone

from projects.models import Job
from projects.services.projects import project_create
from tests.annotate.factories import researcher

pytestmark = pytest.mark.django_db


def test_a_trained_h_job_box_reads_as_a_sentence(client):
    user = researcher()
    project = project_create(name="box", task="sentiment", labels=["negative", "positive"], created_by=user)
    result = {
        "model": 7,
        "version": 3,
        "mode": "capc",
        "n_train": 27,
        "cv_accuracy": 0.9629,
        "cv_macro_f1": 0.9512,
        "cv_ece": 0.0413,
        "threshold": 0.8,
        "seconds": 1.2,
        "features": "minilm",
        "notes": ["2 pairs left out: their original has no label"],
    }
    job = Job.objects.create(
        project=project, kind="train", status="succeeded", finished_at=timezone.now(), result=result, done=1, total=1
    )
    client.force_login(user)
    box = unescape(client.get(f"/jobs/{job.pk}/").content.decode())
    assert (
        "h version 3 (CAPC) trained on 27 labelled pairs: cross-validated accuracy 0.963, macro-F1 0.951, "
        "calibration error (ECE) 0.041; it abstains below confidence 0.80." in box
    )
    assert "2 pairs left out: their original has no label" in box
    assert f'href="/projects/{project.pk}/models/"' in box
    assert "cv_ece" not in box and "n_train" not in box
    # a job of another kind keeps the plain result list
    other = Job.objects.create(
        project=project, kind="autolabel", status="succeeded", finished_at=timezone.now(), result={"labelled": 5}
    )
    assert "<dt>labelled</dt>" in client.get(f"/jobs/{other.pk}/").content.decode()
