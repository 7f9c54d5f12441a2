"""Training h when its model file cannot be written (QA probe: ``COUNTERPART_MODEL_DIR`` on a
full tmpfs). The ``OSError`` failed the job with the opaque "an internal error stopped the job"
and left an empty ``pairwise-v2.joblib`` behind. Now the job fails with the reason ("cannot
write h's model file …: No space left on device; nothing was saved …"), the half-written file
is removed, no model row is recorded, the current h stays, and training again works once there
is room. The full disk is real: the next version's file is a link to ``/dev/full``."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from labeling import services
from labeling.models import PairwiseModel
from projects.services import jobs as job_svc

from .conftest import FakeEncoder
from .synthetic_project import make_project

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


@pytest.fixture(autouse=True)
def _fake_encoder(monkeypatch):
    monkeypatch.setattr(services, "embedder", lambda: FakeEncoder())


def _model_dir(settings, path: Path) -> None:
    settings.COUNTERPART = {**settings.COUNTERPART, "MODEL_DIR": str(path)}


def _train(project):  # type: ignore[no-untyped-def]
    job = job_svc.job_create(kind="train", project=project, params={"mode": "pc", "task_model": ""})
    return job_svc.job_execute(job_id=job.pk)


def test_a_full_disk_fails_the_training_clearly_and_keeps_the_current_h(settings, tmp_path):
    _model_dir(settings, tmp_path / "models")
    project, _ = make_project()
    assert _train(project).status == "succeeded"
    current = PairwiseModel.objects.get(project=project)
    next_file = services.model_path(project, current.version + 1)
    os.symlink("/dev/full", next_file)  # every write to it: ENOSPC

    job = _train(project)

    assert job.status == "failed"
    assert job.error.startswith(f"cannot write h's model file {next_file}: No space left on device; nothing was saved")
    assert not os.path.lexists(next_file)  # nothing half-written is left
    assert list(PairwiseModel.objects.filter(project=project)) == [current]
    assert _train(project).status == "succeeded"  # room again: the same version is written
    assert PairwiseModel.objects.filter(project=project).count() == 2 and next_file.stat().st_size > 0


def test_a_model_folder_that_cannot_be_made_fails_the_training_clearly(settings, tmp_path):
    (tmp_path / "models").write_text("a file where the model folder should be")
    _model_dir(settings, tmp_path / "models")
    project, _ = make_project()
    job = _train(project)
    assert job.status == "failed" and "Not a directory; nothing was saved and the current h stays" in job.error
    assert not PairwiseModel.objects.filter(project=project).exists()
