"""The Train h form offered, as a warm start, the CAD split the project itself was imported
from; training then refused it ("all N of its pairs share a text with this project's
originals or candidates"). Such a set is now shown disabled with the reason, a post of it
anyway is refused by the form before any job starts, and the training keeps its own check."""

from __future__ import annotations

from html import unescape
from pathlib import Path

import pytest
from django.test import Client

from labeling import services
from projects.models import Job
from projects.services.imports import data_import
from projects.services.projects import project_create
from tests.annotate.factories import researcher

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]

ROWS = [
    ("Positive", "A fine and moving film."),
    ("Negative", "A dull and lifeless film."),
    ("Negative", "The cast was wasted on this script."),
    ("Positive", "The cast was perfect for this script."),
    ("Positive", "I would watch it again tomorrow."),
    ("Negative", "I would never watch it again."),
]


@pytest.fixture
def shared(settings, tmp_path: Path) -> Path:
    """A shared data folder with CAD sentiment dev (six rows, three pairs) and train."""
    paired = tmp_path / "shared" / "cad" / "sentiment" / "combined" / "paired"
    paired.mkdir(parents=True)
    for split in ("dev", "train"):
        rows = [(s, f"{t} ({split})") for s, t in ROWS]
        body = "".join(f"{s}\t{t}\t{i // 2}\n" for i, (s, t) in enumerate(rows))
        (paired / f"{split}_paired.tsv").write_text("Sentiment\tText\tbatch_id\n" + body)
    settings.COUNTERPART = {**settings.COUNTERPART, "SHARED_DATA_DIR": str(tmp_path / "shared")}
    return tmp_path / "shared" / "cad"


def test_the_split_a_project_was_imported_from_is_offered_disabled_with_the_reason(shared):
    project = project_create(name="sent-dev", task="sentiment")
    data_import(project=project, format="cad-sentiment", paths=[str(shared)], split="dev")
    spec = f"cad-sentiment:{shared}:dev"
    refusal = services.warm_start_refusal(project=project, spec=spec)
    assert "share a text with this project's" in refusal
    assert services.warm_start_refusal(project=project, spec=f"cad-sentiment:{shared}:train") == ""

    c = Client()
    c.force_login(researcher())
    html = unescape(c.get(f"/labeling/projects/{project.pk}/flip-rates/").content.decode())
    assert '<option value="cad-sentiment:dev" disabled>' in html
    # the page names the set by its title, never by its server path
    shown = services.warm_start_refusal(project=project, spec=spec, title="CAD sentiment dev (cad-sentiment)")
    assert shown == refusal.replace(repr(spec), "CAD sentiment dev (cad-sentiment)") and str(shared) not in shown
    assert f"is not offered: {shown}" in html and str(shared) not in html
    assert '<option value="cad-sentiment:train">' in html  # other data stays on offer

    # posted anyway (an old page, a script): the form says why and no job starts
    resp = c.post(f"/labeling/projects/{project.pk}/train/", {"mode": "capc", "warm_start": "cad-sentiment:dev"})
    assert resp.status_code == 400 and shown in unescape(resp.content.decode())
    assert not Job.objects.filter(kind="train").exists()


def test_a_project_from_other_data_is_offered_every_split(shared):
    project = project_create(name="other", task="sentiment")
    c = Client()
    c.force_login(researcher())
    html = unescape(c.get(f"/labeling/projects/{project.pk}/flip-rates/").content.decode())
    assert '<option value="cad-sentiment:dev">' in html and "not offered" not in html
