"""Every link a role is shown leads somewhere (the outside check's browser crawl, without the
browser): as an anonymous visitor, an annotator, a researcher and a superuser, on the demo
project (``manage.py demo`` from its bundled fixture), follow every same-site ``href``, ``src``
and ``hx-get`` from the home page and the annotation home, breadth first, a few URLs per route.
No link may answer 4xx or 5xx: a link the role cannot follow (403), a stale id (404) or a GET
on a POST-only view (405) is a defect of the page that shows it. Every HTML answer is a whole
page, with a ``<title>`` and an ``<h1>``: an ``hx-get`` URL followed as a plain GET (opened
directly, in a new tab, by a crawler) must not give a bare fragment. Form ``action``s are not
followed (they take a POST; tests/config/test_route_fuzz.py posts to every route)."""

from __future__ import annotations

import re
from collections import Counter, deque
from io import StringIO
from urllib.parse import urljoin, urlsplit

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.http import HttpResponse
from django.test import Client
from django.urls import resolve
from django.urls.exceptions import Resolver404

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]

LINK = re.compile(r'(?:href|src|hx-get)="([^"]+)"')
PASSWORD = "s3cret-pass"
PER_ROUTE = 3  # URLs followed per route (a table's pages, a pair's neighbours)
MAX_PAGES = 600


def _route(path: str) -> str:
    try:
        return resolve(path).view_name
    except Resolver404:
        return path


def _whole_page(html: str) -> bool:
    head = html[:2000].lower()
    return "<html" in head and "<title>" in head and "<h1" in html.lower()


def crawl(client: Client, starts: list[str]) -> tuple[Counter[str], list[tuple[int, str, str]]]:
    """The routes reached (pages answered per route) and every link that answered >= 400, as
    (status, url, the page that showed it) — or answered HTML that is not a whole page (no
    ``<html>``, ``<title>`` or ``<h1>``: a bare fragment), as (status, url + " (not a whole page)", page)."""
    queue = deque((url, "(start)") for url in starts)
    seen: set[str] = set()
    reached: Counter[str] = Counter()
    broken: list[tuple[int, str, str]] = []
    while queue and len(seen) < MAX_PAGES:
        url, source = queue.popleft()
        path = urlsplit(url).path
        if url in seen or path.startswith("/static/") or path.endswith("/logout/"):
            continue
        seen.add(url)
        route = _route(path)
        if reached[route] >= PER_ROUTE:
            continue
        response = client.get(url)
        reached[route] += 1
        if response.status_code >= 400:
            broken.append((response.status_code, url, source))
            continue
        if response.status_code in (301, 302):
            queue.append((urljoin(url, response["Location"]), url))
            continue
        if "html" not in response.get("Content-Type", ""):
            continue
        html = response.content.decode(errors="replace")
        if not _whole_page(html):
            broken.append((response.status_code, f"{url} (not a whole page)", source))
            continue
        for raw in LINK.findall(html):
            link = raw.replace("&amp;", "&")
            if link.startswith(("http:", "https:", "//", "mailto:", "#", "javascript:", "data:")):
                continue
            queue.append((urljoin(url, link), url))
    return reached, broken


@pytest.fixture
def demo(settings, tmp_path) -> None:
    settings.COUNTERPART = {**settings.COUNTERPART, "SHARED_DATA_DIR": str(tmp_path / "no-shared-data")}
    call_command("demo", "--password", PASSWORD, stdout=StringIO(), stderr=StringIO())
    get_user_model().objects.create_superuser("admin", "admin@example.org", PASSWORD)
    # an annotator of another project only, and one of no project
    from django.contrib.auth.models import Group

    from projects.services.memberships import membership_add
    from projects.services.projects import project_create

    for username in ("elsewhere", "lonely"):
        user = get_user_model().objects.create_user(username, password=PASSWORD)
        user.groups.add(Group.objects.get(name="annotator"))
    membership_add(project=project_create(name="another project", task="sentiment"), username="elsewhere")


