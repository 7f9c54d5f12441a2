"""The ``hf-datasets`` and ``coco-cf`` exports, re-read with ``datasets.load_from_disk`` and the
coco-cf reader."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from projects import formats, states
from projects.models import Candidate, Example, Label
from projects.services.exports import ExportError, data_export
from projects.services.imports import data_import
from projects.services.projects import project_create

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def nli_project():
    project = project_create(name="hf", task="nli")
    labels = {lab.name: lab for lab in Label.objects.filter(project=project)}
    ex = Example.objects.create(
        project=project,
        external_id="o1",
        fields={"premise": "A dog runs.", "hypothesis": "An animal moves."},
        label=labels["entailment"],
        split="dev",
    )
    Candidate.objects.create(
        project=project,
        external_id="c1",
        example=ex,
        fields={"premise": "A dog runs.", "hypothesis": "A cat sleeps."},
        generator="rules",
        perturbation="negation",
        state=states.AUTO_LABELED,
        label=labels["contradiction"],
        label_source="auto",
        confidence=0.875,
        target_label=labels["contradiction"],
        scores={"similarity": 0.9},
        meta={"rule": "x"},
    )
    Candidate.objects.create(
        project=project,
        external_id="c2",
        example=ex,
        fields={"premise": "A dog runs.", "hypothesis": "A dog sits."},
        generator="human",
        perturbation="",
        state=states.POOLED,
    )
    return project


def test_hf_datasets_round_trip(tmp_path: Path) -> None:
    from datasets import load_from_disk

    project = nli_project()
    out = tmp_path / "ds"
    assert data_export(project=project, format="hf-datasets", out=str(out)) == 2
    ds = load_from_disk(str(out))
    assert len(ds) == 2
    names = ["entailment", "neutral", "contradiction"]
    for col in ("original_label", "label", "target_label", "gold_label"):
        assert ds.features[col].names == names
    for col in ("generator", "perturbation", "label_source", "confidence"):
        assert col in ds.column_names
    first, second = ds[0], ds[1]
    assert first["id"] == "c1" and first["split"] == "dev"
    assert first["original_hypothesis"] == "An animal moves." and first["counterfactual_hypothesis"] == "A cat sleeps."
    assert ds.features["label"].int2str(first["label"]) == "contradiction"
    assert ds.features["original_label"].int2str(first["original_label"]) == "entailment"
    assert (first["generator"], first["perturbation"], first["label_source"]) == ("rules", "negation", "auto")
    assert first["confidence"] == pytest.approx(0.875)
    meta = json.loads(first["meta"])
    assert json.loads(first["scores"]) == {"similarity": 0.9} and meta["rule"] == "x"
    assert meta["provenance"]["label_source"] == first["label_source"]  # every export carries its provenance
    assert second["label"] is None and second["confidence"] is None and second["label_source"] == ""


def test_hf_datasets_carries_the_valid_judgement(tmp_path: Path) -> None:
    """FORMATS §1 ``counterfactual.valid`` is a column of its own: with ``include_invalid`` an
    invalid pair must still read as invalid (the other formats write it too)."""
    from datasets import load_from_disk

    project = nli_project()
    Candidate.objects.filter(external_id="c1").update(meta={"rule": "x", "valid": True})
    Candidate.objects.filter(external_id="c2").update(meta={"valid": False})
    out = tmp_path / "ds"
    assert data_export(project=project, format="hf-datasets", out=str(out), include_invalid=True) == 2
    ds = load_from_disk(str(out))
    assert ds.features["valid"].dtype == "bool"
    assert {r["id"]: r["valid"] for r in ds} == {"c1": True, "c2": False}
    assert "valid" not in json.loads(ds[0]["meta"])  # one place for it, as in pairs-jsonl and csv
    Candidate.objects.filter(external_id="c2").update(meta={})
    out2 = tmp_path / "ds2"
    data_export(project=project, format="hf-datasets", out=str(out2))
    assert {r["id"]: r["valid"] for r in load_from_disk(str(out2))} == {"c1": True, "c2": None}


def test_hf_datasets_refuses_an_existing_directory_and_stdout(tmp_path: Path) -> None:
    project = nli_project()
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("x")
    with pytest.raises(ExportError, match="not an empty directory"):
        data_export(project=project, format="hf-datasets", out=str(tmp_path / "full"))
    with pytest.raises(ExportError, match="directory"):
        data_export(project=project, format="hf-datasets", out="-")
    with pytest.raises(ExportError, match="image-caption"):
        data_export(project=project, format="coco-cf", out=str(tmp_path / "cf"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["full"]  # no temporary left behind


def image_project(tmp_path: Path):
    from PIL import Image

    src = tmp_path / "src"
    src.mkdir()
    for i, colour in enumerate(["red", "blue", "green", "white"]):
        Image.new("RGB", (4, 4), colour).save(src / f"{i}.png")
    meta = src / "metadata.jsonl"
    meta.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {
                    "id": "11",
                    "caption_0": "a red cat",
                    "caption_1": "a red dog",
                    "image_0": "0.png",
                    "image_1": "1.png",
                },
                {"id": "12", "caption_0": "a cup", "caption_1": "a bowl", "image_0": "2.png", "image_1": "3.png"},
            ]
        )
        + "\n"
    )
    project = project_create(name="cf", task="image-caption")
    report = data_import(project=project, format="coco-cf", paths=[str(meta), str(src)])
    assert report.imported_pairs == 2, report.problems
    return project, src


def test_coco_cf_export_reimports(tmp_path: Path) -> None:
    _project, src = image_project(tmp_path)
    out = tmp_path / "out"
    text = StringIO()
    call_command("export", "--project", "cf", "--format", "coco-cf", "--out", str(out), stdout=text)
    assert "exported 2 pairs" in text.getvalue()
    lines = [json.loads(x) for x in (out / "metadata.jsonl").read_text().splitlines()]
    assert [sorted(x) for x in lines] == [["caption_0", "caption_1", "id", "image_0", "image_1"]] * 2
    assert lines[0]["id"] == "11" and lines[0]["caption_1"] == "a red dog"
    assert lines[0]["image_1"] == "11_1.png"
    assert (out / "11_1.png").read_bytes() == (src / "1.png").read_bytes()
    back = list(formats.read("coco-cf", [str(out)], task="image-caption"))
    assert back == list(formats.read("coco-cf", [str(out / "metadata.jsonl")], task="image-caption"))
    assert all(isinstance(r, formats.PairRecord) for r in back), back
    assert [(r.id, r.original.fields["caption"], r.cf_fields["caption"]) for r in back] == [
        ("cocf-11", "a red cat", "a red dog"),
        ("cocf-12", "a cup", "a bowl"),
    ]
    assert Path(back[1].cf_image).read_bytes() == (src / "3.png").read_bytes()


def test_export_command_writes_hf_datasets(tmp_path: Path) -> None:
    from datasets import load_from_disk

    nli_project()
    out = tmp_path / "hf-out"
    call_command(
        "export",
        "--project",
        "hf",
        "--format",
        "hf-datasets",
        "--out",
        str(out),
        "--label-source",
        "auto",
        stdout=StringIO(),
    )
    assert load_from_disk(str(out))["id"] == ["c1"]


def test_export_job_zips_a_directory_format(tmp_path: Path, settings) -> None:
    import zipfile

    from projects.models import Job
    from projects.services.exports import export_job

    settings.COUNTERPART = {**settings.COUNTERPART, "EXPORT_DIR": str(tmp_path / "exports")}
    project = nli_project()
    job = Job.objects.create(kind="export", project=project, params={"format": "hf-datasets"})

    class Ctx:
        def progress(self, done: int, total: int) -> None:
            pass

        def check_cancelled(self) -> None:
            pass

        def cancel_requested(self) -> bool:
            return False

    result = export_job(job, Ctx())  # type: ignore[arg-type]
    assert result["pairs"] == 2 and result["file"].endswith(".hf-datasets.zip")
    names = zipfile.ZipFile(tmp_path / "exports" / result["file"]).namelist()
    assert any(n.endswith("dataset_info.json") for n in names)


def test_the_export_page_runs_directory_formats_as_a_job_and_serves_the_zip(
    tmp_path: Path, settings, django_capture_on_commit_callbacks
) -> None:
    """hf-datasets from the export page: a job (eager here), then the zip downloads;
    coco-cf on a non-image project is refused next to the format field."""
    import io
    import zipfile

    from django.test import Client

    from projects.models import Job
    from tests.annotate.factories import researcher

    settings.COUNTERPART = {**settings.COUNTERPART, "EXPORT_DIR": str(tmp_path / "exports")}
    project = nli_project()
    c = Client()
    c.force_login(researcher())
    with django_capture_on_commit_callbacks(execute=True):
        r = c.post(f"/projects/{project.pk}/export/", {"format": "hf-datasets"})
    assert r.status_code == 302
    job = Job.objects.get(kind="export", project=project)
    assert job.status == "succeeded" and job.params["format"] == "hf-datasets"
    download = c.get(f"/exports/{job.pk}/download/")
    assert download.status_code == 200
    names = zipfile.ZipFile(io.BytesIO(b"".join(download.streaming_content))).namelist()
    assert any(n.endswith("dataset_info.json") for n in names)
    r = c.post(f"/projects/{project.pk}/export/", {"format": "coco-cf"})
    assert r.status_code == 400 and b"coco-cf holds image-caption pairs" in r.content
    assert Job.objects.filter(kind="export").count() == 1


def test_coco_cf_of_text_only_caption_pairs_says_which_format_takes_them(tmp_path: Path) -> None:
    """A coco-cf generation run without a diffusion model writes caption pairs without images;
    their coco-cf export failed with "coco-cf needs both images (image_0 is missing)" and no word
    of what to do: it now names the formats that take caption pairs."""
    project = project_create(name="captions", task="image-caption")
    ex = Example.objects.create(project=project, external_id="1_0", fields={"caption": "A dog on a sofa."})
    Candidate.objects.create(
        project=project, example=ex, external_id="c", fields={"caption": "A cat on a sofa."}, state=states.POOLED
    )
    with pytest.raises(ExportError) as exc:
        data_export(project=project, format="coco-cf", out=str(tmp_path / "cf"))
    assert "needs both images" in str(exc.value) and "exported as pairs-jsonl, csv or hf-datasets" in str(exc.value)
    out = StringIO()
    pairs = tmp_path / "p.jsonl"
    call_command("export", "--project", "captions", "--format", "pairs-jsonl", "--out", str(pairs), stdout=out)
    assert json.loads(pairs.read_text())["counterfactual"]["fields"] == {"caption": "A cat on a sofa."}
