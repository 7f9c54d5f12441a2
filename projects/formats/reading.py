"""Shared pieces of every reader: line-by-line decoding with line numbers, label
normalisation, the per-task defaults and the limits the database imposes. Pure Python."""

from __future__ import annotations

import gzip
import io
import json
import os
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

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
    for lineno, raw in raw_lines(path, max_line_bytes):
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


GZIP_MAGIC = b"\x1f\x8b"
GZIP_ERRORS = (EOFError, OSError, zlib.error)  # a damaged or cut gzip stream (BadGzipFile is an OSError)


def is_gzip(path: str) -> bool:
    with open(path, "rb") as fh:
        return fh.read(2) == GZIP_MAGIC


def open_data(path: str) -> io.BufferedIOBase:
    """``path`` opened for reading bytes; a gzip file (``.jsonl.gz``, ``.csv.gz``: told by its
    leading bytes, whatever its name) is read uncompressed, transparently."""
    if is_gzip(path):
        return gzip.open(path, "rb")
    return open(path, "rb")


def gzip_damaged(path: str, exc: BaseException) -> FormatError:
    return FormatError(f"{path}: the gzip file is damaged or cut short ({exc}); nothing was imported")


def raw_lines(path: str, max_line_bytes: int) -> Iterator[tuple[int, bytes | None]]:
    """``(line number, bytes)`` per line, or ``(line number, None)`` for a line longer than
    ``max_line_bytes`` (its rest is skipped without holding it in memory). A gzip file is read
    uncompressed (:func:`open_data`); a damaged one raises :class:`FormatError`."""
    with open_data(path) as fh:
        lineno = 0
        while True:
            try:
                raw = fh.readline(max_line_bytes + 1)
                if len(raw) > max_line_bytes and not raw.endswith(b"\n"):
                    while raw and not raw.endswith(b"\n"):
                        raw = fh.readline(1024 * 1024)
                    lineno += 1
                    yield lineno, None
                    continue
            except GZIP_ERRORS as exc:
                raise gzip_damaged(path, exc) from None
            if not raw:
                return
            lineno += 1
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


def other_task_hint(found: list[str] | tuple[str, ...]) -> str:
    """'' or a sentence naming the task whose text fields are exactly ``found``."""
    for task, fields in TASK_FIELDS.items():
        if sorted(fields) == sorted(found):
            return (
                f" These are the text fields of the {task} task: import the file into a project with task "
                f"{task} (import_data --task {task} --project NEW; on the page, from such a project)."
            )
    return ""


def too_long(name: str, value: str, limit: int) -> str | None:
    if len(value) > limit:
        return f"{name} is {len(value)} characters long (at most {limit})"
    return None
