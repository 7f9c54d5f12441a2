"""A binary file given as a text format is refused as a whole, saying what it is ("this is
not a text file (PNG image)"), instead of one UTF-8 error per line (issue 20.2)."""

from __future__ import annotations

import io
import os

import pytest
from PIL import Image

from projects.formats import FormatError, check_inputs
from projects.formats.whole_input import binary_kind
from projects.models import Candidate, Example
from projects.services.projects import project_create
from tests.annotate.factories import researcher
from tests.projects.import_uploads import upload_page

pytestmark = pytest.mark.postgres_too


def png_bytes() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8, 8), "red").save(out, format="PNG")
    return out.getvalue()


def jpeg_bytes() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (8, 8), "blue").save(out, format="JPEG")
    return out.getvalue()


@pytest.mark.parametrize(
    ("head", "kind"),
    [
        (png_bytes(), "PNG image"),
        (jpeg_bytes(), "JPEG image"),
        (b"%PDF-1.7\n...", "PDF document"),
        (b"PK\x03\x04\x14\x00", "ZIP archive, or an Excel/Word file"),
        (b"RIFF\x24\x00\x00\x00WEBPVP8 ", "WebP image"),
        (bytes(range(256)) * 4, "binary data"),
    ],
)
def test_binary_files_are_named(head, kind):
    assert binary_kind(head) == kind


@pytest.mark.parametrize(
    "text",
    [
        b'{"id": "p1", "original": {"id": "o1"}}\n',
        "sentence1\tsentence2\tgold_label\nUn café à Zürich\tçà\tneutral\n".encode(),
        b"a line with one stray \x00 NUL stays a problem of its row\n" * 3,
        b"",
    ],
)
def test_text_is_not_binary(text):
    assert binary_kind(text) is None


def test_check_inputs_refuses_a_png_named_jsonl(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_bytes(png_bytes())
    with pytest.raises(FormatError) as err:
        check_inputs("pairs-jsonl", [str(path)], max_file_bytes=None, max_line_bytes=1 << 20)
    assert str(err.value) == f"{path}: this is not a text file (PNG image); nothing was imported"


def test_a_utf8_text_whose_4096th_byte_cuts_a_character_is_text(tmp_path):
    text = ("é" * 5000).encode()  # 2 bytes each: the sniffed head ends inside a character
    assert binary_kind(text[:4096]) is None and binary_kind(text[:4095]) is None


@pytest.mark.django_db
def test_the_import_page_says_a_png_is_not_a_text_file(client, settings):
    project = project_create(name="pics", task="sentiment")
    client.force_login(researcher())
    done = upload_page(client, project, png_bytes(), name="photo.jsonl")
    assert done.job is not None and done.job.status == "failed"
    assert "this is not a text file (PNG image)" in done.html
    assert "not valid UTF-8" not in done.html and "codec" not in done.html  # no line-by-line decoding errors
    assert not Example.objects.filter(project=project).exists() and not Candidate.objects.exists()
    assert not os.listdir(os.path.join(settings.MEDIA_ROOT, "imports"))  # the upload is removed


@pytest.mark.django_db
def test_a_finished_import_links_the_next_step(client):
    project = project_create(name="next", task="sentiment")
    client.force_login(researcher())
    originals = b"id,text,label\no0,A film.,positive\no1,Another film.,negative\n"
    done = upload_page(client, project, originals, name="o.csv", format="csv")
    assert done.job is not None and done.job.status == "succeeded", done.html
    assert f'href="/projects/{project.pk}/runs/new/">Generate candidates' in done.html
    pairs = (
        b'{"id": "p1", "original": {"id": "o1", "fields": {"text": "Another film."}, "label": "negative"}, '
        b'"counterfactual": {"fields": {"text": "A film 1, sadly."}}}\n'
    )
    done = upload_page(client, project, pairs)
    assert done.job is not None and done.job.status == "succeeded", done.html
    assert f'href="/annotate/projects/{project.pk}/route/">Route pairs to annotators' in done.html
