"""``manage.py demo``: accounts, groups, the demo project, membership; idempotent."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.test import Client

from projects.models import Candidate, Example, Project, ProjectMembership
from projects.permissions import ANNOTATOR, RESEARCHER

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]


def run(*args: str) -> str:
    out = StringIO()
    call_command("demo", *args, stdout=out, stderr=StringIO())
    return out.getvalue()


def test_demo_from_the_fixture_when_shared_data_is_missing(settings, tmp_path: Path) -> None:
    settings.COUNTERPART = {**settings.COUNTERPART, "SHARED_DATA_DIR": str(tmp_path / "nowhere")}
    text = run("--password", "s3cret-pass")
    assert "http://127.0.0.1:8000" in text
    assert "researcher: username researcher  password s3cret-pass" in text
    assert "annotator:  username annotator  password s3cret-pass" in text
    project = Project.objects.get(name="demo-nli")
    assert project.task == "nli"
    assert Candidate.objects.filter(project=project).count() == 40
    # 10 % of 40 is 4, fewer than the 10 human labels h needs: the demo routes 10 (25 %), so
    # the loop can be closed on the excerpt too
    assert Candidate.objects.filter(project=project, state="routed").count() == 10
    assert "routed 10 candidates to annotators" in text
    assert "25% of this small pool, not 10%, so that the 10 human labels h needs can be reached" in text
    assert Example.objects.filter(project=project).count() == 10
    User = get_user_model()
    researcher, annotator = User.objects.get(username="researcher"), User.objects.get(username="annotator")
    assert list(researcher.groups.values_list("name", flat=True)) == [RESEARCHER]
    assert list(annotator.groups.values_list("name", flat=True)) == [ANNOTATOR]
    assert ProjectMembership.objects.filter(project=project, user=annotator).exists()
    # three annotators: the project wants 3 answers per item, so one alone never closes an item
    for name in ("annotator2", "annotator3"):
        assert f"annotator:  username {name}  password s3cret-pass" in text
        other = User.objects.get(username=name)
        assert ProjectMembership.objects.filter(project=project, user=other).exists()
        assert Client().login(username=name, password="s3cret-pass")
    assert ProjectMembership.objects.filter(project=project).count() == project.annotators_per_item == 3
    assert "private windows" in text
    assert project.created_by == researcher
    assert Client().login(username="annotator", password="s3cret-pass")

    # Twice is fine: nothing duplicated, the new password is the one that works.
    text = run("--password", "other-pass")
    assert "imported 0 originals, 0 pairs; skipped 40" in text
    assert Candidate.objects.filter(project=project).count() == 40
    assert Candidate.objects.filter(project=project, state="routed").count() == 10
    assert "routed 0 candidates" in text
    assert Group.objects.filter(name__in=[RESEARCHER, ANNOTATOR]).count() == 2
    assert ProjectMembership.objects.filter(project=project).count() == 3
    assert Client().login(username="researcher", password="other-pass")
    assert not Client().login(username="researcher", password="s3cret-pass")


def test_demo_prints_the_address_it_is_given(settings, tmp_path: Path) -> None:
    """``make run`` with ``PORT=8104`` serves on 8104: the demo's address says so, not 8000."""
    settings.COUNTERPART = {**settings.COUNTERPART, "SHARED_DATA_DIR": str(tmp_path)}
    text = run("--no-data", "--url", "http://127.0.0.1:8104")
    assert "Counterpart: http://127.0.0.1:8104\n" in text
    assert "8000" not in text


def test_demo_no_route(settings, tmp_path: Path) -> None:
    settings.COUNTERPART = {**settings.COUNTERPART, "SHARED_DATA_DIR": str(tmp_path)}
    run("--no-route")
    assert set(Candidate.objects.values_list("state", flat=True)) == {"pooled"}


def test_demo_no_data(settings) -> None:
    text = run("--no-data")
    assert "password" in text and not Project.objects.exists()
    assert get_user_model().objects.filter(username__in=["researcher", "annotator"]).count() == 2
    assert get_user_model().objects.filter(username__startswith="annotator").count() == 3


@pytest.mark.slow
def test_demo_from_shared_data(shared_data: Path, settings) -> None:
    settings.COUNTERPART = {**settings.COUNTERPART, "SHARED_DATA_DIR": str(shared_data)}
    text = run()
    assert "CAD NLI dev" in text and "imported 200 originals, 800 pairs" in text
    assert Candidate.objects.filter(project__name="demo-nli").count() == 800


def test_demo_refuses_under_production_settings_unless_forced(settings) -> None:
    from django.core.management.base import CommandError

    settings.PRODUCTION = True
    with pytest.raises(CommandError, match="--force"):
        run("--no-data")
    assert not get_user_model().objects.filter(username="researcher").exists()
    assert not Group.objects.filter(name=RESEARCHER).exists()
    run("--no-data", "--force", "--password", "s3cret-pass")
    assert get_user_model().objects.get(username="researcher").check_password("s3cret-pass")


def test_demo_twice_keeps_sessions_and_routes_no_more(settings, tmp_path: Path) -> None:
    """`make run` on an existing database (issue 25, item 4): the demo runs again, and the
    sessions of those logged in survive; no demo item is added, even after the researcher
    changed the budget."""
    from annotate.models import Item

    settings.COUNTERPART = {**settings.COUNTERPART, "SHARED_DATA_DIR": str(tmp_path / "nowhere")}
    run()

    def counts() -> dict[str, int]:
        return {
            "candidates": Candidate.objects.count(),
            "items": Item.objects.count(),
            "routed_or_labelled": Candidate.objects.filter(state__in=["routed", "human_labeled"]).count(),
            "members": ProjectMembership.objects.count(),
            "users": get_user_model().objects.count(),
        }

    before = counts()
    assert before["items"] > 0
    annotator, researcher = Client(), Client()
    assert annotator.login(username="annotator", password="counterpart-demo")
    assert researcher.login(username="researcher", password="counterpart-demo")
    # what a first session may do: the researcher raises the project's budget
    project = Project.objects.get(name="demo-nli")
    Project.objects.filter(pk=project.pk).update(human_budget=0.5)

    text = run()
    assert "routed 0 candidates" in text
    assert counts() == before
    assert annotator.get("/annotate/").status_code == 200
    assert researcher.get(f"/projects/{project.pk}/").status_code == 200
    # a changed password is still written (and then those sessions end, as Django means them to)
    run("--password", "new-pass-123")
    assert annotator.get("/annotate/").status_code == 302
