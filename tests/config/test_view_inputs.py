"""Every view parses its input through a form or a serializer (issue 20, the house): no module
of the apps reads ``request.POST`` / ``GET`` / ``FILES`` / ``data`` / ``query_params`` by hand.
An AST scan: each such attribute may only be passed, whole, to a form or serializer
(``SomeForm(request.POST)``, ``SomeForm.parse(request.GET, …)``,
``InputSerializer(data=request.data)``, also as ``request.POST or None`` or
``request.POST if … else request.GET``). ``projects/middleware.py`` is exempt: it is the
input-hardening layer that checks every raw field before any view runs."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPS = ["projects", "generation", "labeling", "annotate", "workspace", "config"]
EXEMPT = {"projects/middleware.py"}
RAW = {"POST", "GET", "FILES", "data", "query_params"}
PARSER = re.compile(r"(Form|Serializer|Query|parse|peek)$")


def _callee(call: ast.Call) -> str:
    f = call.func
    return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""


def _raw_reads(source: str, name: str) -> list[str]:
    """``file:line`` of each raw read of request input that is not handed whole to a parser."""
    tree = ast.parse(source)
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node
    found = []
    for node in ast.walk(tree):
        if not (
            isinstance(node, ast.Attribute)
            and node.attr in RAW
            and isinstance(node.value, ast.Name)
            and node.value.id == "request"
        ):
            continue
        up: ast.AST = node
        parent = parents.get(up)
        while isinstance(parent, ast.IfExp | ast.BoolOp) and up is not getattr(parent, "test", None):
            up, parent = parent, parents.get(parent)
        if isinstance(parent, ast.keyword):
            up, parent = parent, parents.get(parent)
        ok = (
            isinstance(parent, ast.Call)
            and (up in parent.args or up in parent.keywords)
            and PARSER.search(_callee(parent))
        )
        if not ok:
            found.append(f"{name}:{node.lineno}")
    return found


def test_no_view_reads_request_input_by_hand():
    found = []
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            name = str(path.relative_to(ROOT))
            if name in EXEMPT or "migrations" in path.parts:
                continue
            found += _raw_reads(path.read_text(), name)
    assert found == [], "parse these with a form or serializer: " + ", ".join(found)


def test_the_scan_catches_hand_reads_and_allows_parsers():
    bad = """
def view(request):
    a = request.POST.get("a")
    b = request.GET["b"]
    c = request.query_params.getlist("c")
    if "job" in request.GET:
        pass
    d = dict(request.POST)
    e = int(request.data["e"])
"""
    assert sorted(int(line.split(":")[1]) for line in _raw_reads(bad, "m")) == [3, 4, 5, 6, 8, 9]
    good = """
def view(request):
    form = AForm(request.POST or None, initial={})
    other = AForm.parse(request.POST if request.method == "POST" else request.GET, project=p)
    data = self.InputSerializer(data=request.data)
    upload = ImportForm.parse(request.POST, request.FILES)
    query = DownloadQuery(request.query_params).manifest()
"""
    assert _raw_reads(good, "m") == []
