"""Issue 25, item 5: the project page's "Export labelled set" link while nothing is labelled is
a 200 page that says so (4xx only for bad input); pairs-jsonl says whether unlabelled pairs are
in it — ``labelled_only`` on the page, the API and ``manage.py export --labelled-only``."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from projects.models import Candidate, Label
from projects.services.exports import NOTHING_TO_EXPORT, candidates_for_export
from tests.annotate.factories import login, project_with_candidates, researcher

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


@pytest.fixture
def project():
    p = project_with_candidates(n=10)
    label = Label.objects.filter(project=p).first()
    # three pairs with a label (state as an import would leave them), the rest none
    Candidate.objects.filter(project=p, external_id__in=["c0", "c1", "c2"]).update(label=label, label_source="imported")
    return p


def test_the_labelled_set_link_with_nothing_labelled_is_a_200_page_that_says_so():
    p = project_with_candidates(n=5)
    c = login(researcher())
    detail = c.get(f"/projects/{p.pk}/data/").content.decode()  # the data page (issue 32.1)
    link = f"/projects/{p.pk}/export/?format=pairs-jsonl&amp;state=human_labeled&amp;state=auto_labeled"
    assert link in detail
    r = c.get(link.replace("&amp;", "&"))
    html = r.content.decode()
    assert r.status_code == 200 and NOTHING_TO_EXPORT in html and 'id="x-notice"' in html
    assert 'role="alert"' not in html  # a notice, not an error
    # bad input is still a 400
    assert c.get(f"/projects/{p.pk}/export/?format=pairs-jsonl&state=bogus").status_code == 400


def test_labelled_only_leaves_out_the_null_labels(project):
    assert candidates_for_export(project=project).count() == 10
    assert candidates_for_export(project=project, labelled_only=True).count() == 3
    c = login(researcher())
    page = c.get(f"/projects/{project.pk}/export/").content.decode()
    assert 'name="labelled_only"' in page and "without a <code>counterfactual.label</code>" in page
    every = c.get(f"/projects/{project.pk}/export/", {"format": "pairs-jsonl"})
    rows = [json.loads(line) for line in b"".join(every.streaming_content).decode().splitlines()]
    assert len(rows) == 10 and sum(r["counterfactual"].get("label") is None for r in rows) == 7
    only = c.post(f"/projects/{project.pk}/export/", {"format": "pairs-jsonl", "labelled_only": "1"})
    rows = [json.loads(line) for line in b"".join(only.streaming_content).decode().splitlines()]
    assert len(rows) == 3 and all(r["counterfactual"].get("label") is not None for r in rows)


def test_the_export_command_says_how_many_are_unlabelled(project, tmp_path: Path):
    out = StringIO()
    call_command("export", "--project", "p", "--format", "pairs-jsonl", "--out", str(tmp_path / "a.jsonl"), stdout=out)
    assert (
        "exported 10 pairs" in out.getvalue()
        and "7 of them have no label yet (written without a counterfactual.label key)" in out.getvalue()
    )
    rows = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert sum("label" not in r["counterfactual"] for r in rows) == 7  # what the note says
    out = StringIO()
    call_command("export", "--project", "p", "--format", "csv", "--out", str(tmp_path / "a.csv"), stdout=out)
    assert "7 of them have no label yet (written with an empty counterfactual.label cell)" in out.getvalue()
    out = StringIO()
    path = tmp_path / "b.jsonl"
    call_command(
        "export", "--project", "p", "--format", "pairs-jsonl", "--out", str(path), "--labelled-only", stdout=out
    )
    assert out.getvalue().strip() == f"exported 3 pairs to {path}"  # no note when every pair has a label
    assert all(json.loads(line)["counterfactual"].get("label") is not None for line in path.read_text().splitlines())
    manifest = json.loads(Path(f"{path}.manifest.json").read_text())
    assert manifest["filters"]["labelled_only"] is True
    assert "labelled_only" not in json.loads(Path(f"{tmp_path / 'a.jsonl'}.manifest.json").read_text())["filters"]


def test_the_api_takes_labelled_only(project):
    from rest_framework.test import APIClient

    c = APIClient()
    c.force_authenticate(researcher())
    r = c.post(f"/api/v1/projects/{project.pk}/export/", {"labelled_only": True}, format="json")
    assert r.status_code == 200
    rows = [json.loads(line) for line in b"".join(r.streaming_content).decode().splitlines()]
    assert len(rows) == 3
