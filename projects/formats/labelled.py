"""``labelled-jsonl``: flat labelled examples, one JSON object per line, e.g. nli-public's
``{"premise": …, "hypothesis": …, "label": …, "source": …}``. Every key other than ``id``,
``label``, ``split``, ``source`` and ``meta`` is a text field. ``label`` is required; ``id`` is
optional (default: ``{file name}-{line}``). Yields :class:`OriginalRecord`\\ s; a row that
cannot be read is a :class:`Problem` (``file:line``).

Used for task training data (issue 26): examples that train the task model and are kept
apart from the project's pool.
"""

from __future__ import annotations

import os
from collections.abc import Iterator

from projects.formats import reading as r
from projects.formats.records import OriginalRecord, Problem, Record
from projects.formats.whole_input import json_lines_problem, refuse_other_fields

RESERVED = ("id", "label", "split", "source", "meta")


def read_labelled_jsonl(
    paths: list[str],
    *,
    split: str = "",
    labels: list[str] | None = None,
    text_fields: list[str] | None = None,
    max_line_bytes: int = r.DEFAULT_MAX_LINE_BYTES,
    label_map: dict[str, str] | None = None,
    **_: object,
) -> Iterator[Record]:
    label_of = r.LabelMap(labels, label_map)
    for path in paths:
        if not os.path.isfile(path):
            raise r.FormatError(f"{path}: file not found")
        if msg := json_lines_problem(path, "labelled-jsonl"):
            raise r.FormatError(msg)
        yield from refuse_other_fields(path, _examples(path, split, label_of, text_fields, max_line_bytes), text_fields)


def _examples(
    path: str, split: str, label_of: r.LabelMap, text_fields: list[str] | None, max_line_bytes: int
) -> Iterator[Record]:
    """The examples (and problems) of one file."""
    stem = os.path.splitext(os.path.basename(path).removesuffix(".gz"))[0]
    for item in r.iter_json_lines(path, max_line_bytes=max_line_bytes):
        if isinstance(item, Problem):
            yield item
            continue
        lineno, obj = item
        if not isinstance(obj, dict):
            yield Problem(path, lineno, f"expected a JSON object, not {type(obj).__name__}")
            continue
        fields = {k: v for k, v in obj.items() if k not in RESERVED}
        if msg := r.check_text_fields(list(fields), text_fields):
            yield Problem(path, lineno, f"text fields: {msg}", tuple(fields))
            continue
        if not fields:
            yield Problem(path, lineno, "no text field")
            continue
        bad = next((k for k, v in fields.items() if not isinstance(v, str)), None)
        if bad is not None:
            yield Problem(path, lineno, f"{bad} must be a string, not {type(fields[bad]).__name__}")
            continue
        if any((msg := r.bad_text(v)) for v in fields.values()):
            yield Problem(path, lineno, str(msg))
            continue
        raw = obj.get("label")
        if isinstance(raw, int) and not isinstance(raw, bool):
            raw = str(raw)  # a label id (datasets' ClassLabel): matched or mapped as "1"
        if raw is None or raw == "":
            yield Problem(path, lineno, "label is missing (task training data must be labelled)")
            continue
        if not isinstance(raw, str):
            yield Problem(path, lineno, f"label must be a string, not {type(raw).__name__}")
            continue
        try:
            label = label_of(raw)
        except ValueError as exc:
            yield Problem(path, lineno, str(exc))
            continue
        raw_meta = obj.get("meta")
        meta: dict[str, object] = raw_meta if isinstance(raw_meta, dict) else {}
        yield OriginalRecord(
            id=str(obj.get("id") or f"{stem}-{lineno}")[: r.MAX_ID],
            fields=fields,
            label=label,
            source=str(obj.get("source") or "")[: r.MAX_SOURCE],
            split=str(obj.get("split") or split)[: r.MAX_SPLIT],
            meta=meta,
        )
