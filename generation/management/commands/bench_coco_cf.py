"""``python manage.py bench_coco_cf [--captions N] [--seed S] [--json]``

How the ``coco-cf`` caption side behaves on real COCO captions, compared with the published
COCO-Counterfactuals pairs (``../shared/data/coco_cf``). Text only (no images); no database.

* sample: ``N`` captions of ``captions_val2017.tsv`` that also appear as ``caption_0`` in
  ``metadata.jsonl`` (so both sides can be compared), drawn with ``--seed``;
* ``yield_share``: share of sampled captions for which the generator finds a one-noun
  counterfactual in the MiniLM band (0.8, 0.91];
* ``published_in_band``: share of the published pairs of the sample whose MiniLM similarity is in
  that band under our encoder (a check that our band is theirs);
* ``same_noun`` / ``same_replacement``: among captions where we made a pair, how often we
  replaced the same noun as the published pair, and also chose the same new word;
* ``published_replacement_among_ours``: how often the published replacement is among our
  candidate replacements for that noun (before the band);
* ``--vocabulary``: WordNet replacements limited to words used by the captions outside the
  sample (a proxy for "depictable");
* ``captions_per_s``: generator throughput (WordNet, tagger, MiniLM; model loading excluded).
"""

from __future__ import annotations

import json
import random
import re
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from generation.ml.base import GeneratedCandidate, Original
from generation.ml.rules.tokens import words
from projects.formats import DEFAULT_MAX_LINE_BYTES, FormatError, check_inputs


def published_swap(a: str, b: str) -> tuple[str, str] | None:
    """(old, new) word of a published pair when exactly one word differs (ignoring a/an)."""
    wa, wb = words(a), words(b)
    if len(wa) != len(wb):
        return None
    diff = [(x, y) for x, y in zip(wa, wb, strict=True) if x != y and {x, y} != {"a", "an"}]
    return diff[0] if len(diff) == 1 else None


