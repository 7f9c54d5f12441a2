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
- ``meta`` and ``scores``: JSON strings (their keys differ from pair to pair).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from projects.formats.records import PairRecord

LABEL_COLUMNS = ("original_label", "label", "target_label", "gold_label")
PROVENANCE_COLUMNS = ("generator", "perturbation", "label_source", "confidence")


def hf_columns(records: Iterable[PairRecord], *, text_fields: list[str]) -> dict[str, list[Any]]:
    """The column lists of the dataset (plain Python values; labels as names)."""
    names = ["id", "group", "split"]
    names += [f"original_{f}" for f in text_fields] + [f"counterfactual_{f}" for f in text_fields]
    names += [*LABEL_COLUMNS, *PROVENANCE_COLUMNS, "valid", "original_image", "counterfactual_image", "meta", "scores"]
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
            "meta": json.dumps(rec.meta or {}, ensure_ascii=False, sort_keys=True),
            "scores": json.dumps(rec.scores or {}, ensure_ascii=False, sort_keys=True),
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
