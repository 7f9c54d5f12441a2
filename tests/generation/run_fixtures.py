"""Test-only generators and a fake encoder for the generation-run tests (the job machinery
is under test here, not a real generator). Importable by a real worker process too."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from generation.ml import registry
from generation.ml.base import GeneratedCandidate, GeneratorConfigError, Original, Skip
from projects.models import Example, Project
from projects.services.projects import project_create

CODES = ("negation", "lexical", "insert")


class EchoGenerator:
    """``per_original`` candidates per original: the first text field with ``" variant k"``
    appended. Originals whose text contains "skipme" yield a skip; "boom" raises;
    ``crash_at`` raises SystemExit there (a killed worker); ``delay`` sleeps per original;
    ``pid_file`` records the process that generates (the integration test kills it);
    ``gate_file``: after ``gate_after`` originals, wait until that file exists (so a test
    can act while the run is certainly in the middle)."""

    name = "test-echo"
    crashed: set[str] = set()  # noqa: RUF012

    def __init__(
        self,
        per_original: int = 3,
        crash_at: str = "",
        delay: float = 0.0,
        pid_file: str = "",
        seed: int = 0,
        mode: str = "ok",
        gate_file: str = "",
        gate_after: int = 0,
    ) -> None:
        if per_original < 1:
            raise ValueError("per_original must be at least 1")
        if mode != "ok":
            raise GeneratorConfigError(f"mode {mode!r} is not supported")
        self.per_original = per_original
        self.crash_at = crash_at
        self.delay = delay
        self.pid_file = pid_file
        self.seed = seed
        self.calls = 0
        self.gate_file = gate_file
        self.gate_after = gate_after
        self.seen = 0

    def generate(self, originals: Sequence[Original]) -> Iterator[GeneratedCandidate | Skip]:
        self.calls += 1
        if self.pid_file:  # written whole (a reader never sees the file empty mid-write)
            part = Path(f"{self.pid_file}.part")
            part.write_text(str(os.getpid()))
            os.replace(part, self.pid_file)
        for o in originals:
            if self.gate_file and self.seen >= self.gate_after:
                deadline = time.monotonic() + 120
                while not Path(self.gate_file).exists() and time.monotonic() < deadline:
                    time.sleep(0.05)
            self.seen += 1
            if self.delay:
                time.sleep(self.delay)
            if self.crash_at and o.id == self.crash_at and o.id not in EchoGenerator.crashed:
                EchoGenerator.crashed.add(o.id)  # crash once, like a worker killed once
                raise SystemExit(f"simulated kill at {o.id}")
            name = next(iter(o.fields))
            text = o.fields[name]
            if "skipme" in text:
                yield Skip(o.id, "too short to perturb")
                continue
            if "boom" in text:
                raise RuntimeError("generator exploded")
            others = [lab for lab in o.labels if lab != o.label]
            for k in range(self.per_original):
                yield GeneratedCandidate(
                    original_id=o.id,
                    fields={**o.fields, name: f"{text} variant {k}"},
                    generator=self.name,
                    perturbation=CODES[k % len(CODES)],
                    target_label=others[k % len(others)] if others else None,
                    scores={"gen_score": 0.5},
                    meta={"k": k},
                )


class FakeEncoder:
    """Cosine stand-in: token Jaccard of the two texts (deterministic, no model)."""

    def cosine(self, a: Sequence[str], b: Sequence[str]) -> list[float]:
        out = []
        for x, y in zip(a, b, strict=True):
            sx, sy = set(x.lower().split()), set(y.lower().split())
            out.append(len(sx & sy) / len(sx | sy) if sx | sy else 1.0)
        return out


def register_test_generators() -> None:
    registry.register("test-echo", factory=EchoGenerator)


def make_project(
    name: str = "runs-nli", n: int = 10, task: str = "nli", split: str = "dev", sorted_by_label: bool = False
) -> Project:
    """``n`` originals; their labels cycle, or with ``sorted_by_label`` come in blocks (ids
    sorted by label, as CAD's files are)."""
    p = project_create(name=name, task=task)
    labels = list(p.labels.all())
    fields = p.text_fields
    Example.objects.bulk_create(
        [
            Example(
                project=p,
                external_id=f"ex-{i:03d}",
                split=split,
                label=labels[i * len(labels) // n if sorted_by_label else i % len(labels)],
                fields={f: f"{f} number {i} is a plain sentence" for f in fields},
            )
            for i in range(n)
        ]
    )
    return p
