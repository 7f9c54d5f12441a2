"""Nothing a request sends comes back as markup. A 400 that repeated a field's value
("Select a valid choice. <…> is not one of the available choices.", "a must be a whole number
(an id), not '<…>'") was served as text/html, so a link such as
``/annotate/projects/1/?a=<meta http-equiv=refresh content="0;url=https://elsewhere">`` put
the visitor's browser on another site (no script needed, so the Content-Security-Policy did not
stop it).

Every route (tests/config/test_route_fuzz.py walks the resolver), as an anonymous visitor, an
annotator and a researcher: every field of the forms the pages show, API bodies and query
parameters gets an HTML payload in turn, and then every field name of every form class of the
project gets it at once, by GET and by POST. No answer served as HTML may hold the payload
unescaped."""

from __future__ import annotations

import pytest
from django import forms
from django.test import Client

from tests.config import test_route_fuzz
from tests.config.test_route_fuzz import COMMON_NAMES, _client, _form, _quoted_path, _seeds, _text

pytestmark = [pytest.mark.django_db]

world = test_route_fuzz.world  # the route fuzzer's project, members, lease, run and token

# Short: some messages cut a repeated value at 40 characters.
PAYLOAD = "<i hx-get=/x>"


APPS = ("projects", "annotate", "generation", "labeling", "workspace", "config")


def _form_field_names() -> list[str]:
    """The field names of every form class in the project's apps (the forms import with the
    URLconf)."""
    found: set[str] = set()
    todo: list[type] = [forms.BaseForm]
    while todo:
        cls = todo.pop()
        todo.extend(cls.__subclasses__())
        if cls.__module__.split(".")[0] in APPS:
            found.update(getattr(cls, "base_fields", {}))
    return sorted(found)


def _reflects(client: Client, method: str, path: str, pairs: list) -> bool:
    url = _quoted_path(path)
    data = _form([(_text(k), _text(v)) for k, v in pairs])
    if method == "get":
        resp = client.get(f"{url}?{data}")
    else:
        resp = client.post(url, data, content_type="application/x-www-form-urlencoded")
    kind = resp.get("Content-Type", "")
    body = b"".join(resp.streaming_content) if resp.streaming else resp.content
    return kind.startswith("text/html") and PAYLOAD.encode() in body


@pytest.mark.parametrize("role", ["anonymous", "annotator", "researcher"])
def test_no_page_reflects_a_field_as_markup(world, role):
    seeds, pages = _seeds(world)  # loads the URLconf, and so every form class
    names = _form_field_names()
    assert {"a", "remedy", "choice", "unflag"} <= set(names)
    found: list[str] = []
    for route, path in pages.items():
        client = _client(role, world["users"])
        methods = seeds.get(route, {"get": [], "post": []})
        for method in ("get", "post"):
            seeded = list(methods[method])
            if method == "get" and not route.startswith("admin/"):
                seeded.append([(name, "") for name in COMMON_NAMES])
            all_names = [(name, PAYLOAD) for name in sorted({*names, *COMMON_NAMES})]
            if _reflects(client, method, path, all_names):
                found.append(f"{role} {method.upper()} {path} (every form field name)")
            for form in seeded:
                for i, (name, _value) in enumerate(form):
                    if str(name).startswith("csrf"):
                        continue
                    pairs = [*form[:i], (name, PAYLOAD), *form[i + 1 :]]
                    if _reflects(client, method, path, pairs):
                        found.append(f"{role} {method.upper()} {path} {name}")
    assert not found, "\n".join(found)
