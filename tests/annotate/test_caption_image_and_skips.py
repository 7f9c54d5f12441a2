"""Image-caption items whose image file is missing, and the skip reasons annotators give.

The caption page showed a broken image (or ``<img src="">``, which re-requests the page) when
the image file was gone, and the annotator had only the captions to guess from; now a
placeholder says the image is missing and asks for a skip with a reason. Skip reasons were
stored but shown nowhere; the annotation-quality page and its API now list them."""

from __future__ import annotations

from html import unescape
from pathlib import Path

import pytest
from django.conf import settings
from django.test import override_settings

from annotate.models import Assignment
from annotate.selectors import image_missing
from annotate.services import assignments as svc
from annotate.services.routing import project_route

from .factories import annotator, login, project_with_candidates, researcher

pytestmark = pytest.mark.postgres_too


def _caption_project():
    p = project_with_candidates(name="caps", task="image-caption", n=2, k=1)
    project_route(project=p, budget=1.0, seed=0)
    return p


@pytest.mark.django_db
def test_a_missing_image_file_shows_a_placeholder_and_a_present_one_the_image(tmp_path):
    media = tmp_path / "media"
    with override_settings(MEDIA_ROOT=str(media)):
        p = _caption_project()
        u = annotator(p, qualified_at="2026-01-01T00:00:00Z")
        c = login(u)
        resp = c.get(f"/annotate/projects/{p.pk}/")
        html = unescape(resp.content.decode())
        assert resp.status_code == 200
        assert 'data-testid="image-missing"' in html and "The image of this item is missing" in html
        assert 'src=""' not in html
        # the same item once its file is there: the image, no placeholder
        a = Assignment.objects.get(annotator=u, status="leased")
        view = svc.item_view(assignment=a)
        prefix = "/" + settings.MEDIA_URL.strip("/") + "/"
        assert view.image.startswith(prefix)  # a relative path: a file under MEDIA_ROOT
        target = media / view.image[len(prefix) :]
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(b"\x89PNG\r\n\x1a\n")
        html = unescape(c.get(f"/annotate/projects/{p.pk}/").content.decode())
        assert 'data-testid="image-missing"' not in html and f'src="{view.image}"' in html


@override_settings(MEDIA_URL="/media/")
def test_image_missing_reads_our_files_and_trusts_remote_urls(tmp_path):
    Path(tmp_path, "a b.jpg").write_bytes(b"x")
    with override_settings(MEDIA_ROOT=str(tmp_path)):
        assert image_missing("")
        assert not image_missing("https://example.org/cat.jpg")
        assert not image_missing("/media/a%20b.jpg")
        assert image_missing("/media/gone.jpg")


@pytest.mark.django_db
def test_skip_reasons_reach_the_quality_page_and_api():
    p = project_with_candidates(n=6, k=1)
    project_route(project=p, budget=1.0, seed=0)
    for reason in ["image missing", "Image  missing ", "typo in text", ""]:
        u = annotator(p, qualified_at="2026-01-01T00:00:00Z")
        a = svc.assignment_next(project=p, annotator=u)
        svc.assignment_skip(assignment_id=a.pk, annotator=u, reason=reason)
    r = login(researcher())
    q = r.get(f"/api/v1/projects/{p.pk}/quality/").json()
    assert q["skips"] == 4
    assert q["skip_reasons"] == [{"reason": "image missing", "skips": 2}, {"reason": "typo in text", "skips": 1}]
    html = unescape(r.get(f"/annotate/projects/{p.pk}/dashboard/").content.decode())
    assert 'id="skip-reasons"' in html and "typo in text" in html
