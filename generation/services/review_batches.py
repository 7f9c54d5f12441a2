"""Whole-review judgements for the sentiment validity fixture (issue 31.1). No database.

A counterfactual review is one text with one label: that is what h, the export and every model
trained on it see, so the sentiment fixture judges the whole edited review, not the edited
sentence. This module

* marks the edits of a review the way a reader of an export meets them (:func:`marked`:
  ``[[new words]]`` for inserted or replacing words, ``[[deleted: old words]]`` for removed
  ones);
* writes a blind reader batch (:func:`write_batch`: ``batch.tsv`` of ``KEY<TAB>REVIEW: ...``
  lines, CAD human revisions mixed in as controls, shuffled, nothing naming a generator or
  code; ``controls.tsv`` with the controls' CAD labels; ``brief.txt``), and
* reads the readers' answers back (:func:`merge_readers`: ``reader1.tsv``, ``reader2.tsv`` of
  ``KEY<TAB>label<TAB>valid`` lines) into fixture rows whose ``valid`` and ``flip`` are the
  mean over readers (0, 0.5 or 1), with each reader's answer kept in ``readers``, and
  :func:`agreement` (per-reader control accuracy, raw agreement and Cohen's kappa on the
  candidate lines).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from projects.ml.textdiff import word_diff

BRIEF = "sentiment-review.md"


def marked(original: str, candidate: str) -> str:
    """The candidate review with its edits marked: ``[[new]]`` for words that replaced others
    or were inserted, ``[[deleted: old]]`` for words removed (difflib over words and
    punctuation, whitespace kept)."""
    segs = word_diff(original, candidate)
    out: list[str] = []
    i = 0
    while i < len(segs):
        s = segs[i]
        if s.op == "equal":
            out.append(s.text)
        elif s.op == "del" and i + 1 < len(segs) and segs[i + 1].op == "ins":
            out.append(_bracket(segs[i + 1].text))
            i += 1
        elif s.op == "del":
            out.append(_bracket(s.text, deleted=True))
        else:
            out.append(_bracket(s.text))
        i += 1
    return "".join(out)


def _bracket(text: str, *, deleted: bool = False) -> str:
    core = text.strip()
    lead = text[: len(text) - len(text.lstrip())]
    trail = text[len(text.rstrip()) :]
    if not core:
        return text
    return f"{lead}[[{'deleted: ' if deleted else ''}{core}]]{trail}"


def _one_line(text: str) -> str:
    return " ".join(text.replace("\t", " ").split())


def review_row(p: Any) -> dict[str, Any]:
    """A fixture row for a pooled candidate (``validity_fixture.Pooled``) of a review: the
    whole original and edited review, judgement empty."""
    field = str(p.cand.meta.get("field") or next(iter(p.original.fields)))
    return {
        "key": p.key,
        "original_id": p.original.id,
        "label": p.original.label,
        "target_label": p.cand.target_label,
        "code": p.cand.perturbation,
        "field": field,
        "detail": str(p.cand.meta.get("detail", "")),
        "original": p.original.fields[field],
        "candidate": p.cand.fields[field],
        "valid": None,
        "flip": None,
        "readers": [],
    }


def control_key(ident: str) -> str:
    """A control line's key: looks like a candidate's (16 hex), says nothing of what it is."""
    return hashlib.sha1(f"control:{ident}".encode()).hexdigest()[:16]


def write_batch(
    folder: Path,
    rows: Sequence[dict[str, Any]],
    controls: Sequence[tuple[str, str, str]],
    *,
    seed: int = 0,
) -> dict[str, int]:
    """``batch.tsv``, ``controls.tsv`` and ``brief.txt`` in ``folder`` for the fixture ``rows``
    (each with ``key``, ``original`` and ``candidate`` whole reviews) and ``controls``
    (id, review text, CAD label), shuffled with ``seed``. The REQUEST file is left to the
    caller, written last."""
    folder.mkdir(parents=True, exist_ok=True)
    lines = [(r["key"], marked(r["original"], r["candidate"])) for r in rows]
    ctl = [(control_key(ident), text, label) for ident, text, label in controls]
    lines += [(k, text) for k, text, _ in ctl]
    keys = [k for k, _ in lines]
    if len(set(keys)) != len(keys):
        raise ValueError("duplicate keys in a reader batch")
    random.Random(seed).shuffle(lines)
    with open(folder / "batch.tsv", "w", encoding="utf-8") as fh:
        for k, text in lines:
            fh.write(f"{k}\tREVIEW: {_one_line(text)}\n")
    with open(folder / "controls.tsv", "w", encoding="utf-8") as fh:
        for k, _, label in ctl:
            fh.write(f"{k}\t{label}\n")
    (folder / "brief.txt").write_text(BRIEF + "\n", encoding="utf-8")
    return {"lines": len(lines), "candidates": len(rows), "controls": len(ctl)}


def read_answers(path: Path) -> dict[str, tuple[str, bool]]:
    """``KEY<TAB>label<TAB>valid`` lines -> key -> (label, valid)."""
    out: dict[str, tuple[str, bool]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        parts = [p.strip() for p in line.split("\t")]
        if len(parts) < 3 or not parts[0]:
            continue
        out[parts[0]] = (parts[1].lower(), parts[2].lower() in ("yes", "y", "true", "1"))
    return out


def merge_readers(
    rows: Iterable[dict[str, Any]], answers: Sequence[dict[str, tuple[str, bool]]], *, judged_on: str
) -> list[dict[str, Any]]:
    """Fixture rows judged by every reader that answered them: ``readers`` (each reader's label
    and valid), ``valid`` = share of readers who found it valid, ``flip`` = share who gave a
    label other than the original's."""
    out = []
    for r in rows:
        got = [a[r["key"]] for a in answers if r["key"] in a]
        if not got:
            continue
        row = dict(r)
        row["readers"] = [{"label": lab, "valid": ok} for lab, ok in got]
        row["valid"] = round(sum(ok for _, ok in got) / len(got), 3)
        row["flip"] = round(sum(lab != r["label"] for lab, _ in got) / len(got), 3)
        row["judged_on"] = judged_on
        out.append(row)
    return out


