"""Reading and writing data files. Pure Python (no Django): benchmarks and ML code read
data through :func:`read` too.

    from projects.formats import read, PairRecord
    for rec in read("cad-nli", ["../shared/data/cad"], task="nli", split="dev"):
        ...  # OriginalRecord | PairRecord | Problem

Formats (``FORMATS``):

- ``cad-nli``: each original as an ``OriginalRecord``, then its four ``PairRecord``\\ s (which
  embed the same original). See :mod:`projects.formats.cad`.
- ``cad-sentiment``: one ``PairRecord`` per ``batch_id`` (original embedded).
- ``pairs-jsonl``: docs/formats.md §1, one ``PairRecord`` per line. See :mod:`.pairs`.
- ``csv``: pairs or originals with a header. See :mod:`.tabular`.
- ``coco-captions``: ``<imageid>_<n> \\t caption`` -> ``OriginalRecord``\\ s. See :mod:`.coco`.
- ``coco-cf``: COCO-Counterfactuals ``metadata.jsonl`` + an image folder -> ``PairRecord``\\ s.
- ``hf-datasets``: the folder this app's ``hf-datasets`` export writes (``save_to_disk``), one
  ``PairRecord`` per row. See :mod:`.hf`.
- ``labelled-jsonl``: flat labelled examples (``{"premise", "hypothesis", "label", …}`` a line)
  -> ``OriginalRecord``\\ s. See :mod:`.labelled`.

A row that cannot be read is yielded as a :class:`Problem` (``file:line: what is wrong``) and
reading goes on; an input that cannot be read at all raises :class:`FormatError` before
anything of that file is yielded.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from projects.formats import cad, coco, hf, labelled, pairs, tabular
from projects.formats.coco import write_cf as write_coco_cf
from projects.formats.hf import write_hf_datasets
from projects.formats.images import DEFAULT_MAX_IMAGE_PIXELS
from projects.formats.pairs import pair_to_json, write_pairs_jsonl
from projects.formats.reading import (
    DEFAULT_MAX_LINE_BYTES,
    TASK_FIELDS,
    TASK_LABELS,
    FormatError,
    check_split,
    parse_label_map,
)
from projects.formats.records import OriginalRecord, PairRecord, Problem, Record
from projects.formats.tabular import write_csv
from projects.formats.whole_input import check_file, check_hf_folder

FORMATS = [
    "cad-nli",
    "cad-sentiment",
    "pairs-jsonl",
    "csv",
    "coco-captions",
    "coco-cf",
    "labelled-jsonl",
    "hf-datasets",
]
# Formats read from a folder (not a file): not offered for uploads, which are files.
FOLDER_FORMATS = ("hf-datasets",)

# The task each data-set-specific format belongs to (generic formats take any task).
FORMAT_TASKS = {
    "cad-nli": "nli",
    "cad-sentiment": "sentiment",
    "coco-captions": "image-caption",
    "coco-cf": "image-caption",
}

__all__ = [
    "FOLDER_FORMATS",
    "FORMATS",
    "FORMAT_TASKS",
    "TASK_FIELDS",
    "TASK_LABELS",
    "FormatError",
    "OriginalRecord",
    "PairRecord",
    "Problem",
    "Record",
    "check_inputs",
    "check_split",
    "input_files",
    "pair_to_json",
    "parse_label_map",
    "parse_spec",
    "read",
    "read_report",
    "write_coco_cf",
    "write_csv",
    "write_hf_datasets",
    "write_pairs_jsonl",
]


def _check_format(format: str, task: str) -> None:
    if format not in FORMATS:
        raise FormatError(f"unknown format {format!r}; choose one of {', '.join(FORMATS)}")
    if task not in TASK_LABELS:
        raise FormatError(f"unknown task {task!r}; choose one of {', '.join(TASK_LABELS)}")
    wanted = FORMAT_TASKS.get(format)
    if wanted is not None and wanted != task:
        raise FormatError(f"format {format} holds {wanted} data, not {task}")


def read(
    format: str,
    paths: list[str],
    *,
    task: str,
    split: str = "",
    labels: list[str] | None = None,
    text_fields: list[str] | None = None,
    max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    image_root: str | None = None,
    image_base: str | None = None,
    label_map: dict[str, str] | None = None,
    warn: Callable[[Problem], None] | None = None,
    max_image_pixels: int = DEFAULT_MAX_IMAGE_PIXELS,
) -> Iterator[OriginalRecord | PairRecord | Problem]:
    """Stream the records of ``paths`` in ``format``.

    ``labels``: the project's label names; labels in the file are matched to them
    case-insensitively and an unknown one is a Problem (``None``: the task's default set for
    the CAD formats, anything for the generic ones). ``text_fields``: the project's text field
    names; a record with other fields is a Problem (``None``: the format's own / anything).
    ``split`` is required for the CAD formats and is the default split of originals elsewhere.
    ``image_root``: images must lie inside this folder (symlinks resolved); an image outside
    it is a Problem that does not say whether the file exists (``None``: no check).
    ``image_base``: where relative image paths start (``None``: the data file's folder).
    ``label_map``: renames of labels as written (``{"yes": "true"}``), applied before the
    case-insensitive match. ``max_image_pixels``: an image with more pixels is a Problem
    (read from its header, never decoded); every image must be a JPEG, PNG, WebP or GIF file
    that Pillow verifies (:mod:`projects.formats.images`). ``warn`` receives the notes about rows that were read but
    deserve a look (the CAD NLI rows aligned only up to whitespace, a pair or original repeated
    with the same content in ``pairs-jsonl`` or ``csv``: :mod:`.ids`).
    """
    _check_format(format, task)
    if not paths:
        raise FormatError("no input path given")
    paths = [str(p) for p in paths]
    kwargs: dict[str, Any] = {
        "split": split,
        "labels": labels,
        "text_fields": text_fields,
        "max_line_bytes": max_line_bytes,
        "image_root": image_root,
        "image_base": image_base,
        "label_map": label_map,
    }
    if format in ("cad-nli", "cad-sentiment", "coco-captions", "coco-cf", "pairs-jsonl", "csv", "hf-datasets"):
        kwargs["warn"] = warn
    if not format.startswith("cad-"):  # the CAD formats have no images
        kwargs["max_image_pixels"] = max_image_pixels
    if format == "cad-nli":
        return cad.read_nli(paths, **kwargs)
    if format == "cad-sentiment":
        return cad.read_sentiment(paths, **kwargs)
    if format == "pairs-jsonl":
        return pairs.read_pairs_jsonl(paths, **kwargs)
    if format == "csv":
        return tabular.read_csv(paths, **kwargs)
    if format == "hf-datasets":
        for path in paths:  # a folder that is not the export's layout says what it is
            check_hf_folder(path, max_bytes=None)
        return hf.read_hf_datasets(paths, **kwargs)
    if format == "labelled-jsonl":
        return labelled.read_labelled_jsonl(paths, **kwargs)
    if format == "coco-captions":
        return coco.read_captions(paths, **kwargs)
    return coco.read_cf(paths, **kwargs)


# the split names a FORMAT:PATH[:SPLIT] spec may end with (any other last part belongs to PATH,
# which may hold a colon)
SPEC_SPLITS = ("train", "dev", "test", "validation", "val")


def parse_spec(spec: str, what: str = "a data set") -> tuple[str, str, str]:
    """``FORMAT:PATH[:SPLIT]`` -> (format, path, split) — the one reading of a data spec for
    every option that takes one (warm starts, evaluation sets, the loop's originals); a ``~``
    at the start of PATH is the home folder (the shell leaves ``pairs-jsonl:~/x.jsonl`` as it
    is). ValueError naming ``what`` when it is not that shape."""
    parts = spec.split(":")
    if len(parts) < 2 or not parts[0] or not parts[1]:
        raise ValueError(f"{what} must be FORMAT:PATH[:SPLIT], got {spec!r}")
    if len(parts) >= 3 and parts[-1] in SPEC_SPLITS:
        return parts[0], os.path.expanduser(":".join(parts[1:-1])), parts[-1]
    if parts[0].startswith("cad-"):  # the CAD layouts are read by split: say so here, not "needs --split"
        raise ValueError(
            f"{what}: {parts[0]} needs a split as the last part (FORMAT:PATH:SPLIT, "
            f"SPLIT one of {', '.join(SPEC_SPLITS)}), got {spec!r}"
        )
    return parts[0], os.path.expanduser(":".join(parts[1:])), ""


def _lines(kind: str, notes: Sequence[object], limit: int) -> list[str]:
    lines = [f"{kind}: {n}" for n in notes[:limit]]
    if len(notes) > limit:
        lines.append(f"... and {len(notes) - limit} more {kind}s")
    return lines


def read_report(
    name: str, counted: str, problems: Sequence[object], warnings: Sequence[object] = (), limit: int = 20
) -> list[str]:
    """What a command says about the data it read: ``problem: …`` for each row it skipped and
    ``warning: …`` for each row read with a note (the first ``limit`` of each, then how many
    more), then ``read NAME: COUNTED[, K rows skipped][, W warnings]``."""
    notes = [f"{len(problems)} rows skipped (problems above)"] if problems else []
    notes += [f"{len(warnings)} warnings (above)"] if warnings else []
    summary = f"read {name}: {counted}" + "".join(f", {n}" for n in notes)
    return [*_lines("problem", problems, limit), *_lines("warning", warnings, limit), summary]


def input_files(format: str, paths: list[str], *, split: str = "") -> list[str]:
    """The data files ``read`` would open (the CAD directories resolved to their files;
    image folders left out). Raises :class:`FormatError` for a missing one."""
    if format not in FORMATS:
        raise FormatError(f"unknown format {format!r}; choose one of {', '.join(FORMATS)}")
    paths = [str(p) for p in paths]
    if format == "coco-cf":
        return coco.cf_split_paths(paths)[0]
    if format in FOLDER_FORMATS:  # a folder, not data files
        for path in paths:
            if not os.path.exists(path):
                raise FormatError(f"{path}: folder not found")
        return []
    if format == "coco-captions":  # a directory there is the image folder
        return [p for p in paths if not os.path.isdir(p)]
    out: list[str] = []
    for path in paths:
        if format == "cad-nli":
            out.extend(cad.nli_files(path, split).values())
        elif format == "cad-sentiment":
            out.append(cad.sentiment_file(path, split))
        else:
            out.append(path)
    return out


def check_inputs(
    format: str,
    paths: list[str],
    *,
    split: str = "",
    max_file_bytes: int | None,
    max_line_bytes: int | None,
) -> list[str]:
    """Refuse inputs that cannot be imported at all, before anything is read into the
    database: missing files, files over ``max_file_bytes``, lines over ``max_line_bytes``.
    Returns the data files; raises :class:`FormatError`. A folder format's folder must be the
    layout it reads, its files within ``max_file_bytes`` together."""
    if format in FOLDER_FORMATS:
        for path in paths:
            check_hf_folder(str(path), max_bytes=max_file_bytes)
    files = input_files(format, paths, split=split)
    for fname in files:
        check_file(fname, max_file_bytes=max_file_bytes, max_line_bytes=None)
    for fname in files:  # sizes first (cheap), then the line scan
        check_file(fname, max_file_bytes=None, max_line_bytes=max_line_bytes)
    return files
