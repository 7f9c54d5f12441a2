"""Checks that refuse an input as a whole, before any row of it is read into a project: a
missing file or one over the size limit, a binary file (an image, an archive, Parquet/Arrow,
UTF-16 text), a file that is not UTF-8, a folder given as a file, one JSON array or a Prodigy
annotation file given as JSON lines. Each says once what the input is and what to do, instead
of a problem per line. Pure Python (no Django)."""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import Any

from projects.formats.encoding import legacy_text, not_utf8_message
from projects.formats.reading import (
    GZIP_ERRORS,
    FormatError,
    gzip_damaged,
    is_gzip,
    json_loads,
    open_data,
    other_task_hint,
    raw_lines,
)
from projects.formats.records import Problem


def check_file(path: str, *, max_file_bytes: int | None, max_line_bytes: int | None) -> None:
    """Refuse a file that is missing, larger than ``max_file_bytes``, has a line longer
    than ``max_line_bytes`` or is not UTF-8 (raises :class:`FormatError`; the last two in
    the line scan, which runs when ``max_line_bytes`` is given). Checks the size with
    ``stat`` first, so a 2 GB file is refused without being read."""
    if os.path.isdir(path):
        raise FormatError(f"{path}: {folder_message(path)}")
    if not os.path.isfile(path):
        raise FormatError(f"{path}: file not found")
    size = os.path.getsize(path)
    if max_file_bytes is not None and size > max_file_bytes:
        raise FormatError(
            f"{path}: file is {human_size(size)}, larger than the limit of {human_size(max_file_bytes)} "
            "(COUNTERPART_MAX_UPLOAD_BYTES); nothing was imported"
        )
    if max_file_bytes is not None and is_gzip(path):
        _check_unpacked_size(path, max_file_bytes)
    if max_line_bytes is None:
        return
    try:
        with open_data(path) as fh:  # a gzip file: what it holds
            kind = binary_kind(fh.read(SNIFF_BYTES))
    except GZIP_ERRORS as exc:
        raise gzip_damaged(path, exc) from None
    if kind in UTF16:
        raise FormatError(
            f'{path}: this file is {kind} text (Excel\'s "Unicode text" saves it so); save it as UTF-8 '
            '("CSV UTF-8") and import it again; nothing was imported'
        )
    if kind is not None:
        more = READABLE if kind in DATA_FILES else ""
        raise FormatError(f"{path}: this is not a text file ({kind}); nothing was imported{more}")
    first_bad: tuple[int, bytes, UnicodeDecodeError] | None = None
    bad_lines = 0
    for lineno, raw in raw_lines(path, max_line_bytes):
        if raw is None:
            raise FormatError(
                f"{path}:{lineno}: line is longer than {human_size(max_line_bytes)} "
                "(COUNTERPART_MAX_LINE_BYTES); nothing was imported"
            )
        if raw.isascii():
            continue
        try:
            raw.decode("utf-8")
        except UnicodeDecodeError as exc:  # the encoding is the file's: refused once, not per line
            bad_lines += 1
            first_bad = first_bad or (lineno, raw, exc)
    if first_bad is not None:
        raise FormatError(not_utf8_message(path, *first_bad, bad_lines))


