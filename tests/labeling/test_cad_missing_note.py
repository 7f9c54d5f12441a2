"""Issue 25, item 5: where the CAD data is not found, the train form's warm start and the
evaluation's test sets say which setting names its folder (``COUNTERPART_SHARED_DATA``)
instead of silently offering only "none"; once the data is there, the note goes."""

from __future__ import annotations

import pytest

from projects.services.projects import project_create
from tests.annotate.factories import login, researcher

pytestmark = pytest.mark.django_db


def _cad_nli(root) -> None:
    for part in ("original", "revised_premise", "revised_hypothesis"):
        folder = root / "cad" / "NLI" / part
        folder.mkdir(parents=True)
        for split in ("train", "dev"):
            (folder / f"{split}.tsv").write_text("sentence1\tsentence2\tgold_label\na\tb\tneutral\n")


def test_the_notes_name_the_setting_until_the_data_is_there(settings, tmp_path):
    settings.COUNTERPART = {**settings.COUNTERPART, "SHARED_DATA_DIR": str(tmp_path / "nowhere")}
    project = project_create(name="p", task="nli")
    c = login(researcher())
    train = c.get(f"/labeling/projects/{project.pk}/flip-rates/").content.decode()
    assert f'id="warm-note-{project.pk}"' in train and "COUNTERPART_SHARED_DATA" in train
    assert str(tmp_path) not in train  # the setting is named, no server path shown
    ev = c.get(f"/labeling/projects/{project.pk}/evaluation/").content.decode()
    assert f'id="ev-cad-note-{project.pk}"' in ev and "COUNTERPART_SHARED_DATA" in ev
    r = c.post(f"/labeling/projects/{project.pk}/train/", {"mode": "pc", "warm_start": "cad-nli:train"})
    assert r.status_code == 400 and "COUNTERPART_SHARED_DATA" in r.content.decode()

    _cad_nli(tmp_path / "shared")
    settings.COUNTERPART = {**settings.COUNTERPART, "SHARED_DATA_DIR": str(tmp_path / "shared")}
    train = c.get(f"/labeling/projects/{project.pk}/flip-rates/").content.decode()
    assert "warm-note" not in train and 'value="cad-nli:train"' in train
    ev = c.get(f"/labeling/projects/{project.pk}/evaluation/").content.decode()
    assert "ev-cad-note" not in ev and 'value="cad-nli:dev"' in ev


def test_a_task_without_cad_data_says_so(settings, tmp_path):
    settings.COUNTERPART = {**settings.COUNTERPART, "SHARED_DATA_DIR": str(tmp_path)}
    project = project_create(name="q", task="paraphrase")
    c = login(researcher())
    train = c.get(f"/labeling/projects/{project.pk}/flip-rates/").content.decode()
    assert "No CAD data set exists for paraphrase projects" in train
