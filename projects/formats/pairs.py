"""``pairs-jsonl``: docs/formats.md §1, one JSON object per line.

Compatible extensions (optional keys, written by the exporter so that an export re-imports
to the same data): ``original.id`` (the original's own id; when absent the original's id is
``group``, else the pair's ``id``), ``original.split``, ``original.source``,
``original.meta``, ``counterfactual.gold_label`` (a known answer kept beside a different final
label) and ``counterfactual.scores`` (filter scores).

Relative image paths are resolved against the directory of the file that names them (or
``image_base``), then, when no file is there, against ``image_root``, and stored as absolute
paths; with ``image_root`` an image outside that
folder (absolute, ``..`` or a symlink leading out) is a per-row problem that does not say
whether the file exists, and a missing image file is a per-row problem.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Iterator
from typing import IO, Any

from projects.formats import reading as r
from projects.formats.ids import SeenIds
from projects.formats.records import OriginalRecord, PairRecord, Problem, Record
from projects.formats.whole_input import json_lines_problem, refuse_other_fields


class RowError(ValueError):
    pass


def json_cell(value: str, column: str) -> Any:
    """The JSON object held as text in a column of a table (a CSV's ``meta``, a Hugging Face
    folder's ``meta`` / ``scores``), or a :class:`RowError` that names the column and what is
    wrong: not JSON, ``NaN`` / ``Infinity``, nested too deep, or text the database cannot store."""
    try:
        obj = r.json_loads(value)
    except json.JSONDecodeError as exc:
        raise RowError(f"{column} must be a JSON object ({exc.msg})") from None
    except r.NotJSONConstant as exc:
        raise RowError(f"{column} must be a JSON object ({exc})") from None
    except RecursionError:
        raise RowError(f"{column} is nested more than {r.MAX_JSON_DEPTH} levels deep") from None
    if msg := r.unstorable(obj, where=column):
        raise RowError(msg)
    return obj


class FieldsMismatch(RowError):
    """The row's text fields are not the project's (``found``: the row's)."""

    def __init__(self, message: str, found: list[str]) -> None:
        super().__init__(message)
        self.found = tuple(found)


def _str(obj: dict[str, Any], key: str, where: str, *, limit: int | None = None) -> str:
    value = obj.get(key)
    if value is None:
        return ""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise RowError(f"{where}{key} must be a string, not {type(value).__name__}")
    text = str(value)
    if limit is not None and (msg := r.too_long(where + key, text, limit)):
        raise RowError(msg)
    return text


def _dict(obj: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = obj.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RowError(f"{where}{key} must be an object, not {type(value).__name__}")
    return value


def _fields(obj: dict[str, Any], where: str) -> dict[str, str]:
    if "fields" not in obj:
        raise RowError(f"{where}fields is missing")
    value = obj["fields"]
    if not isinstance(value, dict) or not value:
        raise RowError(f"{where}fields must be a non-empty object of text fields")
    for name, text in value.items():
        if not isinstance(text, str):
            raise RowError(f"{where}fields.{name} must be a string, not {type(text).__name__}")
    return dict(value)


def _label(value: Any, key: str, label_of: r.LabelMap) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)  # a label id: matched or mapped (--label-map 0=negative) as "0"
    if not isinstance(value, str):
        raise RowError(f"{key} must be a string or null, not {type(value).__name__}")
    try:
        return label_of(value)
    except ValueError as exc:
        raise RowError(f"{key}: {exc}") from None


def _image(obj: dict[str, Any], where: str, base_dir: str, root: str | None, max_pixels: int) -> str:
    value = _str(obj, "image", where, limit=r.MAX_IMAGE)
    if not value:
        return ""
    try:
        path = r.resolve_image(value, base_dir=base_dir, root=root, where=where, max_pixels=max_pixels)
    except ValueError as exc:
        raise RowError(str(exc)) from None
    if msg := r.too_long(where + "image", path, r.MAX_IMAGE):
        raise RowError(msg)
    return path


def pair_from_json(
    obj: Any,
    *,
    split: str,
    label_of: r.LabelMap,
    text_fields: list[str] | None,
    base_dir: str,
    image_root: str | None = None,
    max_image_pixels: int = r.DEFAULT_MAX_IMAGE_PIXELS,
) -> PairRecord:
    """Validate one decoded line and build its :class:`PairRecord` (raises :class:`RowError`)."""
    if not isinstance(obj, dict):
        raise RowError(f"a line must be a JSON object, not {type(obj).__name__}")
    pair_id = _str(obj, "id", "", limit=r.MAX_ID)
    if not pair_id:
        raise RowError("id is missing")
    group = _str(obj, "group", "", limit=r.MAX_GROUP)
    original = obj.get("original")
    if not isinstance(original, dict):
        raise RowError("original is missing (an object with fields and label)")
    cf = obj.get("counterfactual")
    if not isinstance(cf, dict):
        raise RowError("counterfactual is missing (an object with fields)")
    o_fields = _fields(original, "original.")
    c_fields = _fields(cf, "counterfactual.")
    if msg := r.check_text_fields(list(o_fields), text_fields):
        raise FieldsMismatch(f"original.fields: {msg}", list(o_fields))
    if set(c_fields) != set(o_fields):
        raise RowError(
            f"counterfactual.fields ({', '.join(c_fields)}) must have the same names as original.fields "
            f"({', '.join(o_fields)})"
        )
    if "label" not in original and "image" not in original:
        # An image pair may leave it out: §1's image-pair shape is {"fields", "image"}, and a
        # caption pair's original has no label of the task (COCO-Counterfactuals has none).
        raise RowError("original.label is missing (use null when unknown)")
    orig_id = _str(original, "id", "original.", limit=r.MAX_ID) or group or pair_id
    orig = OriginalRecord(
        id=orig_id,
        fields=o_fields,
        label=_label(original.get("label"), "original.label", label_of),
        image=_image(original, "original.", base_dir, image_root, max_image_pixels),
        source=_str(original, "source", "original.", limit=r.MAX_SOURCE),
        split=_str(original, "split", "original.", limit=r.MAX_SPLIT) or split,
        meta=_dict(original, "meta", "original."),
    )
    label_source = _str(cf, "label_source", "counterfactual.")
    if label_source and label_source not in r.LABEL_SOURCES:
        raise RowError(f"counterfactual.label_source {label_source!r} is not one of {', '.join(r.LABEL_SOURCES)}")
    cf_label = _label(cf.get("label"), "counterfactual.label", label_of)
    if label_source and label_source != "gold" and cf_label is None:
        raise RowError(f"counterfactual.label_source is {label_source!r} but there is no counterfactual.label")
    confidence = cf.get("confidence")
    if confidence is not None:
        if isinstance(confidence, bool) or not isinstance(confidence, (int, float)) or not 0 <= confidence <= 1:
            raise RowError(f"counterfactual.confidence must be a number between 0 and 1, not {confidence!r}")
        confidence = float(confidence)
    scores = _dict(cf, "scores", "counterfactual.")
    valid = cf.get("valid")
    if valid is not None and not isinstance(valid, bool):
        raise RowError(f"counterfactual.valid must be true, false or null, not {valid!r}")
    return PairRecord(
        id=pair_id,
        original=orig,
        cf_fields=c_fields,
        group=group,
        cf_label=cf_label,
        target_label=_label(cf.get("target_label"), "counterfactual.target_label", label_of),
        generator=_str(cf, "generator", "counterfactual.", limit=r.MAX_GENERATOR),
        perturbation=_str(cf, "perturbation", "counterfactual.", limit=r.MAX_PERTURBATION),
        label_source=label_source,
        confidence=confidence,
        cf_image=_image(cf, "counterfactual.", base_dir, image_root, max_image_pixels),
        meta=_dict(obj, "meta", ""),
        gold_label=_label(cf.get("gold_label"), "counterfactual.gold_label", label_of),
        scores=scores,
        valid=valid,
    )


def read_pairs_jsonl(
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
    """The pairs of ``paths``; an id repeated across them is checked by :class:`SeenIds`
    (``warn`` receives the identical repeats)."""
    label_of = r.LabelMap(labels, label_map)
    seen = SeenIds(warn)
    for path in paths:
        if not os.path.isfile(path):
            raise r.FormatError(f"{path}: file not found")
        if msg := json_lines_problem(path, "pairs-jsonl"):
            raise r.FormatError(msg)
        check: dict[str, Any] = {
            "split": split,
            "label_of": label_of,
            "text_fields": text_fields,
            "base_dir": image_base or os.path.dirname(os.path.abspath(path)),
            "image_root": image_root,
            "max_image_pixels": max_image_pixels,
        }
        rows = (
            row if isinstance(row, Problem) else pair_or_problem(row[1], path, row[0], seen=seen, **check)
            for row in r.iter_json_lines(path, max_line_bytes=max_line_bytes)
        )
        yield from refuse_other_fields(path, rows, text_fields)


def pair_or_problem(obj: Any, path: str, lineno: int, *, seen: SeenIds, **check: Any) -> Record:
    """The pair the decoded row ``obj`` (at ``path:lineno``) holds, checked by
    :func:`pair_from_json` (``check``: its keyword arguments) and by ``seen``; else the row's
    :class:`Problem`."""
    try:
        rec = pair_from_json(obj, **check)
    except RowError as exc:
        return Problem(path, lineno, str(exc), getattr(exc, "found", None))
    return seen.check(rec, path, lineno) or rec


def pair_to_json(rec: PairRecord) -> dict[str, Any]:
    """The docs/formats.md §1 object for ``rec`` (empty optional keys left out)."""
    o = rec.original
    original: dict[str, Any] = {"id": o.id, "fields": o.fields, "label": o.label}
    for key, value in (("image", o.image), ("split", o.split), ("source", o.source), ("meta", o.meta)):
        if value:
            original[key] = value
    cf: dict[str, Any] = {"fields": rec.cf_fields}
    optional: tuple[tuple[str, Any], ...] = (
        ("label", rec.cf_label),
        ("target_label", rec.target_label),
        ("generator", rec.generator),
        ("perturbation", rec.perturbation),
        ("label_source", rec.label_source),
        ("confidence", rec.confidence),
        ("gold_label", rec.gold_label),
        ("image", rec.cf_image),
        ("scores", rec.scores),
        ("valid", rec.valid),
    )
    for key, value in optional:
        if value is not None and value != "" and value != {}:
            cf[key] = value
    out: dict[str, Any] = {"id": rec.id}
    if rec.group:
        out["group"] = rec.group
    out["original"] = original
    out["counterfactual"] = cf
    if rec.meta:
        out["meta"] = rec.meta
    return out


def write_pairs_jsonl(records: Iterable[PairRecord], fh: IO[str]) -> int:
    """Write one line per pair to the text stream ``fh``; returns how many were written."""
    n = 0
    for rec in records:
        fh.write(json.dumps(pair_to_json(rec), ensure_ascii=False, separators=(", ", ": ")))
        fh.write("\n")
        n += 1
    return n
