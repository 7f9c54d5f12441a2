"""Import input the database cannot store, nested too deeply, or naming images outside the
image root: each is a per-row problem (``file:line: …``), so a refused import writes nothing
and a skip-bad-rows import writes exactly the good rows — through the service, the command
and the import page. Run under SQLite (default) and PostgreSQL (``DATABASE_URL``); the
``postgres``-marked test runs the whole matrix against PostgreSQL, where these rows used to
fail at the write."""

from __future__ import annotations

import json
import os
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from PIL import Image

from projects.models import Candidate, Example, Project, ProjectMembership
from projects.services.imports import ImportRefused, data_import
from projects.services.projects import project_create
from tests.generation.conftest import user_with_role
from tests.projects.import_uploads import Imported, upload_page

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def pair(i: Any, *, text: str = "", meta: Any = None, original: dict | None = None, cf: dict | None = None) -> str:
    obj: dict[str, Any] = {
        "id": i if isinstance(i, str) else f"p{i}",
        "original": {"fields": {"text": text or f"good {i}"}, "label": "positive", **(original or {})},
        "counterfactual": {"fields": {"text": f"bad {i}"}, **(cf or {})},
    }
    if meta is not None:
        obj["meta"] = meta
    return json.dumps(obj)  # ensure_ascii: NUL and surrogates travel as \u escapes


def deep(n: int) -> Any:
    value: Any = "x"
    for _ in range(n):
        value = [value]
    return value


# name -> (the bad line, a fragment of its problem message)
BAD_LINES: dict[str, tuple[str, str]] = {
    "NUL in id": (pair("p\u0000x"), "NUL character"),
    "NUL in a text field": (pair(5, text="a\u0000b"), "original.fields.text: contains a NUL character"),
    "NUL in meta": (pair(5, meta={"note": "a\u0000b"}), "meta.note: contains a NUL character"),
    "NUL in a meta key": (pair(5, meta={"a\u0000b": 1}), "a key in meta contains a NUL character"),
    "lone surrogate in a text field": (pair(5, text="a\ud800b"), "lone surrogate (U+D800)"),
    "lone surrogate in meta": (pair(5, meta={"n": ["\udfff"]}), "lone surrogate (U+DFFF)"),
    "split over 32 characters": (pair(5, original={"split": "s" * 33}), "original.split is 33 characters long"),
    "NUL in split": (pair(5, original={"split": "tr\u0000ain"}), "original.split: contains a NUL character"),
    "100,000 nested brackets": ("[" * 100_000 + "]" * 100_000, "nested more than 64 levels deep"),
    "meta nested 100 deep": (pair(5, meta={"a": deep(100)}), "nested more than 64 levels deep"),
    "raw NUL byte": ('{"id": "p5",\u0000 "x": 1}', "NUL character"),
    # Python's json reads NaN and Infinity (pandas and numpy write them); the JSON columns
    # refuse them, so they used to crash the write (SQLite's JSON_VALID check).
    "NaN in meta": (pair(5, meta={"score": float("nan")}), "NaN is not a JSON value"),
    "Infinity in original.meta": (pair(5, original={"meta": {"x": float("inf")}}), "Infinity is not a JSON value"),
}


@pytest.fixture
def project() -> Project:
    return project_create(name="s", task="sentiment")


def write(path: Path, lines: list[str]) -> Path:
    path.write_text("".join(line + "\n" for line in lines), encoding="utf-8", errors="surrogatepass")
    return path


def db_state() -> tuple:
    return (
        sorted(Example.objects.values_list("external_id", flat=True)),
        sorted(Candidate.objects.values_list("external_id", flat=True)),
    )


@pytest.mark.parametrize("kind", sorted(BAD_LINES))
def test_a_refused_import_writes_nothing(tmp_path: Path, project: Project, kind: str) -> None:
    line, message = BAD_LINES[kind]
    f = write(tmp_path / "p.jsonl", [pair(1), line, pair(2)])
    before = db_state()
    with pytest.raises(ImportRefused) as exc:
        data_import(project=project, format="pairs-jsonl", paths=[str(f)])
    assert len(exc.value.problems) == 1
    assert exc.value.problems[0].startswith(f"{f}:2: ") and message in exc.value.problems[0]
    assert db_state() == before


@pytest.mark.parametrize("kind", sorted(BAD_LINES))
def test_skip_bad_rows_writes_exactly_the_good_rows(tmp_path: Path, project: Project, kind: str) -> None:
    line, message = BAD_LINES[kind]
    f = write(tmp_path / "p.jsonl", [pair(1), line, pair(2)])
    report = data_import(project=project, format="pairs-jsonl", paths=[str(f)], strict=False)
    assert (report.imported_pairs, report.problem_count) == (2, 1)
    assert message in report.problems[0]
    assert db_state() == (["p1", "p2"], ["p1", "p2"])


