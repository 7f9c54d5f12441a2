"""COCO-Counterfactuals-style caption pairs (Le, Lal & Howard, NeurIPS 2023): replace ONE noun
of a caption, keep the pair when the two captions are close but not too close, and (optionally)
draw a minimally different image for each caption. No Django imports; torch, transformers and
diffusers are imported lazily.

Caption side (the paper's B.2.1, our own implementation):

1. nouns: POS tags from TextBlob's PatternTagger (``generation.ml.rules.tokens.tag``); common
   nouns (NN/NNS) only, proper nouns are left alone;
2. replacements for one noun at a time: the top ``top_k`` fill-ins of a masked LM for the masked
   noun when a masked LM path is configured (``COUNTERPART_MLM_PATH``, loaded by
   ``generation.ml.hf``), otherwise WordNet sister terms (co-hyponyms: other hyponyms of the
   noun's hypernyms, first two senses; then siblings one level up), most frequent first.
   Replacements that are a hypernym or hyponym of the noun are dropped (the paper's error
   analysis: "girls" -> "kids" leaves both captions true of one image);
3. the replacement takes the noun's number (plural for NNS) and its article ("a" -> "an");
4. MiniLM similarity of caption and counterfactual in the band (0.8, 0.91]
   (``generation.ml.filters.similarity_band``); among the pairs in the band the one with the
   lowest perplexity wins when a perplexity LM is configured (the paper used GPT-2), else the
   most probable / most frequent replacement (ties: the higher similarity).

Image side: ``generation.ml.images`` (same initial latents for both captions, cross- and
self-attention maps of the original injected into the counterfactual for the first part of the
denoising, optional CLIP filter). Without a diffusion model the generator yields the caption
pairs only and says so in :attr:`CocoCounterfactualGenerator.notes`.
"""

from __future__ import annotations

import re
import zlib
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from generation.ml import filters as ml_filters
from generation.ml.base import GeneratedCandidate, GeneratorConfigError, Original, Skip, StopHook, stop_point
from generation.ml.rules import wordnet as wnx
from generation.ml.rules.phrases import article_for, pluralize, singularize
from generation.ml.rules.tokens import Token, match_case, tag

if TYPE_CHECKING:
    from generation.ml.hf import LoadedModel
    from generation.ml.images import ClipVerdict, ImagePair, ImageTextScorer, PairImages

FIELD = "caption"
NOUN_TAGS = ("NN", "NNS")
# Words the tagger calls nouns that are no subject to swap, and fill-ins never to introduce.
_NOT_SWAPPABLE = frozenset(
    "lot lots top side front back middle couple pair bunch group kind sort type way area view "
    "something someone thing things picture image photo photograph close closeup shot day time".split()
)
_BLOCKED = frozenset("whore bitch slut bastard nigger nigga fag faggot cunt dick cock pussy prostitute".split())


# ---------------------------------------------------------------------------------------------
# nouns and their replacements
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CaptionSwap:
    """One counterfactual caption: ``replaced`` (as written) -> ``by`` (as written)."""

    caption: str
    counterfactual: str
    replaced: str
    by: str
    noun_index: int  # token index of the replaced noun
    rank: int  # rank of the replacement among its noun's candidates (0 = best)
    source: str  # "wordnet" | "mlm"
    score: float = 0.0  # MLM probability (0 for WordNet)


def noun_indices(toks: Sequence[Token]) -> list[int]:
    """Indices of the swappable common nouns of a tagged caption."""
    out = []
    for i, t in enumerate(toks):
        if t.pos not in NOUN_TAGS or not t.text.isalpha() or len(t.text) < 3:
            continue
        if t.lower in _NOT_SWAPPABLE or singularize(t.lower) in _NOT_SWAPPABLE:
            continue
        out.append(i)
    return out


def _base(word: str, pos: str) -> str:
    return wnx.lemma(word, "n") if pos == "NNS" else word.lower()


@lru_cache(maxsize=65536)
def _senses(word: str) -> frozenset[wnx.Synset]:
    return frozenset(wnx.wordnet().synsets(word, "n"))


@lru_cache(maxsize=65536)
def _ancestors(word: str) -> frozenset[wnx.Synset]:
    """Every noun sense of ``word`` and its hypernyms up to six levels."""
    out: set[wnx.Synset] = set()
    for s in _senses(word):
        out.add(s)
        out.update(s.closure(lambda x: x.hypernyms() + x.instance_hypernyms(), depth=6))
    return frozenset(out)


