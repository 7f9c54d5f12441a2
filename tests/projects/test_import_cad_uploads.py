"""The CAD layouts through the import page and the import API (issue 20.1): the files a user
has (CAD NLI's three ``{split}.tsv`` files, CAD sentiment's ``{split}_paired.tsv``) or a .zip
of the folder, with the split; imported by the ordinary ``import`` job, which removes the
uploads and the staged folder when it ends. A zip is checked before anything is unpacked.

The fixtures are the first rows of the published CAD dev split (``shared/data/cad``), cut
down in ``tmp_path``."""

from __future__ import annotations

import io
import stat
import zipfile
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import TestCase
from django.utils import timezone
from rest_framework.test import APIClient

from projects.models import Candidate, Example, Job
from projects.services import import_jobs, imports
from projects.services.import_bundles import BundleRefused, zip_plan
from projects.services.import_jobs import import_upload_dir
from projects.services.jobs import job_execute, jobs_sweep
from projects.services.projects import project_create
from tests.annotate.factories import researcher
from tests.projects.import_uploads import post_import

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]

N = 5  # originals in the cut-down split: 5 originals, 20 NLI pairs


def nli_part(shared_data: Path, part: str, *, n: int = N) -> bytes:
    """The header and the rows of the first ``n`` originals of one CAD NLI dev file."""
    lines = (shared_data / "cad" / "NLI" / part / "dev.tsv").read_bytes().splitlines(keepends=True)
    rows = n if part == "original" else 2 * n
    return b"".join(lines[: 1 + rows])


def sentiment_rows(shared_data: Path, *, n: int = N) -> bytes:
    """The header and the first ``n`` batches (two rows each) of CAD sentiment dev."""
    lines = (shared_data / "cad" / "sentiment" / "combined" / "paired" / "dev_paired.tsv").read_bytes()
    return b"".join(lines.splitlines(keepends=True)[: 1 + 2 * n])


