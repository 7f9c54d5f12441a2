"""People's judgements for the loop: the labels file, and the labelling batch written when some
routed candidate has none yet. No Django.

**Labels file** (``labels.jsonl``, docs/formats.md): one JSON object per judged text,
``{"key": K, "fields": {…}, "judgements": {"reader1": {"label": L, "valid": true}, …},
"cad_label": L?}``. ``key`` is the text key of the candidate's fields
(``projects.ml.textkeys.text_hash`` over the task's text fields, in the task's order), so a
judgement follows the text, not an id of one run. Each reader named in the file answers as one
annotator.

**Batch** (``batch.tsv`` and friends, the blind-labelling layout): ``KEY<TAB>PREMISE: …<TAB>
HYPOTHESIS: …`` lines (sentiment: ``KEY<TAB>REVIEW: …``) in a seeded shuffle with the control
pairs mixed in, ``controls.tsv`` (``KEY<TAB>label``, kept from readers), ``keys.jsonl`` (each
batch key's text fields, to fold the answers back) and a README with the brief. Readers write
``readerN.tsv`` (``KEY<TAB>label<TAB>valid``); :func:`merge_answers` folds them into the labels
file.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BRIEFS = {"nli": "nli-pair.md", "sentiment": "sentiment-review.md"}
FIELD_TAGS = {"premise": "PREMISE", "hypothesis": "HYPOTHESIS", "text": "REVIEW"}
VALID = {"yes": True, "no": False, "true": True, "false": False, "1": True, "0": False}


@dataclass(frozen=True)
class Judgement:
    label: str
    valid: bool


@dataclass
class LabelsFile:
    """``entries[key]``: the readers' judgements of one text; ``fields[key]``: the text."""

    entries: dict[str, dict[str, Judgement]]
    fields: dict[str, dict[str, str]]
    cad: dict[str, str]

    @property
    def readers(self) -> list[str]:
        return sorted({r for js in self.entries.values() for r in js})

    def judged(self, key: str) -> bool:
        return bool(self.entries.get(key))


def read_labels(path: str | Path, *, labels: Sequence[str]) -> LabelsFile:
    """Read a labels file (a missing file is an empty one). ValueError naming ``file:line`` for a
    line that is not an object with a key and judgements of known labels."""
    out = LabelsFile({}, {}, {})
    p = Path(path)
    if not p.exists():
        return out
    allowed = set(labels)
    with p.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                obj = json.loads(line)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{p}:{n}: not JSON ({exc.msg})") from None
            if not isinstance(obj, dict) or not isinstance(obj.get("key"), str):
                raise ValueError(f"{p}:{n}: expected an object with a string 'key'")
            js = obj.get("judgements") or {}
            if not isinstance(js, dict):
                raise ValueError(f"{p}:{n}: 'judgements' must be an object of reader -> judgement")
            parsed: dict[str, Judgement] = {}
            for reader, j in js.items():
                if not isinstance(j, dict) or j.get("label") not in allowed or not isinstance(j.get("valid"), bool):
                    raise ValueError(
                        f"{p}:{n}: reader {reader!r}: expected {{'label': one of {sorted(allowed)}, "
                        "'valid': true|false}"
                    )
                parsed[str(reader)] = Judgement(j["label"], j["valid"])
            key = obj["key"]
            out.entries.setdefault(key, {}).update(parsed)
            if isinstance(obj.get("fields"), dict):
                out.fields[key] = {str(k): str(v) for k, v in obj["fields"].items()}
            if obj.get("cad_label") in allowed:
                out.cad[key] = obj["cad_label"]
    return out


