"""Image–caption projects in the researcher's pages (issue 20.7): the data browser's rows
and the pair page show the original image and the counterfactual's side by side with their
captions, from the URLs the annotator's browser loads them from (``/images/…`` for an
imported image, ``MEDIA_URL`` for a generated one); a missing image is a placeholder saying
why, never an ``<img>`` that cannot load."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from PIL import Image

from projects.models import Candidate
from projects.services.projects import project_create
from tests.annotate.factories import researcher
from workspace.data.images import shown_image

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def png(path: Path, colour: str) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (8, 8), colour).save(path)
    return str(path)


@pytest.fixture
def image_project(tmp_path):
    project = project_create(name="captions", task="image-caption")
    ex = project.examples.create(
        external_id="coco-1",
        fields={"caption": "a red rocket on a wooden table"},
        image=png(tmp_path / "coco" / "1.png", "red"),
    )
    png(Path(settings.MEDIA_ROOT) / "generated" / "7" / "1-0.png", "blue")
    made = Candidate.objects.create(
        project=project,
        example=ex,
        external_id="7:coco-1:0",
        fields={"caption": "a red car on a wooden table"},
        image="generated/7/1-0.png",  # generated: relative to MEDIA_ROOT
        generator="coco-cf",
        perturbation="lexical",
        state="pooled",
    )
    lost = Candidate.objects.create(
        project=project,
        example=ex,
        external_id="7:coco-1:1",
        fields={"caption": "a red boat on a wooden table"},
        image="generated/7/gone.png",
        generator="coco-cf",
        state="pooled",
    )
    return project, made, lost


def test_shown_image_says_why_there_is_no_image(tmp_path):
    assert shown_image("").missing == "no image"
    assert shown_image("generated/none.png").missing == "image file missing"
    assert shown_image("/etc/hostname.png").missing == "image outside the image root (not served)"
    assert shown_image("https://example.org/x.png").url == "https://example.org/x.png"
    ok = shown_image(png(tmp_path / "a.png", "green"), "a caption")
    assert (ok.url, ok.missing, ok.caption) == ("/images/a.png", "", "a caption")


def test_the_browser_rows_show_both_images_with_their_captions_and_a_placeholder(image_project):
    project, _made, _lost = image_project
    c = Client()
    c.force_login(researcher())
    html = c.get(f"/projects/{project.pk}/candidates/").content.decode()
    rows = re.findall(r"<tr><td class=\"num\">\d+</td>.*?</tr>", html, flags=re.S)
    assert len(rows) == 2
    first, second = rows
    assert '<img src="/images/coco/1.png" alt="Original image: a red rocket on a wooden table"' in first
    assert '<img src="/media/generated/7/1-0.png" alt="Counterfactual image: a red car on a wooden table"' in first
    assert '<span class="side">Original</span> a red rocket on a wooden table' in first
    assert '<span class="side">Counterfactual</span> a red car on a wooden table' in first
    assert "gone.png" not in second and second.count("<img ") == 1  # the original only
    assert 'role="img" aria-label="Counterfactual image: image file missing">image file missing</div>' in second
    # the images load, for a researcher, from where the annotator's page loads them
    assert c.get("/images/coco/1.png").status_code == 200
    api = c.get(f"/api/v1/projects/{project.pk}/candidates/").json()["results"]
    assert api[0]["images"]["counterfactual"] == {
        "url": "/media/generated/7/1-0.png",
        "missing": "",
        "caption": "a red car on a wooden table",
    }
    assert api[1]["images"]["counterfactual"]["missing"] == "image file missing"


def test_the_pair_page_shows_both_images_side_by_side(image_project):
    _project, made, lost = image_project
    c = Client()
    c.force_login(researcher())
    html = c.get(f"/candidates/{made.pk}/").content.decode()
    section = html[html.index('id="h-images"') : html.index('id="h-edit"')]
    assert section.index('data-side="original"') < section.index('data-side="counterfactual"')
    assert 'src="/images/coco/1.png"' in section and 'src="/media/generated/7/1-0.png"' in section
    assert c.get(f"/api/v1/candidates/{lost.pk}/").json()["images"]["counterfactual"]["missing"] == "image file missing"


def test_text_projects_have_no_images():
    project = project_create(name="nli-text", task="nli")
    ex = project.examples.create(external_id="e", fields={"premise": "a", "hypothesis": "b"})
    cand = Candidate.objects.create(
        project=project, example=ex, external_id="c", fields={"premise": "a", "hypothesis": "c"}
    )
    c = Client()
    c.force_login(researcher())
    assert 'class="image-pair' not in c.get(f"/projects/{project.pk}/candidates/").content.decode()
    assert 'id="h-images"' not in c.get(f"/candidates/{cand.pk}/").content.decode()
    assert c.get(f"/api/v1/projects/{project.pk}/candidates/").json()["results"][0]["images"] is None
