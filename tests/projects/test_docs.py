"""The public contracts in docs/formats.md stay an exact copy of shared/FORMATS.md, the
README stays short (at most 300 lines, exactly two Quick start commands), every relative link
and anchor in README.md and docs/ resolves, and every environment variable the settings read is
documented."""

from __future__ import annotations

import re
from pathlib import Path

from tests.conftest import REPO, SHARED_DATA, need


def test_docs_formats_is_the_shared_contract():
    shared = SHARED_DATA.parent / "FORMATS.md"
    need(shared.is_file(), f"{shared} not found")
    ours = (REPO / "docs" / "formats.md").read_text(encoding="utf-8")
    header, _, body = ours.partition("\n\n")
    assert "public contract" in header
    assert body == shared.read_text(encoding="utf-8")


def test_readme_is_short_with_two_quick_start_commands():
    text = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) <= 300
    quick = text.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    block = quick.split("```sh", 1)[1].split("```", 1)[0]
    commands = [line.split("#", 1)[0].strip() for line in block.strip().splitlines()]
    assert commands == ["make run", "make test"], commands


_FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def _outside_code(text: str) -> str:
    """The markdown without its fenced blocks (kept as blank lines, so line numbers hold)."""
    return _FENCE.sub(lambda m: "\n" * m.group(0).count("\n"), text)


def _anchors(path: Path) -> set[str]:
    """GitHub's heading anchors of a markdown file (lower case, punctuation dropped, spaces to
    hyphens, -1, -2, … for repeats)."""
    seen: dict[str, int] = {}
    out: set[str] = set()
    for heading in re.findall(r"^#{1,6}\s+(.*)$", _outside_code(path.read_text(encoding="utf-8")), re.M):
        text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.replace("`", "")).strip().lower()
        slug = re.sub(r"[^\w\- ]", "", text).replace(" ", "-")
        n = seen.get(slug, 0)
        out.add(slug if n == 0 else f"{slug}-{n}")
        seen[slug] = n + 1
    return out


def test_relative_links_and_anchors_in_the_docs_resolve():
    pages = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]
    broken = []
    for page in pages:
        for number, line in enumerate(_outside_code(page.read_text(encoding="utf-8")).splitlines(), 1):
            for target in re.findall(r"\]\(([^)\s]+)\)", line):
                if re.match(r"[a-z]+:", target):
                    continue  # http:, https:, mailto:
                path, _, anchor = target.partition("#")
                file = (page.parent / path).resolve() if path else page
                if not file.exists():
                    broken.append(f"{page.relative_to(REPO)}:{number}: {target} (no such file)")
                elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
                    broken.append(f"{page.relative_to(REPO)}:{number}: {target} (no such heading)")
    assert not broken, "\n".join(broken)


def test_every_environment_variable_the_settings_read_is_documented():
    read = set()
    for source in [*(REPO / "config" / "settings").glob("*.py"), REPO / "config" / "env.py"]:
        read |= set(re.findall(r"\benv(?:_bool|_int|_float|_list)?\(\s*\"([A-Z][A-Z0-9_]+)\"", source.read_text()))
    assert len(read) > 50  # the pattern still finds them
    documented = "".join(
        (REPO / "docs" / name).read_text(encoding="utf-8") for name in ("configuration.md", "security.md")
    )
    missing = sorted(name for name in read if f"`{name}`" not in documented)
    assert not missing, f"read by config/settings, not in docs/configuration.md or docs/security.md: {missing}"


def test_every_docs_page_is_linked_from_the_index():
    index = (REPO / "docs" / "index.md").read_text(encoding="utf-8")
    linked = set(re.findall(r"\]\(([\w.-]+\.md)(?:#[^)]*)?\)", index))
    pages = {page.name for page in (REPO / "docs").glob("*.md")} - {"index.md"}
    assert not pages - linked, f"not linked from docs/index.md: {sorted(pages - linked)}"