SNIFF_BYTES = 4096
# Leading bytes of the binary files people upload by mistake, and what to call them.
MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "PNG image"),
    (b"\xff\xd8\xff", "JPEG image"),
    (b"GIF87a", "GIF image"),
    (b"GIF89a", "GIF image"),
    (b"%PDF-", "PDF document"),
    (b"PK\x03\x04", "ZIP archive, or an Excel/Word file"),
    (b"\x1f\x8b", "gzip archive"),
    (b"BZh", "bzip2 archive"),
    (b"\xfd7zXZ\x00", "xz archive"),
    (b"7z\xbc\xaf\x27\x1c", "7-Zip archive"),
    (b"SQLite format 3\x00", "SQLite database"),
    (b"\xd0\xcf\x11\xe0", "old Office document"),
    (b"PAR1", "Parquet file"),
    (b"ARROW1", "Apache Arrow file"),
    (b"\xff\xff\xff\xff", "Apache Arrow file, as Hugging Face datasets' save_to_disk writes"),
    (b"\xff\xfe", "UTF-16 (little-endian)"),
    (b"\xfe\xff", "UTF-16 (big-endian)"),
)
UTF16 = ("UTF-16 (little-endian)", "UTF-16 (big-endian)")
DATA_FILES = ("Parquet file", "Apache Arrow file", "Apache Arrow file, as Hugging Face datasets' save_to_disk writes")
READABLE = (
    ". Import reads text files: JSON lines (pairs-jsonl, labelled-jsonl), csv/tsv, and the CAD and "
    "COCO layouts, and the folders the hf-datasets export writes (docs/data-and-formats.md)"
)


# The hf-datasets export's own columns (projects/formats/hf.py) named original_* /
# counterfactual_* that are not text fields.
ORIGINAL_COLUMNS = ("original_id", "original_source", "original_meta")
NOT_FIELDS = {"original_label", "original_image", "counterfactual_image", *ORIGINAL_COLUMNS}


def hf_text_fields(features: dict[str, Any]) -> list[str] | None:
    """The text fields of a directory with ``features`` (a ``dataset_info.json``'s) when it has
    the columns of this app's hf-datasets export, else ``None``."""
    if not isinstance(features, dict) or "label_source" not in features or "id" not in features:
        return None
    fields = [k[len("counterfactual_") :] for k in features if k.startswith("counterfactual_") and k not in NOT_FIELDS]
    if not fields or any(f"original_{f}" not in features for f in fields):
        return None
    return fields


def hf_folder_fields(path: str) -> list[str] | None:
    """:func:`hf_text_fields` of the ``save_to_disk`` folder ``path`` (``None``: not one)."""
    try:
        with open(os.path.join(path, "dataset_info.json"), encoding="utf-8") as fh:
            features = json.load(fh).get("features")
    except (OSError, ValueError, AttributeError):
        return None
    if not os.path.isfile(os.path.join(path, "state.json")):
        return None
    return hf_text_fields(features)


def _check_unpacked_size(path: str, max_bytes: int) -> None:
    """Refuse a gzip file that unpacks to more than ``max_bytes`` (read in blocks, never held)."""
    total = 0
    try:
        with open_data(path) as fh:
            while block := fh.read(1 << 20):
                total += len(block)
                if total > max_bytes:
                    raise FormatError(
                        f"{path}: the gzip file unpacks to more than the limit of {human_size(max_bytes)} "
                        "(COUNTERPART_MAX_UPLOAD_BYTES); nothing was imported"
                    )
    except GZIP_ERRORS as exc:
        raise gzip_damaged(path, exc) from None


def folder_message(path: str) -> str:
    """Why the folder ``path`` cannot be imported as a data file, and what to do instead."""
    if hf_folder_fields(path) is not None:
        return (
            "this is a Hugging Face datasets folder as Counterpart's hf-datasets export writes it; import it "
            "with the hf-datasets format (import_data --format hf-datasets PATH); the import page takes one "
            f"file: export the project as pairs-jsonl or csv for it; nothing was imported{READABLE}"
        )
    if os.path.isfile(os.path.join(path, "dataset_info.json")) or os.path.isfile(os.path.join(path, "state.json")):
        return (
            "this is a Hugging Face datasets folder (save_to_disk), not one Counterpart's hf-datasets export "
            "wrote (the hf-datasets format reads only those). Write the data set as JSON lines "
            "(ds.to_json(PATH)) and import that as labelled-jsonl or "
            f"pairs-jsonl; nothing was imported{READABLE}"
        )
    return f"this is a folder, not a data file; name the file(s) in it; nothing was imported{READABLE}"


