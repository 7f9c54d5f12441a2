"""Per-project candidate aggregates, kept up to date by the writes (issue 20.8).

The project page and the dashboard read counts (candidates by state, label source, gold,
perturbation, generator, original label, target label and final label) from
``CandidateCount`` rows — one per combination present, a few hundred to a few thousand per
project — and the number of originals from ``ProjectStats``, instead of counting a table of a
million candidates on every render.

How they stay equal to a full recount:

- **Every write that changes a counted column** goes through :func:`stats_write`: inside the
  writer's transaction it locks the project's ``ProjectStats`` row (``SELECT … FOR UPDATE``;
  SQLite's ``IMMEDIATE`` transactions serialize writers there), counts the cells of the rows it
  is about to change, writes, counts them again and adds the difference to the cells
  (``INSERT … ON CONFLICT DO UPDATE SET n = n + excluded.n``). Because every such writer holds
  the lock until it commits, the two counts see no one else's changes; a write of one row
  costs two small grouped queries over its primary key. The writers: ``candidates_transition``
  (generation, routing, aggregation of answers, auto-labelling), ``candidate_override``, the
  inserts of imports and generation runs, and the deletes of a discarded import.
- **Bulk jobs** (``RECOUNT_KINDS``: generation, import, route, autolabel) also end with
  :func:`project_stats_recompute` (``projects/services/jobs.py``), a full recount of the
  project inside the job: what a batch kept incrementally is checked and made exact.
- **Safety net**: a project without a ``ProjectStats`` row (created before the table existed,
  or written by a path that bypasses the services, as the benchmarks' ``COPY``) or one marked
  ``stale`` is recounted once by the first read (:func:`project_stats_fresh`), and stored.
- ``python manage.py project_stats`` recounts (``--check`` compares without writing).

``version`` is bumped by every write; figures that need more than counts may be cached under it.

A module of the kernel beside ``services`` and ``selectors``, not in either: the writers (services)
keep the aggregates, and the readers (selectors) call the safety net, so both import it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from django.db import connection, transaction
from django.db.models import BooleanField, Count, ExpressionWrapper, F, Q, QuerySet
from django.utils import timezone

from projects.models import CELL_KEY, Candidate, CandidateCount, Example, ProjectStats

KEY = CELL_KEY  # the cell key, in CandidateCount's column order (after project_id)
Key = tuple[Any, ...]  # (project_id, *KEY)
ID_CHUNK = 5000  # ids counted (and updated) per query


def cells_of(candidates: QuerySet[Candidate]) -> Counter[Key]:
    """The cells of ``candidates``: ``(project_id, state, …, gold) -> n``, one grouped query."""
    rows = (
        candidates.order_by()
        .annotate(_gold=ExpressionWrapper(Q(gold_label__isnull=False), output_field=BooleanField()))
        .values_list(
            "project_id",
            "state",
            "label_source",
            "perturbation",
            "generator",
            "example__label_id",
            "target_label_id",
            "label_id",
            "_gold",
        )
        .annotate(n=Count("pk"))
    )
    out: Counter[Key] = Counter()
    for pid, state, source, pert, gen, orig, target, label, gold, n in rows:
        out[(pid, state, source or "", pert or "", gen or "", orig or 0, target or 0, label or 0, bool(gold))] += n
    return out


def cells_of_ids(ids: Sequence[int]) -> Counter[Key]:
    out: Counter[Key] = Counter()
    for start in range(0, len(ids), ID_CHUNK):
        out.update(cells_of(Candidate.objects.filter(pk__in=list(ids[start : start + ID_CHUNK]))))
    return out


def stats_lock(*, project_id: int) -> ProjectStats:
    """The project's ``ProjectStats`` row, locked until the transaction ends (created stale
    when missing: its cells are then unknown and the next read recounts them)."""
    stats = ProjectStats.objects.select_for_update().filter(project_id=project_id).first()
    if stats is None:
        ProjectStats.objects.get_or_create(project_id=project_id, defaults={"stale": True})
        stats = ProjectStats.objects.select_for_update().get(project_id=project_id)
    return stats


_COLUMNS = ("project_id", *KEY, "n")


def _upsert(delta: dict[Key, int]) -> None:
    """Add ``delta`` to the cells (creating missing ones), then drop the cells that reached 0."""
    rows = [(*k, n) for k, n in delta.items() if n]
    if not rows:
        return
    table = connection.ops.quote_name(CandidateCount._meta.db_table)
    cols = ", ".join(connection.ops.quote_name(c) for c in _COLUMNS)
    conflict = ", ".join(connection.ops.quote_name(c) for c in _COLUMNS[:-1])
    sql = (
        f"INSERT INTO {table} ({cols}) VALUES ({', '.join(['%s'] * len(_COLUMNS))}) "
        f"ON CONFLICT ({conflict}) DO UPDATE SET n = {table}.n + excluded.n"
    )
    with connection.cursor() as cur:
        cur.executemany(sql, rows)
    CandidateCount.objects.filter(project_id__in={r[0] for r in rows}, n=0).delete()


class StatsWrite:
    """One tracked write (see :func:`stats_write`): ``before(ids)`` before changing those
    candidates, ``after(ids)`` once changed (the same ids); ``added``/``removed`` for inserts
    and deletes; ``examples(project_id, n)`` for originals added (or removed, n < 0)."""

    def __init__(self) -> None:
        self.locked: dict[int, ProjectStats] = {}
        self.delta: Counter[Key] = Counter()
        self.n_examples: Counter[int] = Counter()

    def lock(self, project_ids: Iterable[int]) -> None:
        for pid in sorted(set(project_ids) - set(self.locked)):  # one order: no deadlocks
            self.locked[pid] = stats_lock(project_id=pid)

    def _add(self, cells: Counter[Key], sign: int) -> None:
        self.lock({k[0] for k in cells})
        for k, n in cells.items():
            self.delta[k] += sign * n

    def before(self, ids: Sequence[int]) -> None:
        self._add(cells_of_ids(ids), -1)

    def after(self, ids: Sequence[int]) -> None:
        self._add(cells_of_ids(ids), +1)

    def _stale(self) -> bool:
        """Every project locked so far is stale: its cells are recounted anyway."""
        return bool(self.locked) and all(s.stale for s in self.locked.values())

    def added(self, candidates: QuerySet[Candidate]) -> None:
        """Inserted rows (lock their project first: a stale one is then not counted)."""
        if not self._stale():
            self._add(cells_of(candidates), +1)

    def removed(self, candidates: QuerySet[Candidate]) -> None:
        """Rows about to be deleted (lock their project first, as for ``added``)."""
        if not self._stale():
            self._add(cells_of(candidates), -1)

    def examples(self, project_id: int, n: int) -> None:
        self.lock([project_id])
        self.n_examples[project_id] += n

    def apply(self) -> None:
        fresh = {pid for pid, s in self.locked.items() if not s.stale}
        _upsert({k: n for k, n in self.delta.items() if k[0] in fresh})
        for pid in self.locked:
            values: dict[str, Any] = {"version": F("version") + 1}
            if self.n_examples[pid] and pid in fresh:
                values["n_examples"] = F("n_examples") + self.n_examples[pid]
            ProjectStats.objects.filter(project_id=pid).update(**values)


@contextmanager
def stats_write() -> Iterator[StatsWrite]:
    """A write that keeps the aggregates: one transaction; the projects' stats rows are locked
    from the first ``before``/``added``/``lock`` until it commits, and the difference is added
    to the cells at the end of the block (nothing when the block raises)."""
    with transaction.atomic():
        w = StatsWrite()
        yield w
        w.apply()


def project_stats_recompute(*, project_id: int) -> ProjectStats:
    """Count the project's candidates and originals again and store the result (the cells
    replaced, ``stale`` cleared, ``version`` bumped): the end of a bulk job, the safety net,
    and ``manage.py project_stats``."""
    with transaction.atomic():
        stats = stats_lock(project_id=project_id)
        CandidateCount.objects.filter(project_id=project_id).delete()
        cells = cells_of(Candidate.objects.filter(project_id=project_id))
        CandidateCount.objects.bulk_create(
            [CandidateCount(project_id=k[0], **dict(zip(KEY, k[1:], strict=True)), n=n) for k, n in cells.items() if n],
            batch_size=1000,
        )
        stats.n_examples = Example.objects.filter(project_id=project_id).count()
        stats.stale = False
        stats.version += 1
        stats.computed_at = timezone.now()
        stats.save(update_fields=["n_examples", "stale", "version", "computed_at", "updated_at"])
    return stats


def project_stats_mark_stale(*, project_id: int) -> None:
    """For a write that does not keep the cells (a script writing rows directly): the next
    read recounts them."""
    with transaction.atomic():
        stats = stats_lock(project_id=project_id)
        ProjectStats.objects.filter(pk=stats.pk).update(stale=True, version=F("version") + 1)


def project_stats_fresh(*, project_id: int) -> ProjectStats:
    """The project's stats row, recounted first when missing or stale (the safety net)."""
    stats = ProjectStats.objects.filter(project_id=project_id).first()
    if stats is None or stats.stale:
        stats = project_stats_recompute(project_id=project_id)
    return stats


def project_stats_check(*, project_id: int) -> dict[Key, tuple[int, int]]:
    """The cells where the stored aggregates differ from a full recount: ``key -> (stored,
    counted)``; the originals under the key ``("n_examples",)``. Empty when they agree."""
    stored: Counter[Key] = Counter()
    for row in CandidateCount.objects.filter(project_id=project_id).values_list("project_id", *KEY, "n"):
        stored[tuple(row[:-1])] += row[-1]
    counted = cells_of(Candidate.objects.filter(project_id=project_id))
    out = {k: (stored[k], counted[k]) for k in set(stored) | set(counted) if stored[k] != counted[k]}
    stats = ProjectStats.objects.filter(project_id=project_id).first()
    n_examples = Example.objects.filter(project_id=project_id).count()
    if stats is None or stats.stale:
        out[("stale",)] = (1, 0)
    elif stats.n_examples != n_examples:
        out[("n_examples",)] = (stats.n_examples, n_examples)
    return out
