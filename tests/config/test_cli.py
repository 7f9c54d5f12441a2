"""manage.py refuses an argument that is not UTF-8 before any command runs (config/cli.py)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from config.cli import argv_problem

ROOT = Path(__file__).resolve().parents[2]


def test_argv_problem_names_the_argument_and_its_option() -> None:
    bad = b"x\xff".decode("utf-8", "surrogateescape")  # as Python decodes argv
    problem = argv_problem(["manage.py", "route", "--project", bad])
    assert problem is not None
    assert "'x\\xff' (the value of --project)" in problem
    assert "nothing was done" in problem
    joined = argv_problem(["manage.py", "jobs", f"--project={bad}"])
    assert joined is not None and "'--project=x\\xff' holds bytes" in joined


@pytest.mark.parametrize("argv", [["manage.py", "jobs", "--project", "é 名前"], ["manage.py", "check"], ["manage.py"]])
def test_argv_problem_passes_utf8_text(argv: list[str]) -> None:
    assert argv_problem(argv) is None


@pytest.mark.parametrize("command", ["route", "jobs", "train_pairwise", "autolabel", "project_stats"])
def test_manage_py_refuses_non_utf8_bytes_without_a_traceback(command: str) -> None:
    # Before: UnicodeEncodeError traceback from the project lookup (exit 1).
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "config.settings.local"}
    done = subprocess.run(
        [sys.executable, "manage.py", command, "--project", b"caf\xe9"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        timeout=120,
    )
    err = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 2, err
    assert "Traceback" not in err
    assert err.startswith("manage.py: the argument 'caf\\xe9' (the value of --project) holds bytes that are not UTF-8")
