"""What killed exports leave behind (QA probe): a worker killed while an export job wrote left
its temporary file or folder (``.export-*``) in EXPORT_DIR for ever, one per kill. The next
export job removes those older than the export's time limit; a fresh one (an export still
writing) stays."""

from __future__ import annotations

import os
import time

import pytest

from projects.services import exports
from projects.services import jobs as job_svc
from projects.services.projects import project_create

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def test_an_export_job_removes_what_killed_exports_left_behind(settings, tmp_path):
    settings.COUNTERPART = {**settings.COUNTERPART, "EXPORT_DIR": str(tmp_path / "exports")}
    project = project_create(name="leftovers", task="nli")
    folder = tmp_path / "exports"
    old_file, old_dir, fresh = folder / ".export-abc123", folder / ".export-dir99", folder / ".export-now"
    (old_dir / "ds").mkdir(parents=True)
    old_file.write_text('{"half": ')
    fresh.write_text("{")
    long_ago = time.time() - settings.COUNTERPART["JOB_TIME_LIMIT"] - 60
    for p in (old_file, old_dir):
        os.utime(p, (long_ago, long_ago))

    job_svc.job_execute(job_id=exports.export_start(project=project, format="pairs-jsonl").pk)

    assert not old_file.exists() and not old_dir.exists()
    assert fresh.exists()
    assert exports.exports_temp_sweep() == []  # nothing older left
