"""The loop's input material, read from a data set with the product's readers: whole originals
picked by seed, the data set's own (human) counterfactuals of those originals, and the pairs of
*other* originals that serve as check items (a known answer, routed as gold) and as controls in
a labelling batch. No Django: ``projects.formats`` is pure Python.

An originals spec is ``FORMAT:PATH[:SPLIT]`` (``cad-nli:../shared/data/cad:train``), as the
evaluation sets and the warm start are given elsewhere.
"""

from __future__ import annotations

import random
from collections import defaultdict
from dataclasses import dataclass, field

from projects.formats import OriginalRecord, PairRecord, Problem, parse_spec, read


@dataclass(frozen=True)
class LoopData:
    """``originals``: the picked originals (in file order); ``human``: the data set's own
    counterfactuals of them (the "gold gain" variant); ``controls``: one pair each of other
    originals, with a known label (check items and batch controls); ``problems``: rows the
    reader could not read (reported, never fatal)."""

    originals: list[OriginalRecord]
    human: list[PairRecord]
    controls: list[PairRecord]
    available: int
    problems: list[str] = field(default_factory=list)


def load(
    spec: str,
    *,
    task: str,
    labels: list[str],
    text_fields: list[str],
    limit: int,
    seed: int,
    n_controls: int,
) -> LoopData:
    """Read ``spec`` and pick ``limit`` whole originals (with a label) by ``seed`` (all when
    ``limit`` is 0 or more than there are), then ``n_controls`` pairs of other originals (one
    per original, drawn with the same seed). The same arguments give the same picks."""
    fmt, path, split = parse_spec(spec)
    originals: dict[str, OriginalRecord] = {}
    pairs: dict[str, list[PairRecord]] = defaultdict(list)
    problems: list[str] = []
    for rec in read(fmt, [path], task=task, split=split, labels=labels, text_fields=text_fields):
        if isinstance(rec, Problem):
            problems.append(str(rec))
        elif isinstance(rec, PairRecord):
            originals.setdefault(rec.original.id, rec.original)
            pairs[rec.original.id].append(rec)
        else:
            originals.setdefault(rec.id, rec)
    ids = [i for i, o in originals.items() if o.label]
    rng = random.Random(seed)
    order = ids[:]
    rng.shuffle(order)
    n = len(order) if limit <= 0 else min(limit, len(order))
    picked = set(order[:n])
    others = [i for i in order[n:] if pairs.get(i)]
    controls = [pairs[i][rng.randrange(len(pairs[i]))] for i in others[:n_controls]]
    chosen = [i for i in ids if i in picked]
    return LoopData(
        originals=[originals[i] for i in chosen],
        human=[p for i in chosen for p in pairs.get(i, [])],
        controls=[_as_gold(p) for p in controls],
        available=len(ids),
        problems=problems,
    )


def _as_gold(p: PairRecord) -> PairRecord:
    """A control pair imported as a known answer (``gold_label``), not as a final label."""
    from dataclasses import replace

    return replace(p, label_source="gold", generator=p.generator or "human")
