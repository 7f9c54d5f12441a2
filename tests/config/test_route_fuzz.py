"""Requests to every URL pattern (issue 18, point 4), beyond what the OpenAPI fuzzer
(tests/config/test_api_fuzz.py) reaches: the HTML pages and their forms, the admin, the log-in
and token pages, and the API's query parameters and bodies with values outside the schema's
enums. The OpenAPI fuzzer missed every 500 of issue 18.4; with projects.middleware and the
form fixes taken out, this test finds each of them again (on PostgreSQL).

The URL resolver is walked; every pattern becomes a path. The fields to send come from real
submissions: every ``<form>`` on every page the researcher and the annotator see (by the route
its ``action`` resolves to; empty text boxes filled in, a select's first real option), and the
OpenAPI schema's query parameters and request bodies (an enum's first value). For each route,
as an anonymous visitor, an annotator and a researcher:

* a property-based pass: hypothesis draws the path (the fixture's real ids three times in four,
  otherwise any value of the converter or the regex), a GET with a mutated query and a POST
  with a mutated form (urlencoded or multipart; a JSON object under ``/api/``): fields kept,
  dropped or replaced by NUL, lone surrogates (the invalid UTF-8 a real client would send in a
  URL or form, ``\\ud800`` escapes in JSON), text longer than any column, huge or negative
  numbers, random text, and random extra fields;
* a systematic sweep: every field of every form, API body and query gets each bad value in
  turn while the others keep their real values (so the request reaches the code behind a valid
  ``action``), and the common filter names get a NUL each.

No answer may be a 5xx. Each request runs in a savepoint rolled back afterwards, so every one
meets the same data. ``derandomize``: the same requests on every run; over 1,000 requests per
role; scripts/test.sh runs it on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import html
import json
import re
from collections import defaultdict
from collections.abc import Callable, Iterator
from urllib.parse import quote, quote_plus, urlsplit

import pytest
from django.db import transaction
from django.http import HttpResponse
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver, resolve
from django.urls.exceptions import Resolver404
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from rest_framework.authtoken.models import Token

from annotate.services.routing import project_route
from projects.models import Candidate, Label, ProjectMembership
from projects.states import STATES
from tests.annotate.factories import annotator, project_with_candidates, researcher

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]

# Per route and role; each example sends one GET and one POST. Routes with forms or API
# bodies or query parameters to mutate get more.
EXAMPLES_WITH_FIELDS = 3
EXAMPLES_WITHOUT = 1


def _settings(examples: int) -> settings:
    return settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=True,
        suppress_health_check=list(HealthCheck),
    )


ROLES = ("anonymous", "annotator", "researcher")
CONVERTER = re.compile(r"<(?:(?P<conv>[^>:]+):)?(?P<name>[^>]+)>")
FORM = re.compile(r"<form\b([^>]*)>(.*?)</form>", re.I | re.S)
ACTION = re.compile(r"\baction=\"([^\"]*)\"", re.I)
# Names any route might read: the data browser's and the export's filters, cursors, paging.
COMMON_NAMES = ["state", "label", "label_source", "generator", "split", "format", "after", "before", "limit", "page"]

# The values that found 500s before: NUL, lone surrogates, text over a column's size, a
# non-number where an id goes, numbers beyond 64 bits.
NASTY = ["\x00", "a\x00b", "\ud800", "x\udfff", "x" * 300, "abc", "9" * 25, "-1", ""]
SPECIAL = [
    *NASTY,
    " ",
    "0",
    "1",
    "1e309",
    "nan",
    "true",
    "null",
    "é" * 70,
    "<script>alert(1)</script>",
    "'; DROP TABLE x; --",
    "../../etc/passwd",
    "%00",
    "[]",
    "{}",
]
TEXT = st.text(st.characters(min_codepoint=0, max_codepoint=0x10FFFF, exclude_categories=()), max_size=40)


def _walk(resolver: URLResolver, prefix: str = "") -> Iterator[tuple[str, URLPattern]]:
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            yield from _walk(entry, prefix + str(entry.pattern))
        else:
            yield prefix + str(entry.pattern), entry


def routes() -> list[tuple[str, URLPattern]]:
    return list(_walk(get_resolver()))


def _quoted_path(path: str) -> str:
    """The path as a client sends it: UTF-8, percent-encoded; a lone surrogate goes out as the
    invalid bytes it would be (Django decodes them with a replacement or re-quotes them)."""
    return quote(path.encode("utf-8", "surrogatepass"), safe="/")


def _form(pairs: list[tuple[str, str]]) -> str:
    return "&".join(
        f"{quote_plus(k.encode('utf-8', 'surrogatepass'))}={quote_plus(v.encode('utf-8', 'surrogatepass'))}"
        for k, v in pairs
    )


def _as_received(text: str) -> str:
    """What Django makes of ``text`` sent in a multipart body (invalid UTF-8 → U+FFFD)."""
    return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


@pytest.fixture
def world():
    from annotate.services import assignments as svc
    from generation.services.runs import run_create

    project = project_with_candidates(n=6, k=2)
    project_route(project=project, budget=1.0, seed=0)
    ann = annotator(project, username="fuzz-annotator")
    lease = svc.assignment_next(project=project, annotator=ann)
    run = run_create(project=project, generator="rules")
    res = researcher(username="fuzz-researcher")
    Token.objects.create(user=ann)  # the researcher's tokens page offers to revoke it
    membership = ProjectMembership.objects.get(project=project, user=ann)
    candidate = Candidate.objects.filter(project=project).order_by("pk").first()
    ids = {
        "project_id": project.pk,
        "assignment_id": lease.pk,
        "run_id": run.pk,
        "job_id": run.job_id,
        "candidate_id": candidate.pk,
        "membership_id": membership.pk,
        "object_id": res.pk,
        "id": res.pk,
        "content_type_id": 1,
        "path": "img/o1.jpg",
    }
    values = [str(v) for v in ids.values()]
    values += list(Label.objects.filter(project=project).values_list("name", flat=True)) + list(STATES)
    values += ["rules", "pairs-jsonl", "csv", "human", "auto", "none", "add", "remove", "pause", "revoke", "create"]
    return {"ids": ids, "values": values, "users": {"annotator": ann, "researcher": res}}


def _pk_for(route: str, ids: dict[str, int | str]) -> int | str:
    """``<int:pk>`` means the object the route is about."""
    for prefix, name in (("candidates/", "candidate_id"), ("runs/", "run_id"), ("jobs/", "job_id")):
        if route.startswith(prefix):
            return ids[name]
    return ids["project_id"]


def _converter_value(conv: str | None) -> st.SearchStrategy[str]:
    if conv == "int":
        return st.integers(0, 2**70).map(str)
    if conv == "path":
        return TEXT.filter(bool)
    return TEXT.filter(lambda t: t and "/" not in t)


def path_strategy(route: str, pattern: URLPattern, ids: dict[str, int | str]) -> st.SearchStrategy[str]:
    if "(?P<" in route or route.startswith("^") or "$" in route:  # a regex pattern (the admin's)
        prefix = route.partition(str(pattern.pattern))[0]
        regex = str(pattern.pattern).lstrip("^").rstrip("$")
        return st.from_regex(f"^{regex}$", fullmatch=True).map(lambda tail: "/" + prefix + tail)

    parts = CONVERTER.split(route)  # text, conv, name, text, conv, name, …, text

    @st.composite
    def build(draw: st.DrawFn) -> str:
        out = []
        for i in range(0, len(parts), 3):
            out.append(parts[i])
            if i + 2 < len(parts):
                conv, name = parts[i + 1], parts[i + 2]
                real = _pk_for(route, ids) if name == "pk" else ids.get(name)
                if real is not None and draw(st.integers(0, 3)) < 3:
                    out.append(str(real))
                else:
                    out.append(draw(_converter_value(conv)))
        return "/" + "".join(out)

    return build()


def _route_of(path: str) -> str | None:
    try:
        return resolve(urlsplit(path).path).route
    except Resolver404:
        return None


INPUT = re.compile(r"<(input|select|textarea|button)\b([^>]*)>", re.I)
ATTR = re.compile(r"\b(name|value|type)=\"([^\"]*)\"", re.I)
OPTION = re.compile(r"<option\b([^>]*)>([^<]*)", re.I)
TEXTAREA_END = re.compile(r"([^<]*)</textarea>", re.I)


def _first_option(body: str, start: int) -> str:
    """The first option of a select that chooses something (a browser user picks one)."""
    end = body.find("</select>", start)
    for attrs, text in OPTION.findall(body[start:end]):
        value = {k.lower(): v for k, v in ATTR.findall(attrs)}.get("value", text.strip())
        if value:
            return html.unescape(value)
    return ""


def _form_fields(body: str) -> list[tuple[str, object]]:
    """The (name, value) pairs a browser user would send with a form: inputs with their value
    (an empty text box filled in, ``1`` in an empty number box), a select's first real option,
    a textarea's text, every button's value (one is pressed)."""
    fields: list[tuple[str, object]] = []
    for match in INPUT.finditer(body):
        tag = match.group(1).lower()
        attrs = {k.lower(): html.unescape(v) for k, v in ATTR.findall(match.group(2))}
        if "name" not in attrs:
            continue
        value = attrs.get("value", "")
        if tag == "select":
            value = _first_option(body, match.end())
        elif tag == "textarea":
            text = TEXTAREA_END.match(body, match.end())
            value = html.unescape(text.group(1)) if text else ""
        kind = attrs.get("type", "text").lower()
        if not value and (tag == "textarea" or (tag == "input" and kind in ("text", "password", "number", "search"))):
            value = "1" if kind == "number" else "x1"
        if tag == "input" and kind in ("checkbox", "radio") and any(name == attrs["name"] for name, _ in fields):
            continue  # one of a group is enough
        fields.append((attrs["name"], value))
    return fields


def _schema_value(prop: dict, components: dict) -> object:
    for ref in [prop.get("$ref", "")] + [p.get("$ref", "") for p in prop.get("allOf", [])]:
        if ref:
            prop = {**components.get(ref.rsplit("/", 1)[-1], {}), **prop}
    if prop.get("enum"):
        return prop["enum"][0]
    kind = prop.get("type")
    if kind == "array":
        return [_schema_value(prop.get("items", {}), components)]
    return {"integer": 1, "number": 0.5, "boolean": True, "object": {}}.get(kind, "x")


Seeds = dict[str, dict[str, list[list[tuple[str, object]]]]]


def harvest_seeds(clients: list[Client], paths: dict[str, str]) -> Seeds:
    """Real submissions per route and method, to mutate: every form on every page each client
    sees (by the route its ``action`` resolves to), and the OpenAPI schema's query parameters
    and request bodies."""
    seeds: Seeds = defaultdict(lambda: {"get": [], "post": []})
    for client in clients:
        for route, path in paths.items():
            resp = client.get(path)
            if resp.status_code != 200 or not resp["Content-Type"].startswith("text/html"):
                continue
            for attrs, body in FORM.findall(resp.content.decode()):
                action = ACTION.search(attrs)
                target = _route_of(html.unescape(action.group(1))) if action and action.group(1) else route
                method = "get" if re.search(r"method=\"get\"", attrs, re.I) else "post"
                fields = _form_fields(body)
                if target is not None and fields not in seeds[target][method]:
                    seeds[target][method].append(fields)
    schema = clients[0].get("/api/schema/?format=json").json()
    components = schema["components"]["schemas"]
    for api_path, operations in schema["paths"].items():
        target = _route_of(re.sub(r"\{[^}]+\}", "1", api_path))
        if target is None:
            continue
        for method, op in operations.items():
            query = [(p["name"], _schema_value(p.get("schema", {}), components)) for p in op.get("parameters", [])]
            if query and method == "get" and query not in seeds[target]["get"]:
                seeds[target]["get"].append(query)
            for content in op.get("requestBody", {}).get("content", {}).values():
                ref = content.get("schema", {}).get("$ref", "")
                props = components.get(ref.rsplit("/", 1)[-1], {}).get("properties", {})
                body = [(k, _schema_value(v, components)) for k, v in props.items()]
                if body not in seeds[target]["post"]:
                    seeds[target]["post"].append(body)
    return seeds


@st.composite
def mutated(draw: st.DrawFn, seeds: list[list[tuple[str, object]]], values: st.SearchStrategy) -> list:
    """One of the route's real submissions (or none) with some fields replaced by nasty or
    random values, some dropped, and a few random fields added."""
    seed = draw(st.sampled_from(seeds)) if seeds else []
    out: list[tuple[str, object]] = []
    for name, value in seed:
        fate = draw(st.integers(0, 9))
        if fate <= 3:
            out.append((name, value))  # kept
        elif fate <= 6:
            out.append((name, draw(st.sampled_from(NASTY))))
        elif fate <= 8:
            out.append((name, draw(st.one_of(st.sampled_from(SPECIAL), values))))
    out += draw(st.lists(st.tuples(st.one_of(TEXT, st.sampled_from(COMMON_NAMES)), values), max_size=2))
    return out


def _client(role: str, users: dict) -> Client:
    client = Client(raise_request_exception=False)
    if role != "anonymous":
        client.force_login(users[role])
    return client


def _text(value: object) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _status(send: Callable[[], HttpResponse]) -> int:
    """Send one request inside a savepoint that is then rolled back: every request meets the
    fixture's data as it was (a project created by one request would make the next one's
    form fail on "already exists" before reaching the code under test), and on PostgreSQL a
    failed statement, which aborts the transaction, takes no later request down with it."""
    savepoint = transaction.savepoint()
    try:
        return send().status_code
    finally:
        transaction.savepoint_rollback(savepoint)


def _get(client: Client, path: str, query: list) -> str | None:
    """GET ``path`` with ``query``; what went wrong when the answer is a 5xx."""
    url = _quoted_path(path)
    status = _status(lambda: client.get(f"{url}?{_form([(_text(k), _text(v)) for k, v in query])}" if query else url))
    return f"GET {path!r} {query!r}: {status}" if status >= 500 else None


def _post(client: Client, path: str, body: list, multipart: bool) -> str | None:
    """POST ``body`` (JSON under /api/, else a form); what went wrong when the answer is a 5xx."""
    url = _quoted_path(path)
    if path.startswith("/api/"):
        status = _status(lambda: client.post(url, json.dumps(dict(body)), content_type="application/json"))
    elif multipart:
        status = _status(lambda: client.post(url, {_as_received(_text(k)): _as_received(_text(v)) for k, v in body}))
    else:
        form = _form([(_text(k), _text(v)) for k, v in body])
        status = _status(lambda: client.post(url, form, content_type="application/x-www-form-urlencoded"))
    return f"POST {path!r} {body!r}: {status}" if status >= 500 else None


def _fuzz(client: Client, paths: st.SearchStrategy, seeds: dict, values: st.SearchStrategy, failures: list[str]):
    @_settings(EXAMPLES_WITH_FIELDS if seeds["get"] or seeds["post"] else EXAMPLES_WITHOUT)
    @given(
        path=paths,
        query=mutated(seeds["get"], values),
        body=mutated(seeds["post"], values),
        multipart=st.booleans(),
    )
    def check(path, query, body, multipart):
        failures.extend(bad for bad in (_get(client, path, query), _post(client, path, body, multipart)) if bad)

    return check


def test_every_route_is_walked():
    found = {route for route, _ in routes()}
    for route in (
        "projects/<int:pk>/candidates/",
        "candidates/<int:pk>/override/",
        "accounts/tokens/",
        "accounts/login/",
        "projects/new/",
        "annotate/projects/<int:project_id>/members/",
        "api/v1/projects/<int:project_id>/route/",
        "projects/<int:pk>/export/manifest/",
    ):
        assert route in found, route
    assert len(found) >= 100


def _real_path(route: str, ids: dict[str, int | str]) -> str:
    return "/" + CONVERTER.sub(
        lambda m: str(_pk_for(route, ids) if m["name"] == "pk" else ids.get(m["name"], 1)), route
    )


def _seeds(world) -> tuple[Seeds, dict[str, str]]:
    ids, users = world["ids"], world["users"]
    pages = {r: _real_path(r, ids) for r, _ in routes() if "(?P<" not in r}
    seeds = harvest_seeds([_client("researcher", users), _client("annotator", users)], pages)
    assert len([r for r in seeds if seeds[r]["post"]]) >= 25  # the forms and API bodies were found
    return seeds, pages


# One field at a time, each of these, the rest of the form as the page sends it.
SWEEP = ["a\x00b", "\ud800", "x" * 300, "abc", "9" * 25]


def _random_pass(world, role: str, seeds: Seeds) -> list[str]:
    """Every route: hypothesis draws the path, a mutated query and a mutated body."""
    ids, users = world["ids"], world["users"]
    values = st.one_of(st.sampled_from(world["values"]), TEXT, st.integers(-(2**70), 2**70).map(str))
    failures: list[str] = []
    for route, pattern in routes():
        client = _client(role, users)  # a fresh log-in per route: a fuzzed POST may log out
        found: list[str] = []
        _fuzz(client, path_strategy(route, pattern, ids), seeds.get(route, {"get": [], "post": []}), values, found)()
        failures += [f"{role} {route}: {line}"[:500] for line in found]
    return failures


def _sweep(world, role: str, seeds: Seeds, pages: dict[str, str]) -> tuple[list[str], int]:
    """Every field of every form (and every API parameter and body property) gets each bad
    value in turn while the others keep their real values, so the request reaches the code
    behind a valid ``action``, where a handful of random mutations rarely gets."""
    failures: list[str] = []
    sent = 0

    def get(route: str, name: str, query: list) -> None:
        nonlocal sent
        found = _get(client, pages[route], query)
        failures.extend([f"{role} {route} {name}: {found}"[:500]] if found else [])
        sent += 1

    for route in pages:
        client = _client(role, world["users"])
        methods = seeds.get(route, {"get": [], "post": []})
        # Query parameters: each name the route's GET forms and the schema know, one at a time
        # with each bad value; the common filter names each with a NUL, then all at once with
        # each other bad value.
        for form in methods["get"]:
            for i, (name, _value) in enumerate(form):
                for bad in SWEEP:
                    get(route, name, [*form[:i], (name, bad), *form[i + 1 :]])
        if not route.startswith("admin/"):  # Django's admin reads none of them (its own forms are swept below)
            for name in COMMON_NAMES:
                get(route, name, [(name, SWEEP[0])])
            for bad in SWEEP[1:]:
                get(route, "(all)", [(name, bad) for name in COMMON_NAMES])
        for form in methods["post"]:
            for i, (name, _value) in enumerate(form):
                if name.startswith("csrf"):
                    continue
                for bad in SWEEP:
                    found = _post(client, pages[route], [*form[:i], (name, bad), *form[i + 1 :]], multipart=False)
                    failures.extend([f"{role} {route} {name}: {found}"[:500]] if found else [])
                    sent += 1
    return failures, sent


@pytest.mark.parametrize("role", ROLES)
def test_no_route_answers_5xx_to_fuzzed_query_parameters_and_forms(world, role):
    ids, users = world["ids"], world["users"]
    pages = {r: _real_path(r, ids) for r, _ in routes() if "(?P<" not in r}
    seeds = harvest_seeds([_client("researcher", users), _client("annotator", users)], pages)
    assert len([r for r in seeds if seeds[r]["post"]]) >= 25  # the forms and API bodies were found
    failures = _random_pass(world, role, seeds)
    swept, sent = _sweep(world, role, seeds, pages)
    assert sent >= 1000
    assert not failures + swept, "\n".join((failures + swept)[:40])
