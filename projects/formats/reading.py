"""Shared pieces of every reader: line-by-line decoding with line numbers, label
normalisation, the per-task defaults and the limits the database imposes. Pure Python."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from projects.formats.encoding import legacy_text, not_utf8_message
from projects.formats.images import DEFAULT_MAX_IMAGE_PIXELS as DEFAULT_MAX_IMAGE_PIXELS
from projects.formats.images import image_problem
from projects.formats.records import Problem

# Per-task defaults (the same as generation.models.TASK_DEFAULTS, repeated here because this
# package must not import Django).
TASK_LABELS: dict[str, list[str]] = {
    "sentiment": ["negative", "positive"],
    "nli": ["entailment", "neutral", "contradiction"],
    "paraphrase": ["not_paraphrase", "paraphrase"],
    "boolean-qa": ["false", "true"],
    "image-caption": ["caption_a", "caption_b", "both", "neither"],
}
TASK_FIELDS: dict[str, list[str]] = {
    "sentiment": ["text"],
    "nli": ["premise", "hypothesis"],
    "paraphrase": ["sentence1", "sentence2"],
    "boolean-qa": ["passage", "question"],
    "image-caption": ["caption"],
}
LABEL_SOURCES = ("human", "auto", "gold", "imported")

# Column sizes in generation.models; a longer value is a per-row problem, not a crash.
MAX_ID = 200
MAX_GROUP = 200
MAX_IMAGE = 500
MAX_GENERATOR = 64
MAX_PERTURBATION = 32
MAX_SOURCE = 200
MAX_SPLIT = 32

DEFAULT_MAX_LINE_BYTES = 16 * 1024 * 1024
# JSON values (meta, scores) nested deeper than this are a per-row problem: deeper values
# would only risk a RecursionError when they are written or read back.
MAX_JSON_DEPTH = 64


class FormatError(ValueError):
    """The input cannot be read at all (missing file, wrong header, unknown format, a file
    or line over the limits). Raised before any record of the offending file is yielded."""


@dataclass
class LabelMap:
    """Maps a label as written in a file to the project's label name, case-insensitively
    (``Positive`` -> ``positive``). ``labels=None`` accepts any non-empty label as written.
    ``renames`` (``--label-map old=new``) is applied first, also case-insensitively."""

    labels: list[str] | None
    renames: dict[str, str] | None = None

    def __post_init__(self) -> None:
        self._by_fold = {name.casefold(): name for name in (self.labels or [])}
        self._renames = {old.strip().casefold(): new.strip() for old, new in (self.renames or {}).items()}

    def __call__(self, raw: str) -> str:
        """The project's name for ``raw``; raises ``ValueError`` with a clear message."""
        value = raw.strip()
        if not value:
            raise ValueError("empty label")
        value = self._renames.get(value.casefold(), value)
        if self.labels is None:
            return value
        try:
            return self._by_fold[value.casefold()]
        except KeyError:
            raise ValueError(f"unknown label {raw!r} (expected one of {', '.join(self.labels)})") from None