def _kappa(a: Sequence[Any], b: Sequence[Any]) -> float | None:
    n = len(a)
    if n == 0:
        return None
    po = sum(x == y for x, y in zip(a, b, strict=True)) / n
    cats = set(a) | set(b)
    pe = sum((list(a).count(c) / n) * (list(b).count(c) / n) for c in cats)
    return round((po - pe) / (1 - pe), 3) if pe < 1 else None


def agreement(
    answers: Sequence[dict[str, tuple[str, bool]]], controls: dict[str, str], candidate_keys: Iterable[str]
) -> dict[str, Any]:
    """Each reader's accuracy on the controls; on the candidate lines both answered, raw
    agreement and Cohen's kappa for the label and for validity."""
    out: dict[str, Any] = {"controls": len(controls), "readers": []}
    for a in answers:
        hits = [a[k][0] == lab for k, lab in controls.items() if k in a]
        out["readers"].append(
            {"answered": len(a), "control_accuracy": round(sum(hits) / len(hits), 3) if hits else None}
        )
    if len(answers) >= 2:
        a, b = answers[0], answers[1]
        both = [k for k in candidate_keys if k in a and k in b]
        la, lb = [a[k][0] for k in both], [b[k][0] for k in both]
        va, vb = [a[k][1] for k in both], [b[k][1] for k in both]
        out.update(
            both=len(both),
            label_agreement=round(sum(x == y for x, y in zip(la, lb, strict=True)) / len(both), 3) if both else None,
            label_kappa=_kappa(la, lb),
            valid_agreement=round(sum(x == y for x, y in zip(va, vb, strict=True)) / len(both), 3) if both else None,
            valid_kappa=_kappa(va, vb),
        )
    return out


def read_rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]


__all__ = [
    "agreement",
    "control_key",
    "marked",
    "merge_readers",
    "read_answers",
    "read_rows",
    "review_row",
    "write_batch",
]
