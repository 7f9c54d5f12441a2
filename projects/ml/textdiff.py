"""Word-level diff of an original and its counterfactual (plain Python, no Django).

Tokens are words, punctuation marks and the whitespace between them, so joining the
segments of either side gives that side's text back exactly."""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")


@dataclass(frozen=True)
class Segment:
    op: str  # "equal" | "del" | "ins"
    text: str


def tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def word_diff(original: str, counterfactual: str) -> list[Segment]:
    """Segments that read as the edit: ``del`` (only in the original), ``ins`` (only in the
    counterfactual) and ``equal`` runs, in order (difflib over tokens, no junk heuristic).
    Two changes separated only by whitespace read as one ("works for" → "walks away from")."""
    a, b = tokens(original or ""), tokens(counterfactual or "")
    runs: list[list[str]] = []  # [kind, a_text, b_text], kind "equal" | "change"
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        kind = "equal" if op == "equal" else "change"
        runs.append([kind, "".join(a[i1:i2]), "".join(b[j1:j2])])
    merged: list[list[str]] = []
    i = 0
    while i < len(runs):
        run = runs[i]
        if (
            run[0] == "equal"
            and not run[1].strip()
            and merged
            and merged[-1][0] == "change"
            and i + 1 < len(runs)
            and runs[i + 1][0] == "change"
        ):
            nxt = runs[i + 1]
            merged[-1] = ["change", merged[-1][1] + run[1] + nxt[1], merged[-1][2] + run[2] + nxt[2]]
            i += 2
            continue
        merged.append(list(run))
        i += 1
    out: list[Segment] = []
    for kind, old, new in merged:
        if kind == "equal":
            out.append(Segment("equal", old))
            continue
        if old:
            out.append(Segment("del", old))
        if new:
            out.append(Segment("ins", new))
    return out
