"""The PostgreSQL pass runs only what can differ by database (issue 25, item 6): the tests
marked ``postgres`` (PostgreSQL only) or ``postgres_too`` (both passes). This scan keeps that
honest: every test module that reaches database-specific code must carry one of the two marks
at module level (``pytestmark``), so that no PostgreSQL code path loses its guard when a test
is added or moved.

"Database-specific" is found, not listed by hand:

- **source modules** (the five apps and ``config``) whose text uses raw SQL, row locks,
  ``connection.vendor`` or PostgreSQL-only lookups (:data:`DB_SPECIFIC`): a test module that
  imports one of them (``import m`` / ``from m import …`` / ``from pkg import m``), or imports a
  module that imports one (one step: a test of ``annotate.services.routing`` reaches
  ``projects.services.candidates``' locks), must be marked;
- **test modules** whose own text does any of that, or feeds NUL characters (PostgreSQL
  refuses them in text and jsonb: the ``unstorable`` guards), or starts threads against the
  database.

Modules marked ``slow``, ``browser`` or ``broker`` at module level are left out: the
PostgreSQL pass never ran those (``scripts/test.sh``).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
APPS = ("projects", "annotate", "generation", "labeling", "workspace", "config")

# raw SQL, locks, the vendor switch, PostgreSQL-only lookups and the hand-written hot-path SQL
DB_SPECIFIC = re.compile(
    r"select_for_update|connection\.cursor|\.cursor\(\)|connection\.vendor|skip_locked|RawSQL|\.raw\("
    r"|hot_sql|__has_key|advisory_lock|pg_advisory|ArrayAgg|JSONBAgg|SearchVector|on_conflict"
)
# in a test's own text: the above, NUL characters (what PostgreSQL refuses), threads on the database
TEST_SPECIFIC = re.compile(DB_SPECIFIC.pattern + r"|\\x00|\\0|\\u0000|unstorable|threading\.Thread|ThreadPoolExecutor")
NOT_IN_PG_PASS = ("slow", "browser", "broker")


def _module_name(path: Path) -> str:
    return ".".join(path.relative_to(REPO).with_suffix("").parts)


def db_specific_modules() -> set[str]:
    """The apps' modules (migrations left out) whose code is database-specific."""
    found = set()
    for app in APPS:
        for path in (REPO / app).rglob("*.py"):
            if "migrations" in path.parts:
                continue
            if DB_SPECIFIC.search(path.read_text(encoding="utf-8")):
                found.add(_module_name(path))
    return found


def _source_imports() -> dict[str, set[str]]:
    """Each app module's imports (of any module)."""
    graph = {}
    for app in APPS:
        for path in (REPO / app).rglob("*.py"):
            if "migrations" not in path.parts:
                graph[_module_name(path)] = _imports(ast.parse(path.read_text(encoding="utf-8")))
    return graph


def _imports(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _module_marks(tree: ast.Module, source: str) -> str:
    """The text of the module-level ``pytestmark`` assignment ('' when there is none)."""
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in targets):
                return ast.get_source_segment(source, node) or ""
    return ""


def unmarked_modules() -> dict[str, str]:
    """Test modules that reach database-specific code without a module-level ``postgres`` or
    ``postgres_too`` mark, with the reason."""
    specific = db_specific_modules()
    graph = _source_imports()
    missing: dict[str, str] = {}
    for path in sorted((REPO / "tests").rglob("test_*.py")):
        if path == Path(__file__).resolve():  # this scan's own patterns
            continue
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        marks = _module_marks(tree, source)
        if any(f"mark.{m}" in marks for m in NOT_IN_PG_PASS):
            continue
        if "mark.postgres" in marks:  # postgres or postgres_too
            continue
        imported = _imports(tree)
        reached = sorted(imported & specific) or sorted(
            f"{m} (through {via})" for via in sorted(imported & set(graph)) for m in sorted(graph[via] & specific)
        )
        own = TEST_SPECIFIC.search(source)
        if reached or own:
            missing[str(path.relative_to(REPO))] = (
                f"imports {', '.join(reached)}" if reached else f"uses {own.group(0)!r}" if own else ""
            )
    return missing


def test_the_scan_finds_the_database_specific_code() -> None:
    """The scan is not vacuous: the lock-taking and raw-SQL modules are found."""
    specific = db_specific_modules()
    for module in (
        "annotate.services.hot_sql",
        "projects.services.jobs",
        "projects.services.candidates",
        "projects.aggregates",
        "workspace.data.totals",
    ):
        assert module in specific, module


def test_every_test_module_reaching_database_specific_code_is_marked() -> None:
    missing = unmarked_modules()
    assert not missing, (
        "these test modules reach database-specific code but would not run on PostgreSQL; add "
        "`pytest.mark.postgres_too` to their module-level pytestmark (docs/testing.md):\n"
        + "\n".join(f"  {path}: {why}" for path, why in missing.items())
    )


def test_the_postgres_pass_selects_the_marks() -> None:
    """scripts/test.sh's PostgreSQL pass selects exactly the two marks (no guard lost by a
    selection that drifts from this scan)."""
    script = (REPO / "scripts" / "test.sh").read_text(encoding="utf-8")
    # every `postgres` test, slow ones included (the SQLite runs leave them all out), and the
    # fast `postgres_too` ones (their slow ones already ran on SQLite)
    assert '-m "postgres or (postgres_too and not (slow or browser or broker))"' in script
    ini = (REPO / "pytest.ini").read_text(encoding="utf-8")
    assert "postgres_too:" in ini
