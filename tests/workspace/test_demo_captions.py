"""``manage.py demo`` also creates the image-caption demo project (real photos, one-noun swaps)."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.test import Client

from annotate.models import Item
from projects.models import Candidate, Project
from workspace.services.demo_captions import PAIRS, PHOTOS, skimage_data_dir, swap_caption

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def run(*args: str) -> str:
    out = StringIO()
    call_command("demo", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_swaps_use_the_caption_generator() -> None:
    assert swap_caption("a woman with short hair", "woman", "man") == ("a man with short hair", "wordnet")
    assert swap_caption("a close-up of a cup", "cup", "cat")[0] == "a close-up of a cat"


def test_demo_pairs_are_consistent_with_their_photos() -> None:
    """Issue 20.12: each caption is true of its photo and the one-noun swap is true of the
    counterfactual's photo and not of the original's, so each image has one right answer."""
    data = skimage_data_dir()
    used = {p.photo for p in PAIRS} | {p.cf_photo for p in PAIRS}
    assert used == set(PHOTOS), "every bundled photo is used, and only those"
    for name, photo in PHOTOS.items():
        assert (data / name).is_file(), name
        assert photo.licence and photo.caption
        assert any(w in photo.shows for w in photo.caption.replace(",", "").split()), name
    for p in PAIRS:
        assert p.photo != p.cf_photo
        original, cf = PHOTOS[p.photo], PHOTOS[p.cf_photo]
        assert p.replaced in original.shows and p.replaced not in cf.shows, p
        assert p.by in cf.shows and p.by not in original.shows, p
        swapped, _ = swap_caption(p.caption, p.replaced, p.by)
        before, after = p.caption.split(), swapped.split()
        assert len(before) == len(after)
        changed = [(a, b) for a, b in zip(before, after, strict=True) if a != b]
        assert changed == [(p.replaced, p.by)], (p, swapped)
    assert len({(p.photo, p.caption) for p in PAIRS}) == len(PAIRS)


def test_demo_creates_the_caption_project_and_items(settings, tmp_path: Path) -> None:
    settings.COUNTERPART = {**settings.COUNTERPART, "SHARED_DATA_DIR": str(tmp_path / "nowhere")}
    text = run("--password", "s3cret-pass")
    project = Project.objects.get(name="demo-image-caption")
    assert project.task == "image-caption"
    assert f"imported {len(PAIRS)} originals, {len(PAIRS)} pairs" in text
    assert f"routed {len(PAIRS)} image pairs" in text
    media = Path(settings.MEDIA_ROOT) / "demo" / "captions"
    assert sorted(p.name for p in media.glob("*.*") if p.suffix != ".jsonl") == sorted(PHOTOS)
    cands = list(Candidate.objects.filter(project=project).select_related("example"))
    assert len(cands) == len(PAIRS)
    for c in cands:
        assert Path(c.image).is_file() and Path(c.example.image).is_file()
        assert c.meta["replaced"] and c.meta["by"] and c.generator == "coco-counterfactuals"
    assert Item.objects.filter(project=project, kind="caption_choice").count() == 2 * len(PAIRS)
    # the annotator sees an image and two captions, served from MEDIA_URL
    c = Client()
    assert c.login(username="annotator", password="s3cret-pass")
    r = c.post(f"/api/v1/projects/{project.pk}/next-item/")
    assert r.status_code == 200, r.content
    item = r.json()["item"]
    # imported images are served from the image root (/images/…, signed-in users only)
    assert item["kind"] == "caption_choice" and item["image"].startswith("/images/")
    assert "demo/captions/" in item["image"]
    assert len(item["captions"]) == 2
    # again: nothing duplicated
    text = run("--password", "s3cret-pass")
    assert Candidate.objects.filter(project=project).count() == len(PAIRS)
    # said as the NLI demo says it, not as if routing had found nothing to route
    assert "routed 0 image pairs (the image-caption demo was routed before; left as it is)" in text


def test_demo_no_route_leaves_the_caption_pairs_pooled(settings, tmp_path: Path) -> None:
    settings.COUNTERPART = {**settings.COUNTERPART, "SHARED_DATA_DIR": str(tmp_path)}
    run("--no-route")
    assert set(Candidate.objects.filter(project__name="demo-image-caption").values_list("state", flat=True)) == {
        "pooled"
    }
