"""Issue 20.5: every job kind's queue is the one docs/operations.md gives, long generation runs
have a queue of their own, and the workers that `make run` and `make worker` start
(scripts/workers.sh) consume every queue, with generation and the interactive kinds on
different workers."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from projects.models import JOB_KINDS
from projects.services.jobs import _KINDS, job_queues

pytestmark = pytest.mark.postgres_too

ROOT = Path(__file__).resolve().parents[2]
INTERACTIVE = {"train", "autolabel", "route", "export", "evaluate", "import"}


def documented_queues() -> dict[str, str]:
    """The kind → queue table of docs/operations.md ("Queues and workers")."""
    text = (ROOT / "docs" / "operations.md").read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\w+)` \| `(\w+)` \| `\w+/apps\.py` \|$", text, flags=re.M)
    return dict(rows)


def worker_commands(text: str) -> list[list[str]]:
    """The ``celery … worker`` command lines of a shell script or Makefile (continuations
    joined), as argument lists."""
    joined = text.replace("\\\n", " ")
    return [shlex.split(line.strip()) for line in joined.splitlines() if re.search(r"celery\s.*\sworker\b", line)]


def queues_of(argv: list[str]) -> set[str]:
    raw = argv[argv.index("-Q") + 1]
    default = re.fullmatch(r"\$\{\w+:-([\w,]+)\}", raw)  # "${CELERY_X_QUEUES:-a,b}" → its default
    return set((default.group(1) if default else raw).split(","))


def needed_queues() -> set[str]:
    return set(job_queues())


def test_every_kind_is_on_the_documented_queue():
    table = documented_queues()
    assert set(table) == set(JOB_KINDS)
    assert {k for k, q in table.items() if q == "interactive"} == INTERACTIVE
    assert table["generation"] == "generation"
    assert _KINDS, "no job kind registered"
    for name, kind in _KINDS.items():
        assert kind.queue == table[name], f"{name}: registered on {kind.queue}, documented on {table[name]}"


def test_configuration_md_gives_every_kind_its_registered_queue():
    """docs/configuration.md used to send train, autolabel, route and evaluate to `ml` and export
    to `default`; its sentence must say what the registry does."""
    text = " ".join(read("docs", "configuration.md").split())
    sentence = text.split("Each job kind's queue is registered by its app", 1)[1].split("(", 2)[2]
    sentence = sentence.split("([operations.md]", 1)[0].split("):", 1)[1]
    said = {
        kind: queue
        for part in sentence.split(";")
        for queue in re.findall(r"→ `(\w+)`", part)
        for kind in re.findall(r"`(\w+)`(?=[^→]*→)", part)
    }
    assert said == {name: kind.queue for name, kind in _KINDS.items()}


def test_every_doc_that_names_a_kinds_queue_names_the_registered_one():
    """labelling.md put the `evaluate` job "on the `ml` queue" (it is on `interactive`): each
    "… `kind` … on the `queue` queue" in docs/ must be the registry's."""
    wrong = []
    for page in sorted((ROOT / "docs").glob("*.md")):
        text = " ".join(page.read_text(encoding="utf-8").split())
        for before, queue in re.findall(r"([^.;:(]{0,60}) on the `(\w+)` queue", text):
            for kind in set(re.findall(r"`(\w+)`", before)) & set(_KINDS):
                if _KINDS[kind].queue != queue:
                    wrong.append(f"{page.name}: {kind} on {queue}, registered on {_KINDS[kind].queue}")
    assert not wrong


def test_generation_never_shares_a_queue_with_an_interactive_kind():
    generation = _KINDS["generation"].queue
    assert all(_KINDS[k].queue != generation for k in INTERACTIVE if k in _KINDS)


def check_workers(commands: list[list[str]]) -> None:
    assert len(commands) >= 2
    consumed = [queues_of(argv) for argv in commands]
    assert set().union(*consumed) >= needed_queues()
    for queues in consumed:  # a generation run never blocks the interactive jobs
        assert not ({"generation", "interactive"} <= queues)
    assert sum("-B" in argv for argv in commands) == 1  # one beat
    names = [argv[argv.index("-n") + 1] for argv in commands]
    assert len(set(names)) == len(names)  # two workers on one host need distinct node names


def read(*parts: str) -> str:
    return ROOT.joinpath(*parts).read_text(encoding="utf-8")


def test_make_run_and_make_worker_start_workers_that_cover_every_queue():
    commands = worker_commands(read("scripts", "workers.sh"))
    check_workers(commands)
    assert all(argv[argv.index("--concurrency") + 1].endswith(":-1}") for argv in commands)
    assert re.search(r"^bash scripts/workers\.sh &$", read("scripts", "run.sh"), flags=re.M)
    assert re.search(r"^worker:.*\n\tbash scripts/workers\.sh$", read("Makefile"), flags=re.M)


def test_the_one_worker_make_targets_cover_the_same_queues():
    commands = worker_commands(read("Makefile"))
    check_workers(commands)
    both = worker_commands(read("scripts", "workers.sh"))
    assert sorted(map(sorted, map(queues_of, commands))) == sorted(map(sorted, map(queues_of, both)))
