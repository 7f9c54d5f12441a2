"""The public contracts in docs/formats.md stay an exact copy of shared/FORMATS.md, and the
README stays short (at most 300 lines, exactly two Quick start commands)."""

from __future__ import annotations

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