def test_csv_with_a_nul_byte_or_an_escaped_nul_in_meta_is_a_row_problem(tmp_path: Path, project: Project) -> None:
    f = tmp_path / "o.csv"
    f.write_text(
        'id,text,label,meta\no1,fine,positive,\no2,a\x00b,positive,\no3,fine,positive,"{""k"": ""a\\u0000b""}"\n'
        "o4,fine,positive,\n",
        encoding="utf-8",
    )
    report = data_import(project=project, format="csv", paths=[str(f)], strict=False)
    assert report.imported_originals == 2 and report.problem_count == 2
    assert report.problems[0].startswith(f"{f}:3: contains a NUL character")
    assert report.problems[1].startswith(f"{f}:4: meta.k: contains a NUL character")
    assert db_state() == (["o1", "o4"], [])


@pytest.mark.parametrize("split", ["s" * 33, "tr\x00ain", "a\ud800"])
def test_a_split_argument_the_database_cannot_store_refuses_the_import(
    tmp_path: Path, project: Project, split: str
) -> None:
    f = write(tmp_path / "p.jsonl", [pair(1)])
    with pytest.raises(ImportRefused, match="split"):
        data_import(project=project, format="pairs-jsonl", paths=[str(f)], split=split, strict=False)
    assert db_state() == ([], [])
    with pytest.raises(CommandError, match="split"):
        call_command(
            "import_data",
            str(f),
            project="s",
            data_format="pairs-jsonl",
            split=split,
            stdout=StringIO(),
            stderr=StringIO(),
        )
    assert db_state() == ([], [])


@pytest.mark.parametrize("kind", ["NUL in a text field", "100,000 nested brackets", "split over 32 characters"])
def test_the_command_refuses_or_skips_the_bad_row(tmp_path: Path, project: Project, kind: str) -> None:
    line, message = BAD_LINES[kind]
    f = write(tmp_path / "p.jsonl", [pair(1), line, pair(2)])
    err = StringIO()
    with pytest.raises(CommandError, match="import refused"):
        call_command("import_data", str(f), project="s", data_format="pairs-jsonl", stdout=StringIO(), stderr=err)
    assert f"{f}:2: " in err.getvalue() and message in err.getvalue()
    assert db_state() == ([], [])
    out = StringIO()
    call_command(
        "import_data", str(f), project="s", data_format="pairs-jsonl", skip_bad_rows=True, stdout=out, stderr=StringIO()
    )
    assert out.getvalue().strip().splitlines()[-1] == "imported 2 originals, 2 pairs; skipped 0; problems 1"
    assert db_state() == (["p1", "p2"], ["p1", "p2"])


@pytest.fixture
def researcher_client(client, db):
    client.force_login(user_with_role("res", "researcher"))
    return client


def upload(client: Any, project: Project, content: bytes, **extra: str) -> Imported:
    """The page queues an import job (run here at once); ``.html``: the page and its job box."""
    return upload_page(client, project, content, **extra)


@pytest.mark.parametrize("kind", ["NUL in id", "lone surrogate in a text field", "100,000 nested brackets"])
def test_the_import_page_refuses_with_400_or_imports_the_good_rows(researcher_client, project: Project, kind: str):
    line, _ = BAD_LINES[kind]
    content = "\n".join([pair(1), line, pair(2)]).encode()
    resp = upload(researcher_client, project, content)
    assert resp.status_code == 200 and resp.job.status == "failed"
    html = resp.html
    assert "p.jsonl:2: " in html and "nothing was imported" in html
    assert db_state() == ([], [])
    resp = upload(researcher_client, project, content, skip_bad_rows="1")
    assert resp.status_code == 200 and resp.job.status == "succeeded"
    assert "imported 2 originals, 2 pairs" in resp.html
    assert db_state() == (["p1", "p2"], ["p1", "p2"])


@pytest.mark.parametrize("split", ["s" * 33, "a\x00b"])
def test_the_import_page_refuses_a_bad_split_with_400(researcher_client, project: Project, split: str) -> None:
    resp = upload(researcher_client, project, (pair(1) + "\n").encode(), split=split)
    assert resp.status_code == 400 and "split" in resp.content.decode()
    assert db_state() == ([], [])