def check_hf_folder(path: str, *, max_bytes: int | None) -> None:
    """Refuse (:class:`FormatError`) a ``path`` that is not a folder this app's hf-datasets
    export wrote (with the message a folder gets from the other formats), or whose files hold
    more than ``max_bytes`` together."""
    if not os.path.exists(path):
        raise FormatError(f"{path}: folder not found")
    if not os.path.isdir(path):
        raise FormatError(
            f"{path}: hf-datasets reads the folder the hf-datasets export writes (datasets' save_to_disk), "
            "not a file; nothing was imported"
        )
    if hf_folder_fields(path) is None:
        raise FormatError(f"{path}: {folder_message(path)}")
    if max_bytes is not None:
        size = sum(e.stat().st_size for e in os.scandir(path) if e.is_file())
        if size > max_bytes:
            raise FormatError(
                f"{path}: the folder's files hold {human_size(size)}, more than the limit of "
                f"{human_size(max_bytes)} (COUNTERPART_MAX_UPLOAD_BYTES); nothing was imported"
            )


FIELDS_ROWS = 20  # the first rows that decide whether a file is another task's


def refuse_other_fields(path: str, rows: Iterator[Any], expected: list[str] | None) -> Iterator[Any]:
    """``rows`` (a reader's records and problems of the file ``path``) as they are, unless the
    first of them (up to :data:`FIELDS_ROWS`, at least two) are all problems of the same
    text fields that are not ``expected`` — a file of another task: then :class:`FormatError`
    once, naming the fields expected and found and the task they belong to, instead of a
    problem per row. Looks ahead before anything of the file is yielded."""
    head = list(islice(rows, FIELDS_ROWS))
    found = {row.fields if isinstance(row, Problem) else None for row in head}
    if expected is not None and len(head) >= 2 and len(found) == 1 and (fields := found.pop()) is not None:
        raise FormatError(
            f"{path}: the first {len(head)} rows all have the text field(s) {', '.join(fields) or 'none'}, "
            f"not the project's {', '.join(expected)}; nothing was imported.{other_task_hint(fields)}"
        )
    yield from head
    yield from rows


def json_lines_problem(path: str, format: str) -> str | None:
    """What is wrong, as a whole, with the JSON-lines file ``path`` read as ``format``, or
    ``None``: one JSON array (Label Studio's "JSON" export, ``json.dump(list)``) rather than
    one object a line, or a Prodigy annotation file (:func:`prodigy_keys`). Said once for the
    file instead of a problem per line."""
    with open_data(path) as fh:
        head = fh.read(SNIFF_BYTES).decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
        fh.seek(0)
        lines = (ln for ln in iter(lambda: fh.readline(PRODIGY_LINE_BYTES), b"") if ln.strip())
        first_lines = [ln.decode("utf-8", errors="replace").lstrip("\ufeff") for ln in islice(lines, PRODIGY_LINES)]
    first = head.split("\n", 1)[0].strip()
    # "[" alone (pretty-printed) or an array of objects; any other line that starts with "["
    # (a list, deep brackets) stays a problem of its row
    if first == "[" or first.replace(" ", "").startswith("[{"):
        return (
            f"{path}: this is one JSON array (as Label Studio's JSON export writes), not JSON lines; this "
            "format reads one JSON object per line: pairs-jsonl (docs/formats.md §1) or labelled-jsonl (the "
            "text fields, label, optional id, source, split, meta). Convert it, e.g. jq -c '.[]' FILE; "
            "nothing was imported"
        )
    if keys := prodigy_file_keys(json_objects(first_lines)):
        return prodigy_message(path, format, keys)
    return None


def json_objects(lines: Iterable[str]) -> Iterator[Any]:
    """The decoded JSON values of ``lines`` (a line that is not JSON, is cut, or nests deeper
    than Python recurses is passed over: it is its row's own problem)."""
    for line in lines:
        try:
            yield json_loads(line)
        except (ValueError, RecursionError):
            continue


