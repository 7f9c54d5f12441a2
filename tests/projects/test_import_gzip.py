"""A gzip'd data file (``pairs.jsonl.gz``, ``train.tsv.gz``: how large data sets are shared) was
refused as "not a text file (gzip archive)". It is now read uncompressed, transparently, by the
command, the page and the API; a damaged one, or one that unpacks past the upload limit, is
refused once before anything is written."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from projects.models import Candidate, Example, Project
from projects.services.imports import ImportRefused, data_import
from projects.services.projects import project_create
from tests.annotate.factories import researcher
from tests.projects.import_uploads import upload_page

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def pairs(n: int) -> bytes:
    rows = [
        {
            "id": f"p{i}",
            "original": {"id": f"o{i}", "fields": {"text": f"good film {i}"}, "label": "positive"},
            "counterfactual": {"fields": {"text": f"bad film {i}"}, "label": "negative", "label_source": "human"},
        }
        for i in range(n)
    ]
    return "".join(json.dumps(r) + "\n" for r in rows).encode()


@pytest.fixture
def project() -> Project:
    return project_create(name="gz", task="sentiment")


def stored(project: Project) -> list[tuple]:
    return list(
        Candidate.objects.filter(project=project)
        .order_by("external_id")
        .values_list("external_id", "fields", "label__name", "example__external_id")
    )


def test_a_gzipped_pairs_file_imports_as_the_plain_one(tmp_path: Path, project: Project) -> None:
    plain, packed = tmp_path / "p.jsonl", tmp_path / "p.jsonl.gz"
    plain.write_bytes(pairs(5))
    packed.write_bytes(gzip.compress(pairs(5)))
    report = data_import(project=project, format="pairs-jsonl", paths=[str(packed)])
    assert (report.imported_pairs, report.problem_count) == (5, 0)
    other = project_create(name="plain", task="sentiment")
    data_import(project=other, format="pairs-jsonl", paths=[str(plain)])
    assert stored(project) == stored(other)


def test_gzipped_tsv_and_labelled_lines(tmp_path: Path, project: Project) -> None:
    tsv = tmp_path / "o.tsv.gz"
    tsv.write_bytes(gzip.compress(b"id\ttext\tlabel\r\no1\tnice\tpositive\r\n"))
    assert data_import(project=project, format="csv", paths=[str(tsv)]).imported_originals == 1
    lab = tmp_path / "train.jsonl.gz"
    lab.write_bytes(gzip.compress(b'\xef\xbb\xbf{"text": "x", "label": "negative"}\n'))
    assert data_import(project=project, format="labelled-jsonl", paths=[str(lab)]).imported_originals == 1
    assert Example.objects.filter(project=project, external_id="train-1").exists()  # the stem without .gz


def test_a_damaged_or_too_large_gzip_is_refused_once(tmp_path: Path, project: Project, settings) -> None:
    cut = tmp_path / "cut.jsonl.gz"
    cut.write_bytes(gzip.compress(pairs(200))[:-40])
    with pytest.raises(ImportRefused, match="the gzip file is damaged or cut short"):
        data_import(project=project, format="pairs-jsonl", paths=[str(cut)])
    big = tmp_path / "big.jsonl.gz"
    big.write_bytes(gzip.compress(pairs(200)))
    settings.COUNTERPART = {**settings.COUNTERPART, "MAX_UPLOAD_BYTES": 10_000}
    assert big.stat().st_size < 10_000
    with pytest.raises(ImportRefused, match=r"the gzip file unpacks to more than the limit of 9\.8 KiB"):
        data_import(project=project, format="pairs-jsonl", paths=[str(big)])
    assert not Example.objects.exists()


def test_the_import_page_takes_a_gzipped_file(client, project: Project) -> None:
    client.force_login(researcher())
    done = upload_page(client, project, gzip.compress(pairs(3)), name="pairs.jsonl.gz")
    assert done.job is not None and done.job.status == "succeeded", done.html
    assert Candidate.objects.filter(project=project).count() == 3