@pytest.mark.postgres
def test_on_postgresql_every_unstorable_row_is_a_problem_not_a_500(require_postgres, tmp_path: Path) -> None:
    """The rows PostgreSQL refuses at the write (NUL in text/jsonb, a lone surrogate in jsonb,
    a split over varchar(32)) are caught before it: skip-bad-rows keeps the good rows."""
    project = project_create(name="pg", task="sentiment")
    lines = [pair(1)] + [line for line, _ in BAD_LINES.values()] + [pair(2)]
    f = write(tmp_path / "p.jsonl", lines)
    with pytest.raises(ImportRefused):
        data_import(project=project, format="pairs-jsonl", paths=[str(f)])
    assert db_state() == ([], [])
    report = data_import(project=project, format="pairs-jsonl", paths=[str(f)], strict=False, batch_size=3)
    assert report.problem_count == len(BAD_LINES) and report.imported_pairs == 2
    assert db_state() == (["p1", "p2"], ["p1", "p2"])


# --- images must lie inside the image root -------------------------------------------------------


@pytest.fixture
def image_root(settings, tmp_path: Path) -> Path:
    root = tmp_path / "images"
    (root / "sub").mkdir(parents=True)
    Image.new("RGB", (8, 6), (200, 120, 40)).save(root / "sub" / "cat.jpg")
    settings.COUNTERPART = {**settings.COUNTERPART, "IMAGE_ROOT": str(root)}
    return root


def image_pair(i: int, image: str) -> str:
    return json.dumps(
        {
            "id": f"c{i}",
            "original": {"fields": {"caption": "a cat"}, "label": None, "image": image},
            "counterfactual": {"fields": {"caption": "a dog"}},
        }
    )


def test_images_outside_the_root_are_row_problems_that_do_not_say_whether_the_file_exists(
    tmp_path: Path, image_root: Path
) -> None:
    project = project_create(name="cap", task="image-caption")
    outside = tmp_path / "secret.jpg"
    outside.write_bytes(b"secret")
    (image_root / "sub" / "link.jpg").symlink_to(outside)
    data = image_root / "sub" / "p.jsonl"
    images = {
        2: "/etc/passwd",  # exists, outside
        3: "/no/such/file.jpg",  # does not exist, outside
        4: "../../secret.jpg",  # exists, .. escaping
        5: "../../missing.jpg",  # does not exist, .. escaping
        6: "link.jpg",  # inside by name, a symlink leading out
        7: str(outside),
    }
    lines = [image_pair(1, "cat.jpg"), *(image_pair(i, img) for i, img in images.items()), image_pair(8, "cat.jpg")]
    write(data, lines)
    report = data_import(project=project, format="pairs-jsonl", paths=[str(data)], strict=False)
    assert report.problem_count == len(images) and report.imported_pairs == 2
    for problem, (line, img) in zip(report.problems, images.items(), strict=True):
        assert problem == (
            f"{data}:{line}: original.image {img!r} is outside the image root; images must lie inside "
            "COUNTERPART_IMAGE_ROOT"
        )
        assert "not found" not in problem and "passwd" not in problem.replace(img, "")
    stored = Example.objects.get(external_id="c1").image
    assert stored == str(image_root / "sub" / "cat.jpg")
    # A missing image inside the root is still "not found" (and says only what was written).
    write(data, [image_pair(9, "nope.jpg")])
    report = data_import(project=project, format="pairs-jsonl", paths=[str(data)], strict=False)
    assert report.problems == [f"{data}:1: original.image not found: nope.jpg"]


def test_coco_cf_images_outside_the_root_are_refused(tmp_path: Path, image_root: Path) -> None:
    project = project_create(name="cocf", task="image-caption")
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    (folder / "1_0.jpg").write_bytes(b"x")
    (folder / "1_1.jpg").write_bytes(b"x")
    meta = tmp_path / "metadata.jsonl"
    row = {"id": "1", "caption_0": "a", "caption_1": "b", "image_0": "1_0", "image_1": "1_1"}
    write(meta, [json.dumps(row), json.dumps({**row, "id": "2", "image_0": "/etc/passwd"})])
    report = data_import(project=project, format="coco-cf", paths=[str(meta), str(folder)], strict=False)
    assert report.imported_pairs == 0 and report.problem_count == 2
    assert all("outside the image root" in p for p in report.problems)
    assert "/etc/passwd" in report.problems[1] and "not found" not in " ".join(report.problems)


