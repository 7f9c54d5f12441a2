"""Images are checked at import (issue 18.9): JPEG, PNG, WebP or GIF only, ``Image.verify()``,
a reduced decode of JPEGs, and at most ``COUNTERPART_MAX_IMAGE_PIXELS`` pixels read from the
header (a decompression bomb is refused without being decoded). Each refusal is a
``file:line`` problem. The page and the API take relative image paths from the image root
(one rule; the API used to resolve them from its temporary folder and refuse them)."""

from __future__ import annotations

import json
import random
import struct
import zlib
from pathlib import Path

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from PIL import Image
from rest_framework.test import APIClient

from projects.formats.images import image_problem
from projects.models import Candidate, Example
from projects.services.imports import ImportRefused, data_import
from projects.services.projects import project_create
from tests.annotate.factories import researcher
from tests.projects.import_uploads import post_import

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def png_header(width: int, height: int) -> bytes:
    """A PNG whose header says width×height, with a few bytes of pixel data: a bomb costs
    nothing to make, and must cost nothing to refuse."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)

    ihdr = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 64)) + chunk(b"IEND", b"")


def noisy_jpeg(path: Path) -> Path:
    rng = random.Random(7)
    Image.frombytes("RGB", (64, 48), bytes(rng.randrange(256) for _ in range(64 * 48 * 3))).save(path, quality=90)
    return path


@pytest.fixture
def root(settings, tmp_path: Path) -> Path:
    root = tmp_path / "images"
    root.mkdir()
    settings.COUNTERPART = {**settings.COUNTERPART, "IMAGE_ROOT": str(root)}
    Image.new("RGB", (8, 6), (10, 200, 30)).save(root / "ok.png")
    noisy_jpeg(root / "ok.jpg")
    Image.new("RGB", (8, 6)).save(root / "ok.webp")
    Image.new("P", (8, 6)).save(root / "ok.gif")
    (root / "drawing.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg"><script>alert(1)</script></svg>')
    (root / "bomb.png").write_bytes(png_header(30000, 30000))  # 900 Mpx: over Pillow's own limit too
    (root / "big.png").write_bytes(png_header(10000, 5000))  # 50 Mpx: over ours (40 Mpx)
    data = noisy_jpeg(root / "whole.jpg").read_bytes()
    (root / "broken.jpg").write_bytes(data[: len(data) // 2])  # a JPEG cut in half
    (root / "text.jpg").write_bytes(b"\xff\xd8\xff\xe0 not really a jpeg")
    Image.new("RGB", (4, 4)).save(root / "bitmap.png", "BMP")  # a BMP named .png
    return root


def caption_pair(i: int, image: str) -> str:
    return json.dumps(
        {
            "id": f"c{i}",
            "original": {"fields": {"caption": "a cat"}, "label": None, "image": image},
            "counterfactual": {"fields": {"caption": "a dog"}},
        }
    )


REFUSED = {
    "drawing.svg": "has .svg; only .jpg, .jpeg, .png, .webp and .gif images can be imported",
    "bomb.png": "is over the limit of 40,000,000 pixels (COUNTERPART_MAX_IMAGE_PIXELS; Pillow: Image size "
    "(900000000 pixels)",
    "big.png": "is 10000×5000 = 50,000,000 pixels, over the limit of 40,000,000 (COUNTERPART_MAX_IMAGE_PIXELS); "
    "it was not decoded",
    "broken.jpg": "is a damaged or truncated JPEG file (image file is truncated",
    "text.jpg": "is not a readable JPEG, PNG, WebP or GIF image (Truncated File Read)",
    "bitmap.png": "is not a JPEG, PNG, WebP or GIF image (Pillow cannot identify it)",
}


def test_each_refused_image_is_a_file_line_problem_and_good_ones_import(root: Path) -> None:
    project = project_create(name="cap", task="image-caption")
    names = ["ok.png", *REFUSED, "ok.jpg", "ok.webp", "ok.gif"]
    data = root / "pairs.jsonl"
    data.write_text("\n".join(caption_pair(i, name) for i, name in enumerate(names, 1)) + "\n")
    with pytest.raises(ImportRefused) as refused:
        data_import(project=project, format="pairs-jsonl", paths=[str(data)])
    assert len(refused.value.problems) == len(REFUSED) and not Example.objects.exists()
    report = data_import(project=project, format="pairs-jsonl", paths=[str(data)], strict=False)
    assert report.imported_pairs == 4 and report.problem_count == len(REFUSED)
    for line, (problem, (name, message)) in enumerate(zip(report.problems, REFUSED.items(), strict=True), 2):
        assert problem.startswith(f"{data}:{line}: original.image {name} {message}"), problem
    stored = sorted(Path(p).name for p in Example.objects.values_list("image", flat=True))
    assert stored == ["ok.gif", "ok.jpg", "ok.png", "ok.webp"]


def test_the_pixel_limit_is_a_setting(root: Path, settings) -> None:
    settings.COUNTERPART = {**settings.COUNTERPART, "MAX_IMAGE_PIXELS": 40}
    project = project_create(name="cap", task="image-caption")
    data = root / "pairs.jsonl"
    data.write_text(caption_pair(1, "ok.png") + "\n")  # 8×6 = 48 pixels
    report = data_import(project=project, format="pairs-jsonl", paths=[str(data)], strict=False)
    assert report.problems == [
        f"{data}:1: original.image ok.png is 8×6 = 48 pixels, over the limit of 40 (COUNTERPART_MAX_IMAGE_PIXELS); "
        "it was not decoded"
    ]


def test_a_bomb_is_refused_from_its_header_without_decoding(root: Path, monkeypatch) -> None:
    """Neither verify() nor a decode runs on an image over the limit."""
    from PIL import ImageFile, PngImagePlugin

    calls: list[str] = []
    monkeypatch.setattr(ImageFile.ImageFile, "load", lambda self: calls.append("load"))
    monkeypatch.setattr(PngImagePlugin.PngImageFile, "verify", lambda self: calls.append("verify"))
    assert "over the limit of 40,000,000" in (image_problem(str(root / "big.png")) or "")
    assert calls == []
    image_problem(str(root / "ok.png"))  # a good one is verified
    assert calls == ["verify"]


def test_coco_cf_images_are_checked_too(root: Path) -> None:
    project = project_create(name="cocf", task="image-caption")
    (root / "1_0.jpg").write_bytes((root / "ok.jpg").read_bytes())
    (root / "1_1.jpg").write_bytes((root / "broken.jpg").read_bytes())
    meta = root / "metadata.jsonl"
    meta.write_text(json.dumps({"id": "1", "caption_0": "a", "caption_1": "b", "image_0": "1_0", "image_1": "1_1"}))
    report = data_import(project=project, format="coco-cf", paths=[str(meta), str(root)], strict=False)
    assert report.imported_pairs == 0
    assert report.problems[0].startswith(f"{meta}:1: image 1_1.jpg is a damaged or truncated JPEG file")


def test_page_and_api_take_relative_image_paths_from_the_image_root(root: Path, client) -> None:
    """One rule for both: an upload has no folder of its own, so ``ok.jpg`` is the image
    root's. (The API used to look beside its temporary copy of the upload, outside the root,
    and refused what the page accepted.)"""
    project = project_create(name="cap", task="image-caption")
    user = researcher()
    client.force_login(user)
    api = APIClient()
    api.force_authenticate(user)
    bodies = {
        "page": (caption_pair(1, "ok.jpg") + "\n" + caption_pair(2, "drawing.svg") + "\n").encode(),
        "api": (caption_pair(3, "ok.jpg") + "\n" + caption_pair(4, "drawing.svg") + "\n").encode(),
    }
    for via, body in bodies.items():
        data = {"format": "pairs-jsonl", "file": SimpleUploadedFile(f"{via}.jsonl", body)}
        refused = post_import(api if via == "api" else client, project, data, api=via == "api")
        assert refused.job is not None and refused.job.status == "failed"
        assert refused.job.result["problems"] == [
            f"{via}.jsonl:2: original.image drawing.svg has .svg; only .jpg, .jpeg, .png, .webp and .gif images "
            "can be imported"
        ]
        data = {"format": "pairs-jsonl", "file": SimpleUploadedFile(f"{via}.jsonl", body), "skip_bad_rows": "1"}
        done = post_import(api if via == "api" else client, project, data, api=via == "api")
        assert done.job is not None and done.job.status == "succeeded", done.job.error
        assert done.job.result["imported_pairs"] == 1
    assert sorted(Candidate.objects.values_list("external_id", "example__image")) == [
        ("c1", str(root / "ok.jpg")),
        ("c3", str(root / "ok.jpg")),
    ]


def test_pairs_jsonl_export_writes_image_paths_relative_to_the_root_and_reimports(tmp_path, settings):
    from projects.services.exports import data_export

    root = tmp_path / "root"
    (root / "pics").mkdir(parents=True)
    settings.COUNTERPART = {**settings.COUNTERPART, "IMAGE_ROOT": str(root)}
    Image.new("RGB", (2, 2)).save(root / "pics" / "a.png")
    src = root / "in.jsonl"
    src.write_text(
        json.dumps(
            {
                "id": "p1",
                "original": {"fields": {"caption": "a cat"}, "label": None, "image": "pics/a.png"},
                "counterfactual": {"fields": {"caption": "a dog"}, "image": "pics/a.png"},
            }
        )
        + "\n"
    )
    project = project_create(name="img-rt", task="image-caption")
    data_import(project=project, format="pairs-jsonl", paths=[str(src)])
    out = tmp_path / "elsewhere" / "out.jsonl"  # outside the root: found through the root
    data_export(project=project, format="pairs-jsonl", out=str(out))
    row = json.loads(out.read_text())
    assert row["original"]["image"] == "pics/a.png" and row["counterfactual"]["image"] == "pics/a.png"
    again = project_create(name="img-rt2", task="image-caption")
    report = data_import(project=again, format="pairs-jsonl", paths=[str(out)])
    assert report.problem_count == 0
    back = tmp_path / "elsewhere" / "back.jsonl"
    data_export(project=again, format="pairs-jsonl", out=str(back))
    assert back.read_text() == out.read_text()
    # a relative path that leads out of the root is still refused
    bad = tmp_path / "elsewhere" / "bad.jsonl"
    bad.write_text(out.read_text().replace('"pics/a.png"', '"../../etc/passwd"'))
    with pytest.raises(ImportRefused) as exc:
        data_import(project=again, format="pairs-jsonl", paths=[str(bad)])
    assert "outside the image root" in exc.value.problems[0]


def test_an_image_pair_in_the_shape_of_formats_section_1_imports_without_an_original_label(root: Path) -> None:
    """§1: image pairs carry ``{"fields": {"caption": …}, "image": "relative/path.jpg"}`` on
    both sides, with no label (a caption pair's original has none); a text pair still needs
    ``original.label`` (null when unknown)."""
    project = project_create(name="cap", task="image-caption")
    src = root / "pairs.jsonl"
    src.write_text(
        json.dumps(
            {
                "id": "p1",
                "original": {"fields": {"caption": "a cat"}, "image": "ok.jpg"},
                "counterfactual": {"fields": {"caption": "a dog"}, "image": "ok.png"},
            }
        )
        + "\n"
    )
    report = data_import(project=project, format="pairs-jsonl", paths=[str(src)])
    assert (report.imported_pairs, report.problem_count) == (1, 0), report.problems
    pair = Candidate.objects.select_related("example").get()
    assert pair.example.label is None and pair.example.image.endswith("ok.jpg") and pair.image.endswith("ok.png")
    text = project_create(name="nli", task="nli")
    src.write_text(
        json.dumps(
            {
                "id": "t1",
                "original": {"fields": {"premise": "A.", "hypothesis": "B."}},
                "counterfactual": {"fields": {"premise": "C.", "hypothesis": "B."}},
            }
        )
        + "\n"
    )
    with pytest.raises(ImportRefused) as refused:
        data_import(project=text, format="pairs-jsonl", paths=[str(src)])
    assert refused.value.problems == [f"{src}:1: original.label is missing (use null when unknown)"]
