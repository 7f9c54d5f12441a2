"""The words a counterfactual changed, for marking on the item page (pure: no Django).

``changed_segments(text, other)`` cuts ``text`` into runs of tokens, each flagged whether it is
not in ``other`` at that place (``difflib`` over word tokens: words, single punctuation marks,
whitespace; Chinese, Japanese and Korean characters one by one, as they are written without
spaces). The runs joined give ``text`` back exactly.
"""

from __future__ import annotations

import re
from difflib import SequenceMatcher

_CJK = "\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff"
_TOKEN = re.compile(rf"[{_CJK}]|[^\W{_CJK}]+|\s+|[^\w\s]", re.UNICODE)


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text)


def changed_segments(text: str, other: str) -> list[tuple[str, bool]]:
    """``text`` as ``(run, changed)`` pairs against ``other``: the words of ``text`` that
    ``other`` does not have there are ``changed``. Whitespace between two changed words belongs
    to their run; whitespace at a run's edge does not."""
    mine, theirs = _tokens(text), _tokens(other)
    flags = [False] * len(mine)
    for tag, i1, i2, _j1, _j2 in SequenceMatcher(None, mine, theirs, autojunk=False).get_opcodes():
        if tag in ("replace", "delete"):  # tokens of ``text`` that ``other`` lacks there
            for i in range(i1, i2):
                flags[i] = True
    for i, tok in enumerate(mine):  # a space is changed only between two changed words
        if tok.isspace():
            flags[i] = 0 < i < len(mine) - 1 and flags[i - 1] and flags[i + 1]
    runs: list[tuple[str, bool]] = []
    for tok, flag in zip(mine, flags, strict=True):
        if runs and runs[-1][1] == flag:
            runs[-1] = (runs[-1][0] + tok, flag)
        else:
            runs.append((tok, flag))
    return runs
