"""Wall and CPU (process) time per stage of a pipeline: what ``bench_generation`` and a
generation run report as the share of time each stage takes. No Django.

CPU time is ``time.process_time`` (all threads of the process: torch's included), which a
machine shared with other work disturbs far less than wall time."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


class StageClock:
    """Accumulates wall and CPU seconds per named stage: ``with clock("perplexity"): ...``."""

    def __init__(self) -> None:
        self.wall: dict[str, float] = {}
        self.cpu: dict[str, float] = {}

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        w0, c0 = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - w0, time.process_time() - c0)

    def add(self, name: str, wall: float, cpu: float) -> None:
        self.wall[name] = self.wall.get(name, 0.0) + wall
        self.cpu[name] = self.cpu.get(name, 0.0) + cpu

    def merge(self, other: StageClock) -> None:
        for name in other.wall:
            self.add(name, other.wall[name], other.cpu.get(name, 0.0))

    def table(self) -> dict[str, dict[str, float]]:
        """Per stage: wall and CPU seconds and their shares of the totals (rounded)."""
        tw, tc = sum(self.wall.values()) or 1.0, sum(self.cpu.values()) or 1.0
        return {
            name: {
                "wall_s": round(self.wall[name], 3),
                "cpu_s": round(self.cpu.get(name, 0.0), 3),
                "wall_share": round(self.wall[name] / tw, 4),
                "cpu_share": round(self.cpu.get(name, 0.0) / tc, 4),
            }
            for name in self.wall
        }

    @classmethod
    def from_table(cls, table: Any) -> StageClock:
        """A clock holding the seconds of :meth:`table`'s output (a resumed run adds to it)."""
        clock = cls()
        for name, row in (table or {}).items() if isinstance(table, dict) else ():
            try:
                clock.add(str(name), float(row["wall_s"]), float(row["cpu_s"]))
            except (KeyError, TypeError, ValueError):
                continue
        return clock
