"""The images of an image–caption pair as the researcher's pages show them (issue 20.7): the
original's photo and the counterfactual's (generated or imported) image, each with its URL
as the annotator's browser loads it (:func:`annotate.selectors.image_url`: ``/images/…`` for
an imported image inside the image root, ``MEDIA_URL`` for a generated one) — or, when there
is nothing to load, why, so the page shows a placeholder instead of a broken image."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from annotate.selectors import image_url


@dataclass(frozen=True)
class ShownImage:
    url: str  # "" when there is nothing to load
    missing: str  # "" or why there is no image: "no image", "image file missing", …
    caption: str

    def as_dict(self) -> dict[str, str]:
        return {"url": self.url, "missing": self.missing, "caption": self.caption}


def shown_image(path: str, caption: str = "") -> ShownImage:
    """``path`` as stored on an original or a candidate (absolute: imported; relative: under
    ``MEDIA_ROOT``, generated; or an http(s) URL, shown as it is)."""
    if not path:
        return ShownImage("", "no image", caption)
    url = image_url(path)
    if path.startswith(("http://", "https://")):
        return ShownImage(url, "", caption)
    if not url:
        return ShownImage("", "image outside the image root (not served)", caption)
    full = path if os.path.isabs(path) else os.path.join(str(settings.MEDIA_ROOT), path)
    if not os.path.isfile(full):
        return ShownImage("", "image file missing", caption)
    return ShownImage(url, "", caption)


def image_pair(
    *, original_image: str, original_fields: dict[str, Any], image: str, fields: dict[str, Any]
) -> dict[str, dict[str, str]]:
    """Both sides of an image–caption pair: ``{"original": …, "counterfactual": …}``, each
    ``{url, missing, caption}``."""
    return {
        "original": shown_image(original_image, str(original_fields.get("caption", ""))).as_dict(),
        "counterfactual": shown_image(image, str(fields.get("caption", ""))).as_dict(),
    }