def test_an_imported_caption_image_is_served_to_its_annotator(client, tmp_path: Path, image_root: Path) -> None:
    """The URL an annotator gets for an imported image answers 200 with the image's bytes;
    anonymous visitors and paths outside the root get no file."""
    from annotate.selectors import image_url

    project = project_create(name="cap", task="image-caption")
    data = image_root / "sub" / "p.jsonl"
    write(data, [image_pair(1, "cat.jpg")])
    data_import(project=project, format="pairs-jsonl", paths=[str(data)])
    url = image_url(Example.objects.get(external_id="c1").image)
    assert url == "/images/sub/cat.jpg"
    assert client.get(url).status_code == 302  # sign in first
    outsider = user_with_role("other", "annotator")
    client.force_login(outsider)
    assert client.get(url).status_code == 404  # an annotator of no project with that image
    ann = user_with_role("ann", "annotator")
    ProjectMembership.objects.create(project=project, user=ann)
    client.force_login(ann)
    resp = client.get(url)
    assert resp.status_code == 200 and b"".join(resp.streaming_content) == (image_root / "sub" / "cat.jpg").read_bytes()
    assert resp["Content-Type"] == "image/jpeg"
    for bad in ("/images/../secret.jpg", "/images/%2e%2e/%2e%2e/etc/passwd", "/images/sub/nope.jpg"):
        assert client.get(bad).status_code == 404
    # A stored path outside the root (older data) is never sent to an annotator.
    assert image_url("/etc/shadow") == ""
    assert image_url(os.path.join(str(tmp_path), "secret.jpg")) == ""


# --- labels ---------------------------------------------------------------------------------------


def bool_pair(i: int, y: str, y2: str) -> str:
    return json.dumps(
        {
            "id": f"b{i}",
            "original": {"fields": {"passage": "p", "question": f"q{i}"}, "label": y},
            "counterfactual": {"fields": {"passage": "p2", "question": f"q{i}"}, "label": y2, "label_source": "human"},
        }
    )


def test_labels_match_case_insensitively_and_an_unknown_one_names_the_labels(tmp_path: Path) -> None:
    f = write(tmp_path / "b.jsonl", [bool_pair(1, "FALSE", "True"), bool_pair(2, "no", "true")])
    err = StringIO()
    with pytest.raises(CommandError):
        call_command(
            "import_data",
            str(f),
            project="bq",
            task="boolean-qa",
            data_format="pairs-jsonl",
            stdout=StringIO(),
            stderr=err,
        )
    assert f"{f}:2: original.label: unknown label 'no' (expected one of false, true)" in err.getvalue()


def test_import_data_label_map_renames_labels(tmp_path: Path) -> None:
    f = write(tmp_path / "b.jsonl", [bool_pair(1, "FALSE", "True"), bool_pair(2, "no", "yes")])
    out = StringIO()
    call_command(
        "import_data",
        str(f),
        project="bq",
        task="boolean-qa",
        data_format="pairs-jsonl",
        label_map="no=false, YES=true",
        stdout=out,
        stderr=StringIO(),
    )
    assert out.getvalue().strip().splitlines()[-1] == "imported 2 originals, 2 pairs; skipped 0; problems 0"
    labels = sorted(Candidate.objects.values_list("external_id", "example__label__name", "label__name"))
    assert labels == [("b1", "false", "true"), ("b2", "false", "true")]
    with pytest.raises(CommandError, match="--label-map: label map entry 'yes' is not old=new"):
        call_command("import_data", str(f), project="bq", data_format="pairs-jsonl", label_map="yes", stdout=StringIO())


def test_the_import_page_takes_a_label_map(researcher_client) -> None:
    project = project_create(name="bq", task="boolean-qa")
    content = (bool_pair(1, "no", "yes") + "\n").encode()
    resp = upload(researcher_client, project, content, label_map="no=false,yes=true")
    assert resp.status_code == 200 and "imported 1 originals, 1 pairs" in resp.html
    assert upload(researcher_client, project, content, label_map="nope").status_code == 400


@pytest.mark.parametrize("split", ["tr\x00ain", "a\ud800"])
def test_an_export_split_the_database_cannot_store_is_refused_clearly(
    tmp_path: Path, project: Project, split: str
) -> None:
    """On PostgreSQL `export --split` with a NUL ended in a DataError traceback (the job's
    params, then the query); it is refused by name before anything runs."""
    with pytest.raises(CommandError, match="--split holds"):
        call_command(
            "export",
            "--project",
            project.name,
            "--format",
            "pairs-jsonl",
            "--out",
            str(tmp_path / "o.jsonl"),
            "--split",
            split,
            stdout=StringIO(),
            stderr=StringIO(),
        )
    assert not (tmp_path / "o.jsonl").exists()
