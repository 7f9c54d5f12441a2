"""A real browser (Debian's chromium) at 1280 px on the project overview in three states of a
project (issue 32.1): empty; mid-annotation; after h, auto-labelling and an evaluation with both
tables. In each the overview is at most 1,800 px tall and its one next step is above the fold.

``COUNTERPART_SCREENSHOTS=docs/img`` also saves each state's screenshot there
(``overview-<state>.png``, the ones docs/workspace.md shows); ``-s`` prints the heights."""

from __future__ import annotations

import os

import pytest

from annotate.services import assignments as svc
from annotate.services.routing import project_route
from labeling import evaluation, services
from projects.models import Job
from projects.services.projects import project_create
from tests.annotate.factories import annotator, project_with_candidates, researcher
from tests.browser.conftest import log_in
from tests.labeling.conftest import FakeEncoder
from tests.labeling.test_services import make_project

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API runs an event loop

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTH, FOLD = 1280, 800  # a laptop screen
MAX_HEIGHT = 1800
SHOTS = os.environ.get("COUNTERPART_SCREENSHOTS", "")


@pytest.fixture
def stand_ins(monkeypatch, settings, tmp_path):
    """The stand-in encoder for h and the evaluation (the real MiniLM is the slow tests')."""
    settings.COUNTERPART = {
        **settings.COUNTERPART,
        "MODEL_DIR": str(tmp_path / "models"),
        "SHARED_DATA_DIR": str(tmp_path / "shared"),
        "GOLD_RATE": 0.0,
        "QUALIFICATION_GOLD": 0,
    }
    monkeypatch.setattr(services, "embedder", lambda: FakeEncoder())
    monkeypatch.setattr(evaluation, "embedder", lambda: FakeEncoder())


def _empty():
    return project_create(name="an empty project", task="nli")


def _mid_annotation():
    project = project_with_candidates(
        name="mid-annotation", n=120, k=3, generators=("rules", "t5"), perturbations=("negation", "insert", "delete")
    )
    project_route(project=project, budget=0.3, seed=0)
    labels = ["entailment", "neutral", "contradiction"]
    for i in range(3):
        u = annotator(project, username=f"annotator-{i}")
        for j in range(12):
            a = svc.assignment_next(project=project, annotator=u)
            if a:
                svc.annotation_submit(assignment_id=a.pk, annotator=u, choice=labels[(i + j) % 3])
    return project


def _after_evaluation():
    project, _ = make_project(n_pairs=160, n_human=40, name="after an evaluation")
    # Celery runs eagerly here: each job has run when its start returns
    services.pairwise_train_start(project=project, mode="pc")
    services.autolabel_start(project=project)
    evaluation.evaluation_start(project=project, evals=["project"], budget=0.25, seeds=1, classifier="tfidf-lr")
    assert Job.objects.filter(project=project, kind="evaluate", status="succeeded").exists()
    return project


def _measure(page, live_server, project) -> tuple[int, float]:
    page.goto(f"{live_server.url}/projects/{project.pk}/")
    page.wait_for_selector("section#science-warnings")  # the risks, loaded by htmx
    page.wait_for_load_state("networkidle")
    height = int(page.evaluate("document.documentElement.scrollHeight"))
    box = page.locator("#next-step").bounding_box()
    assert box is not None
    return height, box["y"] + box["height"]


def _screenshot(page, path: str) -> None:
    """The whole page as a small PNG (64 colours: the docs keep them)."""
    from PIL import Image

    page.screenshot(path=path, full_page=True)
    with Image.open(path) as img:
        small = img.convert("RGB").quantize(colors=64)
    small.save(path, optimize=True)


@pytest.mark.parametrize(
    "state, make, step",
    [("empty", _empty, "import"), ("mid-annotation", _mid_annotation, "wait"), ("evaluated", _after_evaluation, None)],
)
def test_the_overview_fits_the_screen_in_every_state(page, live_server, stand_ins, state, make, step):
    project = make()
    researcher(username="res")
    page.set_viewport_size({"width": WIDTH, "height": FOLD})
    log_in(page, live_server, "res")
    height, next_bottom = _measure(page, live_server, project)
    if SHOTS:
        _screenshot(page, f"{SHOTS}/overview-{state}.png")
    print(f"overview at {WIDTH} px, {state}: {height} px tall; next step ends at {next_bottom:.0f} px")
    assert height <= MAX_HEIGHT, f"{state}: {height} px"
    assert next_bottom <= FOLD, f"{state}: the next step ends at {next_bottom} px, below the fold"
    if step:
        assert page.locator("#next-step").get_attribute("data-step") == step
    if state == "evaluated":
        # the evaluation's two tables are on their own page, not under the overview
        page.goto(f"{live_server.url}/projects/{project.pk}/evaluation/")
        page.wait_for_selector("#evaluation figure.evaluation-set table")
        assert page.locator("#evaluation figure.evaluation-set table").count() == 2
