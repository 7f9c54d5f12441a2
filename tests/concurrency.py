"""Requests at once, for the tests of double submits on PostgreSQL: ``at_once(call, n)`` runs
``call()`` in ``n`` threads released together by a barrier, each closing its database
connections after, and returns what each returned (in the order they finished)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TypeVar

from django.db import connections

T = TypeVar("T")


def at_once(call: Callable[[], T], n: int = 2) -> list[T]:
    barrier = threading.Barrier(n)
    answers: list[T] = []

    def run() -> None:
        try:
            barrier.wait(timeout=30)
            answers.append(call())
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run) for _ in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answers
