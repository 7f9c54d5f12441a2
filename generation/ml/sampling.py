"""Which originals a run with a limit takes. No Django.

``generate --limit N`` used to take the first N originals by id; imported files are often
sorted by label (CAD's are), so a limit of 120 could give 120 originals of one label. A run
with a limit instead takes a *stratified, seeded* sample: the originals are grouped by label
(originals without a label form one more group), each group is shuffled with the run's seed,
and the groups are visited round-robin, one original each turn, in a seeded order of the
groups, until N are taken or every group is empty. A group that runs out drops out of the
round; the others go on. The sample is a function of the originals and the seed only, and
its order (the order the run walks it) is the round-robin order, so a run cancelled halfway
has still seen every label about equally.
"""

from __future__ import annotations

import random
from collections.abc import Hashable, Sequence


def stratified_sample(items: Sequence[tuple[int, Hashable]], n: int, seed: int) -> list[int]:
    """Up to ``n`` ids of ``items`` (``(id, label)``; the label may be None) in round-robin
    order across labels (module docstring). Deterministic for a seed."""
    if n <= 0:
        return []
    groups: dict[Hashable, list[int]] = {}
    for pk, label in sorted(items, key=lambda it: it[0]):
        groups.setdefault(label, []).append(pk)
    rng = random.Random(f"sample:{seed}")
    keys = sorted(groups, key=repr)
    rng.shuffle(keys)
    queues = []
    for k in keys:
        ids = groups[k]
        rng.shuffle(ids)
        queues.append(ids)
    out: list[int] = []
    turn = 0
    while len(out) < n and queues:
        q = queues[turn % len(queues)]
        out.append(q.pop())
        if not q:
            queues.remove(q)
        else:
            turn += 1
        if not queues:
            break
        turn %= len(queues)
    return out
