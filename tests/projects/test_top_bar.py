"""The top bar (templates/base.html's ``<nav aria-label="Main">``) names each link once. The API
tokens page added its own "API docs" beside the one every page has, so the bar read
"Home · API docs · API docs"."""

from __future__ import annotations

import re

import pytest

from tests.annotate.factories import annotator, login, researcher

pytestmark = pytest.mark.django_db

NAV = re.compile(r'<nav aria-label="Main">(.*?)</nav>', re.S)
HREF = re.compile(r'href="([^"]+)"')


@pytest.mark.parametrize("make", [annotator, researcher])
def test_the_tokens_page_top_bar_names_each_link_once(make):
    html = login(make(username="someone")).get("/accounts/tokens/").content.decode()
    links = HREF.findall(NAV.search(html).group(1))
    assert "/api/docs/" in links
    assert len(links) == len(set(links)), links
