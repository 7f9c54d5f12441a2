"""A real browser at 1280 px: a 200-character project name is cut with an ellipsis in the project
list (its full name in the title), never widening the page (issue 32.8: it widened the list to
2,452 px)."""

from __future__ import annotations

import os

import pytest

from projects.services.projects import project_create
from tests.annotate.factories import researcher

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_200_character_project_name_does_not_widen_the_project_list(page, live_server):
    long = "a-very-long-project-name-without-any-space-" * 5
    long = long[:200]
    project_create(name=long, task="nli")
    project_create(name="short", task="nli")
    researcher(username="res")
    page.set_viewport_size({"width": 1280, "height": 900})
    page.goto(f"{live_server.url}/accounts/login/")
    page.fill("#id_username", "res")
    page.fill("#id_password", "pw-123456")
    page.click("button[type=submit]")
    page.goto(f"{live_server.url}/projects/")
    link = page.locator(f'a[title="{long}"]')
    assert link.count() == 1 and link.inner_text() == long  # the whole name is there, shown cut
    widths = page.evaluate(
        """() => ({page: document.documentElement.scrollWidth,
                  table: document.querySelector('table').getBoundingClientRect().width,
                  main: document.querySelector('main').getBoundingClientRect().width,
                  link: document.querySelector('table a').getBoundingClientRect().width,
                  cut: (a => a.scrollWidth > a.clientWidth)(document.querySelector('table a'))})"""
    )
    assert widths["page"] <= 1280, widths
    assert widths["table"] <= widths["main"], widths
    assert widths["link"] < 400 and widths["cut"], widths  # cut with an ellipsis, about 32 characters wide
