"""Starting an import of uploaded files (the import page and ``POST /api/v1/projects/{id}/import/``:
one rule for both). One data file goes to the ``import`` job as it is; the CAD layouts — the
files of a split, or a zip of the folder — are staged as the folder the ``cad-*`` readers take
(:mod:`projects.services.import_bundles`), and the job runs on that folder."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from django.conf import settings

from projects.formats.sniff import format_hint
from projects.models import Job, Project
from projects.services.import_bundles import (
    CAD_FORMATS,
    CAD_NLI_PARTS,
    BundleRefused,
    cad_targets,
    is_zip,
    stage_dir,
    zip_plan,
)
from projects.services.import_jobs import (
    ImportNotStarted,
    import_start,
    import_upload_dir,
    import_uploads_remove,
)
from projects.services.imports import image_root


def import_upload_start(
    *,
    project: Project,
    path: str,
    name: str,
    format: str,
    split: str = "",
    strict: bool = True,
    label_map: dict[str, str] | None = None,
    skip_hint: str,
    target: str = "pool",
    created_by: Any = None,
) -> Job:
    """Queue the import of one uploaded file (the page and the API: one rule for both).
    An upload has no folder of its own, so its relative image paths start at the image root."""
    return import_start(
        project=project,
        format=format,
        paths=[path],
        split=split,
        strict=strict,
        label_map=label_map,
        image_base=image_root(),
        names={path: name or "upload"},
        uploaded=True,
        skip_hint=skip_hint,
        target=target,
        created_by=created_by,
    )


def import_files_start(
    *,
    project: Project,
    format: str,
    split: str,
    files: Mapping[str, tuple[str, str]],
    strict: bool = True,
    label_map: dict[str, str] | None = None,
    skip_hint: str,
    target: str = "pool",
    created_by: Any = None,
) -> Job:
    """Queue the import of uploaded files (the page and the API: one rule for both).
    ``target``: ``pool`` (originals and pairs) or ``task`` (the task model's training data).
    ``files`` maps a field (``file``, or for ``cad-nli`` also ``original``,
    ``revised_premise``, ``revised_hypothesis``) to ``(stored path, the user's file name)``;
    every stored file is the job's from here on (moved into its folder, or removed when the
    import is refused). Raises :class:`ImportNotStarted` with the reason."""
    paths = [p for p, _ in files.values()]
    try:
        if format not in CAD_FORMATS:
            if set(files) != {"file"}:
                raise ImportNotStarted(f"{format} takes one data file (the field 'file')")
            path, name = files["file"]
            if hint := format_hint(path, name, format):  # issue 32.8: say what it looks like
                raise ImportNotStarted(f"{hint}; nothing was imported", field="file")
            return import_upload_start(
                project=project,
                path=path,
                name=name,
                format=format,
                split=split,
                strict=strict,
                label_map=label_map,
                skip_hint=skip_hint,
                target=target,
                created_by=created_by,
            )
        return _cad_start(
            project=project,
            format=format,
            split=split,
            files=files,
            strict=strict,
            label_map=label_map,
            skip_hint=skip_hint,
            target=target,
            created_by=created_by,
        )
    except BundleRefused as exc:
        import_uploads_remove(paths)
        raise ImportNotStarted(str(exc)) from None
    except ImportNotStarted:
        import_uploads_remove(paths)
        raise


def _cad_start(*, project: Project, format: str, split: str, files: Mapping[str, tuple[str, str]], **job: Any) -> Job:
    if split not in ("train", "dev", "test"):
        raise ImportNotStarted(f"{format} needs the split: train, dev or test", field="split")
    limit = int(settings.COUNTERPART["MAX_UPLOAD_BYTES"])
    parts = {k: v for k, v in files.items() if k in CAD_NLI_PARTS}
    whole = files.get("file")
    wrong = set(files) - {"file", *CAD_NLI_PARTS}
    if wrong or (parts and format != "cad-nli"):
        raise ImportNotStarted(f"{format} takes the field 'file' (a .tsv or a .zip), not {', '.join(sorted(files))}")
    if whole is not None and parts:
        raise ImportNotStarted("give either a .zip of the folder or the three .tsv files, not both")
    if whole is not None and is_zip(whole[0]):
        zip_plan(whole[0], format=format, split=split, max_bytes=limit)
        dest = str(stage_dir(import_upload_dir()))
        return import_start(
            project=project,
            format=format,
            paths=[dest],
            split=split,
            image_base=image_root(),
            names={dest + os.sep: f"{whole[1]}:"},
            uploaded=True,
            archive=whole[0],
            **job,
        )
    if format == "cad-sentiment":
        if whole is None:
            raise ImportNotStarted(f"choose the {split}_paired.tsv file, or a .zip of the CAD folder")
        return import_start(
            project=project,
            format=format,
            paths=[whole[0]],
            split=split,
            image_base=image_root(),
            names={whole[0]: whole[1] or "upload"},
            uploaded=True,
            **job,
        )
    missing = [p for p in CAD_NLI_PARTS if p not in parts]
    if missing:
        why = "missing " + ", ".join(missing) if whole is None else "one .tsv is not enough"
        raise ImportNotStarted(
            f"cad-nli needs the three files of the split (original, revised_premise, revised_hypothesis: {why}), "
            "or a .zip of the folder"
        )
    folder = stage_dir(import_upload_dir())
    names = {}
    for role, target in cad_targets(format, split).items():
        path = folder / target
        path.parent.mkdir(parents=True, exist_ok=True)
        os.replace(parts[role][0], path)
        names[str(path)] = f"{parts[role][1] or 'upload'} ({role})"
    return import_start(
        project=project,
        format=format,
        paths=[str(folder)],
        split=split,
        image_base=image_root(),
        names=names,
        uploaded=True,
        **job,
    )