def _related_by_hyponymy(a: str, b: str) -> bool:
    """True when the words share a sense (synonyms) or one names a kind of the other in any
    noun sense (``girl`` / ``woman``): such a swap leaves both captions true of one image."""
    sa, sb = _senses(a), _senses(b)
    if not sa or not sb:
        return False
    return bool(sa & sb or sa & _ancestors(b) or sb & _ancestors(a))


def _acceptable(noun: str, cand: str) -> bool:
    c = cand.lower()
    return (
        c.isalpha()
        and len(c) > 1
        and c != noun
        and c not in _BLOCKED
        and c not in _NOT_SWAPPABLE
        and singularize(c) != noun
        and pluralize(noun) != c
        and not _related_by_hyponymy(noun, c)
    )


def wordnet_candidates(
    noun: str, k: int = 10, vocabulary: Mapping[str, int] | None = None, min_count: int = 2
) -> list[str]:
    """Up to ``k`` single-word sister terms of ``noun`` (singular base form), most frequent
    (SemCor) first: co-hyponyms under the hypernyms of its first two senses, then — when fewer
    than ``k`` — siblings one level up. Hypernyms and hyponyms of the noun are excluded. With a
    ``vocabulary`` (word -> count in a caption corpus) only words seen there at least
    ``min_count`` times are kept (in the same order): a cheap proxy for "can be depicted"."""
    wn = wnx.wordnet()
    senses = wn.synsets(noun, "n")[:2]
    if not senses:
        return []
    own = {lem.name().lower() for s in senses for lem in s.lemmas()}
    scored: dict[str, tuple[int, int]] = {}  # name -> (weighted SemCor count, -tier)

    def add(synsets: Sequence[wnx.Synset], weight: int, tier: int) -> None:
        for syn in synsets:
            if syn in senses:
                continue
            for lem in syn.lemmas():
                name = lem.name()
                if "_" in name or not name.isalpha() or name[:1].isupper() or name.lower() in own:
                    continue
                key = (wnx._count(lem) * weight, -tier)
                scored[name.lower()] = max(scored.get(name.lower(), (-1, -9)), key)

    for rank, s in enumerate(senses):
        add([c for h in s.hypernyms() for c in h.hyponyms()], 4 if rank == 0 else 1, rank)
    if len(scored) < k:
        for s in senses[:1]:
            add([c for h in s.hypernyms() for hh in h.hypernyms() for c in hh.hyponyms()], 1, 2)
    ranked = sorted(scored, key=lambda n: (tuple(-x for x in scored[n]), n))
    if vocabulary is not None:  # only words a caption corpus uses
        ranked = [c for c in ranked if vocabulary.get(c, 0) >= min_count]
    out: list[str] = []
    for c in ranked:
        if _acceptable(noun, c):
            out.append(c)
            if len(out) >= k:
                break
    return out


class MaskedLMCandidates:
    """Top fill-ins of a masked LM for the masked noun (the paper used roberta-base)."""

    def __init__(self, loaded: LoadedModel) -> None:
        self.loaded = loaded

    def __call__(self, caption: str, tok: Token, k: int) -> list[tuple[str, float]]:
        import torch

        tokenizer, model = self.loaded.tokenizer, self.loaded.model
        if tokenizer.mask_token is None:
            raise GeneratorConfigError("the masked language model's tokenizer has no mask token")
        masked = caption[: tok.start] + tokenizer.mask_token + caption[tok.end :]
        enc = tokenizer(masked, return_tensors="pt", truncation=True, max_length=128)
        enc = {key: v.to(self.loaded.device) for key, v in enc.items()}
        pos = (enc["input_ids"][0] == tokenizer.mask_token_id).nonzero()
        if len(pos) != 1:
            return []
        with torch.no_grad():
            logits = model(**enc).logits[0, int(pos[0])]
        probs = torch.softmax(logits.float(), dim=-1)
        top = torch.topk(probs, min(len(probs), 8 * k))
        noun = _base(tok.text, tok.pos)
        out: list[tuple[str, float]] = []
        seen: set[str] = set()
        for p, idx in zip(top.values.tolist(), top.indices.tolist(), strict=True):
            word = tokenizer.decode([idx]).strip().lower()
            base = singularize(word) if tok.pos == "NNS" else word
            if not base or base in seen or not wnx.known(base, "n") or not _acceptable(noun, base):
                continue
            seen.add(base)
            out.append((base, float(p)))
            if len(out) >= k:
                break
        return out