class Command(BaseCommand):
    help = "Measure the coco-cf caption generator on COCO captions against the published pairs."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--captions", type=int, default=500)
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--data", default="", help="folder with captions_val2017.tsv and metadata.jsonl")
        parser.add_argument(
            "--vocabulary",
            action="store_true",
            help="limit WordNet replacements to words of the captions NOT in the sample",
        )
        parser.add_argument("--json", action="store_true")

    def handle(self, *args: Any, **opts: Any) -> None:
        from generation.ml.captions import CocoCounterfactualGenerator, caption_swaps
        from projects.ml.embeddings import Encoder

        folder = Path(opts["data"] or Path(settings.COUNTERPART["SHARED_DATA_DIR"]) / "coco_cf")
        tsv, meta = folder / "captions_val2017.tsv", folder / "metadata.jsonl"
        if not tsv.is_file() or not meta.is_file():
            raise CommandError(f"need {tsv} and {meta}")
        try:  # not UTF-8 (a UTF-16 or Latin-1 export), a binary file: one line naming it, not a traceback
            for fmt, path in (("coco-captions", tsv), ("coco-cf", meta)):
                check_inputs(fmt, [str(path)], max_file_bytes=None, max_line_bytes=DEFAULT_MAX_LINE_BYTES)
        except FormatError as exc:
            raise CommandError(str(exc)) from None
        if opts["captions"] < 1:
            raise CommandError("--captions must be >= 1")
        captions: dict[str, str] = {}
        with tsv.open(encoding="utf-8") as fh:
            for line in fh:
                cid, _, cap = line.rstrip("\n").partition("\t")
                captions[cid] = cap
        published: dict[str, dict[str, str]] = {}
        with meta.open(encoding="utf-8") as fh:
            for n, line in enumerate(fh, 1):
                if not line.strip():
                    continue
                try:
                    obj = json.loads(line)
                    if obj["id"] in captions and captions[obj["id"]].strip() == obj["caption_0"].strip():
                        published[obj["id"]] = obj
                except (ValueError, KeyError, TypeError, AttributeError) as exc:
                    raise CommandError(f"{meta}:{n}: not a COCO-Counterfactuals row ({exc!r})") from None
        if not published:
            raise CommandError(f"no pair of {meta} has its caption_0 in {tsv} (under its id): nothing to compare with")
        ids = sorted(published)
        random.Random(opts["seed"]).shuffle(ids)
        ids = ids[: opts["captions"]]
        encoder = Encoder(model_path=settings.COUNTERPART["MINILM_PATH"] or None)
        encoder.encode(["warm up"])
        gen = CocoCounterfactualGenerator(encoder=encoder, images=False)
        if opts["vocabulary"]:
            from collections import Counter

            from generation.ml.rules.phrases import singularize

            vocab: Counter[str] = Counter()
            held_in = set(ids)
            for cid, cap in captions.items():
                if cid in held_in:
                    continue
                for w in re.findall(r"[a-z]+", cap.lower()):
                    vocab[w] += 1
                    if w.endswith("s") and (sg := singularize(w)) != w:
                        vocab[sg] += 1
            gen.vocabulary = vocab
        caption_swaps("A man riding a horse.")  # load WordNet and the tagger before timing
        originals = [Original(i, {"caption": captions[i]}, None, (), "image-caption") for i in ids]
        t0 = time.perf_counter()
        out = list(gen.generate(originals))
        seconds = time.perf_counter() - t0
        ours = {c.original_id: c for c in out if isinstance(c, GeneratedCandidate)}
        pub_pairs = [(published[i]["caption_0"], published[i]["caption_1"]) for i in ids]
        sims = encoder.cosine([a for a, _ in pub_pairs], [b for _, b in pub_pairs])
        in_band = sum(1 for s in sims if 0.8 < round(float(s), 6) <= 0.91)
        same_noun = same_new = among = comparable = 0
        for i in ids:
            swap = published_swap(published[i]["caption_0"], published[i]["caption_1"])
            if swap is None:
                continue
            old, new = swap
            all_swaps = [s for s in caption_swaps(captions[i], vocabulary=gen.vocabulary) if s.replaced.lower() == old]
            if any(s.by.lower() == new for s in all_swaps):
                among += 1
            c = ours.get(i)
            if c is None:
                continue
            comparable += 1
            if str(c.meta["replaced"]).lower() == old:
                same_noun += 1
                if str(c.meta["by"]).lower() == new:
                    same_new += 1
        one_word = sum(1 for i in ids if published_swap(published[i]["caption_0"], published[i]["caption_1"]))
        result = {
            "captions": len(ids),
            "vocabulary": bool(opts["vocabulary"]),
            "yield_share": _share(len(ours), len(ids)),
            "mean_similarity": _share(sum(float(c.scores["similarity"]) for c in ours.values()), len(ours)),
            "published_in_band": _share(in_band, len(ids)),
            "published_one_word_swaps": one_word,
            "same_noun": _share(same_noun, comparable),
            "same_replacement": _share(same_new, comparable),
            "published_replacement_among_ours": _share(among, one_word),
            "captions_per_s": round(len(ids) / seconds, 2) if seconds else None,
            "seconds": round(seconds, 2),
        }
        if not opts["json"]:
            for key, value in result.items():
                self.stdout.write(f"{key:34s} {value}")
            examples = list(ours.values())[:8]
            for c in examples:
                p = published[c.original_id]
                self.stdout.write(f"  {p['caption_0']}\n    ours: {c.fields['caption']}\n    pub:  {p['caption_1']}")
        self.stdout.write(json.dumps(result))


def _share(part: float, whole: int) -> float | None:
    """``part / whole`` to 4 places; None (JSON null) when there is nothing to divide by, not a
    0.0 that reads as a measurement."""
    return round(part / whole, 4) if whole else None
