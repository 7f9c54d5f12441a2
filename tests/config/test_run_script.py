"""``make run`` (scripts/run.sh) with ``PORT``: the demo prints the address it serves, and a port
already in use is said at once, before set-up, the demo or the workers; and its workers
(scripts/workers.sh) all stop when it stops, a worker busy with a job included.

The scripts run here for real, in a copy of the repository's layout whose set-up, workers,
``.venv/bin/python`` and ``.venv/bin/celery`` are stand-ins."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest

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


# A stand-in Celery worker: its main process and one pool process. Busy, it ignores TERM and INT
# as a worker in warm shutdown waits for its running job; idle, TERM stops it.
FAKE_CELERY = """#!/usr/bin/env bash
sleep 300 &
pool=$!
if [ "$FAKE_BUSY" = 1 ]; then trap '' TERM INT; else trap 'kill $pool; exit 0' TERM INT; fi
echo "$$ $pool" >>"$FAKE_PIDS"
echo "celery@host ready."
while true; do sleep 0.1; done
"""


def fake_workers(tmp_path: Path) -> tuple[Path, Path]:
    root, pids = tmp_path / "checkout", tmp_path / "pids"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(REPO / "scripts" / "workers.sh", root / "scripts" / "workers.sh")
    bin_dir = root / ".venv" / "bin"
    bin_dir.mkdir(parents=True)
    (bin_dir / "python").write_text("#!/bin/sh\nexit 0\n")  # manage.py jobs --declare-queues
    (bin_dir / "celery").write_text(FAKE_CELERY)
    for tool in ("python", "celery"):
        (bin_dir / tool).chmod(0o755)
    return root, pids


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:  # a zombie waits for its parent only
        return fh.read().rsplit(")", 1)[1].split()[0] != "Z"


@pytest.mark.parametrize("busy", [True, False])
def test_stopping_the_workers_ends_even_a_worker_busy_with_a_job(tmp_path: Path, busy: bool) -> None:
    """Ctrl-C on `make run` while a job ran waited for the job (hours for a generation run), and
    a second Ctrl-C could hang in Celery's cold shutdown; now a worker still busy after
    WORKERS_STOP_SECONDS is killed with its pool process (the job resumes on the next start)."""
    root, pids = fake_workers(tmp_path)
    env = {**os.environ, "FAKE_BUSY": "1" if busy else "0", "FAKE_PIDS": str(pids), "WORKERS_STOP_SECONDS": "1"}
    script = subprocess.Popen(
        ["bash", str(root / "scripts" / "workers.sh")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )
    try:
        assert script.stdout is not None
        assert script.stdout.readline().startswith("==> Celery workers:")
        deadline = time.monotonic() + 10
        while len(pids.read_text().splitlines()) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)  # the generation worker's stand-in is still starting
        started = [int(pid) for line in pids.read_text().splitlines() for pid in line.split()]
        assert len(started) == 4  # two workers, a pool process each
        script.send_signal(signal.SIGTERM)
        _, err = script.communicate(timeout=20)
        deadline = time.monotonic() + 5
        while any(alive(pid) for pid in started) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not [pid for pid in started if alive(pid)]
        told = "a worker was still finishing a job after 1 s: stopped it" in err
        assert told == busy, err
    finally:
        if script.poll() is None:
            os.killpg(script.pid, signal.SIGKILL)
        for line in pids.read_text().splitlines() if pids.exists() else []:
            for pid in map(int, line.split()):
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)
