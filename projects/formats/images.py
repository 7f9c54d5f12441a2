"""Checking an image file before it is imported. Pure Python + Pillow (no Django).

An image is accepted when its name ends in ``.jpg``, ``.jpeg``, ``.png``, ``.webp`` or
``.gif`` (the types ``/images/`` serves), Pillow identifies it as a JPEG, PNG, WebP or GIF,
its width × height is at most ``max_pixels`` (read from the header: a decompression bomb is
refused without being decoded), ``Image.verify()`` finds nothing wrong (PNG chunk checksums,
…) and, for a JPEG, a reduced decode (1/8 scale, via ``draft``) reaches the end of the data
(``verify`` does not look inside JPEG data, so a truncated or damaged JPEG is caught here).

The verdict of a file is cached by (path, size, mtime), so an import that reads its input
twice (check, then write) or names one image on many rows opens each image once.
"""

from __future__ import annotations

import os
import warnings
from functools import lru_cache

# The extensions /images/ serves, with their content types.
IMAGE_TYPES = {
    ".jpg": "image/jpeg",
    ".jpeg": "image/jpeg",
    ".png": "image/png",
    ".gif": "image/gif",
    ".webp": "image/webp",
}
IMAGE_FORMATS = {"JPEG": "JPEG", "PNG": "PNG", "WEBP": "WebP", "GIF": "GIF"}
DEFAULT_MAX_IMAGE_PIXELS = 40_000_000


def image_problem(path: str, *, max_pixels: int = DEFAULT_MAX_IMAGE_PIXELS) -> str | None:
    """``None`` when the image file at ``path`` (which exists) may be imported; else what is
    wrong with it, as a phrase that follows the image's name ("is not a JPEG, …")."""
    ext = os.path.splitext(path)[1].lower()
    if ext not in IMAGE_TYPES:
        shown = ext or "no extension"
        return f"has {shown}; only .jpg, .jpeg, .png, .webp and .gif images can be imported"
    try:
        st = os.stat(path)
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    return _checked(path, st.st_size, st.st_mtime_ns, max_pixels)


@lru_cache(maxsize=16384)
def _checked(path: str, size: int, mtime_ns: int, max_pixels: int) -> str | None:
    from PIL import Image

    fmt = "?"
    try:
        with warnings.catch_warnings():
            # Pillow warns (and over twice its own limit refuses) on huge images; ours is the limit.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            # Only these decoders are tried: no other plugin (EPS, …) ever sees the file.
            with Image.open(path, formats=list(IMAGE_FORMATS)) as im:
                fmt = im.format or "?"
                if fmt not in IMAGE_FORMATS:
                    return f"is a {fmt} image; only JPEG, PNG, WebP and GIF images can be imported"
                width, height = im.size
                if width * height > max_pixels:
                    return _too_large(width, height, max_pixels)
                im.verify()
            if fmt == "JPEG":
                with Image.open(path, formats=["JPEG"]) as im:
                    im.draft("RGB", (max(1, width // 8), max(1, height // 8)))
                    im.load()
    except Image.DecompressionBombError as exc:  # over twice Pillow's own limit: refused by open()
        return (
            f"is over the limit of {max_pixels:,} pixels (COUNTERPART_MAX_IMAGE_PIXELS; Pillow: {_short(exc)}); "
            "it was not decoded"
        )
    except Image.UnidentifiedImageError:
        return "is not a JPEG, PNG, WebP or GIF image (Pillow cannot identify it)"
    except Exception as exc:  # noqa: BLE001 - Pillow raises OSError, SyntaxError, ValueError, struct.error, …
        if fmt == "?":  # not even the header could be read
            return f"is not a readable JPEG, PNG, WebP or GIF image ({_short(exc)})"
        return f"is a damaged or truncated {IMAGE_FORMATS.get(fmt, fmt)} file ({_short(exc)})"
    return None


def _too_large(width: int, height: int, max_pixels: int) -> str:
    return (
        f"is {width}×{height} = {width * height:,} pixels, over the limit of {max_pixels:,} "
        "(COUNTERPART_MAX_IMAGE_PIXELS); it was not decoded"
    )


def _short(exc: BaseException) -> str:
    text = str(exc) or type(exc).__name__
    return text if len(text) <= 120 else text[:117] + "…"