def iter_lines(path: str, *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> Iterator[tuple[int, str | Problem]]:
    """Yield ``(line_number, text)`` for each line of ``path`` (1-based, newline kept), or
    ``(line_number, Problem)`` for a line that is not UTF-8 or is longer than
    ``max_line_bytes``. Reads with a bounded buffer: memory stays flat whatever the file."""
    for lineno, raw in _raw_lines(path, max_line_bytes):
        if raw is None:
            yield lineno, Problem(path, lineno, f"line is longer than {max_line_bytes} bytes")
            continue
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad = raw[exc.start : exc.start + 1]
            yield (
                lineno,
                Problem(
                    path, lineno, f"not valid UTF-8 (byte {bad!r} at column {exc.start + 1}); save the file as UTF-8"
                ),
            )
            continue
        if lineno == 1 and text.startswith("\ufeff"):
            text = text[1:]
        if "\x00" in text:
            yield lineno, Problem(path, lineno, f"{NUL_MESSAGE} (column {text.index(chr(0)) + 1})")
            continue
        yield lineno, text


def _raw_lines(path: str, max_line_bytes: int) -> Iterator[tuple[int, bytes | None]]:
    """``(line number, bytes)`` per line, or ``(line number, None)`` for a line longer than
    ``max_line_bytes`` (its rest is skipped without holding it in memory)."""
    with open(path, "rb") as fh:
        lineno = 0
        while True:
            raw = fh.readline(max_line_bytes + 1)
            if not raw:
                return
            lineno += 1
            if len(raw) > max_line_bytes and not raw.endswith(b"\n"):
                while raw and not raw.endswith(b"\n"):
                    raw = fh.readline(1024 * 1024)
                yield lineno, None
                continue
            yield lineno, raw


def iter_json_lines(path: str, *, max_line_bytes: int = DEFAULT_MAX_LINE_BYTES) -> Iterator[tuple[int, Any] | Problem]:
    """JSON Lines: ``(line number, decoded value)`` per non-blank line, or a :class:`Problem`
    for a line that is not valid JSON (with a hint when it looks truncated) or not readable."""
    for lineno, text in iter_lines(path, max_line_bytes=max_line_bytes):
        if isinstance(text, Problem):
            yield text
            continue
        if not text.strip():
            continue
        try:
            value = json_loads(text)
        except json.JSONDecodeError as exc:
            hint = " (truncated line?)" if exc.pos >= len(text.rstrip()) - 1 else ""
            yield Problem(path, lineno, f"not valid JSON: {exc.msg} at column {exc.colno}{hint}")
            continue
        except NotJSONConstant as exc:
            yield Problem(path, lineno, f"not valid JSON: {exc}")
            continue
        except RecursionError:
            yield Problem(path, lineno, f"not valid JSON: nested more than {MAX_JSON_DEPTH} levels deep")
            continue
        if _may_be_unstorable(text) and (msg := unstorable(value)):
            yield Problem(path, lineno, msg)
            continue
        yield lineno, value


class NotJSONConstant(ValueError):
    """``NaN``, ``Infinity`` or ``-Infinity`` in a JSON text: Python's ``json`` reads them, but
    they are not JSON, and the database refuses them in a JSON column (SQLite's ``JSON_VALID``
    check, PostgreSQL's jsonb), so they are a problem of their row, not a crash of the import."""


def _no_constant(name: str) -> Any:
    raise NotJSONConstant(f"{name} is not a JSON value (JSON has no NaN or Infinity; write null)")


def json_loads(text: str) -> Any:
    """``json.loads`` that refuses ``NaN`` / ``Infinity`` (raises :class:`NotJSONConstant`)."""
    return json.loads(text, parse_constant=_no_constant)


# A JSON line can decode to a NUL or a lone surrogate only through a \u escape (a raw NUL
# is refused above and decoded UTF-8 holds no surrogates), and can nest deeper than
# MAX_JSON_DEPTH only with more brackets than that: other lines need no walk (imports).
_RISKY_ESCAPE = re.compile(r"\\u(?:0000|[dD][89a-fA-F])")


def _may_be_unstorable(text: str) -> bool:
    return text.count("[") + text.count("{") > MAX_JSON_DEPTH or _RISKY_ESCAPE.search(text) is not None


NUL_MESSAGE = "contains a NUL character (U+0000), which the database cannot store"
SURROGATE_MESSAGE = "contains a lone surrogate ({char}), which is not valid Unicode"


def unstorable(value: Any, *, where: str = "", max_depth: int = MAX_JSON_DEPTH) -> str | None:
    """What makes a decoded JSON value impossible to store, or ``None``: a NUL character or
    a lone surrogate (``\\ud800``) in any string or key (PostgreSQL refuses both in text and
    jsonb), or nesting deeper than ``max_depth``. Iterative, so any depth is safe to check."""
    stack: list[tuple[Any, str, int]] = [(value, where, 0)]
    while stack:
        item, at, depth = stack.pop()
        if isinstance(item, str):
            if msg := bad_text(item):
                return f"{at}: {msg}" if at else msg
        elif isinstance(item, dict | list):
            if depth >= max_depth:
                return f"{at or 'the line'} is nested more than {max_depth} levels deep"
            pairs = item.items() if isinstance(item, dict) else enumerate(item)
            for key, sub in pairs:
                name = f"{at}.{key}" if at else str(key)
                if isinstance(key, str) and (msg := bad_text(key)):
                    return f"a key in {at or 'the line'} {msg}"
                stack.append((sub, name if isinstance(key, str) else f"{at}[{key}]", depth + 1))
    return None


def bad_text(text: str) -> str | None:
    """``None`` when ``text`` can be stored in PostgreSQL text/jsonb; else what is wrong."""
    if text.isascii():
        return NUL_MESSAGE if "\x00" in text else None
    if "\x00" in text:
        return NUL_MESSAGE
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return SURROGATE_MESSAGE.format(char=f"U+{ord(text[exc.start]):04X}")
    return None


def below(real: str, real_root: str) -> bool:
    """Whether the resolved path ``real`` lies below the resolved folder ``real_root`` (the
    check every reader and server of images makes against the image root)."""
    return real.startswith(real_root.rstrip(os.sep) + os.sep)


def resolve_image(
    value: str, *, base_dir: str, root: str | None, where: str = "", max_pixels: int = DEFAULT_MAX_IMAGE_PIXELS
) -> str:
    """The absolute path of the image ``value``. A relative path is taken from ``base_dir``;
    with ``root``, when it is not a file there, from ``root`` (an export writes image paths
    relative to the image root).

    With ``root`` (``COUNTERPART["IMAGE_ROOT"]``) the image must lie inside it once every
    symlink is resolved; anything else raises ``ValueError`` *before* the file system is
    asked whether the file exists, so the message never tells whether a path outside the
    root exists. A missing image inside the root raises ``ValueError`` ("not found"), and so
    does a file that is not a JPEG, PNG, WebP or GIF image of at most ``max_pixels`` pixels
    (:func:`projects.formats.images.image_problem`)."""
    if msg := bad_text(value):
        raise ValueError(f"{where}image {msg}")
    path = os.path.abspath(value if os.path.isabs(value) else os.path.join(base_dir, value))
    if root is not None:
        real_root = os.path.realpath(root)
        tries = [path] if os.path.isabs(value) else [path, os.path.join(real_root, value)]
        reals = [os.path.realpath(t) for t in tries]
        inside = [real for real in reals if real == real_root or below(real, real_root)]
        # Only paths inside the root are ever asked whether they exist; the root is tried only
        # for a file that is there, so that a path from the file's folder that leads out (a
        # symlink, ``..``) is still refused as outside, not reported missing.
        found = next((real for real in inside if os.path.isfile(real)), None)
        if found is None and reals[0] not in inside:
            raise ValueError(
                f"{where}image {value!r} is outside the image root; images must lie inside COUNTERPART_IMAGE_ROOT"
            )
        path = found or reals[0]
    if not os.path.isfile(path):
        raise ValueError(f"{where}image not found: {value if root is not None else path}")
    if problem := image_problem(path, max_pixels=max_pixels):
        raise ValueError(f"{where}image {value} {problem}")
    return path


def parse_label_map(text: str) -> dict[str, str]:
    """``"old=new[,old=new]"`` as a dict; raises ``ValueError`` with what is wrong."""
    out: dict[str, str] = {}
    for part in (p.strip() for p in text.split(",")):
        if not part:
            continue
        old, sep, new = part.partition("=")
        if not sep or not old.strip() or not new.strip():
            raise ValueError(f"label map entry {part!r} is not old=new")
        if bad := bad_text(part):
            raise ValueError(f"label map entry {bad}")
        out[old.strip()] = new.strip()
    return out


def check_split(split: str) -> str | None:
    """``None`` when ``split`` (a split name given for a whole import) can be stored."""
    if msg := bad_text(split):
        return f"split {msg}"
    return too_long("split", split, MAX_SPLIT)


def check_file(path: str, *, max_file_bytes: int | None, max_line_bytes: int | None) -> None:
    """Refuse a file that is missing, larger than ``max_file_bytes``, has a line longer
    than ``max_line_bytes`` or is not UTF-8 (raises :class:`FormatError`; the last two in
    the line scan, which runs when ``max_line_bytes`` is given). Checks the size with
    ``stat`` first, so a 2 GB file is refused without being read."""
    if os.path.isdir(path):
        raise FormatError(f"{path}: {_folder_message(path)}")
    if not os.path.isfile(path):
        raise FormatError(f"{path}: file not found")
    size = os.path.getsize(path)
    if max_file_bytes is not None and size > max_file_bytes:
        raise FormatError(
            f"{path}: file is {_human(size)}, larger than the limit of {_human(max_file_bytes)} "
            "(COUNTERPART_MAX_UPLOAD_BYTES); nothing was imported"
        )
    if max_line_bytes is None:
        return
    with open(path, "rb") as fh:
        kind = binary_kind(fh.read(SNIFF_BYTES))
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
    for lineno, raw in _raw_lines(path, max_line_bytes):
        if raw is None:
            raise FormatError(
                f"{path}:{lineno}: line is longer than {_human(max_line_bytes)} "
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
    "COCO layouts (docs/data-and-formats.md)"
)


def _folder_message(path: str) -> str:
    """Why the folder ``path`` cannot be imported as a data file, and what to do instead."""
    if _counterpart_hf_export(path):
        return (
            "this is a Hugging Face datasets folder as Counterpart's hf-datasets export writes it; hf-datasets is "
            "an export format only and does not re-import: export the project as pairs-jsonl or csv, which "
            f"re-import to the same data; nothing was imported{READABLE}"
        )
    if os.path.isfile(os.path.join(path, "dataset_info.json")) or os.path.isfile(os.path.join(path, "state.json")):
        return (
            "this is a Hugging Face datasets folder (save_to_disk); hf-datasets is an export format only. "
            "Write the data set as JSON lines (ds.to_json(PATH)) and import that as labelled-jsonl or "
            f"pairs-jsonl; nothing was imported{READABLE}"
        )
    return f"this is a folder, not a data file; name the file(s) in it; nothing was imported{READABLE}"


def _counterpart_hf_export(path: str) -> bool:
    """Whether the folder ``path`` is a ``save_to_disk`` folder with the columns of this app's
    hf-datasets export (``counterfactual_<field>``, ``label_source``): its rows are flat, so
    ``ds.to_json`` gives neither pairs-jsonl nor labelled-jsonl."""
    try:
        with open(os.path.join(path, "dataset_info.json"), encoding="utf-8") as fh:
            features = json.load(fh).get("features") or {}
    except (OSError, ValueError, AttributeError):
        return False
    return "label_source" in features and any(str(k).startswith("counterfactual_") for k in features)


def json_lines_problem(path: str, format: str) -> str | None:
    """What is wrong, as a whole, with the JSON-lines file ``path`` read as ``format``, or
    ``None``: one JSON array (Label Studio's "JSON" export, ``json.dump(list)``) rather than
    one object a line, or a Prodigy annotation file (:func:`prodigy_keys`). Said once for the
    file instead of a problem per line."""
    with open(path, "rb") as fh:
        head = fh.read(SNIFF_BYTES).decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
        fh.seek(0)
        first_line = next((ln for ln in iter(lambda: fh.readline(PRODIGY_LINE_BYTES), b"") if ln.strip()), b"")
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
    try:
        obj = json_loads(first_line.decode("utf-8").lstrip("\ufeff"))
    except (ValueError, RecursionError):  # not JSON (or cut): the line's own problem
        return None
    if keys := prodigy_keys(obj):
        return prodigy_message(path, format, keys)
    return None


PRODIGY_LINE_BYTES = 1 << 20  # a Prodigy line holds tokens and spans: its first line may be long
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
    what = f"{_human(size)} is " if size else ""
    return (
        f"upload refused: {what}over the {limit}-byte limit ({_human(limit)}, COUNTERPART_MAX_UPLOAD_BYTES); "
        "nothing was imported"
    )


def _human(n: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def check_text_fields(found: list[str] | set[str], expected: list[str] | None) -> str | None:
    """``None`` when the record's field names are the project's; else what is wrong."""
    if expected is None:
        return None
    missing = [f for f in expected if f not in found]
    extra = sorted(set(found) - set(expected))
    parts = []
    if missing:
        parts.append(f"missing field(s) {', '.join(missing)}")
    if extra:
        parts.append(f"unexpected field(s) {', '.join(extra)}")
    if parts:
        return "; ".join(parts) + f" (the project's text fields are {', '.join(expected)})"
    return None


def too_long(name: str, value: str, limit: int) -> str | None:
    if len(value) > limit:
        return f"{name} is {len(value)} characters long (at most {limit})"
    return None
