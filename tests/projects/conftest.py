"""Fixtures shared by the job tests of this folder."""

from __future__ import annotations

import pytest

from projects import tasks


@pytest.fixture
def sent_messages(monkeypatch) -> list[int]:
    """A broker that takes the jobs' messages (no worker runs them: the jobs stay queued);
    the list of the job ids sent, in order."""
    sent: list[int] = []
    monkeypatch.setattr(tasks.job_execute_task, "apply_async", lambda args, **kw: sent.append(args[0]))
    return sent
