"""Control-code tagger: derives the Polyjuice code of ANY (original, counterfactual) pair from
its word-level edit, so imported human pairs get codes too.

Decision order (first match wins), on lower-cased word tokens without punctuation:

1. no word changed                                   -> ``other`` (punctuation/case only)
2-3. (negation and quantifier are decided per edit operation, step 6)
4. unless an edit changes a negation or a quantifier: same bag of words, different order ->
   ``shuffle`` (``restructure`` when the moved words include a clause connective or a phrase
   is fronted: clauses swapped, PP moved to the front); same content words (verb lemmas) with
   function words added/removed, or content words reordered -> ``restructure``
   same content words (function words added/removed/changed) in a new order, or mostly the
   same content words with their order changed     -> ``restructure``
5. a wholesale rewrite (> 70% of the tokens changed and less than half of the shorter text
   kept in order): ``other`` when not one content word survives, else ``resemantic`` (the
   clause around the kept words was replaced)
6. otherwise each edit operation gets a code (negation / quantifier when it changes those
   words; one word for one word related in WordNet — antonym, synonym, hypernym, hyponym,
   similar adjective — or a function-word swap -> ``lexical``; other replacements ->
   ``resemantic``; insertions -> ``insert``; deletions -> ``delete``) and the pair takes the
   most frequent one (ties broken in ``CODES`` order, so negation wins a tie).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass

from generation.ml import lexicons as lx
from generation.ml.rules import wordnet as wnx
from generation.ml.rules.tokens import edit_ops, words

CODES: tuple[str, ...] = (
    "negation",
    "quantifier",
    "lexical",
    "resemantic",
    "insert",
    "delete",
    "restructure",
    "shuffle",
    "other",
)
_QUANT = (
    lx.QUANTIFIERS
    - {"a", "an", "single", "pair", "group", "crowd", "bunch", "couple", "only", "little", "more", "less", "much"}
) | {"lots", "single", "another"}
_REWRITE_SHARE = 0.7
_REWRITE_KEEP = 0.5
_LEXICAL_RELATIONS = ("antonym", "synonym", "hypernym", "hyponym", "similar")


_CLAUSE_MARKERS = frozenset(
    {
        "because",
        "while",
        "when",
        "although",
        "though",
        "since",
        "if",
        "and",
        "but",
        "so",
        "after",
        "before",
        "as",
        "until",
        "unless",
        "whereas",
    }
)
_PRIORITY = {c: i for i, c in enumerate(CODES)}


@dataclass(frozen=True)
class Tag:
    code: str
    detail: str = ""
    field: str = ""


def _is_word(w: str) -> bool:
    return any(c.isalnum() for c in w)


def _neg_count(ws: list[str]) -> int:
    return sum(1 for w in ws if w in lx.NEGATION_WORDS or w in lx.NEGATED_CONTRACTIONS)


def _is_number(w: str) -> bool:
    return w.isdigit() or w in lx.NUMBER_WORDS


def _is_quant(w: str) -> bool:
    return w in _QUANT or _is_number(w)


def _lcs_len(a: list[str], b: list[str]) -> int:
    from difflib import SequenceMatcher

    return sum(m.size for m in SequenceMatcher(None, a, b, autojunk=False).get_matching_blocks())


def tag_edit(original: str, counterfactual: str) -> Tag:
    """The control code of the edit ``original`` -> ``counterfactual`` (one text field)."""
    a = [w for w in words(original) if _is_word(w)]
    b = [w for w in words(counterfactual) if _is_word(w)]
    if a == b:
        return Tag("other", "no word changed")
    ops = edit_ops(a, b)
    # whole-text patterns first: shuffle / restructure
    ca = [wnx.lemma(w, "v") for w in a if w not in lx.FUNCTION_WORDS]  # verb lemmas: riding ~ ridden
    cb = [wnx.lemma(w, "v") for w in b if w not in lx.FUNCTION_WORDS]
    op_codes: list[tuple[str, str]] = [_op_code(op, a[i1:i2], b[j1:j2]) for op, i1, i2, j1, j2 in ops]
    closed_class = any(c in ("negation", "quantifier") for c, _ in op_codes)
    if not closed_class:
        if Counter(a) == Counter(b):
            moved = {w for op, i1, i2, j1, j2 in ops for w in a[i1:i2] + b[j1:j2]}
            if moved & _CLAUSE_MARKERS or (a[0] != b[0] and {a[0], b[0]} & _CLAUSE_MARKERS):
                return Tag("restructure", "clauses reordered")
            if a[0] != b[0] and {a[0], b[0]} & lx.PREPOSITIONS:
                return Tag("restructure", "phrase fronted")
            return Tag("shuffle", "same words, new order")
        if ca and ca == cb and not all(op == "replace" and i2 - i1 == 1 and j2 - j1 == 1 for op, i1, i2, j1, j2 in ops):
            return Tag("restructure", "same content words, function words added or removed")
        if ca and Counter(ca) == Counter(cb) and ca != cb:
            return Tag("restructure", "content words reordered")
        shared = sum((Counter(ca) & Counter(cb)).values())
        if ca and cb and len(ca) >= 3 and shared >= 0.8 * max(len(ca), len(cb)):
            common_a = [w for w in ca if w in set(cb)]
            common_b = [w for w in cb if w in set(ca)]
            if _lcs_len(common_a, common_b) < 0.8 * min(len(common_a), len(common_b)):
                return Tag("restructure", "content words reordered")
    # a wholesale rewrite keeps too little to name one edit
    changed = sum(max(i2 - i1, j2 - j1) for _, i1, i2, j1, j2 in ops)
    longest, shortest = max(len(a), len(b)), min(len(a), len(b))
    if changed > _REWRITE_SHARE * longest and _lcs_len(a, b) < _REWRITE_KEEP * shortest:
        if _lcs_len(ca, cb) == 0:
            return Tag("other", "rewrite (no content word kept)")
        return Tag("resemantic", "clause rewrite around kept words")
    # one code per edit operation; the pair takes the most frequent (ties: CODES order)
    counts = Counter(c for c, _ in op_codes)
    best = min(counts, key=lambda c: (-counts[c], _PRIORITY[c]))
    return Tag(best, "; ".join(d for c, d in op_codes if c == best)[:200])


def _op_code(op: str, ra: list[str], rb: list[str]) -> tuple[str, str]:
    arrow = f"{' '.join(ra) or '-'} -> {' '.join(rb) or '-'}"
    if _neg_count(ra) != _neg_count(rb):
        return "negation", arrow
    qa, qb = [w for w in ra if _is_quant(w)], [w for w in rb if _is_quant(w)]
    if (qa or qb) and Counter(qa) != Counter(qb):
        return "quantifier", arrow
    if op == "replace" and set(ra) <= {"a", "an", "the"} and any(_is_quant(w) for w in rb):
        return "quantifier", arrow
    if op == "insert":
        return "insert", arrow
    if op == "delete":
        return "delete", arrow
    cx = [w for w in ra if w not in lx.FUNCTION_WORDS]
    cy = [w for w in rb if w not in lx.FUNCTION_WORDS]
    if len(ra) == 1 and len(rb) == 1 and not cx and not cy:
        return "lexical", f"function word: {arrow}"
    if len(cx) == 1 and len(cy) == 1 and len(ra) <= 2 and len(rb) <= 2:
        rel = wnx.relation(cx[0], cy[0], None)
        if rel in _LEXICAL_RELATIONS:
            return "lexical", f"{rel}: {arrow}"
    if not cy and cx:
        return "delete", arrow
    if not cx and cy:
        return "insert", arrow
    return "resemantic", arrow


def tag_pair(original_fields: Mapping[str, str], cf_fields: Mapping[str, str]) -> Tag:
    """The code of a pair: the changed field's edit (several changed fields: the highest-priority
    code in CODES order). The field is recorded on the Tag."""
    changed = [k for k in cf_fields if (cf_fields.get(k) or "") != (original_fields.get(k) or "")]
    if not changed:
        return Tag("other", "no field changed")
    tags = [
        Tag(t.code, t.detail, k)
        for k in changed
        for t in [tag_edit(original_fields.get(k) or "", cf_fields.get(k) or "")]
    ]
    return min(tags, key=lambda t: _PRIORITY[t.code])


def distribution(tags: list[Tag]) -> dict[str, float]:
    counts = Counter(t.code for t in tags)
    n = len(tags)
    return {c: counts.get(c, 0) / n for c in CODES} if n else {}
