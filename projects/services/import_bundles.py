"""Uploads of the CAD layouts (issue 20.1): the files a user has, or a ``.zip`` of the folder,
staged under ``MEDIA_ROOT/imports/`` as the folder the ``cad-*`` readers take
(:mod:`projects.formats.cad`), then imported by the ordinary ``import`` job.

- ``cad-nli``: the three files of one split (``original``, ``revised_premise``,
  ``revised_hypothesis``; each is ``{split}.tsv`` in the published layout), uploaded as three
  fields; or a zip holding ``…/original/{split}.tsv``, ``…/revised_premise/{split}.tsv`` and
  ``…/revised_hypothesis/{split}.tsv`` (the ``cad/`` or ``NLI/`` folder, zipped).
- ``cad-sentiment``: the ``{split}_paired.tsv`` file itself, or a zip holding it.

A zip is checked from its directory before anything is unpacked, and again by the job that
unpacks it: no member name may leave the folder (absolute, ``..``, a drive, a NUL), no
expected member may be a link or encrypted, the members taken must exist once each, and
their sizes together must be within ``MAX_UPLOAD_BYTES`` (the bytes unpacked are counted
too). Only the expected members are unpacked; the rest of the zip (``LICENSE``, other
splits) is ignored. The staged folder and the zip are removed when the job ends.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import uuid
import zipfile
from pathlib import Path

CAD_FORMATS = ("cad-nli", "cad-sentiment")
CAD_NLI_PARTS = ("original", "revised_premise", "revised_hypothesis")
ZIP_MAX_MEMBERS = 10_000  # entries in a zip's directory
COPY_CHUNK = 1 << 16
ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")  # a zip with members, an empty zip


class BundleRefused(ValueError):
    """The uploaded files or zip cannot be a CAD folder; the message says why."""


def is_zip(path: str) -> bool:
    with open(path, "rb") as fh:
        return fh.read(4) in ZIP_MAGIC


def cad_targets(format: str, split: str) -> dict[str, str]:
    """The files a CAD split needs, as ``{role: path inside the staged folder}``."""
    if format == "cad-nli":
        return {part: f"NLI/{part}/{split}.tsv" for part in CAD_NLI_PARTS}
    return {"paired": f"sentiment/combined/paired/{split}_paired.tsv"}


def _unsafe(name: str) -> bool:
    parts = name.replace("\\", "/").split("/")
    return (
        "\x00" in name
        or name.startswith(("/", "\\"))
        or bool(re.match(r"^[A-Za-z]:", name))
        or any(p == ".." for p in parts)
    )


def _role_of(format: str, split: str, name: str) -> str | None:
    parts = [p for p in name.split("/") if p]
    if format == "cad-nli":
        if len(parts) >= 2 and parts[-1] == f"{split}.tsv" and parts[-2] in CAD_NLI_PARTS:
            return parts[-2]
        return None
    return "paired" if parts and parts[-1] == f"{split}_paired.tsv" else None


def zip_plan(path: str, *, format: str, split: str, max_bytes: int) -> dict[str, zipfile.ZipInfo]:
    """The members of the zip at ``path`` to unpack, as ``{role: member}``; raises
    :class:`BundleRefused` (see the module docstring for what is checked)."""
    try:
        zf = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, OSError) as exc:
        raise BundleRefused(f"the upload is not a readable zip file ({exc})") from None
    with zf:
        infos = zf.infolist()
        if len(infos) > ZIP_MAX_MEMBERS:
            raise BundleRefused(f"the zip has {len(infos):,} entries; at most {ZIP_MAX_MEMBERS:,} are read")
        found: dict[str, list[zipfile.ZipInfo]] = {}
        tsvs: list[str] = []
        for info in infos:
            name = info.filename
            if _unsafe(name):
                raise BundleRefused(f"the zip member {name!r} points outside its folder; nothing was unpacked")
            if info.is_dir():
                continue
            if name.endswith(".tsv"):
                tsvs.append(name)
            role = _role_of(format, split, name)
            if role is None:
                continue
            if stat.S_ISLNK(info.external_attr >> 16):
                raise BundleRefused(f"the zip member {name!r} is a link, not a file")
            if info.flag_bits & 0x1:
                raise BundleRefused(f"the zip member {name!r} is encrypted")
            found.setdefault(role, []).append(info)
    targets = cad_targets(format, split)
    missing = [targets[r] for r in targets if r not in found]
    if missing:
        seen = ", ".join(tsvs[:8]) + (f" and {len(tsvs) - 8} more" if len(tsvs) > 8 else "") if tsvs else "none"
        wanted = " and no ".join(m.split("/", 1)[1] if format == "cad-nli" else m.rsplit("/", 1)[1] for m in missing)
        raise BundleRefused(f"the zip has no {wanted} for split {split!r} (its .tsv files: {seen})")
    twice = [f"{r}: {', '.join(i.filename for i in infos)}" for r, infos in found.items() if len(infos) > 1]
    if twice:
        raise BundleRefused(f"the zip holds more than one file for {'; '.join(twice)}; zip one CAD folder")
    plan = {role: infos[0] for role, infos in found.items()}
    if format == "cad-nli":
        folders = {os.path.dirname(os.path.dirname(i.filename)) for i in plan.values()}
        if len(folders) > 1:
            raise BundleRefused(f"the three NLI files lie in different folders ({', '.join(sorted(folders))})")
    total = sum(i.file_size for i in plan.values())
    if total > max_bytes:
        raise BundleRefused(f"the files to unpack hold {total:,} bytes, over the {max_bytes:,}-byte limit")
    return plan


def zip_unpack(path: str, dest: str, *, format: str, split: str, max_bytes: int) -> list[str]:
    """Check the zip again (:func:`zip_plan`) and unpack its expected members into ``dest``
    (replacing what a killed earlier execution left), counting the bytes written."""
    plan = zip_plan(path, format=format, split=split, max_bytes=max_bytes)
    targets = cad_targets(format, split)
    written = 0
    out = []
    with zipfile.ZipFile(path) as zf:
        for role, info in plan.items():
            target = os.path.join(dest, targets[role])
            os.makedirs(os.path.dirname(target), exist_ok=True)
            with zf.open(info) as src, open(target, "wb") as dst:
                while block := src.read(COPY_CHUNK):
                    written += len(block)
                    if written > max_bytes:
                        raise BundleRefused(f"the zip unpacks to more than {max_bytes:,} bytes")
                    dst.write(block)
            out.append(target)
    return out


def stage_dir(root: Path) -> Path:
    """A new folder under ``root`` for one upload's staged files."""
    folder = root / f"upload-{uuid.uuid4().hex}.d"
    folder.mkdir(parents=True, mode=0o700)
    return folder


def remove_uploads(paths: list[str], *, root: Path) -> None:
    """Remove uploaded files and staged folders, and only those inside ``root``."""
    root_real = os.path.realpath(root)
    for path in paths:
        real = os.path.realpath(path)
        if not real.startswith(root_real + os.sep):
            continue
        if os.path.isdir(real):
            shutil.rmtree(real, ignore_errors=True)
        elif os.path.exists(real):
            os.remove(real)
