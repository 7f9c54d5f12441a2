"""``hf-datasets``: a project's pairs as a Hugging Face ``datasets`` directory (written by
``Dataset.save_to_disk``; read it back with ``datasets.load_from_disk(PATH)``). No Django;
``datasets`` is imported when a directory is written.

One row per pair, columns in this order:

- ``id``, ``group``, ``split`` (the original's split);
- ``original_<field>`` and ``counterfactual_<field>`` for each text field of the task;
- ``original_label``, ``label``, ``target_label``, ``gold_label``: ``ClassLabel`` features over
  the project's labels (``None`` where there is no label);
- provenance: ``generator``, ``perturbation``, ``label_source`` (``human`` | ``auto`` |
  ``gold`` | ``imported`` | ``""``), ``confidence`` (float or ``None``);
- ``valid`` (bool or ``None``: FORMATS §1 ``counterfactual.valid``, the judgement that the
  counterfactual is fluent, sensible text; ``None`` when not judged), so an export with
  ``--include-invalid`` still tells the invalid pairs apart;
- ``original_image``, ``counterfactual_image`` (paths as stored, ``""`` for text tasks);
- ``meta`` and ``scores``: JSON strings, keys in their stored order (their keys differ from
  pair to pair);
- ``original_id``, ``original_source``, ``original_meta`` (JSON string): the original's own id,
  source and meta, so that the directory re-imports to the same data (added last, after the
  columns above; a directory written before them re-imports with the original's id taken from
  ``group``, else the pair's ``id``, as in pairs-jsonl).

:func:`read_hf_datasets` reads such a directory back (``import_data --format hf-datasets``):
each row becomes the pairs-jsonl object it was written from and is checked as one
(:func:`projects.formats.pairs.pair_from_json`), so export -> import -> export gives the same
data. A folder that is not this layout is refused as a whole
(:func:`projects.formats.whole_input.check_hf_folder`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from projects.formats import reading as r
from projects.formats.ids import SeenIds
from projects.formats.pairs import RowError, json_cell, pair_or_problem
from projects.formats.records import PairRecord, Problem, Record
from projects.formats.whole_input import ORIGINAL_COLUMNS, hf_folder_fields

LABEL_COLUMNS = ("original_label", "label", "target_label", "gold_label")
PROVENANCE_COLUMNS = ("generator", "perturbation", "label_source", "confidence")


def hf_columns(records: Iterable[PairRecord], *, text_fields: list[str]) -> dict[str, list[Any]]:
    """The column lists of the dataset (plain Python values; labels as names)."""
    names = ["id", "group", "split"]
    names += [f"original_{f}" for f in text_fields] + [f"counterfactual_{f}" for f in text_fields]
    names += [*LABEL_COLUMNS, *PROVENANCE_COLUMNS, "valid", "original_image", "counterfactual_image", "meta", "scores"]
    names += ORIGINAL_COLUMNS
    cols: dict[str, list[Any]] = {n: [] for n in names}
    for rec in records:
        row: dict[str, Any] = {
            "id": rec.id,
            "group": rec.group,
            "split": rec.original.split,
            "original_label": rec.original.label,
            "label": rec.cf_label,
            "target_label": rec.target_label,
            "gold_label": rec.gold_label,
            "generator": rec.generator,
            "perturbation": rec.perturbation,
            "label_source": rec.label_source,
            "confidence": rec.confidence,
            "valid": rec.valid,
            "original_image": rec.original.image,
            "counterfactual_image": rec.cf_image,
            "meta": json.dumps(rec.meta or {}, ensure_ascii=False),
            "scores": json.dumps(rec.scores or {}, ensure_ascii=False),
            "original_id": rec.original.id,
            "original_source": rec.original.source,
            "original_meta": json.dumps(rec.original.meta or {}, ensure_ascii=False),
        }
        for f in text_fields:
            row[f"original_{f}"] = str(rec.original.fields.get(f, ""))
            row[f"counterfactual_{f}"] = str(rec.cf_fields.get(f, ""))
        for n in names:
            cols[n].append(row[n])
    return cols


def write_hf_datasets(records: Iterable[PairRecord], path: str, *, labels: list[str], text_fields: list[str]) -> int:
    """Write the pairs to the directory ``path`` with ``save_to_disk``; returns the row count.
    A label that is not among ``labels`` is a ``ValueError`` (the ClassLabel cannot hold it)."""
    import datasets
    from datasets import ClassLabel, Dataset, Features, Value

    cols = hf_columns(records, text_fields=text_fields)
    index = {name: i for i, name in enumerate(labels)}
    for c in LABEL_COLUMNS:
        bad = sorted({v for v in cols[c] if v is not None and v not in index})
        if bad:
            raise ValueError(f"{c}: label(s) {', '.join(bad)} not in the project's labels {', '.join(labels)}")
        cols[c] = [None if v is None else index[v] for v in cols[c]]
    features = Features(
        {
            n: (
                ClassLabel(names=list(labels))
                if n in LABEL_COLUMNS
                else Value("float64")
                if n == "confidence"
                else Value("bool")
                if n == "valid"
                else Value("string")
            )
            for n in cols
        }
    )
    bars = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()  # no progress bar on the command's stderr / the worker log
    try:
        Dataset.from_dict(cols, features=features).save_to_disk(path)
    finally:
        if bars:
            datasets.enable_progress_bars()
    return len(cols["id"])


def _json_text(value: Any, column: str) -> dict[str, Any] | None:
    """A ``meta`` / ``scores`` column: JSON text (as the exporter writes it) or, from a folder
    another tool wrote, an object already; empty is ``None``."""
    if value is None or value == "":
        return None
    if isinstance(value, str):
        obj = json_cell(value, column)
    elif msg := r.unstorable(obj := value, where=column):
        raise RowError(msg)
    return obj if obj else None


def hf_row_to_pair(row: dict[str, Any], fields: list[str], names: dict[str, list[str]]) -> dict[str, Any]:
    """A row of the directory as the pairs-jsonl object it was written from (labels as the
    ClassLabel names; ``names``: each label column's names)."""

    def label(column: str) -> Any:
        value = row.get(column)
        if isinstance(value, int) and not isinstance(value, bool) and column in names:
            if not 0 <= value < len(names[column]):
                raise RowError(f"{column} {value} is not a label of the directory ({', '.join(names[column])})")
            return names[column][value]
        return value

    def text(column: str) -> Any:
        value = row.get(column)
        return value if value != "" else None

    original: dict[str, Any] = {
        "fields": {f: row.get(f"original_{f}") for f in fields},
        "label": label("original_label"),
    }
    cf: dict[str, Any] = {"fields": {f: row.get(f"counterfactual_{f}") for f in fields}}
    for key, value in (
        ("id", text("original_id")),
        ("image", text("original_image")),
        ("split", text("split")),
        ("source", text("original_source")),
        ("meta", _json_text(row.get("original_meta"), "original_meta")),
    ):
        if value is not None:
            original[key] = value
    for key, value in (
        ("label", label("label")),
        ("target_label", label("target_label")),
        ("gold_label", label("gold_label")),
        ("generator", text("generator")),
        ("perturbation", text("perturbation")),
        ("label_source", text("label_source")),
        ("confidence", row.get("confidence")),
        ("valid", row.get("valid")),
        ("image", text("counterfactual_image")),
        ("scores", _json_text(row.get("scores"), "scores")),
    ):
        if value is not None:
            cf[key] = value
    obj: dict[str, Any] = {"id": row.get("id"), "original": original, "counterfactual": cf}
    if row.get("group"):
        obj["group"] = row["group"]
    if meta := _json_text(row.get("meta"), "meta"):
        obj["meta"] = meta
    return obj


def read_hf_datasets(
    paths: list[str],
    *,
    split: str = "",
    labels: list[str] | None = None,
    text_fields: list[str] | None = None,
    image_root: str | None = None,
    image_base: str | None = None,
    label_map: dict[str, str] | None = None,
    max_image_pixels: int = r.DEFAULT_MAX_IMAGE_PIXELS,
    warn: Callable[[Problem], None] | None = None,
    **_: object,
) -> Iterator[Record]:
    """The pairs of the hf-datasets export folders ``paths``, one per row (a problem names the
    folder and the row, 1-based). Labels are read as their ClassLabel names and matched to
    ``labels`` like any file's; the folder's text fields must be ``text_fields``."""
    label_of = r.LabelMap(labels, label_map)
    seen = SeenIds(warn)
    for path in paths:
        fields = hf_folder_fields(path)
        if fields is None:
            raise r.FormatError(f"{path}: not a folder written by the hf-datasets export; nothing was imported")
        if msg := r.check_text_fields(fields, text_fields):
            raise r.FormatError(
                f"{path}: its columns hold the text fields {', '.join(fields)}: {msg}; nothing was imported."
                + r.other_task_hint(fields)
            )
        ds = _load(path)
        names = {c: list(ds.features[c].names) for c in LABEL_COLUMNS if hasattr(ds.features.get(c), "names")}
        base_dir = image_base or os.path.abspath(path)
        for n, row in enumerate(ds, 1):
            try:
                obj = hf_row_to_pair(row, fields, names)
            except RowError as exc:
                yield Problem(path, n, str(exc))
                continue
            yield pair_or_problem(
                obj,
                path,
                n,
                seen=seen,
                split=split,
                label_of=label_of,
                text_fields=text_fields,
                base_dir=base_dir,
                image_root=image_root,
                max_image_pixels=max_image_pixels,
            )


def _load(path: str) -> Any:
    """``datasets.load_from_disk(path)`` as a ``Dataset`` (a :class:`FormatError` if it cannot be)."""
    import datasets

    bars = datasets.is_progress_bar_enabled()
    datasets.disable_progress_bars()
    try:
        ds = datasets.load_from_disk(path)
    except Exception as exc:  # noqa: BLE001 - datasets raises many kinds for a damaged folder
        raise r.FormatError(f"{path}: the folder cannot be read by datasets.load_from_disk ({exc})") from None
    finally:
        if bars:
            datasets.enable_progress_bars()
    if not isinstance(ds, datasets.Dataset):
        raise r.FormatError(f"{path}: not a folder written by the hf-datasets export; nothing was imported")
    return ds
