"""The ``coco-cf`` generator through the generation-run service: caption pairs written as
candidates, the text-only note when no diffusion model is configured, and generated images
stored under MEDIA_ROOT/generated/<run> with MEDIA_ROOT-relative paths."""

from __future__ import annotations

from pathlib import Path

import pytest

from generation.ml import registry
from generation.services.runs import run_create, run_execute
from projects.ml import embeddings
from projects.models import Candidate, Example
from projects.services.projects import project_create
from tests.conftest import need_module

pytestmark = pytest.mark.postgres_too

CAPTIONS = {
    "179765_0": "A black Honda motorcycle parked in front of a garage.",
    "158956_0": "A woman is cutting into a cake with a large knife.",
    "60823_0": "Some cows that are wandering around a lot of pigeons.",
}


class BandEncoder:
    """Stand-in for MiniLM: 0.85 (inside (0.8, 0.91]) unless the two texts are equal."""

    def cosine(self, a, b):
        return [1.0 if x == y else 0.85 for x, y in zip(a, b, strict=True)]

    def encode(self, texts):  # the run's warm-up call
        return [[0.0] for _ in texts]


@pytest.fixture
def project(db, monkeypatch):
    monkeypatch.setattr(embeddings, "shared_encoder", lambda **kw: BandEncoder())
    p = project_create(name="coco", task="image-caption")
    Example.objects.bulk_create(
        [Example(project=p, external_id=k, fields={"caption": v}, source="coco-captions") for k, v in CAPTIONS.items()]
    )
    return p


def test_coco_cf_is_registered():
    assert "coco-cf" in registry.names()
    assert {"image_dir", "diffusion_path", "clip_path", "per_original"} <= set(registry.options_for("coco-cf"))


def test_text_only_run_writes_caption_pairs_and_says_so(project, settings):
    settings.COUNTERPART = {**settings.COUNTERPART, "DIFFUSION_PATH": "", "MLM_PATH": "", "PERPLEXITY_LM_PATH": ""}
    run = run_create(project=project, generator="coco-cf", options={"filters": ["similarity", "dedup"]})
    run = run_execute(run_id=run.pk, encoder=BandEncoder())
    assert run.status == "succeeded", run.error
    cands = list(Candidate.objects.filter(job_id=run.job_id).select_related("example"))
    assert len(cands) == 3 and run.skipped == 0
    for c in cands:
        orig = c.example.fields["caption"]
        assert c.generator == "coco-cf" and c.perturbation == "lexical" and c.image == ""
        assert c.fields["caption"] != orig and c.meta["replaced"] in orig and c.meta["by"] in c.fields["caption"]
        assert c.scores["similarity"] == 0.85 and c.meta["filters"]["similarity"] is True
        assert c.state == "pooled"
    assert any("text-only" in n for n in run.metrics["notes"])


def test_text_only_note_is_on_the_run_page_and_in_the_command_output(project, settings, client, researcher):
    """A researcher who starts a coco-cf run without a diffusion model learns that no image was
    drawn where they look: the run page and ``generate``'s summary (the note used to live only
    in the run's metrics, read by the API)."""
    from io import StringIO

    from django.core.management import call_command

    settings.COUNTERPART = {**settings.COUNTERPART, "DIFFUSION_PATH": "", "MLM_PATH": "", "PERPLEXITY_LM_PATH": ""}
    out = StringIO()
    call_command(
        "generate", project="coco", generator="coco-cf", filters="similarity,dedup", no_progress=True, stdout=out
    )
    assert "note: no diffusion model configured" in out.getvalue()
    run = project.generation_runs.get()
    client.force_login(researcher)
    page = client.get(f"/runs/{run.pk}/").content.decode()
    assert 'id="run-notes"' in page and "text-only caption pairs, no images generated" in page


def test_run_with_a_diffusion_model_stores_images_under_media_root(project, settings, tmp_path):
    need_module("diffusers")
    from tests.generation._tiny_diffusion import save_tiny_pipeline

    sd = save_tiny_pipeline(tmp_path / "sd")
    settings.MEDIA_ROOT = str(tmp_path / "media")
    settings.COUNTERPART = {
        **settings.COUNTERPART,
        "DIFFUSION_PATH": str(sd),
        "CLIP_PATH": "",
        "MLM_PATH": "",
        "PERPLEXITY_LM_PATH": "",
    }
    run = run_create(
        project=project,
        generator="coco-cf",
        options={"limit": 2, "filters": ["dedup"], "generator_options": {"steps": 2, "height": 32, "width": 32}},
    )
    run = run_execute(run_id=run.pk)
    assert run.status == "succeeded", run.error
    cands = list(Candidate.objects.filter(job_id=run.job_id))
    assert len(cands) == 2
    for c in cands:
        assert c.image.startswith(f"generated/{run.pk}/") and c.image.endswith("-1.jpg")
        assert (Path(settings.MEDIA_ROOT) / c.image).is_file()
        assert c.meta["original_image"].startswith(f"generated/{run.pk}/")
        assert (Path(settings.MEDIA_ROOT) / c.meta["original_image"]).is_file()
        assert isinstance(c.meta["seed"], int)
    assert any("no CLIP filter" in n for n in run.metrics["notes"])
