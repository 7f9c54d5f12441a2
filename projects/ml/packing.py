"""Several short token sequences in one row of a transformer batch, each attending only to
itself: what the perplexity LM and the MiniLM encoder run on instead of padded batches. No
Django; torch is imported where a batch is built.

A padded batch computes every row to the length of its longest text. The project's texts are
short and of uneven length (the perplexity filter's edit windows, the similarity filter's
sentences), so much of what was computed was padding. Packed, a row of ``width`` positions
holds as many sequences as fit (best fit, longest first), a 4-D mask keeps each sequence to its
own positions, and each sequence's position ids count from where it would stand alone, so the
model computes what it computes for the sequence on its own, up to float rounding. A causal
LM's rows may start with a shared ``prefix`` (its BOS token): every sequence of the row attends
to it, so it is computed once per row rather than once per text.

The caller checks, once per model, that packed and padded outputs agree: a model that ignores
``position_ids`` or a 4-D ``attention_mask`` would not.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any


def pack_rows(lengths: Sequence[int], capacity: int) -> list[list[int]]:
    """Indices of ``lengths`` grouped into rows whose lengths sum to at most ``capacity``:
    best fit, longest first (ties by index), so the grouping depends only on the lengths. A
    length above ``capacity`` gets a row of its own."""
    # rows_by_free[f]: the rows with exactly f positions left
    rows: list[list[int]] = []
    free: list[int] = []
    rows_by_free: list[list[int]] = [[] for _ in range(capacity + 1)]
    for i in sorted(range(len(lengths)), key=lambda i: (-lengths[i], i)):
        n = lengths[i]
        target = next((f for f in range(n, capacity + 1) if rows_by_free[f]), None) if n <= capacity else None
        if target is None:
            rows.append([i])
            left = max(capacity - n, 0)
            free.append(left)
            rows_by_free[left].append(len(rows) - 1)
            continue
        r = rows_by_free[target].pop()
        rows[r].append(i)
        free[r] = target - n
        rows_by_free[free[r]].append(r)
    return rows


@dataclass
class PackedBatch:
    """One forward pass worth of packed rows. ``spans[k]`` is (item, row, start, length): where
    the item's own tokens lie (after the row's shared prefix)."""

    input_ids: Any  # (rows, width) long
    position_ids: Any  # (rows, width) long
    attention_mask: Any  # (rows, 1, width, width) additive float: 0 where attended
    spans: list[tuple[int, int, int, int]]
    prefix_len: int

    @property
    def width(self) -> int:
        return int(self.input_ids.shape[1])


def packed_batches(
    sequences: Sequence[Sequence[int]],
    *,
    width: int,
    causal: bool,
    dtype: Any,
    prefix: Sequence[int] = (),
    max_tokens: int = 2048,
    pad_id: int = 0,
) -> Iterator[PackedBatch]:
    """``sequences`` (token ids, each non-empty) in packed rows of at least ``width`` positions
    (more when one sequence needs it), ``prefix`` first in every row; rows grouped so a batch
    holds at most ``max_tokens`` positions (at least one row). ``causal``: a token sees the
    tokens before it; otherwise every token of its sequence. Padding sees only itself (and the
    prefix)."""
    import torch

    if any(len(s) == 0 for s in sequences):
        raise ValueError("packed_batches: every sequence needs at least one token")
    if not sequences:
        return
    n_pre = len(prefix)
    capacity = max(width, n_pre + max(len(s) for s in sequences)) - n_pre
    rows = pack_rows([len(s) for s in sequences], capacity)
    per_batch = max(1, max_tokens // (capacity + n_pre))
    blocked = torch.finfo(dtype).min
    for r0 in range(0, len(rows), per_batch):
        chunk = rows[r0 : r0 + per_batch]
        w = n_pre + max(sum(len(sequences[i]) for i in members) for members in chunk)
        input_ids = torch.full((len(chunk), w), pad_id, dtype=torch.long)
        positions = torch.zeros((len(chunk), w), dtype=torch.long)
        allow = torch.eye(w, dtype=torch.bool).repeat(len(chunk), 1, 1)
        spans: list[tuple[int, int, int, int]] = []
        for r, members in enumerate(chunk):
            if n_pre:
                input_ids[r, :n_pre] = torch.tensor(list(prefix), dtype=torch.long)
                positions[r, :n_pre] = torch.arange(n_pre)
                seen = torch.ones((w, n_pre), dtype=torch.bool)
                allow[r, :, :n_pre] = seen.tril() if causal else seen
            s = n_pre
            for i in members:
                seq = sequences[i]
                n = len(seq)
                input_ids[r, s : s + n] = torch.tensor(list(seq), dtype=torch.long)
                positions[r, s : s + n] = torch.arange(n_pre, n_pre + n)
                block = torch.ones((n, n), dtype=torch.bool)
                allow[r, s : s + n, s : s + n] = block.tril() if causal else block
                spans.append((i, r, s, n))
                s += n
        mask = torch.zeros((len(chunk), 1, w, w), dtype=dtype)
        mask.masked_fill_(~allow.unsqueeze(1), blocked)
        yield PackedBatch(input_ids, positions, mask, spans, n_pre)
