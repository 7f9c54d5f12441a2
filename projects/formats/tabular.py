"""``csv``: comma-separated (tab-separated when the file name ends in ``.tsv`` or the header has
tabs and no comma or semicolon; semicolon-separated when the header has semicolons and no comma,
as Excel writes CSV in many European locales),
UTF-8, with a header row. Two shapes, told apart by the header:

**Pairs** (any column starts with ``counterfactual.``) — the columns mirror the JSON keys of
``pairs-jsonl`` (see :mod:`projects.formats.pairs`), dotted::

    id, group, original.id, original.<field>…, original.label, original.image,
    original.split, original.source, original.meta,
    counterfactual.<field>…, counterfactual.label, counterfactual.target_label,
    counterfactual.generator, counterfactual.perturbation, counterfactual.label_source,
    counterfactual.confidence, counterfactual.gold_label, counterfactual.image,
    counterfactual.scores, counterfactual.valid, meta

``<field>`` are the project's text fields (e.g. ``original.premise``); ``*.meta`` and
``counterfactual.scores`` hold JSON objects; ``counterfactual.valid`` is ``true``, ``false``
(any case) or empty; an empty cell is an absent value. Required:
``id``, ``original.<field>``, ``counterfactual.<field>``; the others may be left out.
This is what ``export --format csv`` writes, and it re-imports to the same data.

**Originals** (no ``counterfactual.`` column) — ``id, <field>…, label, image, split, source,
meta``; yields :class:`OriginalRecord`\\ s (e.g. to generate counterfactuals for).

Every row must have as many cells as the header; a row that does not is a problem.

**Spreadsheets** (``export --format csv-spreadsheet``): the same columns, with OWASP's
defence against formula injection: a cell that starts with ``=``, ``+``, ``-``, ``@``, a tab
or a carriage return (a spreadsheet would run it as a formula: ``=HYPERLINK(…)``,
``=cmd|' /C calc'!A0``) or with ``'`` gets a leading ``'`` (:func:`spreadsheet_cell`), which
the spreadsheet shows as text and hides. Plain ``csv`` keeps every cell as stored, so that it
re-imports to the same data and programs read the text unchanged.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

from projects.formats import reading as r
from projects.formats.cad import csv_rows
from projects.formats.ids import SeenIds
from projects.formats.pairs import (
    RowError,
    _dict,
    _image,
    _label,
    _str,
    json_cell,
    pair_from_json,
    pair_to_json,
)
from projects.formats.records import OriginalRecord, PairRecord, Problem, Record

ORIGINAL_KEYS = ["id", "label", "image", "split", "source", "meta"]
CF_KEYS = [
    "label",
    "target_label",
    "generator",
    "perturbation",
    "label_source",
    "confidence",
    "gold_label",
    "image",
    "scores",
    "valid",
]
JSON_COLUMNS = {"original.meta", "counterfactual.scores", "meta"}


def pair_columns(text_fields: list[str]) -> list[str]:
    return [
        "id",
        "group",
        "original.id",
        *[f"original.{f}" for f in text_fields],
        "original.label",
        "original.image",
        "original.split",
        "original.source",
        "original.meta",
        *[f"counterfactual.{f}" for f in text_fields],
        *[f"counterfactual.{k}" for k in CF_KEYS],
        "meta",
    ]


def _delimiter(path: str, max_line_bytes: int) -> str:
    """Tab for a ``.tsv`` file, or when the header has tabs and neither commas nor semicolons
    (Excel's "Text (Tab delimited)" saved under another name); else a comma, or a semicolon when
    the header has semicolons and no comma (Excel's "CSV" in a locale whose decimal mark is a
    comma)."""
    if path.lower().removesuffix(".gz").endswith(".tsv"):
        return "\t"
    with r.open_data(path) as fh:
        first = fh.readline(max_line_bytes)
    if b"\t" in first and b"," not in first and b";" not in first:
        return "\t"
    return ";" if b";" in first and b"," not in first else ","


def read_csv(
    paths: list[str],
    *,
    split: str = "",
    labels: list[str] | None = None,
    text_fields: list[str] | None = None,
    max_line_bytes: int = r.DEFAULT_MAX_LINE_BYTES,
    image_root: str | None = None,
    image_base: str | None = None,
    label_map: dict[str, str] | None = None,
    max_image_pixels: int = r.DEFAULT_MAX_IMAGE_PIXELS,
    warn: Callable[[Problem], None] | None = None,
) -> Iterator[Record]:
    label_of = r.LabelMap(labels, label_map)
    seen = SeenIds(warn)  # ids across every file (identical repeats go to ``warn``)
    for path in paths:
        if not os.path.isfile(path):
            raise r.FormatError(f"{path}: file not found")
        rows = csv_rows(path, max_line_bytes=max_line_bytes, delimiter=_delimiter(path, max_line_bytes))
        first = next(rows, None)
        if first is None:
            raise r.FormatError(f"{path}: file is empty (expected a header row)")
        if isinstance(first, Problem):
            raise r.FormatError(f"{first} (in the header row)")
        written = [c.strip() for c in first[1]]  # as the file spells them, for the messages
        header = canonical_header(written, text_fields)
        if "id" not in header:
            raise r.FormatError(f"{path}:1: the header has no id column. {expected_columns(written, text_fields)}")
        if len(set(header)) != len(header):
            raise r.FormatError(f"{path}:1: the header repeats a column name")
        is_pairs = any(c.startswith("counterfactual.") for c in header)
        if is_pairs:
            found = [
                c.split(".", 1)[1]
                for c in header
                if c.startswith("original.") and c.split(".", 1)[1] not in ORIGINAL_KEYS
            ]
        else:
            found = [c for c in header if c not in ORIGINAL_KEYS]
        if msg := r.check_text_fields(found, text_fields):
            raise r.FormatError(
                f"{path}:1: text columns: {msg}. {expected_columns(written, text_fields)}{r.other_task_hint(found)}"
            )
        if not found:
            raise r.FormatError(f"{path}:1: the header names no text field column")
        base_dir = image_base or os.path.dirname(os.path.abspath(path))
        for row in rows:
            if isinstance(row, Problem):
                yield row
                continue
            lineno, cells = row
            if not cells or (len(cells) == 1 and not cells[0].strip() and len(header) > 1):
                continue  # a blank line (csv.reader gives [] for an empty one, e.g. a trailing one)
            if len(cells) != len(header):
                yield Problem(path, lineno, f"expected {len(header)} columns (as in the header), found {len(cells)}")
                continue
            values = dict(zip(header, cells, strict=True))  # lengths checked just above
            rec: OriginalRecord | PairRecord
            try:
                if is_pairs:
                    rec = pair_from_json(
                        _nest(values, found),
                        split=split,
                        label_of=label_of,
                        text_fields=text_fields,
                        base_dir=base_dir,
                        image_root=image_root,
                        max_image_pixels=max_image_pixels,
                    )
                else:
                    rec = _original(
                        values,
                        found,
                        split=split,
                        label_of=label_of,
                        base_dir=base_dir,
                        image_root=image_root,
                        max_image_pixels=max_image_pixels,
                    )
            except RowError as exc:
                yield Problem(path, lineno, str(exc))
                continue
            yield seen.check(rec, path, lineno) or rec


def canonical_header(cells: list[str], text_fields: list[str] | None) -> list[str]:
    """The header's column names stripped, and those that name a known column in another case
    (``ID``, ``Text``, ``Original.Label``: Excel users capitalise) spelled as that column."""
    known = [*ORIGINAL_KEYS, *pair_columns(list(text_fields or [])), *(text_fields or [])]
    by_fold = {name.casefold(): name for name in known}
    return [by_fold.get(c.strip().casefold(), c.strip()) for c in cells]


_BOOLEANS = {"true": True, "false": False}


def _nest(values: dict[str, str], fields: list[str]) -> dict[str, Any]:
    """A CSV row as the nested object ``pair_from_json`` validates."""
    obj: dict[str, Any] = {"original": {"fields": {}}, "counterfactual": {"fields": {}}}
    for column, cell in values.items():
        if column in JSON_COLUMNS:
            value: Any = json_cell(cell, column) if cell != "" else None
        elif column == "counterfactual.valid" and cell.strip() != "":
            value = _BOOLEANS.get(cell.strip().lower())
            if value is None:
                raise RowError(f"counterfactual.valid must be true, false or empty, not {cell!r}")
        elif column == "counterfactual.confidence" and cell != "":
            try:
                value = float(cell)
            except ValueError:
                raise RowError(f"counterfactual.confidence must be a number between 0 and 1, not {cell!r}") from None
        else:
            value = cell if cell != "" else None
        if "." not in column:
            if value is not None:
                obj[column] = value
            continue
        side, key = column.split(".", 1)
        if side not in ("original", "counterfactual"):
            continue  # an unknown column: ignored
        if key in fields:
            obj[side]["fields"][key] = cell
        elif value is not None:
            obj[side][key] = value
    obj["original"].setdefault("label", None)
    for side in ("original", "counterfactual"):
        if not obj[side]["fields"]:
            del obj[side]["fields"]
    return obj


# The header rows of the CAD files (Kaushik et al.), which have formats of their own.
CAD_HEADERS = {
    "cad-nli": {"sentence1", "sentence2", "gold_label"},
    "cad-sentiment": {"sentiment", "text", "batch_id"},
}


def expected_columns(header: list[str], text_fields: list[str] | None) -> str:
    """Which columns a csv/tsv file needs and which this one has, and the CAD format to choose
    when the header is a CAD file's."""
    fields = list(text_fields or ["text"])
    originals = ", ".join(["id", *fields, "label"])
    pairs = ", ".join(
        ["id", "original.id", *(f"original.{f}" for f in fields), "original.label"]
        + [f"counterfactual.{f}" for f in fields]
    )
    text = (
        f"Expected the columns {originals} (originals; split, source, image, meta optional) or "
        f"{pairs} (pairs); found {', '.join(header) or 'none'}."
    )
    lowered = {c.lower() for c in header}
    for fmt, columns in CAD_HEADERS.items():
        if columns <= lowered:
            text += f" This looks like a CAD file: choose the {fmt} format."
    return text


def _original(
    values: dict[str, str],
    fields: list[str],
    *,
    split: str,
    label_of: r.LabelMap,
    base_dir: str,
    image_root: str | None = None,
    max_image_pixels: int = r.DEFAULT_MAX_IMAGE_PIXELS,
) -> OriginalRecord:
    """An originals-shape CSV row as an :class:`OriginalRecord` (raises :class:`RowError`)."""
    oid = values["id"].strip()
    if not oid:
        raise RowError("id is empty")
    if msg := r.too_long("id", oid, r.MAX_ID):
        raise RowError(msg)
    obj: dict[str, Any] = {k: values[k] for k in ("image", "split", "source") if values.get(k)}
    if values.get("meta"):
        obj["meta"] = json_cell(values["meta"], "meta")
    return OriginalRecord(
        id=oid,
        fields={f: values[f] for f in fields},
        label=_label(values.get("label") or None, "label", label_of),
        image=_image(obj, "", base_dir, image_root, max_image_pixels),
        source=_str(obj, "source", "", limit=r.MAX_SOURCE),
        split=_str(obj, "split", "", limit=r.MAX_SPLIT) or split,
        meta=_dict(obj, "meta", ""),
    )


# What a spreadsheet takes for the start of a formula (OWASP, "CSV Injection"), and the quote
# that makes a cell text.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
TEXT_QUOTE = "'"


def spreadsheet_cell(value: str) -> str:
    """``value`` with a leading ``'`` when a spreadsheet would read it as a formula; one that
    already starts with ``'`` gets one too (the spreadsheet hides the first, so it shows the
    value as stored)."""
    return TEXT_QUOTE + value if value.startswith((*FORMULA_STARTS, TEXT_QUOTE)) else value


def write_csv(
    records: Iterable[PairRecord],
    fh: IO[str],
    *,
    text_fields: list[str] | None = None,
    spreadsheet: bool = False,
) -> int:
    """Write pairs as CSV (the pairs shape above) to the text stream ``fh`` (open it with
    ``newline=""``). ``text_fields`` fixes the field columns; by default, the first
    record's. ``spreadsheet``: every cell through :func:`spreadsheet_cell` (the
    ``csv-spreadsheet`` export). Returns how many rows were written."""
    writer = csv.writer(fh, lineterminator="\n")
    # csv quotes a cell that holds "\n" (the line end) but not a lone "\r", which readers and
    # spreadsheets take for a line break (the row split in two, its second half a row of its
    # own): a row with one is written with every cell quoted.
    quote_all = csv.writer(fh, lineterminator="\n", quoting=csv.QUOTE_ALL)
    header: list[str] | None = None
    n = 0
    for rec in records:
        if header is None:
            fields = list(text_fields or rec.original.fields)
            header = pair_columns(fields)
            writer.writerow(header)
        obj = pair_to_json(rec)
        row: list[str] = []
        for column in header:
            if "." not in column:
                value = obj.get(column)
            else:
                side, key = column.split(".", 1)
                part = obj[side]
                value = part["fields"].get(key) if key in fields else part.get(key)
            if value is None:
                row.append("")
            elif isinstance(value, bool):
                row.append("true" if value else "false")
            elif isinstance(value, dict):
                row.append(json.dumps(value, ensure_ascii=False, sort_keys=True))
            elif isinstance(value, float):
                row.append(repr(value))
            else:
                row.append(str(value))
        cells = [spreadsheet_cell(cell) for cell in row] if spreadsheet else row
        (quote_all if any("\r" in cell for cell in cells) else writer).writerow(cells)
        n += 1
    if header is None and text_fields:
        writer.writerow(pair_columns(list(text_fields)))
    return n