def write_labels(path: str | Path, lf: LabelsFile) -> None:
    """Write ``lf`` sorted by key (a stable, diff-friendly file)."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    with p.open("w", encoding="utf-8") as f:
        for key in sorted(lf.entries):
            obj: dict[str, Any] = {"key": key}
            if key in lf.fields:
                obj["fields"] = lf.fields[key]
            obj["judgements"] = {r: {"label": j.label, "valid": j.valid} for r, j in sorted(lf.entries[key].items())}
            if key in lf.cad:
                obj["cad_label"] = lf.cad[key]
            f.write(json.dumps(obj, ensure_ascii=False) + "\n")


@dataclass(frozen=True)
class BatchLine:
    key: str
    fields: dict[str, str]
    cad_label: str | None = None  # a control: the data set's own label


def _batch_key(key: str) -> str:
    return "k" + key[:12]


def _render(fields: Mapping[str, str], names: Sequence[str]) -> str:
    return "\t".join(f"{FIELD_TAGS.get(n, n.upper())}: {' '.join(str(fields.get(n, '')).split())}" for n in names)


def write_batch(
    folder: str | Path,
    lines: Iterable[BatchLine],
    *,
    task: str,
    text_fields: Sequence[str],
    seed: int,
    brief_text: str = "",
) -> int:
    """Write a blind labelling batch into ``folder`` (module docstring); the number of lines.
    The order is a seeded shuffle, so nothing says which line is a control."""
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    rows = list({line.key: line for line in lines}.values())
    random.Random(seed).shuffle(rows)
    with (out / "batch.tsv").open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(f"{_batch_key(r.key)}\t{_render(r.fields, text_fields)}\n")
    with (out / "controls.tsv").open("w", encoding="utf-8") as f:
        for r in rows:
            if r.cad_label:
                f.write(f"{_batch_key(r.key)}\t{r.cad_label}\n")
    with (out / "keys.jsonl").open("w", encoding="utf-8") as f:
        for r in rows:
            f.write(json.dumps({"batch_key": _batch_key(r.key), "key": r.key, "fields": r.fields}) + "\n")
    brief = BRIEFS.get(task, "")
    (out / "brief.txt").write_text(brief + "\n", encoding="utf-8")
    readme = [
        "# Labelling batch (bench_loop)",
        "",
        f"{len(rows)} lines for blind labelling ({sum(1 for r in rows if r.cad_label)} of them controls with a",
        "known label, listed in controls.tsv, which readers must not see).",
        "",
        "Each reader reads batch.tsv only and writes `readerN.tsv`: one `KEY<TAB>label<TAB>valid` line per",
        "input line (valid: yes|no). Then fold the answers into the labels file:",
        "",
        "    python manage.py bench_loop … --merge-answers THIS_FOLDER",
        "",
        "## The brief",
        "",
        brief_text.strip() or f"(see {brief})",
        "",
    ]
    (out / "README.md").write_text("\n".join(readme), encoding="utf-8")
    return len(rows)


def read_answers(path: str | Path, *, labels: Sequence[str]) -> dict[str, Judgement]:
    """A reader's answer file (``KEY<TAB>label<TAB>valid``); ValueError naming the line."""
    allowed = {lab.lower(): lab for lab in labels}
    out: dict[str, Judgement] = {}
    p = Path(path)
    with p.open(encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if not line.strip():
                continue
            parts = [x.strip() for x in line.rstrip("\n").split("\t")]
            if len(parts) < 3 or parts[1].lower() not in allowed or parts[2].lower() not in VALID:
                raise ValueError(f"{p}:{n}: expected KEY<TAB>label<TAB>yes|no with a label of {sorted(allowed)}")
            out[parts[0]] = Judgement(allowed[parts[1].lower()], VALID[parts[2].lower()])
    return out


def merge_answers(
    folder: str | Path, lf: LabelsFile, *, labels: Sequence[str], reader_name: Callable[[str], str] | None = None
) -> dict[str, int]:
    """Fold every ``reader*.tsv`` of a batch folder into ``lf`` (a reader's file name, without
    ``.tsv``, is its name unless ``reader_name`` maps it); how many judgements per reader."""
    out = Path(folder)
    keys: dict[str, tuple[str, dict[str, str]]] = {}
    with (out / "keys.jsonl").open(encoding="utf-8") as f:
        for line in f:
            obj = json.loads(line)
            keys[obj["batch_key"]] = (obj["key"], obj["fields"])
    cad: dict[str, str] = {}
    if (out / "controls.tsv").exists():
        for line in (out / "controls.tsv").read_text(encoding="utf-8").splitlines():
            if line.strip():
                bkey, label = line.split("\t")[:2]
                cad[bkey] = label.strip()
    counts: dict[str, int] = {}
    for answers in sorted(out.glob("reader*.tsv")):
        name = reader_name(answers.stem) if reader_name else answers.stem
        got = read_answers(answers, labels=labels)
        for bkey, j in got.items():
            if bkey not in keys:
                raise ValueError(f"{answers}: key {bkey!r} is not in this batch")
            key, fields = keys[bkey]
            lf.entries.setdefault(key, {})[name] = j
            lf.fields[key] = fields
            if bkey in cad:
                lf.cad[key] = cad[bkey]
        counts[name] = len(got)
    return counts
