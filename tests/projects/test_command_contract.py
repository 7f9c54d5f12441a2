"""The management commands of docs/formats.md §2 (the copy of shared/FORMATS.md): every command
exists and takes every option the contract names, the data formats and tasks of §2 are its
choices, and the README's command table names the same options (users read the README first)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.core.management import get_commands, load_command_class

from tests.conftest import REPO

FORMATS_MD = (REPO / "docs" / "formats.md").read_text(encoding="utf-8")
SECTION_2 = FORMATS_MD.split("\n## 2.", 1)[1].split("\n## 3.", 1)[0]
DATA_FORMATS = {"cad-nli", "cad-sentiment", "pairs-jsonl", "coco-captions", "coco-cf", "csv", "labelled-jsonl"}
EXPORT_FORMATS = {"pairs-jsonl", "csv", "hf-datasets", "coco-cf"}
TASKS = {"sentiment", "nli", "paraphrase", "boolean-qa", "image-caption"}


def _usages(markdown: str) -> dict[str, str]:
    """command name → the first cell of its table row (the usage), for every row that starts
    with a code span; a cell naming two commands (`a` / `b`) counts for both."""
    out: dict[str, str] = {}
    for line in markdown.splitlines():
        if not line.startswith("| `"):
            continue
        cell = re.split(r"(?<!\\)\|", line)[1]
        for span in re.findall(r"`([^`]+)`", cell):
            out.setdefault(span.split()[0], cell)
    return out


CONTRACT = _usages(SECTION_2)


def _options(usage: str) -> set[str]:
    return set(re.findall(r"--[a-z][a-z-]*", usage))


def _parser_actions(name: str) -> dict[str, Any]:
    command = load_command_class(get_commands()[name], name)
    return command.create_parser("manage.py", name)._option_string_actions


def test_the_contract_table_is_read():
    assert len(CONTRACT) >= 17 and "bench_annotation_load" in CONTRACT  # the pattern still finds the rows
    assert _options(CONTRACT["export"]) == {"--project", "--format", "--out"}


@pytest.mark.parametrize("name", sorted(CONTRACT))
def test_every_contract_command_takes_the_contract_options(name):
    assert name in get_commands(), f"no management command {name!r}"
    missing = _options(CONTRACT[name]) - set(_parser_actions(name))
    assert not missing, f"{name} does not take {sorted(missing)} (docs/formats.md §2)"


def test_formats_and_tasks_of_section_2_are_the_choices():
    assert set(_parser_actions("import_data")["--format"].choices) >= DATA_FORMATS
    assert set(_parser_actions("import_data")["--task"].choices) == TASKS
    assert set(_parser_actions("export")["--format"].choices) >= EXPORT_FORMATS
    for bench in ("bench_pairwise", "bench_augmentation"):
        assert set(_parser_actions(bench)["--format"].choices) >= DATA_FORMATS, bench
        assert set(_parser_actions(bench)["--task"].choices) == TASKS, bench


@pytest.mark.parametrize("name", sorted(CONTRACT))
def test_the_readme_names_the_contract_options(name):
    readme = _usages((REPO / "README.md").read_text(encoding="utf-8"))
    assert name in readme, f"README's command table has no row for {name}"
    missing = _options(CONTRACT[name]) - _options(readme[name])
    assert not missing, f"README's row for {name} lacks {sorted(missing)} (docs/formats.md §2 names them)"


def test_jobs_takes_and_names_every_kind_of_section_3():
    kinds_text = FORMATS_MD.split("`kind` ∈", 1)[1].split(";", 1)[0]
    kinds = re.findall(r"`([a-z_]+)`", kinds_text)
    assert "task_model" in kinds  # the pattern still finds the list
    assert _parser_actions("jobs")["--kind"].choices == kinds
    command = load_command_class(get_commands()["jobs"], "jobs")
    assert all(kind in command.help for kind in kinds), command.help  # `jobs --help` lists them all