@pytest.mark.parametrize(
    ("who", "starts", "at_least"),
    [
        (None, ["/", "/annotate/"], 1),
        ("annotator", ["/", "/annotate/"], 6),
        ("elsewhere", ["/", "/annotate/"], 3),
        ("lonely", ["/", "/annotate/"], 2),
        ("researcher", ["/", "/annotate/"], 25),
        ("admin", ["/", "/annotate/", "/admin/"], 45),
    ],
)
def test_every_link_a_role_is_shown_leads_somewhere(demo, who, starts, at_least) -> None:
    client = Client()
    if who:
        assert client.login(username=who, password=PASSWORD)
    reached, broken = crawl(client, starts)
    assert not broken, "\n".join(f"{status} {url}  (linked from {source})" for status, url, source in broken)
    assert len(reached) >= at_least, sorted(reached)  # the crawl did walk the pages
    if who is None:
        assert reached["login"] >= 1  # every page sends the visitor to log in


@pytest.fixture
def labelled(demo, settings, tmp_path, monkeypatch) -> None:
    """A second project past the loop's end: human labels, a trained h, an auto-labelling run
    and an export (the stand-in encoder of tests/labeling)."""
    from labeling import services as labeling
    from projects.services.exports import data_export
    from projects.services.memberships import membership_add
    from tests.labeling.conftest import FakeEncoder
    from tests.labeling.synthetic_project import make_project

    monkeypatch.setattr(labeling, "embedder", lambda: FakeEncoder())
    owner = get_user_model().objects.get(username="researcher")
    project, _ = make_project(n_pairs=120, n_human=60, name="labelled", created_by=owner)
    membership_add(project=project, username="annotator")
    labeling.pairwise_train(project=project, mode="capc")
    labeling.autolabel(project=project, min_confidence=0.5)
    data_export(project=project, format="pairs-jsonl", out=str(tmp_path / "export.jsonl"))


@pytest.mark.parametrize("who", ["annotator", "researcher"])
def test_every_link_leads_somewhere_on_a_labelled_project(labelled, who) -> None:
    client = Client()
    assert client.login(username=who, password=PASSWORD)
    reached, broken = crawl(client, ["/", "/annotate/"])
    assert not broken, "\n".join(f"{status} {url}  (linked from {source})" for status, url, source in broken)
    if who == "researcher":
        assert {"project-models", "project-dashboard", "project-export", "labeling-evaluation"} <= set(reached), (
            " ".join(sorted(reached))
        )


class _Pages:
    """A client over canned pages: url -> (status, html)."""

    def __init__(self, pages: dict[str, tuple[int, str]]) -> None:
        self.pages = pages

    def get(self, url: str) -> HttpResponse:
        status, body = self.pages.get(urlsplit(url).path, (404, ""))
        return HttpResponse(body, status=status, content_type="text/html")


def _page(body: str) -> str:
    return f"<!doctype html><html><head><title>t</title></head><body><h1>h</h1>{body}</body></html>"


def test_the_crawl_reports_each_broken_link_with_the_page_that_shows_it() -> None:
    pages = {
        "/": (
            200,
            _page('<a href="/projects/">p</a> <a href="/accounts/logout/">out</a> <a href="https://x.org/">x</a>'),
        ),
        "/projects/": (200, _page('<a href="/projects/999999/">gone</a> <div hx-get="1/models/"></div>')),
        "/projects/1/models/": (403, ""),
    }
    reached, broken = crawl(_Pages(pages), ["/"])  # type: ignore[arg-type]
    assert sorted(broken) == [
        (403, "/projects/1/models/", "/projects/"),
        (404, "/projects/999999/", "/projects/"),
    ]
    assert reached["home"] == 1 and reached["project-list"] == 1  # never the log-out link, nor another site


def test_the_crawl_reports_a_bare_fragment_answered_to_a_plain_get() -> None:
    pages = {
        "/projects/": (200, _page('<div hx-get="1/flips/"></div> <a href="1/">one</a>')),
        "/projects/1/flips/": (200, '<section class="card" id="flips"><h2>Label flips</h2></section>'),
        "/projects/1/": (200, "<!doctype html><html><head><title>t</title></head><body>no heading</body></html>"),
    }
    _, broken = crawl(_Pages(pages), ["/projects/"])  # type: ignore[arg-type]
    assert sorted(broken) == [
        (200, "/projects/1/ (not a whole page)", "/projects/"),
        (200, "/projects/1/flips/ (not a whole page)", "/projects/"),
    ]
