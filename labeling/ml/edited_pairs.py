"""Edited NLI examples whose label is known by construction (issue 30). No Django.

Generated candidates are small edits of an original; f, trained on ordinary NLI pairs, is right
on only about 0.60 of CAD's human revisions and 0.69 of the generated-gold set. These rules make
such edits from the task training data itself, with a label that follows from the edit:

- **negation** of an entailed hypothesis → ``contradiction``: "A man is sleeping." → "A man is
  not sleeping." (``not`` after the first auxiliary; a hypothesis without one is skipped);
- **monotone deletion** in an entailed hypothesis → ``entailment``: dropping an adjective or
  adverb before a noun or verb makes the hypothesis weaker, so a premise that entails it
  entails the shorter one ("A young man runs." → "A man runs."); skipped under a negation,
  a quantifier like "no" / "every" (downward contexts) or when the word is the last one;
- **copy** → ``entailment`` and **negated copy** → ``contradiction``: the premise as its own
  hypothesis, and the premise negated (the simplest pairs whose label is certain).

:func:`edited_examples` returns at most ``limit`` of them (seeded), each with the rule that made
it; ``train_task_model --edited N`` adds them to f's training data.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

ENTAILMENT, CONTRADICTION = "entailment", "contradiction"
AUXILIARIES = frozenset(
    "is are was were am be been can could will would shall should may might must has have had does do did".split()
)
# downward-monotone or negative contexts: deleting a modifier there does not keep entailment
DOWNWARD = frozenset("not no never none nobody nothing every all each without n't neither nor few".split())
# common adjectives and adverbs of NLI hypotheses (a closed list: no tagger needed, no model)
MODIFIERS = frozenset(
    """young old little small big large tall short happy sad red blue green yellow black white brown
    orange pink purple gray grey dark bright long beautiful pretty older younger elderly smiling
    busy crowded empty wet dry hot cold new sunny snowy colorful asian african european american
    shirtless blond blonde bald fat thin heavy slowly quickly happily outside outdoors inside indoors
    together alone loudly quietly very""".split()
)
_WORD = re.compile(r"[A-Za-z']+|[^\sA-Za-z']")


@dataclass(frozen=True)
class EditedExample:
    fields: dict[str, str]
    label: str
    rule: str  # negation | deletion | copy | negated-copy


def _tokens(text: str) -> list[str]:
    return _WORD.findall(text)


def _join(tokens: Sequence[str]) -> str:
    out = ""
    for t in tokens:
        out += t if (not out or re.fullmatch(r"[^\sA-Za-z']", t) or t.startswith("'")) else " " + t
    return out


def negate(text: str) -> str | None:
    """``text`` with ``not`` after its first auxiliary, or None (no auxiliary, or already negative)."""
    toks = _tokens(text)
    low = [t.lower() for t in toks]
    if any(t in DOWNWARD for t in low):
        return None
    for i, t in enumerate(low):
        if t in AUXILIARIES:
            return _join([*toks[: i + 1], "not", *toks[i + 1 :]])
    return None


def deletions(text: str) -> list[str]:
    """``text`` without one of its modifiers, one variant per modifier (none in a downward context)."""
    toks = _tokens(text)
    low = [t.lower() for t in toks]
    if any(t in DOWNWARD for t in low):
        return []
    out = []
    for i, t in enumerate(low):
        if t in MODIFIERS and i + 1 < len(toks) and re.fullmatch(r"[A-Za-z']+", toks[i + 1]):
            out.append(_join([*toks[:i], *toks[i + 1 :]]))
    return out


def edited_examples(
    records: Iterable[Mapping[str, str]],
    labels: Sequence[str],
    *,
    limit: int,
    seed: int = 0,
    fields: tuple[str, str] = ("premise", "hypothesis"),
) -> list[EditedExample]:
    """At most ``limit`` edited examples from the labelled ``records`` (each a mapping with the
    two ``fields`` and ``label``), drawn with ``seed`` so that the rules are mixed evenly."""
    if ENTAILMENT not in labels or CONTRADICTION not in labels:
        raise ValueError("edited pairs need the labels entailment and contradiction (an NLI task)")
    p_field, h_field = fields
    by_rule: dict[str, list[EditedExample]] = {"negation": [], "deletion": [], "copy": [], "negated-copy": []}
    seen: set[tuple[str, str]] = set()

    def add(rule: str, premise: str, hypothesis: str, label: str) -> None:
        key = (premise, hypothesis)
        if key not in seen:
            seen.add(key)
            by_rule[rule].append(EditedExample({p_field: premise, h_field: hypothesis}, label, rule))

    for r in records:
        premise, hypothesis = str(r.get(p_field) or ""), str(r.get(h_field) or "")
        if not premise or not hypothesis:
            continue
        if r.get("label") == ENTAILMENT:
            neg = negate(hypothesis)
            if neg:
                add("negation", premise, neg, CONTRADICTION)
            for shorter in deletions(hypothesis):
                add("deletion", premise, shorter, ENTAILMENT)
        add("copy", premise, premise, ENTAILMENT)
        neg_p = negate(premise)
        if neg_p:
            add("negated-copy", premise, neg_p, CONTRADICTION)
    rng = random.Random(seed)
    for rows in by_rule.values():
        rng.shuffle(rows)
    # round-robin over the rules (the copies are many and easy: they come last in each round)
    out: list[EditedExample] = []
    order = ["negation", "deletion", "negated-copy", "copy"]
    while len(out) < limit and any(by_rule[k] for k in order):
        for k in order:
            if by_rule[k] and len(out) < limit:
                out.append(by_rule[k].pop())
    return out
