"""Nothing under ``MEDIA_ROOT`` is public: ``MEDIA_URL`` is a view with the members-only rule
of ``/images/`` in every environment (it was Django's static server under ``DEBUG``, and the
web server in production: a generated image, the demo's photos — then the image root — and the
uploads waiting in ``MEDIA_ROOT/imports/`` were readable without logging in)."""

from __future__ import annotations

from pathlib import Path

import pytest
from django.conf import settings
from django.test import Client
from django.urls import resolve
from PIL import Image

from projects import views
from projects.models import Candidate
from projects.services.projects import project_create
from tests.annotate.factories import annotator, login, researcher

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def png(path: Path) -> str:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (4, 4), "red").save(path)
    return str(path)


@pytest.fixture
def project():
    """A generated image (stored relative to MEDIA_ROOT) and a demo-style photo (stored
    absolute, under MEDIA_ROOT: the default image root)."""
    media = Path(settings.MEDIA_ROOT)
    project = project_create(name="captions", task="image-caption")
    ex = project.examples.create(external_id="a", fields={"caption": "a"}, image=png(media / "demo" / "astro.png"))
    png(media / "generated" / "7" / "1-0.png")
    Candidate.objects.create(
        project=project, example=ex, external_id="7:a:0", fields={"caption": "b"}, image="generated/7/1-0.png"
    )
    return project


def test_media_url_is_the_checked_view_in_every_environment() -> None:
    assert resolve("/media/generated/7/1-0.png").func is views.media_file


@pytest.mark.parametrize("url", ["/media/generated/7/1-0.png", "/media/demo/astro.png"])
def test_a_media_image_is_for_members_only(project, url: str) -> None:
    resp = Client().get(url)
    assert resp.status_code == 302 and resp["Location"].startswith("/accounts/login/")
    assert login(annotator()).get(url).status_code == 404  # an annotator of another project
    for user in (annotator(project), researcher()):
        resp = login(user).get(url)
        assert resp.status_code == 200 and resp["Content-Type"] == "image/png"


def test_uploads_waiting_for_their_import_are_never_served(project) -> None:
    imports = Path(settings.MEDIA_ROOT) / "imports"
    png(imports / "upload-1.png")
    (imports / "upload-2.jsonl").write_text("{}\n")
    web = login(researcher())
    for url in ("/media/imports/upload-1.png", "/media/imports/upload-2.jsonl", "/media/../media/imports/upload-1.png"):
        assert web.get(url).status_code == 404


@pytest.mark.parametrize("prefix", ["/media/", "/images/"])
def test_a_file_name_too_long_for_the_file_system_is_a_404(project, prefix: str) -> None:
    web = login(researcher())
    assert web.get(prefix + "a" * 3000 + ".png").status_code == 404
    assert web.get(prefix + "/".join(["b" * 300] * 12) + ".png").status_code == 404


# --- API tokens (a script loads the image URL an item gives it) ------------------------------


@pytest.mark.parametrize("url", ["/images/media/demo/astro.png", "/media/generated/7/1-0.png"])
def test_an_image_takes_the_api_token(project, url: str) -> None:
    """The image an annotation API item names is fetched with the token the API took: 200 for
    a member; a bad token 401 (as the API), a member of another project 404 — never a log-in
    redirect."""
    from rest_framework.authtoken.models import Token

    def get(user=None, key: str | None = None):
        key = key or Token.objects.create(user=user).key
        return Client().get(url, HTTP_AUTHORIZATION=f"Token {key}")

    resp = get(annotator(project))
    assert resp.status_code == 200 and resp["Content-Type"] == "image/png"
    resp = get(key="0" * 40)
    assert resp.status_code == 401 and resp["WWW-Authenticate"] == "Token"
    assert get(annotator()).status_code == 404
    inactive = annotator(project)
    inactive.is_active = False
    inactive.save()
    assert get(inactive).status_code == 401
