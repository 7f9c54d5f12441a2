"""Content-Security-Policy and Permissions-Policy (issue 18, point 5): on every response, and
the templates they rely on (no inline script, no event-handler attribute, no inline style, no
``javascript:`` URL; htmx configured without eval). The browser tests (tests/browser/) check
that no page reports a violation and that htmx and the charts still work under the policy."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from rest_framework.authtoken.models import Token

from tests.annotate.factories import project_with_candidates, researcher
from tests.conftest import REPO
from workspace.ml import charts

pytestmark = [pytest.mark.django_db, pytest.mark.postgres_too]

EXPECTED_CSP = {
    "default-src": "'self'",
    "script-src": "'self'",
    "style-src": "'self'",
    "img-src": "'self' data:",
    "object-src": "'none'",
    "base-uri": "'self'",
    "frame-ancestors": "'none'",
    "form-action": "'self'",
}


def _csp(response) -> dict[str, str]:
    header = response["Content-Security-Policy"]
    return {d.split(" ", 1)[0]: d.split(" ", 1)[1] for d in (p.strip() for p in header.split(";")) if d}


@pytest.fixture
def web():
    c = Client()
    c.force_login(researcher())
    return c


def test_every_kind_of_response_carries_both_headers(web):
    project = project_with_candidates(n=2, k=1)
    api = Client(HTTP_AUTHORIZATION=f"Token {Token.objects.create(user=researcher()).key}")
    responses = {
        "page": web.get(f"/projects/{project.pk}/"),
        "log-in page": Client().get("/accounts/login/"),
        "redirect": Client().get("/projects/"),
        "404": web.get("/projects/987654321/"),
        "400 from the input check": web.get(f"/projects/{project.pk}/candidates/", {"generator": "a\x00b"}),
        "API": api.get("/api/v1/projects/"),
        "API 401": Client().get("/api/v1/projects/"),
        "admin": Client().get("/admin/login/"),
    }
    for what, resp in responses.items():
        assert resp.status_code < 500, what
        csp = _csp(resp)
        for directive, sources in EXPECTED_CSP.items():
            assert csp.get(directive) == sources, (what, directive, csp)
        assert "'unsafe-inline'" not in resp["Content-Security-Policy"], what
        assert "'unsafe-eval'" not in resp["Content-Security-Policy"], what
        policy = resp["Permissions-Policy"]
        for feature in ("camera=()", "microphone=()", "geolocation=()", "payment=()", "usb=()"):
            assert feature in policy.split(", "), (what, feature)


def test_a_view_that_sets_its_own_policy_keeps_it(settings, rf):
    from projects.middleware import SecurityHeadersMiddleware

    def view(request):
        from django.http import HttpResponse

        resp = HttpResponse("x")
        resp["Content-Security-Policy"] = "default-src 'none'"
        return resp

    resp = SecurityHeadersMiddleware(view)(rf.get("/"))
    assert resp["Content-Security-Policy"] == "default-src 'none'"
    assert "camera=()" in resp["Permissions-Policy"]


INLINE_SCRIPT = re.compile(r"<script\b(?![^>]*\bsrc=)[^>]*>", re.I)
HANDLER = re.compile(r"\son[a-z]+\s*=", re.I)
STYLE_ATTR = re.compile(r"\sstyle\s*=", re.I)
STYLE_TAG = re.compile(r"<style\b", re.I)
JS_URL = re.compile(r"javascript:", re.I)


def test_no_template_holds_inline_script_handler_style_or_javascript_url():
    problems = []
    for path in sorted((REPO / "templates").rglob("*.html")):
        text = path.read_text(encoding="utf-8")
        for name, pattern in (
            ("inline <script>", INLINE_SCRIPT),
            ("on*= handler", HANDLER),
            ("style= attribute", STYLE_ATTR),
            ("<style>", STYLE_TAG),
            ("javascript: URL", JS_URL),
        ):
            problems += [f"{path.relative_to(REPO)}: {name}" for _ in pattern.finditer(text)]
        for trigger in re.findall(r'hx-trigger="([^"]*)"', text):
            if "[" in trigger:  # a trigger filter is evaluated JavaScript (allowEval is off)
                problems.append(f"{path.relative_to(REPO)}: hx-trigger filter {trigger!r}")
        if "hx-on" in text or "js:" in text:
            problems.append(f"{path.relative_to(REPO)}: hx-on / js: needs eval")
    assert not problems, "\n".join(problems)


def test_charts_are_svg_without_inline_style():
    svg = charts.bars([("a", 1.0), ("b", 2.0)], title="t")
    assert "<svg" in svg and "style=" not in svg and 'class="chart-svg"' in svg


def test_htmx_runs_without_eval_scripts_or_injected_styles(web):
    html = web.get("/projects/").content.decode()
    config = re.search(r"<meta name=\"htmx-config\" content='([^']*)'", html).group(1)
    assert '"includeIndicatorStyles":false' in config
    assert '"allowEval":false' in config
    assert '"allowScriptTags":false' in config


def test_the_api_docs_page_loads_its_script_from_a_url(web):
    resp = web.get("/api/docs/")
    html = resp.content.decode()
    assert resp.status_code == 200
    assert not INLINE_SCRIPT.search(html) and not STYLE_TAG.search(html)
    script = re.search(r'<script src="([^"]*script[^"]*)"', html).group(1).replace("&amp;", "&")
    js = web.get(script)
    assert js.status_code == 200 and js["Content-Type"].startswith("application/javascript")
    assert "SwaggerUIBundle" in js.content.decode()


def test_the_api_docs_page_has_its_heading_language_and_way_back_before_any_script_runs(web):
    """Swagger UI draws its title only once the schema has loaded: until then (at the page's
    load event, or without JavaScript) the page had no heading, no language and no way back."""
    html = web.get("/api/docs/").content.decode()
    assert '<html lang="en">' in html and "<h1>API reference</h1>" in html
    assert '<a href="/">Back to Counterpart</a>' in html
