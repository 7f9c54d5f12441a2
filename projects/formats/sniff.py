"""What an uploaded file looks like, against the format chosen for it (issue 32.8: a TSV uploaded
as pairs-jsonl gave 201 "not valid JSON" lines and no hint about the format). Reads the first
few KiB only; says nothing when the file fits the chosen format or its shape is unclear."""

from __future__ import annotations

import zlib
from collections.abc import Iterator
from typing import Any

from projects.formats.reading import open_data
from projects.formats.whole_input import PRODIGY_LINES, json_objects, prodigy_file_keys, prodigy_message

SNIFF_BYTES = 64 * 1024
JSON_LINES = ("pairs-jsonl", "labelled-jsonl")
TABULAR = ("csv",)
ARCHIVES = ("cad-nli", "cad-sentiment", "coco-cf", "coco-captions")


def _shape(head: bytes, name: str) -> str:
    """``zip``, ``json``, ``tsv``, ``csv`` or '' (unclear) for the start of a file."""
    if head.startswith(b"PK\x03\x04"):
        return "zip"
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff")
    lines = [ln for ln in text.splitlines()[:20] if ln.strip()]
    if len(lines) > 1 and len(text) == SNIFF_BYTES:
        lines = lines[:-1]  # the last line read may be cut
    if not lines:
        return ""
    if all(ln.lstrip().startswith(("{", "[")) for ln in lines):
        return "json"
    tabs = sum("\t" in ln for ln in lines)
    commas = sum("," in ln for ln in lines)
    if tabs == len(lines):
        return "tsv"
    if commas == len(lines):
        return "csv"
    return ""


def _objects(head: bytes, lines: int = 5) -> Iterator[Any]:
    """The decoded JSON values of the first ``lines`` lines of ``head`` (lines that are not
    JSON, or nest deeper than Python recurses, are passed over)."""
    return json_objects(head.decode("utf-8", errors="replace").lstrip("\ufeff").splitlines()[:lines])


def _pairs_or_labelled(head: bytes) -> str:
    """``pairs-jsonl`` or ``labelled-jsonl`` for a file of JSON lines, by its first object."""
    for obj in _objects(head):
        if isinstance(obj, dict):
            if "original" in obj and "counterfactual" in obj:
                return "pairs-jsonl"
            if "label" in obj and "original" not in obj:
                return "labelled-jsonl"
    return ""


def format_hint(path: str, name: str, chosen: str) -> str:
    """A sentence saying which format ``name`` (stored at ``path``) looks like when that is not
    ``chosen`` ('' when it fits or cannot be told)."""
    try:
        with open_data(path) as fh:  # a gzip file: what it holds
            head = fh.read(SNIFF_BYTES)
    except (OSError, EOFError, zlib.error):
        return ""
    shape = _shape(head, name)
    shown = name or "the file"
    if shape == "json" and (keys := prodigy_file_keys(_objects(head, PRODIGY_LINES))):
        return prodigy_message(shown, chosen, keys)  # the readers' own message, before the upload is queued
    if chosen in JSON_LINES:
        if shape == "tsv":
            return f"{shown} looks like TSV (tab-separated columns), not JSON lines; choose csv (name the file .tsv)"
        if shape == "csv":
            return f"{shown} looks like CSV (comma-separated columns), not JSON lines; choose csv"
        if shape == "zip":
            return f"{shown} is a zip archive, not JSON lines; a zip is read for cad-nli, cad-sentiment and coco-cf"
        if shape == "json":
            other = _pairs_or_labelled(head)
            if other and other != chosen:
                what = "original/counterfactual pairs" if other == "pairs-jsonl" else "labelled texts (no pair)"
                return f"{shown} looks like {other} ({what}); choose {other}"
    if chosen in TABULAR:
        if shape == "json":
            other = _pairs_or_labelled(head) or "pairs-jsonl or labelled-jsonl"
            return f"{shown} looks like JSON lines, not CSV; choose {other}"
        if shape == "zip":
            return f"{shown} is a zip archive, not CSV"
    return ""