def realise(caption: str, toks: Sequence[Token], i: int, base: str) -> tuple[str, str]:
    """``caption`` with noun ``toks[i]`` replaced by ``base`` in the noun's number and case,
    and a preceding "a"/"an" agreeing with the word that now follows it."""
    t = toks[i]
    word = pluralize(base) if t.pos == "NNS" else base
    word = match_case(t.text, word)
    if t.text.isupper() and len(t.text) > 1:
        word = word.upper()
    edits = [(t.start, t.end, word)]
    if i > 0 and toks[i - 1].lower in ("a", "an"):
        det = toks[i - 1]
        want = article_for(word)
        if want != det.lower:
            edits.append((det.start, det.end, want.capitalize() if det.text[:1].isupper() else want))
    out = caption
    for s, e, rep in sorted(edits, reverse=True):
        out = out[:s] + rep + out[e:]
    return out, word


Candidates = Callable[[str, Token, int], list[tuple[str, float]]]

_VOCABS: dict[str, Counter[str]] = {}


def load_vocabulary(path: str | Path) -> Counter[str]:
    """Word counts (lower-cased, nouns singular) of a caption corpus: a text file with one
    caption per line, or a TSV whose last column is the caption (``captions_val2017.tsv``)."""
    key = str(Path(path).resolve())
    if key in _VOCABS:
        return _VOCABS[key]
    p = Path(path)
    if not p.is_file():
        raise GeneratorConfigError(f"vocabulary file not found: {p}")
    counts: Counter[str] = Counter()
    with p.open(encoding="utf-8", errors="replace") as fh:
        for line in fh:
            text = line.rstrip("\n").rsplit("\t", 1)[-1]
            for w in re.findall(r"[a-z]+", text.lower()):
                counts[w] += 1
                if w.endswith("s"):
                    sg = singularize(w)
                    if sg != w:
                        counts[sg] += 1
    _VOCABS[key] = counts
    return counts


def caption_swaps(
    caption: str, *, k: int = 10, mlm: Candidates | None = None, vocabulary: Mapping[str, int] | None = None
) -> list[CaptionSwap]:
    """Every single-noun counterfactual of ``caption``: up to ``k`` per noun (WordNet sister
    terms, restricted to ``vocabulary`` when given, or the masked LM's fill-ins)."""
    toks = tag(caption)
    out: list[CaptionSwap] = []
    seen: set[str] = set()
    for i in noun_indices(toks):
        t = toks[i]
        noun = _base(t.text, t.pos)
        if mlm is not None:
            cands = mlm(caption, t, k)
            source = "mlm"
        else:
            cands = [(c, 0.0) for c in wordnet_candidates(noun, k, vocabulary)]
            source = "wordnet"
        for rank, (base, score) in enumerate(cands):
            text, word = realise(caption, toks, i, base)
            if text == caption or text in seen:
                continue
            seen.add(text)
            out.append(CaptionSwap(caption, text, t.text, word, i, rank, source, score))
    return out


def select_in_band(
    swaps: Sequence[CaptionSwap],
    sims: Sequence[ml_filters.FilterResult],
    *,
    n: int = 1,
    perplexities: Sequence[float] | None = None,
) -> list[tuple[CaptionSwap, float, float | None]]:
    """The ``n`` best swaps whose similarity is in the band: lowest perplexity when given, else
    best-ranked replacement then highest similarity; at most one swap per noun until every
    noun with a kept swap has one."""
    kept = [(i, s, r.score) for i, (s, r) in enumerate(zip(swaps, sims, strict=True)) if r.keep]
    if perplexities is not None:
        kept.sort(key=lambda x: (perplexities[x[0]], -x[2]))
    else:
        kept.sort(key=lambda x: (x[1].rank, -x[2]))
    first: list[tuple[int, CaptionSwap, float]] = []
    rest: list[tuple[int, CaptionSwap, float]] = []
    nouns: set[int] = set()
    for item in kept:
        (rest if item[1].noun_index in nouns else first).append(item)
        nouns.add(item[1].noun_index)
    chosen = (first + rest)[:n]
    return [(s, sim, perplexities[i] if perplexities is not None else None) for i, s, sim in chosen]


