"""The image-caption demo project (``manage.py demo`` creates it beside ``demo-nli``).

COCO images are not available offline, so the demo uses real photographs that ship with
scikit-image (``skimage/data``; public domain or CC0, see ``projects/fixtures/README.md``),
true captions written by looking at them, and one-noun swaps made with the caption generator's
own code (:func:`generation.ml.captions.caption_swaps`, WordNet sister terms when no masked LM
is configured, realised with the noun's number and article by
:func:`~generation.ml.captions.realise`). Each pair is (photo A, a caption true of A) and
(photo B, the same caption with one noun swapped, true of B and not of A): the photos stand in
for the generated image of COCO-Counterfactuals, so the demo shows what a valid pair looks like
and each image has one right answer (its own caption). The photos are copied to
``MEDIA_ROOT/demo/captions/`` and the pairs imported from a ``pairs-jsonl`` file written there
(FORMATS.md §1 image pairs).
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from django.conf import settings

from annotate.models import Item
from annotate.services.routing import project_add_annotators, project_route
from projects.services.imports import ImportReport, data_import
from projects.services.projects import project_get_or_create

DEMO_CAPTION_PROJECT = "demo-image-caption"
MEDIA_SUBDIR = "demo/captions"


@dataclass(frozen=True)
class DemoPhoto:
    licence: str  # from the docstring of skimage.data's loader
    caption: str  # a true caption, written by looking at the photo
    shows: frozenset[str]  # nouns for what is plainly in the photo (the demo's consistency tests)


@dataclass(frozen=True)
class DemoPair:
    photo: str  # file in skimage/data: the original's image
    caption: str
    replaced: str  # the noun swapped
    by: str  # its replacement
    cf_photo: str  # the counterfactual's image


PHOTOS = {
    "chelsea.png": DemoPhoto(
        "CC0 (photographer Stefan van der Walt)",
        "a close-up of a tabby cat with green eyes",
        frozenset({"cat", "eyes", "ears", "whiskers", "nose", "close-up"}),
    ),
    "astronaut.png": DemoPhoto(
        "public domain (NASA; Eileen Collins)",
        "a smiling woman with short hair in an orange suit",
        frozenset({"woman", "hair", "suit", "helmet", "flag", "shuttle"}),
    ),
    "camera.png": DemoPhoto(
        "CC0 (photographer Lav Varshney)",
        "a man with short hair filming with a camera on a tripod",
        frozenset({"man", "hair", "camera", "tripod", "coat", "grass", "buildings"}),
    ),
    "coffee.png": DemoPhoto(
        "CC0 (photographer Rachel Michetti, Pikolo Espresso Bar)",
        "a close-up of a red cup of coffee on a saucer",
        frozenset({"cup", "coffee", "saucer", "spoon", "table", "close-up"}),
    ),
    "horse.png": DemoPhoto(
        "CC0 (Andreas Preuss, openclipart)",
        "the black silhouette of a horse with pointed ears",
        frozenset({"horse", "silhouette", "ears", "tail", "legs"}),
    ),
}

# Every pair is valid: each photo matches its own caption and not the other one, so the right
# answers are "Caption <its own>" for both images -- what a good COCO-Counterfactuals pair looks
# like (the dashboard counts it as "worked").
PAIRS = [
    DemoPair("astronaut.png", "a woman with short hair", "woman", "man", "camera.png"),
    DemoPair("coffee.png", "a close-up of a cup", "cup", "cat", "chelsea.png"),
    DemoPair("horse.png", "a horse with pointed ears", "horse", "cat", "chelsea.png"),
    DemoPair("chelsea.png", "a cat looking at the camera", "cat", "woman", "astronaut.png"),
]


def swap_caption(caption: str, replaced: str, by: str) -> tuple[str, str]:
    """``(counterfactual caption, source)``: the generator's own swap when ``by`` is among its
    WordNet candidates for ``replaced`` (source ``wordnet``), else the same realisation of a
    hand-picked replacement (source ``demo``)."""
    from generation.ml.captions import caption_swaps, realise
    from generation.ml.rules.tokens import tag

    for s in caption_swaps(caption, k=25):
        if s.replaced.lower() == replaced and s.by.lower() == by:
            return s.counterfactual, s.source
    toks = tag(caption)
    i = next(j for j, t in enumerate(toks) if t.text.lower() == replaced)
    return realise(caption, toks, i, by)[0], "demo"


def skimage_data_dir() -> Path:
    import skimage

    return Path(skimage.__file__).resolve().parent / "data"


def demo_caption_file() -> Path:
    """Copy the photos into ``MEDIA_ROOT/demo/captions`` and write ``pairs.jsonl`` beside them."""
    out = Path(settings.MEDIA_ROOT) / MEDIA_SUBDIR
    out.mkdir(parents=True, exist_ok=True)
    src = skimage_data_dir()
    for name in PHOTOS:
        if not (out / name).is_file():
            shutil.copyfile(src / name, out / name)
    lines = []
    for n, p in enumerate(PAIRS, start=1):
        cf, source = swap_caption(p.caption, p.replaced, p.by)
        meta: dict[str, Any] = {"replaced": p.replaced, "by": p.by, "source": source}
        lines.append(
            {
                "id": f"demo-cap-{n}",
                "group": f"demo-cap-{n}",
                "original": {
                    "id": f"demo-cap-{n}-0",
                    "fields": {"caption": p.caption},
                    "label": None,
                    "image": p.photo,
                    "source": "skimage.data",
                    "meta": {"licence": PHOTOS[p.photo].licence, "photo_caption": PHOTOS[p.photo].caption},
                },
                "counterfactual": {
                    "fields": {"caption": cf},
                    "image": p.cf_photo,
                    "generator": "coco-counterfactuals",
                    "perturbation": "lexical",
                },
                "meta": {
                    **meta,
                    "licence": PHOTOS[p.cf_photo].licence,
                    "photo_caption": PHOTOS[p.cf_photo].caption,
                },
            }
        )
    path = out / "pairs.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    return path


def demo_was_routed(project: Any) -> bool:
    """Whether this demo project was ever routed (it has items): then the demo routes no more."""
    return Item.objects.filter(project=project).exists()


def demo_caption_project(
    *, researcher: Any, annotators: list[Any], route: bool
) -> tuple[str, ImportReport, int | None]:
    """Create (or top up) the image-caption demo project; returns (summary line, import report,
    routed pairs: None when the project was routed before and left as it is). Every pair is
    routed (both images of a pair become caption-choice items)."""
    project, created = project_get_or_create(
        name=DEMO_CAPTION_PROJECT,
        task="image-caption",
        created_by=researcher,
        description="Demo project: caption choice on public-domain / CC0 photos from scikit-image with "
        "one-noun caption swaps (COCO-Counterfactuals style).",
    )
    report = data_import(project=project, format="pairs-jsonl", paths=[str(demo_caption_file())])
    project_add_annotators(project=project, users=annotators)
    # routed once: a project that has items is left as it is (a second `make run` routes no more)
    routed: int | None = None
    if route and not demo_was_routed(project):
        routed = project_route(project=project, budget=1.0, seed=0).routed
    line = f"demo project {project.name!r} ({'created' if created else 'exists'}): {report.summary()}"
    return line, report, routed