def zipped(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, content in members.items():
            zf.writestr(name, content)
    return buf.getvalue()


def cad_zip(shared_data: Path, prefix: str = "cad/NLI/") -> bytes:
    """The NLI folder as a user zips it: the dev files, a train file and the licence."""
    members = {f"{prefix}{part}/dev.tsv": nli_part(shared_data, part) for part in ("original", "revised_premise")}
    members[f"{prefix}revised_hypothesis/dev.tsv"] = nli_part(shared_data, "revised_hypothesis")
    members[f"{prefix}original/train.tsv"] = b"not read\n"
    members["cad/LICENSE"] = b"MIT\n"
    return zipped(members)


def uploads_left() -> list[str]:
    folder = import_upload_dir()
    return sorted(p.name for p in folder.iterdir()) if folder.is_dir() else []


@pytest.fixture
def nli():
    return project_create(name="cad-nli", task="nli")


@pytest.fixture
def sentiment():
    return project_create(name="cad-sentiment", task="sentiment")


@pytest.fixture
def page(client):
    client.force_login(researcher())
    return client


@pytest.fixture
def api():
    c = APIClient()
    c.force_authenticate(researcher())
    return c


def three_files(shared_data: Path) -> dict[str, Any]:
    return {
        part: SimpleUploadedFile("dev.tsv", nli_part(shared_data, part))
        for part in ("original", "revised_premise", "revised_hypothesis")
    }


# --- the page offers every format ---------------------------------------------------------------


def test_the_page_offers_the_cad_layouts_of_the_projects_task_and_no_command(page, nli, sentiment):
    html = page.get(f"/projects/{nli.pk}/import/").content.decode()
    for fmt in ("cad-nli", "pairs-jsonl", "csv"):
        assert f'<option value="{fmt}">' in html
    assert 'value="cad-sentiment"' not in html and 'value="coco-cf"' not in html  # other tasks' layouts
    for part in ("original", "revised_premise", "revised_hypothesis"):
        assert f'name="{part}"' in html
    assert "manage.py" not in html and "import_data" not in html
    html = page.get(f"/projects/{sentiment.pk}/import/").content.decode()
    assert '<option value="cad-sentiment">' in html and "_paired.tsv" in html
    assert "import_data" not in page.get("/projects/new/").content.decode()


def test_the_empty_project_list_points_to_the_import_page_not_the_command(page):
    html = page.get("/projects/").content.decode()
    assert "No projects yet" in html and "import_data" not in html


# --- CAD NLI -------------------------------------------------------------------------------------


def test_cad_nli_as_its_three_files_through_the_page(page, nli, shared_data):
    done = post_import(page, nli, {"format": "cad-nli", "split": "dev", **three_files(shared_data)})
    assert done.status_code == 200 and done.job is not None
    done.job.refresh_from_db()
    assert done.job.status == "succeeded", done.job.error
    assert (done.job.result["imported_originals"], done.job.result["imported_pairs"]) == (N, 4 * N)
    assert set(Example.objects.filter(project=nli).values_list("split", flat=True)) == {"dev"}
    c = Candidate.objects.select_related("example", "gold_label").get(project=nli, external_id="snli-dev-0-rp0")
    assert c.example.external_id == "snli-dev-0" and c.gold_label.name == "entailment" and c.group == "snli-dev-0"
    assert uploads_left() == []  # the three uploads and their staged folder are gone


def test_cad_nli_as_a_zip_of_the_folder_through_the_page_reads_only_the_splits_files(page, nli, shared_data):
    done = post_import(
        page, nli, {"format": "cad-nli", "split": "dev", "file": SimpleUploadedFile("cad.zip", cad_zip(shared_data))}
    )
    done.job.refresh_from_db()
    assert done.job.status == "succeeded", done.job.error
    assert done.job.result["imported_pairs"] == 4 * N and Example.objects.filter(project=nli).count() == N
    assert uploads_left() == []  # the zip and what was unpacked from it


def test_cad_nli_misaligned_rows_name_the_users_files(page, nli, shared_data):
    files = three_files(shared_data)
    premise = nli_part(shared_data, "revised_premise").splitlines(keepends=True)
    cols = premise[1].split(b"\t")
    premise[1] = b"\t".join([cols[0], b"a hypothesis that was not the original's", cols[2]])
    files["revised_premise"] = SimpleUploadedFile("rp.tsv", b"".join(premise))
    done = post_import(page, nli, {"format": "cad-nli", "split": "dev", **files})
    done.job.refresh_from_db()
    # a misaligned row is skipped with a warning (the rest is imported)
    assert done.job.status == "succeeded" and Candidate.objects.filter(project=nli).count() == 4 * N - 1
    assert any(p.startswith("rp.tsv (revised_premise):2: misaligned, skipped") for p in done.job.result["warnings"])
    assert "rp.tsv (revised_premise):2: misaligned, skipped" in done.html


def test_cad_nli_refuses_one_tsv_a_missing_part_and_a_missing_split(page, nli, shared_data):
    one = {
        "format": "cad-nli",
        "split": "dev",
        "file": SimpleUploadedFile("dev.tsv", nli_part(shared_data, "original")),
    }
    done = post_import(page, nli, one)
    assert done.status_code == 400 and "cad-nli needs the three files" in done.html and done.job is None
    files = three_files(shared_data)
    del files["revised_hypothesis"]
    done = post_import(page, nli, {"format": "cad-nli", "split": "dev", **files})
    assert done.status_code == 400 and "missing revised_hypothesis" in done.html
    done = post_import(page, nli, {"format": "cad-nli", "split": "", **three_files(shared_data)})
    assert done.status_code == 400 and "needs the split: train, dev or test" in done.html
    assert uploads_left() == [] and not Job.objects.exists()


# --- zips are checked before they are unpacked ---------------------------------------------------


def symlink_zip() -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        info = zipfile.ZipInfo("cad/dev_paired.tsv")
        info.external_attr = (stat.S_IFLNK | 0o777) << 16
        zf.writestr(info, "/etc/passwd")
    return buf.getvalue()


@pytest.mark.parametrize(
    ("members", "message"),
    [
        ({"../../dev_paired.tsv": b"x"}, "points outside its folder"),
        ({"/tmp/dev_paired.tsv": b"x"}, "points outside its folder"),
        ({"C:/dev_paired.tsv": b"x"}, "points outside its folder"),
        ({"a/dev_paired.tsv": b"x", "b/dev_paired.tsv": b"y"}, "more than one file"),
        ({"cad/train_paired.tsv": b"x", "README": b"y"}, "the zip has no dev_paired.tsv for split"),
    ],
)
def test_a_zip_that_is_not_a_cad_folder_is_refused_before_anything_is_unpacked(
    page, sentiment, tmp_path, members, message
):
    data = {"format": "cad-sentiment", "split": "dev", "file": SimpleUploadedFile("cad.zip", zipped(members))}
    done = post_import(page, sentiment, data)
    assert done.status_code == 400 and message in done.html and done.job is None
    assert uploads_left() == [] and not (tmp_path / "dev_paired.tsv").exists()


def test_a_link_member_and_a_zip_bomb_are_refused(page, sentiment, settings):
    data = {"format": "cad-sentiment", "split": "dev", "file": SimpleUploadedFile("cad.zip", symlink_zip())}
    done = post_import(page, sentiment, data)
    assert done.status_code == 400 and "is a link, not a file" in done.html
    settings.COUNTERPART = {**settings.COUNTERPART, "MAX_UPLOAD_BYTES": 50_000}
    bomb = zipped({"cad/dev_paired.tsv": b"a" * 10_000_000})  # ~10 KB zipped, 10 MB unpacked
    assert len(bomb) < 50_000
    data = {"format": "cad-sentiment", "split": "dev", "file": SimpleUploadedFile("bomb.zip", bomb)}
    done = post_import(page, sentiment, data)
    assert done.status_code == 400 and "over the 50,000-byte limit" in done.html and uploads_left() == []


def test_zip_plan_takes_the_expected_members_only(tmp_path, shared_data):
    z = tmp_path / "nli.zip"
    z.write_bytes(cad_zip(shared_data, prefix="NLI/"))
    plan = zip_plan(str(z), format="cad-nli", split="dev", max_bytes=10**6)
    assert {r: i.filename for r, i in plan.items()} == {
        "original": "NLI/original/dev.tsv",
        "revised_premise": "NLI/revised_premise/dev.tsv",
        "revised_hypothesis": "NLI/revised_hypothesis/dev.tsv",
    }
    with pytest.raises(BundleRefused, match="not a readable zip"):
        zip_plan(str(shared_data / "cad" / "LICENSE"), format="cad-nli", split="dev", max_bytes=10**6)


# --- CAD sentiment, and the API ------------------------------------------------------------------


def test_cad_sentiment_paired_tsv_through_the_page(page, sentiment, shared_data):
    data = {
        "format": "cad-sentiment",
        "split": "dev",
        "file": SimpleUploadedFile("dev_paired.tsv", sentiment_rows(shared_data)),
    }
    done = post_import(page, sentiment, data)
    done.job.refresh_from_db()
    assert done.job.status == "succeeded", done.job.error
    assert done.job.result["imported_pairs"] == N and uploads_left() == []
    assert Candidate.objects.filter(project=sentiment, external_id__startswith="imdb-dev-").count() == N


def test_the_api_takes_a_cad_zip_and_the_three_nli_files(api, nli, sentiment, shared_data):
    z = zipped({"sentiment/combined/paired/dev_paired.tsv": sentiment_rows(shared_data)})
    data = {"format": "cad-sentiment", "split": "dev", "file": SimpleUploadedFile("cad.zip", z)}
    done = post_import(api, sentiment, data, api=True)
    assert done.status_code == 202
    done.job.refresh_from_db()
    assert done.job.status == "succeeded" and done.job.result["imported_pairs"] == N
    done = post_import(api, nli, {"format": "cad-nli", "split": "dev", **three_files(shared_data)}, api=True)
    assert done.status_code == 202
    done.job.refresh_from_db()
    assert done.job.status == "succeeded" and done.job.result["imported_pairs"] == 4 * N
    done = post_import(api, nli, {"format": "cad-nli", "split": "dev"}, api=True)
    assert done.status_code == 400 and "file" in done.response.json()
    assert uploads_left() == []


# --- resumable: a killed worker's zip import is unpacked again and finishes once ------------------


class WorkerKilled(BaseException):
    pass


def test_a_killed_zip_import_resumes_and_writes_every_row_once(page, nli, shared_data, settings, monkeypatch):
    settings.COUNTERPART = {**settings.COUNTERPART, "IMPORT_BATCH_SIZE": 4}
    monkeypatch.setattr(import_jobs, "PROGRESS_SECONDS", 0.0)
    with TestCase.captureOnCommitCallbacks(execute=False):
        resp = page.post(
            f"/projects/{nli.pk}/import/",
            {"format": "cad-nli", "split": "dev", "file": SimpleUploadedFile("cad.zip", cad_zip(shared_data))},
        )
    assert resp.status_code == 302  # POST-redirect-GET to the job (issue 32.8)
    job = Job.objects.get(kind="import")
    real, seen = imports._write_batch, []

    def dying(*args: Any, **kwargs: Any) -> None:
        seen.append(1)
        if len(seen) > 2:
            raise WorkerKilled()
        real(*args, **kwargs)

    monkeypatch.setattr(imports, "_write_batch", dying)
    with pytest.raises(WorkerKilled):
        job_execute(job_id=job.pk)
    assert 0 < Candidate.objects.filter(job=job).count() < 4 * N and len(uploads_left()) == 2  # zip + folder kept
    monkeypatch.setattr(imports, "_write_batch", real)
    Job.objects.filter(pk=job.pk).update(heartbeat_at=timezone.now() - timedelta(hours=1), enqueued_at=None)
    assert jobs_sweep() == [job.pk]
    job.refresh_from_db()
    assert job.status == "succeeded" and job.attempts == 2
    ids = list(Candidate.objects.filter(project=nli).values_list("external_id", flat=True))
    assert len(ids) == len(set(ids)) == 4 * N and uploads_left() == []