# ---------------------------------------------------------------------------------------------
# the generator
# ---------------------------------------------------------------------------------------------
def _as_bool(value: object, name: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        return bool(value)
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ValueError(f"{name} must be true or false, got {value!r}")


def _opt_float(value: str | float | None, name: str) -> float | None:
    if value is None or value == "":
        return None
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number, got {value!r}") from None


def _safe_name(text: str) -> str:
    """A file-name stem for an original id; ids that had to be changed get a checksum so two
    ids never share a file."""
    name = re.sub(r"[^A-Za-z0-9_.-]+", "_", text).strip("._") or "x"
    if name != text or len(name) > 80:
        name = f"{name[:80]}-{zlib.crc32(text.encode()):08x}"
    return name


class CocoCounterfactualGenerator:
    """``coco-cf``: one-noun counterfactual captions in the MiniLM band, with a minimally
    different image pair per caption pair when a diffusion model is configured.

    Options (``--option KEY=VALUE``): ``per_original`` (pairs per caption, default 1 as in the
    paper), ``top_k`` (replacements per noun, 10), ``vocabulary`` (a caption file: WordNet
    replacements limited to words seen there at least twice), ``candidates`` (``auto``: MLM when a masked
    LM is configured else WordNet; ``wordnet``; ``mlm``), ``band`` ("0.8,0.91"), ``images``
    (``auto``/true/false), ``steps``, ``guidance_scale``, ``height``, ``width``,
    ``cross_replace`` / ``self_replace`` (fractions of the denoising steps during which the
    original's cross-/self-attention maps are injected; 0 disables), ``attempts`` (image pairs
    per caption pair, best CLIP directional similarity kept), ``clip_filter`` (default on when a
    CLIP model is configured), ``min_text_image`` / ``min_image_image`` (the paper's CLIP
    cosine floors, 0.2 / 0.7; off by default). Model paths come from settings.
    """

    name = "coco-cf"

    def __init__(
        self,
        *,
        minilm_path: str = "",
        embedding_cache_dir: str = "",
        mlm_path: str = "",
        perplexity_lm_path: str = "",
        diffusion_path: str = "",
        clip_path: str = "",
        device: str = "cpu",
        seed: int = 0,
        max_per_original: int | None = None,
        image_dir: str = "",
        per_original: int = 1,
        top_k: int = 10,
        candidates: str = "auto",
        band: str | Sequence[float] | None = None,  # "LOW,HIGH" or (low, high)
        images: str | bool = "auto",
        steps: int = 30,
        guidance_scale: float = 7.5,
        height: int | None = None,
        width: int | None = None,
        cross_replace: float = 0.8,
        self_replace: float = 0.4,
        attempts: int = 1,
        clip_filter: str | bool = True,
        min_text_image: float | None = None,
        min_image_image: float | None = None,
        vocabulary: str = "",
        encoder: ml_filters.SimilarityEncoder | None = None,
        image_pairs: PairImages | None = None,
        clip_scorer: ImageTextScorer | None = None,
    ) -> None:
        for label, obj, method in (
            ("encoder", encoder, "cosine"),
            ("image_pairs", image_pairs, "generate"),
            ("clip_scorer", clip_scorer, "embed_images"),
        ):
            if obj is not None and not callable(getattr(obj, method, None)):
                raise ValueError(f"{label} is set by code, not a run option")
        self.seed = int(seed or 0)
        self.per_original = int(max_per_original or per_original)
        self.top_k = int(top_k)
        if self.per_original < 1 or self.top_k < 1:
            raise ValueError("per_original and top_k must be at least 1")
        if isinstance(band, str):
            parts = [p for p in re.split(r"[,\s]+", band.strip()) if p]
            if len(parts) != 2:
                raise ValueError(f"band must be LOW,HIGH, got {band!r}")
            band = (float(parts[0]), float(parts[1]))
        override = None
        if band:
            lo, hi = band
            override = (lo, hi)
        self.band = ml_filters.band_for("image-caption", override)
        if candidates not in ("auto", "wordnet", "mlm"):
            raise ValueError(f"candidates must be auto, wordnet or mlm, got {candidates!r}")
        if candidates == "mlm" and not mlm_path:
            raise GeneratorConfigError("candidates=mlm needs a masked LM (set COUNTERPART_MLM_PATH)")
        self.device = device or "cpu"
        self._mlm: MaskedLMCandidates | None = None
        if candidates == "mlm" or (candidates == "auto" and mlm_path):
            from generation.ml import hf

            self._mlm = MaskedLMCandidates(hf.load_masked_lm(mlm_path, self.device))
        self.candidate_source = "mlm" if self._mlm is not None else "wordnet"
        self.vocabulary = load_vocabulary(vocabulary) if vocabulary else None
        self._encoder = encoder
        self._minilm_path = minilm_path or None
        self._cache_dir = embedding_cache_dir or None
        self._perplexity: ml_filters.PerplexityScorer | None = None
        if perplexity_lm_path:
            from generation.ml import hf

            hf.check_model_dir(perplexity_lm_path, "perplexity language model")
            self._perplexity_path = perplexity_lm_path
        else:
            self._perplexity_path = ""
        self.notes: list[str] = []
        # images
        want_images = "auto" if str(images).strip().lower() == "auto" else _as_bool(images, "images")
        self.image_dir = Path(image_dir) if image_dir else None
        self._pairs = image_pairs
        self._clip = clip_scorer
        self.attempts = int(attempts)
        if self.attempts < 1:
            raise ValueError("attempts must be at least 1")
        self.min_text_image = _opt_float(min_text_image, "min_text_image")
        self.min_image_image = _opt_float(min_image_image, "min_image_image")
        self.images = False
        if want_images is False:
            self.notes.append("images off (images=false): text-only caption pairs")
        elif self._pairs is None and not diffusion_path:
            if want_images is True:
                raise GeneratorConfigError("images=true needs a diffusion model (set COUNTERPART_DIFFUSION_PATH)")
            self.notes.append(
                "no diffusion model configured (COUNTERPART_DIFFUSION_PATH is empty): "
                "text-only caption pairs, no images generated"
            )
        else:
            if self.image_dir is None:
                raise GeneratorConfigError("image generation needs an image directory (option image_dir)")
            from generation.ml import images as ml_images

            if self._pairs is None:
                ml_images.check_pipeline_dir(diffusion_path)
                self._pairs = ml_images.PairImageGenerator(
                    diffusion_path,
                    device=self.device,
                    steps=int(steps),
                    guidance_scale=float(guidance_scale),
                    height=int(height) if height else None,
                    width=int(width) if width else None,
                    cross_replace=float(cross_replace),
                    self_replace=float(self_replace),
                )
            use_clip = _as_bool(clip_filter, "clip_filter")
            if self._clip is None and use_clip and clip_path:
                ml_images.check_clip_dir(clip_path)
                self._clip = ml_images.ClipScorer(clip_path, device=self.device)
            if not use_clip:
                self._clip = None
            if self._clip is None:
                self.notes.append(
                    "no CLIP filter (COUNTERPART_CLIP_PATH empty or clip_filter=false): image pairs are kept unchecked"
                )
            self.images = True

    # -- models ----------------------------------------------------------------------------
    @property
    def encoder(self) -> ml_filters.SimilarityEncoder:
        if self._encoder is None:
            from projects.ml.embeddings import shared_encoder

            self._encoder = shared_encoder(model_path=self._minilm_path, cache_dir=self._cache_dir)
        return self._encoder

    def _perplexities(self, texts: Sequence[str]) -> list[float] | None:
        if not self._perplexity_path:
            return None
        if self._perplexity is None:
            self._perplexity = ml_filters.PerplexityScorer(self._perplexity_path, device=self.device)
        return [float(x) for x in self._perplexity.score(list(texts))]

    # -- generation --------------------------------------------------------------------------
    should_stop: StopHook | None = None  # set by the service: the run was cancelled

    def generate(self, originals: Sequence[Original]) -> Iterator[GeneratedCandidate | Skip]:
        per: list[tuple[Original, list[CaptionSwap]]] = []
        for o in originals:
            stop_point(self.should_stop)
            caption = o.fields.get(FIELD)
            if not isinstance(caption, str) or not caption.strip():
                yield Skip(o.id, f"missing field {FIELD!r}")
                continue
            swaps = caption_swaps(caption, k=self.top_k, mlm=self._mlm, vocabulary=self.vocabulary)
            if not swaps:
                yield Skip(o.id, "no noun with a replacement (nothing to swap)")
                continue
            per.append((o, swaps))
        if not per:
            return
        flat = [s for _, swaps in per for s in swaps]
        results = ml_filters.similarity_band(
            self.encoder, [s.caption for s in flat], [s.counterfactual for s in flat], self.band
        )
        at = 0
        for o, swaps in per:
            stop_point(self.should_stop)
            sims = results[at : at + len(swaps)]
            at += len(swaps)
            in_band = [s for s, r in zip(swaps, sims, strict=True) if r.keep]
            ppl = None
            if in_band and self._perplexity_path:
                scores = dict(
                    zip(
                        [s.counterfactual for s in in_band],
                        self._perplexities([s.counterfactual for s in in_band]) or [],
                        strict=True,
                    )
                )
                ppl = [scores.get(s.counterfactual, float("inf")) for s in swaps]
            chosen = select_in_band(swaps, sims, n=self.per_original, perplexities=ppl)
            if not chosen:
                lo, hi = self.band
                yield Skip(o.id, f"no counterfactual caption in the similarity band ({lo}, {hi}] ({len(swaps)} tried)")
                continue
            yield from self._emit(o, chosen, tried=len(swaps), in_band=len(in_band))

    def _emit(
        self, o: Original, chosen: list[tuple[CaptionSwap, float, float | None]], *, tried: int, in_band: int
    ) -> Iterator[GeneratedCandidate | Skip]:
        rejected = []
        emitted = 0
        for k, (swap, sim, ppl) in enumerate(chosen):
            scores: dict[str, float] = {"similarity": sim}
            if ppl is not None:
                scores["perplexity"] = ppl
            if swap.source == "mlm":
                scores["mlm_prob"] = swap.score
            meta: dict[str, object] = {
                "replaced": swap.replaced,
                "by": swap.by,
                "source": swap.source,
                "tried": tried,
                "in_band": in_band,
            }
            if self.images:
                result = self._image_pair(o, k, swap)
                if result is None:
                    rejected.append(f"{swap.replaced}->{swap.by}")
                    continue
                img_scores, img_meta = result
                scores.update(img_scores)
                meta.update(img_meta)
            else:
                meta["images"] = "not generated"
            emitted += 1
            yield GeneratedCandidate(
                original_id=o.id,
                fields={**o.fields, FIELD: swap.counterfactual},
                generator=self.name,
                perturbation="lexical",
                target_label=None,
                scores=scores,
                meta=meta,
            )
        if not emitted and rejected:
            yield Skip(o.id, f"the CLIP filter rejected every image pair ({', '.join(rejected)})")

    def pair_seed(self, original_id: str, k: int, attempt: int = 0) -> int:
        """A seed fixed by (run seed, original, pair, attempt): a resumed run redraws the same images."""
        return zlib.crc32(f"{self.seed}:{original_id}:{k}:{attempt}".encode()) & 0x7FFFFFFF

    def _image_pair(self, o: Original, k: int, swap: CaptionSwap) -> tuple[dict[str, float], dict[str, object]] | None:
        from generation.ml import images as ml_images

        assert self.image_dir is not None and self._pairs is not None  # both set when self.images is
        best: tuple[float, ImagePair, ClipVerdict | None, int] | None = None
        verdicts = []
        for attempt in range(self.attempts):
            stop_point(self.should_stop)  # each image pair is a diffusion run
            seed = self.pair_seed(o.id, k, attempt)
            pair = self._pairs.generate(swap.caption, swap.counterfactual, seed=seed)
            if self._clip is None:
                best = (0.0, pair, None, seed)
                break
            verdict = ml_images.clip_judge(
                self._clip,
                pair.images,
                (swap.caption, swap.counterfactual),
                min_text_image=self.min_text_image,
                min_image_image=self.min_image_image,
            )
            verdicts.append(verdict)
            if verdict.keep and (best is None or verdict.clip_dir > best[0]):
                best = (verdict.clip_dir, pair, verdict, seed)
        if best is None:
            return None
        _, pair, kept, seed = best
        self.image_dir.mkdir(parents=True, exist_ok=True)
        stem = f"{_safe_name(o.id)}-{k}"
        paths = [self.image_dir / f"{stem}-0.jpg", self.image_dir / f"{stem}-1.jpg"]
        for img, path in zip(pair.images, paths, strict=True):
            ml_images.save_jpeg(img, path)
        meta: dict[str, object] = {
            "original_image": str(paths[0]),
            "image": str(paths[1]),
            "seed": seed,
            "cross_replace": pair.cross_replace,
            "self_replace": pair.self_replace,
            "steps": pair.steps,
        }
        scores: dict[str, float] = {}
        if kept is not None:
            scores.update(kept.scores())
            meta["clip"] = kept.as_meta()
            meta["attempts"] = len(verdicts)
        return scores, meta


__all__ = [
    "CaptionSwap",
    "CocoCounterfactualGenerator",
    "MaskedLMCandidates",
    "caption_swaps",
    "noun_indices",
    "realise",
    "select_in_band",
    "wordnet_candidates",
]
