"""projects.services.imports.data_import and ``manage.py import_data``."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from projects import states
from projects.models import Candidate, Example, Project
from projects.selectors import project_counts
from projects.services import imports
from projects.services.imports import ImportRefused, data_import
from projects.services.projects import project_create

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def db_state() -> tuple:
    return (
        Example.objects.count(),
        Candidate.objects.count(),
        sorted(Example.objects.values_list("external_id", flat=True)),
        sorted(Candidate.objects.values_list("external_id", "state")),
    )


def write_lines(path: Path, lines: list) -> Path:
    with open(path, "wb") as fh:
        for line in lines:
            fh.write(line if isinstance(line, bytes) else line.encode("utf-8"))
            fh.write(b"\n")
    return path


def pair(i: int, original: str | None = None, **cf: object) -> str:
    return json.dumps(
        {
            "id": f"p{i}",
            "group": original or f"o{i}",
            "original": {"fields": {"text": f"good {original or i}"}, "label": "positive"},
            "counterfactual": {"fields": {"text": f"bad {i}"}, **cf},
        }
    )


@pytest.fixture
def sentiment() -> Project:
    return project_create(name="s", task="sentiment")


# --- real CAD data -----------------------------------------------------------------------------


@pytest.mark.slow
def test_cad_nli_dev_imports_200_originals_800_pairs_once(shared_data: Path) -> None:
    project = project_create(name="cad-nli-dev", task="nli")
    report = data_import(project=project, format="cad-nli", paths=[str(shared_data / "cad")], split="dev", strict=False)
    assert (report.imported_originals, report.imported_pairs, report.skipped, report.problems) == (200, 800, 0, [])
    assert Example.objects.filter(project=project, split="dev").count() == 200
    cands = Candidate.objects.filter(project=project)
    assert cands.count() == 800 and set(cands.values_list("state", flat=True)) == {states.POOLED}
    assert not cands.filter(gold_label__isnull=True).exists() and not cands.filter(label__isnull=False).exists()
    c = cands.select_related("example", "gold_label", "example__label").get(external_id="snli-dev-0-rp0")
    assert c.example.external_id == "snli-dev-0" and c.example.label.name == "neutral"
    assert c.gold_label.name == "entailment" and c.meta == {"revised": "premise"} and c.group == "snli-dev-0"

    again = data_import(project=project, format="cad-nli", paths=[str(shared_data / "cad")], split="dev", strict=False)
    assert (again.imported_originals, again.imported_pairs, again.skipped) == (0, 0, 1000)
    assert Candidate.objects.filter(project=project).count() == 800


@pytest.mark.slow
def test_cad_sentiment_dev_imports_245_pairs(shared_data: Path) -> None:
    project = project_create(name="cad-sent", task="sentiment")
    report = data_import(
        project=project, format="cad-sentiment", paths=[str(shared_data / "cad")], split="dev", strict=False
    )
    assert (report.imported_originals, report.imported_pairs, report.problem_count) == (245, 245, 0)
    assert set(Candidate.objects.values_list("gold_label__name", flat=True)) == {"negative", "positive"}


def test_command_imports_cad_dev_and_prints_counts(shared_data: Path) -> None:
    out = StringIO()
    call_command(
        "import_data",
        "--project",
        "cad-nli-dev",
        "--task",
        "nli",
        "--format",
        "cad-nli",
        "--split",
        "dev",
        str(shared_data / "cad"),
        stdout=out,
    )
    assert out.getvalue().strip().splitlines()[-1] == "imported 200 originals, 800 pairs; skipped 0; problems 0"
    out = StringIO()
    call_command(
        "import_data",
        "--project",
        "cad-nli-dev",
        "--task",
        "nli",
        "--format",
        "cad-nli",
        "--split",
        "dev",
        str(shared_data / "cad"),
        stdout=out,
    )
    assert out.getvalue().strip().splitlines()[-1] == "imported 0 originals, 0 pairs; skipped 1000; problems 0"


# --- labels and states --------------------------------------------------------------------------


def test_label_sources_map_to_states(tmp_path: Path, sentiment: Project) -> None:
    f = write_lines(
        tmp_path / "p.jsonl",
        [
            pair(1, label="negative", label_source="gold"),
            pair(2, label="negative"),  # no source: what the file says, not a gold answer: imported
            pair(3, label="negative", label_source="human", confidence=1.0),
            pair(4, label="positive", label_source="imported"),
            pair(5, label="negative", label_source="auto", confidence=0.8, gold_label="positive"),
            pair(6, target_label="negative", generator="rules", perturbation="negation", scores={"sim": 0.9}),
        ],
    )
    report = data_import(project=sentiment, format="pairs-jsonl", paths=[str(f)], strict=False)
    assert (report.imported_originals, report.imported_pairs, report.problem_count) == (6, 6, 0)
    got = {
        c.external_id: (
            c.state,
            c.label and c.label.name,
            c.label_source,
            c.confidence,
            c.gold_label and c.gold_label.name,
        )
        for c in Candidate.objects.select_related("label", "gold_label")
    }
    assert got == {
        "p1": (states.POOLED, None, "", None, "negative"),
        "p2": (states.HUMAN_LABELED, "negative", "imported", None, None),
        "p3": (states.HUMAN_LABELED, "negative", "human", 1.0, None),
        "p4": (states.HUMAN_LABELED, "positive", "imported", None, None),
        "p5": (states.AUTO_LABELED, "negative", "auto", 0.8, "positive"),
        "p6": (states.POOLED, None, "", None, None),
    }
    c6 = Candidate.objects.select_related("target_label").get(external_id="p6")
    assert (c6.target_label.name, c6.generator, c6.perturbation, c6.scores) == (
        "negative",
        "rules",
        "negation",
        {"sim": 0.9},
    )
    ex = Example.objects.select_related("label").get(external_id="o1")
    assert ex.fields == {"text": "good 1"} and ex.label.name == "positive"


# --- idempotence, batching -------------------------------------------------------------------------


def test_pairs_share_originals_across_batches_and_reimport_adds_nothing(tmp_path: Path, sentiment: Project) -> None:
    lines = [pair(i, original=f"o{i // 3}") for i in range(10)]
    lines.append(pair(3, original="o1"))  # the same pair id again in the same file
    f = write_lines(tmp_path / "p.jsonl", lines)
    report = data_import(project=sentiment, format="pairs-jsonl", paths=[str(f)], batch_size=2, strict=False)
    assert (report.imported_originals, report.imported_pairs, report.skipped) == (4, 10, 1)
    assert report.batches == 6
    for ex in Example.objects.all():
        assert ex.candidates.count() == (1 if ex.external_id == "o3" else 3)
    before = db_state()
    again = data_import(project=sentiment, format="pairs-jsonl", paths=[str(f)], batch_size=4, strict=False)
    assert (again.imported_originals, again.imported_pairs, again.skipped) == (0, 0, 11)
    assert db_state() == before


def test_ids_are_per_project(tmp_path: Path, sentiment: Project) -> None:
    f = write_lines(tmp_path / "p.jsonl", [pair(1), pair(2)])
    other = project_create(name="other", task="sentiment")
    data_import(project=sentiment, format="pairs-jsonl", paths=[str(f)], strict=False)
    report = data_import(project=other, format="pairs-jsonl", paths=[str(f)], strict=False)
    assert report.imported_pairs == 2 and Candidate.objects.count() == 4


def test_a_batch_costs_a_fixed_number_of_queries(
    tmp_path: Path, sentiment: Project, django_assert_max_num_queries
) -> None:
    f = write_lines(tmp_path / "p.jsonl", [pair(i) for i in range(300)])
    project_counts(project=sentiment)  # the project's aggregates exist: the batch keeps them
    # Per batch: look up existing originals, insert the new ones (one executemany), read
    # their ids, look up existing pairs, insert the new ones; keep the project's aggregates
    # (lock their row, count the new rows' cells, add them, drop empty cells, bump the
    # version: projects/aggregates.py); per-row queries would be 300+.
    with django_assert_max_num_queries(14):
        report = data_import(project=sentiment, format="pairs-jsonl", paths=[str(f)], batch_size=1000, strict=False)
    assert report.imported_pairs == 300


def test_a_failing_batch_leaves_nothing_half_written(tmp_path: Path, sentiment: Project, monkeypatch) -> None:
    f = write_lines(tmp_path / "p.jsonl", [pair(i) for i in range(6)])
    real = imports._bulk_insert
    calls = {"n": 0}

    def flaky(model, rows):
        if model is Candidate:
            calls["n"] += 1
            if calls["n"] == 2:
                raise RuntimeError("disk full")
        return real(model, rows)

    monkeypatch.setattr(imports, "_bulk_insert", flaky)
    with pytest.raises(RuntimeError, match="disk full"):
        data_import(project=sentiment, format="pairs-jsonl", paths=[str(f)], batch_size=3, strict=False)
    # The first batch landed completely; of the second, not even its originals.
    assert sorted(Candidate.objects.values_list("external_id", flat=True)) == ["p0", "p1", "p2"]
    assert sorted(Example.objects.values_list("external_id", flat=True)) == ["o0", "o1", "o2"]
    monkeypatch.setattr(imports, "_bulk_insert", real)
    report = data_import(project=sentiment, format="pairs-jsonl", paths=[str(f)], batch_size=3, strict=False)
    assert (report.imported_pairs, report.skipped) == (3, 3)


# --- malformed input ---------------------------------------------------------------------------------

BAD_ROWS = {
    "truncated line": (lambda d: [pair(1)[:-9]], "not valid JSON"),
    "unknown label": (lambda d: [pair(1, label="meh", label_source="human")], "unknown label 'meh'"),
    "missing image": (lambda d: [pair(1, image="nope.jpg")], "image not found"),
}


@pytest.mark.parametrize("kind", sorted(BAD_ROWS))
def test_a_bad_row_is_reported_with_file_and_line_and_good_rows_land(
    tmp_path: Path, sentiment: Project, kind: str
) -> None:
    make, message = BAD_ROWS[kind]
    f = write_lines(tmp_path / "p.jsonl", [pair(10), *make(tmp_path), pair(11)])
    report = data_import(project=sentiment, format="pairs-jsonl", paths=[str(f)], strict=False)
    assert report.imported_pairs == 2 and report.problem_count == 1
    assert report.problems[0].startswith(f"{f}:2: ") and message in report.problems[0]


@pytest.mark.parametrize("kind", sorted(BAD_ROWS))
def test_a_file_of_bad_rows_leaves_the_database_as_it_was(tmp_path: Path, sentiment: Project, kind: str) -> None:
    data_import(
        project=sentiment,
        format="pairs-jsonl",
        paths=[str(write_lines(tmp_path / "ok.jsonl", [pair(99)]))],
        strict=False,
    )
    before = db_state()
    make, message = BAD_ROWS[kind]
    f = write_lines(tmp_path / "p.jsonl", make(tmp_path))
    report = data_import(project=sentiment, format="pairs-jsonl", paths=[str(f)], strict=False)
    assert (report.imported_pairs, report.problem_count) == (0, 1) and message in report.problems[0]
    assert db_state() == before


@pytest.mark.parametrize("kind", sorted(BAD_ROWS))
def test_strict_mode_refuses_the_whole_file(tmp_path: Path, sentiment: Project, kind: str) -> None:
    before = db_state()
    make, message = BAD_ROWS[kind]
    f = write_lines(tmp_path / "p.jsonl", [pair(10), *make(tmp_path), pair(11)])
    with pytest.raises(ImportRefused, match="nothing was imported") as exc:
        data_import(project=sentiment, format="pairs-jsonl", paths=[str(f)], strict=True)
    assert len(exc.value.problems) == 1 and message in exc.value.problems[0]
    assert db_state() == before


def test_wrong_column_count_in_csv(tmp_path: Path, sentiment: Project) -> None:
    f = tmp_path / "p.csv"
    f.write_text(
        "id,original.text,original.label,counterfactual.text\np1,a,positive,b\np2,a,positive\n", encoding="utf-8"
    )
    report = data_import(project=sentiment, format="csv", paths=[str(f)], strict=False)
    assert report.imported_pairs == 1
    assert report.problems == [f"{f}:3: expected 4 columns (as in the header), found 3"]
    before = db_state()
    with pytest.raises(ImportRefused):
        data_import(project=sentiment, format="csv", paths=[str(f)], strict=True)
    assert db_state() == before


def test_a_2gb_file_is_refused_before_anything_is_written(tmp_path: Path, sentiment: Project) -> None:
    good = write_lines(tmp_path / "good.jsonl", [pair(1)])
    big = tmp_path / "big.jsonl"
    with open(big, "wb") as fh:
        fh.truncate(2 * 1024**3)  # sparse: costs no disk
    before = db_state()
    with pytest.raises(ImportRefused, match=r"big\.jsonl: file is 2\.0 GiB, larger than the limit"):
        data_import(project=sentiment, format="pairs-jsonl", paths=[str(good), str(big)], strict=False)
    assert db_state() == before


def test_an_over_long_line_refuses_the_file(tmp_path: Path, sentiment: Project, settings) -> None:
    settings.COUNTERPART = {**settings.COUNTERPART, "MAX_LINE_BYTES": 4096}
    f = write_lines(tmp_path / "p.jsonl", [pair(1), pair(2, meta_note="x" * 5000)])
    before = db_state()
    with pytest.raises(ImportRefused, match=r"p\.jsonl:2: line is longer than 4\.0 KiB"):
        data_import(project=sentiment, format="pairs-jsonl", paths=[str(f)], strict=False)
    assert db_state() == before


def test_a_bad_header_in_a_later_file_refuses_everything(tmp_path: Path, sentiment: Project) -> None:
    good = tmp_path / "a.csv"
    good.write_text("id,original.text,counterfactual.text\np1,a,b\n", encoding="utf-8")
    bad = tmp_path / "b.csv"
    bad.write_text("original.text,counterfactual.text\na,b\n", encoding="utf-8")
    with pytest.raises(ImportRefused, match="no id column"):
        data_import(project=sentiment, format="csv", paths=[str(good), str(bad)], strict=False)
    assert db_state() == (0, 0, [], [])


def test_problems_kept_are_capped_but_counted(tmp_path: Path, sentiment: Project, settings) -> None:
    settings.COUNTERPART = {**settings.COUNTERPART, "IMPORT_MAX_PROBLEMS": 5}
    f = write_lines(tmp_path / "p.jsonl", ["{"] * 12)
    report = data_import(project=sentiment, format="pairs-jsonl", paths=[str(f)], strict=False)
    assert report.problem_count == 12 and len(report.problems) == 5


# --- images ---------------------------------------------------------------------------------------


def test_coco_cf_import_stores_images_and_reports_a_missing_one(tmp_path: Path) -> None:
    from PIL import Image

    images = tmp_path / "images"
    images.mkdir()
    for name in ("1_img_0", "1_img_1", "2_img_0"):
        Image.new("RGB", (4, 4)).save(images / f"{name}.jpg")
    meta = write_lines(
        tmp_path / "metadata.jsonl",
        [
            json.dumps(
                {"id": "1", "caption_0": "A cat.", "caption_1": "A dog.", "image_0": "1_img_0", "image_1": "1_img_1"}
            ),
            json.dumps(
                {"id": "2", "caption_0": "A cup.", "caption_1": "A mug.", "image_0": "2_img_0", "image_1": "2_img_1"}
            ),
        ],
    )
    project = project_create(name="cocf", task="image-caption")
    report = data_import(project=project, format="coco-cf", paths=[str(meta), str(images)], strict=False)
    assert (report.imported_pairs, report.problem_count) == (1, 1)
    assert report.problems[0].startswith(f"{meta}:2: image not found")
    c = Candidate.objects.select_related("example").get()
    assert c.image == str(images / "1_img_1.jpg") and c.example.image == str(images / "1_img_0.jpg")
    assert c.fields == {"caption": "A dog."} and c.example.fields == {"caption": "A cat."}


# --- the command -------------------------------------------------------------------------------------


def test_command_creates_the_project_with_labels_and_prints_problems(tmp_path: Path) -> None:
    f = write_lines(
        tmp_path / "p.jsonl",
        [
            json.dumps(
                {
                    "id": "a",
                    "original": {"fields": {"q": "x"}, "label": "yes"},
                    "counterfactual": {"fields": {"q": "y"}, "label": "no", "label_source": "human"},
                }
            ),
            "{oops",
        ],
    )
    out, err = StringIO(), StringIO()
    call_command(
        "import_data",
        "--project",
        "qa",
        "--task",
        "boolean-qa",
        "--format",
        "pairs-jsonl",
        "--labels",
        "no,yes",
        "--text-fields",
        "q",
        "--skip-bad-rows",
        str(f),
        stdout=out,
        stderr=err,
    )
    project = Project.objects.get(name="qa")
    assert list(project.labels.values_list("name", flat=True)) == ["no", "yes"] and project.text_fields == ["q"]
    assert f"{f}:2: not valid JSON" in err.getvalue()
    assert out.getvalue().strip().splitlines()[-1] == "imported 1 originals, 1 pairs; skipped 0; problems 1"


def test_command_shows_the_first_50_problems_then_a_count(tmp_path: Path, sentiment: Project) -> None:
    f = write_lines(tmp_path / "p.jsonl", ["{"] * 60)
    out, err = StringIO(), StringIO()
    call_command(
        "import_data", "--project", "s", "--format", "pairs-jsonl", "--skip-bad-rows", str(f), stdout=out, stderr=err
    )
    lines = err.getvalue().strip().splitlines()
    assert len(lines) == 51 and lines[-1] == "… and 10 more problems"
    assert out.getvalue().strip().endswith("problems 60")


def test_command_refusal_is_an_error(tmp_path: Path, sentiment: Project) -> None:
    with pytest.raises(CommandError, match="file not found"):
        call_command("import_data", "--project", "s", "--format", "pairs-jsonl", str(tmp_path / "missing.jsonl"))
    with pytest.raises(CommandError, match="needs --split"):
        call_command("import_data", "--project", "new", "--task", "nli", "--format", "cad-nli", str(tmp_path))
    assert not Project.objects.filter(name="new").exists()  # a refused import leaves no empty project
    with pytest.raises(CommandError, match="exists with task 'sentiment', not 'nli'"):
        call_command("import_data", "--project", "s", "--task", "nli", "--format", "pairs-jsonl", str(tmp_path))


def test_import_report_summary() -> None:
    r = imports.ImportReport(imported_originals=2, imported_pairs=3, skipped=4, problem_count=5)
    assert r.summary() == "imported 2 originals, 3 pairs; skipped 4; problems 5"


@pytest.mark.parametrize("kind", sorted(BAD_ROWS))
def test_by_default_a_malformed_input_leaves_the_database_as_it_was(
    tmp_path: Path, sentiment: Project, kind: str
) -> None:
    before = db_state()
    make, message = BAD_ROWS[kind]
    f = write_lines(tmp_path / "p.jsonl", [pair(10), *make(tmp_path), pair(11)])
    with pytest.raises(ImportRefused, match="--skip-bad-rows") as exc:
        data_import(project=sentiment, format="pairs-jsonl", paths=[str(f)])
    assert len(exc.value.problems) == 1 and message in exc.value.problems[0] and f"{f}:2:" in exc.value.problems[0]
    assert db_state() == before


def test_command_refuses_a_malformed_file_with_counts_and_writes_nothing(tmp_path: Path, sentiment: Project) -> None:
    before = db_state()
    f = write_lines(tmp_path / "p.jsonl", [pair(1), "{oops", pair(2)])
    out, err = StringIO(), StringIO()
    with pytest.raises(CommandError, match="nothing was imported"):
        call_command("import_data", "--project", "s", "--format", "pairs-jsonl", str(f), stdout=out, stderr=err)
    assert f"{f}:2: not valid JSON" in err.getvalue()
    assert out.getvalue().strip().splitlines()[-1] == "imported 0 originals, 0 pairs; skipped 0; problems 1"
    assert db_state() == before


@pytest.mark.slow
def test_published_cad_nli_train_imports_and_reports_its_nine_odd_rows(shared_data: Path) -> None:
    """The published train split has 8 revised rows whose unrevised sentence differs from the
    original only in whitespace (e.g. a double space, snli-train-1408): imported as published
    and reported as warnings. One row (revised_premise/train.tsv:1619) rewrites the
    hypothesis it should keep: a real misalignment, skipped and reported as a warning too, so
    the default (strict) import succeeds."""
    project = project_create(name="cad-train", task="nli")
    report = data_import(project=project, format="cad-nli", paths=[str(shared_data / "cad")], split="train")
    assert report.problem_count == 0
    assert report.warning_count == 9 and len(report.warnings) == 9
    assert sum("differs only in whitespace" in w for w in report.warnings) == 8
    misaligned = [w for w in report.warnings if "revised_premise/train.tsv:1619: misaligned, skipped" in w]
    assert len(misaligned) == 1 and "is not the hypothesis of original snli-train-808" in misaligned[0]
    assert "snli-train-1408" in " ".join(report.warnings)
    assert report.summary() == "imported 1666 originals, 6663 pairs; skipped 0; problems 0; warnings 9"
    n_originals = Example.objects.filter(project=project).count()
    assert report.imported_originals == n_originals > 0
    assert Candidate.objects.filter(project=project).count() == report.imported_pairs == 4 * n_originals - 1


def test_an_empty_file_is_refused_in_both_modes(tmp_path: Path, sentiment: Project) -> None:
    f = tmp_path / "empty.jsonl"
    f.write_text("")
    for strict in (True, False):
        with pytest.raises(ImportRefused, match="the file has no rows"):
            data_import(project=sentiment, format="pairs-jsonl", paths=[str(f)], strict=strict)


def test_command_names_its_flag_and_refuses_an_empty_file(tmp_path: Path, sentiment: Project) -> None:
    f = tmp_path / "empty.jsonl"
    f.write_text("")
    with pytest.raises(CommandError, match="the file has no rows"):
        call_command("import_data", "--project", sentiment.name, "--format", "pairs-jsonl", str(f), stdout=StringIO())