def prodigy_file_keys(objs: Iterable[Any]) -> list[str]:
    """The Prodigy keys (:func:`prodigy_keys`) of a file whose first lines decode to ``objs``:
    ``[]`` unless at least half of its objects are Prodigy-shaped and none is a pair. The first
    line alone decides nothing: a Prodigy file may start with a task without an answer yet."""
    dicts = [o for o in objs if isinstance(o, dict)]
    if not dicts or any("original" in o or "counterfactual" in o for o in dicts):
        return []
    shaped = [keys for o in dicts if (keys := prodigy_keys(o))]
    if 2 * len(shaped) < len(dicts):
        return []
    return list(dict.fromkeys(k for keys in shaped for k in keys))


PRODIGY_LINE_BYTES = 1 << 20  # a Prodigy line holds tokens and spans: its first line may be long
PRODIGY_LINES = 20  # non-empty lines looked at
PRODIGY_HASHES = ("_input_hash", "_task_hash", "_view_id", "_annotator_id", "_session_id")
PRODIGY_ANSWERS = ("accept", "reject", "ignore")


def prodigy_keys(obj: Any) -> list[str]:
    """The keys that make the decoded line ``obj`` a Prodigy annotation (its ``_input_hash`` /
    ``_task_hash`` …, an ``answer`` of accept/reject/ignore, or a choice's ``accept`` list);
    ``[]`` for anything else (a pair is never one)."""
    if not isinstance(obj, dict) or "original" in obj or "counterfactual" in obj:
        return []
    keys = [k for k in PRODIGY_HASHES if k in obj]
    if obj.get("answer") in PRODIGY_ANSWERS:
        keys.insert(0, "answer")
    if isinstance(obj.get("accept"), list):
        keys.insert(0, "accept")
    return keys


def prodigy_message(shown: str, format: str, keys: list[str]) -> str:
    """The one message for a Prodigy file given as ``format`` (``shown``: its name)."""
    found = ", ".join(f'"{k}"' for k in keys)
    return (
        f"{shown}: this is a Prodigy annotation file (JSON lines with {found}), not {format}. Counterpart "
        "reads labelled texts as labelled-jsonl (the text fields, label, optional id, source, split, meta) and "
        "counterfactual pairs as pairs-jsonl (docs/formats.md §1). Convert the accepted answers to "
        "labelled-jsonl, e.g. jq -c 'select(.answer == \"accept\") | {text, label}' FILE > labelled.jsonl "
        "(a choice answer: {text, label: .accept[0]}; name text after the project's text field(s)), then "
        "import that as labelled-jsonl; nothing was imported"
    )


def binary_kind(head: bytes) -> str | None:
    """What a file that starts with ``head`` is, when it is clearly not text: a known binary
    format by its leading bytes (RIFF…WEBP too), or data of which more than a tenth is control
    bytes or not UTF-8 and that is not Windows-1252 text either. ``None`` for text (a stray NUL
    in a text file stays a per-row problem; text in a legacy encoding is refused by
    :func:`check_file` as not UTF-8, with a message saying so)."""
    for magic, kind in MAGIC:
        if head.startswith(magic):
            return kind
    if head.startswith(b"RIFF") and head[8:12] == b"WEBP":
        return "WebP image"
    if not head:
        return None
    text = head.decode("utf-8", errors="replace")
    if len(head) == SNIFF_BYTES:  # a character cut at the end is not an error
        text = text.rstrip("\ufffd")
    odd = sum(1 for ch in text if ch == "\ufffd" or (ord(ch) < 32 and ch not in "\t\n\r\f"))
    if odd <= max(1, len(text) // 10) or legacy_text(head):  # accented text in Windows-1252 is text
        return None
    return "binary data"


def upload_limit_message(limit: int, size: int | None = None) -> str:
    """The one message for an upload over ``COUNTERPART_MAX_UPLOAD_BYTES`` (the import page and
    the API; the command's check of a file on disk says the same limit in :func:`check_file`)."""
    what = f"{human_size(size)} is " if size else ""
    return (
        f"upload refused: {what}over the {limit}-byte limit ({human_size(limit)}, COUNTERPART_MAX_UPLOAD_BYTES); "
        "nothing was imported"
    )


def human_size(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)
