"""``make run`` (scripts/run.sh) with ``PORT``: the demo prints the address it serves, and a port
already in use is said at once, before set-up, the demo or the workers.

run.sh runs here for real, in a copy of the repository's layout whose set-up, workers and
``.venv/bin/python`` are stand-ins that only log how they were called."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def fake_checkout(tmp_path: Path) -> tuple[Path, Path]:
    root, log = tmp_path / "checkout", tmp_path / "calls.log"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "run.sh", root / "scripts" / "run.sh")
    (root / "scripts" / "setup.sh").write_text(f'echo "setup.sh" >>"{log}"\n')
    # the workers run until run.sh's trap stops them, as the real ones do
    (root / "scripts" / "workers.sh").write_text(f'echo "workers.sh" >>"{log}"\nexec sleep 30\n')
    python = root / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\necho "python $*" >>"{log}"\n')
    python.chmod(0o755)
    return root, log


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def run_script(root: Path, port: int) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PORT": str(port)}
    return subprocess.run(
        ["bash", str(root / "scripts" / "run.sh")], env=env, capture_output=True, text=True, timeout=60
    )


def test_the_demo_prints_the_port_make_run_serves(tmp_path: Path) -> None:
    root, log = fake_checkout(tmp_path)
    port = free_port()
    done = run_script(root, port)
    calls = log.read_text().splitlines()
    assert f"python manage.py demo --url http://127.0.0.1:{port}" in calls
    assert f"python manage.py runserver 127.0.0.1:{port}" in calls
    assert f"http://127.0.0.1:{port}" in done.stdout


def test_a_port_in_use_is_said_before_anything_starts(tmp_path: Path) -> None:
    root, log = fake_checkout(tmp_path)
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = int(busy.getsockname()[1])
        done = run_script(root, port)
    assert done.returncode == 1
    assert f"port {port} on 127.0.0.1 is already in use" in done.stderr
    assert f"PORT={port + 1} make run" in done.stderr
    assert not log.exists()  # no set-up, no demo, no workers, no runserver
