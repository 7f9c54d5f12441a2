"""COCO captions and COCO-Counterfactuals (Le, Lal & Howard, NeurIPS 2023). Task
``image-caption``, text field ``caption``.

``coco-captions`` (``captions_val2017.tsv``): ``<imageid>_<n> \\t caption``, no header. Yields
one :class:`OriginalRecord` per caption (id ``<imageid>_<n>``, ``meta.image_id``). If a
directory is among the paths it is the COCO image folder: each caption gets its image
(``<imageid:012d>.jpg`` or ``<imageid>.jpg``) and a missing one is a per-row problem.

``coco-cf``: the published ``metadata.jsonl`` (``{"id", "caption_0", "caption_1", "image_0",
"image_1"}``) plus the folder of generated images ``<image_k>.jpg``. PATHs are the metadata
file(s) and the image folder; without a folder, ``images/`` beside the metadata file (or
the metadata file's own directory) is used. One :class:`PairRecord` per line: id
``cocf-<id>``, original ``cocf-<id>-0`` = (caption_0, image_0), counterfactual = (caption_1,
image_1), no label. Images are stored as absolute paths; a missing image is a per-row problem.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable, Iterable, Iterator

from projects.formats import reading as r
from projects.formats.records import OriginalRecord, PairRecord, Problem, Record


def _check_fields(text_fields: list[str] | None) -> None:
    if text_fields is not None and list(text_fields) != ["caption"]:
        raise r.FormatError(f"COCO captions have the text field caption, not {', '.join(text_fields)}")


def cf_split_paths(paths: list[str]) -> tuple[list[str], str | None]:
    """(metadata files, image folder or None)."""
    files = [p for p in paths if not os.path.isdir(p)]
    dirs = [p for p in paths if os.path.isdir(p)]
    if len(dirs) > 1:
        raise r.FormatError(f"give at most one image folder (got {', '.join(dirs)})")
    if not files and dirs and os.path.isfile(os.path.join(dirs[0], "metadata.jsonl")):
        files = [os.path.join(dirs[0], "metadata.jsonl")]
    if not files:
        raise r.FormatError("give the metadata.jsonl file (and the image folder)")
    return files, (dirs[0] if dirs else None)


def read_captions(
    paths: list[str],
    *,
    split: str = "",
    labels: list[str] | None = None,
    text_fields: list[str] | None = None,
    max_line_bytes: int = r.DEFAULT_MAX_LINE_BYTES,
    image_root: str | None = None,
    image_base: str | None = None,
    label_map: dict[str, str] | None = None,
    warn: Callable[[Problem], None] | None = None,
    max_image_pixels: int = r.DEFAULT_MAX_IMAGE_PIXELS,
) -> Iterator[Record]:
    _check_fields(text_fields)
    dirs = [p for p in paths if os.path.isdir(p)]
    image_dir = os.path.abspath(dirs[0]) if dirs else None
    for path in paths:
        if os.path.isdir(path):
            continue
        if not os.path.isfile(path):
            raise r.FormatError(f"{path}: file not found")
        for lineno, text in r.iter_lines(path, max_line_bytes=max_line_bytes):
            if isinstance(text, Problem):
                yield text
                continue
            line = text.rstrip("\r\n")
            if not line.strip():
                continue
            cols = line.split("\t")
            if len(cols) != 2:
                yield Problem(
                    path, lineno, f"expected 2 tab-separated columns (<imageid>_<n>, caption), found {len(cols)}"
                )
                continue
            cap_id, caption = cols[0].strip(), cols[1]
            image_id, _, n = cap_id.rpartition("_")
            if not image_id or not n.isdigit():
                yield Problem(path, lineno, f"caption id {cap_id!r} is not <imageid>_<n>")
                continue
            if msg := r.too_long("caption id", cap_id, r.MAX_ID):
                yield Problem(path, lineno, msg)
                continue
            image = ""
            if image_dir is not None:
                names = [f"{int(image_id):012d}.jpg", f"{image_id}.jpg"] if image_id.isdigit() else [f"{image_id}.jpg"]
                found, error = [], ""
                for name in names:
                    try:
                        found.append(
                            r.resolve_image(name, base_dir=image_dir, root=image_root, max_pixels=max_image_pixels)
                        )
                    except ValueError as exc:
                        error = error or str(exc)
                if not found:
                    yield Problem(path, lineno, error)
                    continue
                image = found[0]
            yield OriginalRecord(
                id=cap_id,
                fields={"caption": caption},
                image=image,
                source="coco-captions",
                split=split,
                meta={"image_id": image_id},
            )


def read_cf(
    paths: list[str],
    *,
    split: str = "",
    labels: list[str] | None = None,
    text_fields: list[str] | None = None,
    max_line_bytes: int = r.DEFAULT_MAX_LINE_BYTES,
    image_root: str | None = None,
    image_base: str | None = None,
    label_map: dict[str, str] | None = None,
    warn: Callable[[Problem], None] | None = None,
    max_image_pixels: int = r.DEFAULT_MAX_IMAGE_PIXELS,
) -> Iterator[Record]:
    _check_fields(text_fields)
    files, image_dir = cf_split_paths(paths)
    for path in files:
        if not os.path.isfile(path):
            raise r.FormatError(f"{path}: file not found")
        folder = image_dir
        if folder is None:
            beside = os.path.join(os.path.dirname(os.path.abspath(path)), "images")
            folder = beside if os.path.isdir(beside) else os.path.dirname(os.path.abspath(path))
        folder = os.path.abspath(folder)
        for row in r.iter_json_lines(path, max_line_bytes=max_line_bytes):
            if isinstance(row, Problem):
                yield row
                continue
            lineno, obj = row
            if not isinstance(obj, dict):
                yield Problem(path, lineno, "a line must be a JSON object")
                continue
            missing = [
                k
                for k in ("id", "caption_0", "caption_1", "image_0", "image_1")
                if not isinstance(obj.get(k), str) or not obj[k]
            ]
            if missing:
                yield Problem(path, lineno, f"missing or non-string key(s): {', '.join(missing)}")
                continue
            if msg := r.too_long("id", obj["id"], r.MAX_ID - 10):
                yield Problem(path, lineno, msg)
                continue
            images, errors = [], []
            for k in ("image_0", "image_1"):
                name = obj[k] if obj[k].lower().endswith((".jpg", ".jpeg", ".png")) else f"{obj[k]}.jpg"
                try:
                    images.append(r.resolve_image(name, base_dir=folder, root=image_root, max_pixels=max_image_pixels))
                except ValueError as exc:
                    errors.append(str(exc))
            if errors:
                yield Problem(path, lineno, "; ".join(errors))
                continue
            if any(len(p) > r.MAX_IMAGE for p in images):
                yield Problem(path, lineno, f"image path longer than {r.MAX_IMAGE} characters")
                continue
            orig = OriginalRecord(
                id=f"cocf-{obj['id']}-0",
                fields={"caption": obj["caption_0"]},
                image=images[0],
                source="coco-cf",
                split=split,
                meta={"coco_caption_id": obj["id"]},
            )
            yield PairRecord(
                id=f"cocf-{obj['id']}",
                original=orig,
                cf_fields={"caption": obj["caption_1"]},
                group=orig.id,
                generator="coco-counterfactuals",
                cf_image=images[1],
                meta={"coco_caption_id": obj["id"]},
            )


def write_cf(records: Iterable[PairRecord], out_dir: str, *, image_root: str = "") -> int:
    """Write image pairs in the COCO-Counterfactuals layout: ``out_dir/metadata.jsonl`` with one
    ``{"id", "caption_0", "caption_1", "image_0", "image_1"}`` per pair and the images copied
    beside it as ``out_dir/<image_k>`` (so ``read_cf([out_dir])`` and
    ``read_cf([out_dir/metadata.jsonl])`` both read it back).

    ``id`` is the pair's id without the ``cocf-`` prefix the reader adds; ``image_k`` is
    ``<id>_0`` / ``<id>_1`` (the published data names them by caption id too). A relative image
    path is taken under ``image_root``. A pair without both images or without a caption is a
    ``ValueError`` (the layout has no place for a missing one)."""
    images = out_dir
    os.makedirs(images, exist_ok=True)
    n = 0
    with open(os.path.join(out_dir, "metadata.jsonl"), "w", encoding="utf-8", newline="\n") as fh:
        for rec in records:
            pid = rec.id[len("cocf-") :] if rec.id.startswith("cocf-") else rec.id
            row: dict[str, str] = {
                "id": pid,
                "caption_0": str(rec.original.fields.get("caption", "")),
                "caption_1": str(rec.cf_fields.get("caption", "")),
            }
            if not row["caption_0"] or not row["caption_1"]:
                raise ValueError(f"pair {rec.id}: coco-cf needs a caption on both sides")
            safe = "".join(ch if ch.isalnum() or ch in "-_." else "_" for ch in pid)
            for k, src in ((0, rec.original.image), (1, rec.cf_image)):
                if not src:
                    raise ValueError(f"pair {rec.id}: coco-cf needs both images (image_{k} is missing)")
                path = src if os.path.isabs(src) else os.path.join(image_root, src)
                if not os.path.isfile(path):
                    raise ValueError(f"pair {rec.id}: image not found: {path}")
                ext = os.path.splitext(path)[1].lower() or ".jpg"
                name = f"{safe}_{k}"
                shutil.copyfile(path, os.path.join(images, name + ext))
                row[f"image_{k}"] = name if ext == ".jpg" else name + ext
            fh.write(json.dumps(row, ensure_ascii=False) + "\n")
            n += 1
    return n
