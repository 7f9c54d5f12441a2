"""Minimally different image pairs for a caption pair, and the CLIP check of a pair. No Django;
torch, diffusers and transformers are imported inside functions.

What is implemented (our own code, after the idea of COCO-Counterfactuals' B.2.2, which used
Prompt-to-Prompt on Stable Diffusion):

* **Shared initial latents.** Both captions are denoised in ONE batched pipeline call from the
  same initial noise (drawn once from a seeded ``torch.Generator`` and repeated), with the same
  scheduler, steps and guidance, so everything that differs between the two images comes from
  the caption.
* **Attention injection (a simple Prompt-to-Prompt "word swap").** A custom attention processor
  is installed on every attention layer of the UNet for the call. During the first
  ``cross_replace`` fraction of the denoising steps the counterfactual's cross-attention maps are
  replaced by the original's, token by token after aligning the two token sequences (equal
  tokens and same-length replaced runs are mapped position by position, so the new word takes
  the old word's map; tokens without a partner keep their own map). During the first
  ``self_replace`` fraction the self-attention maps of the low-resolution layers (at most
  ``self_max_tokens`` query positions, as P2P does) are replaced too, which fixes the layout.
  Not implemented: P2P's attention re-weighting, local blending and null-text inversion.
* **CLIP check.** Each image's CLIP cosine with its own caption must beat its cosine with the
  other caption (both images); optional floors as in the paper (caption-image cosine >= 0.2,
  image-image cosine >= 0.7); the directional similarity CLIP_dir = cos(I1 - I0, T1 - T0) ranks
  several attempts.
"""

from __future__ import annotations

import difflib
import os
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

import numpy as np
from numpy.typing import ArrayLike, NDArray

from generation.ml import hf
from generation.ml.base import GeneratorConfigError

if TYPE_CHECKING:
    import torch
    from diffusers.models.attention_processor import Attention
    from PIL.Image import Image

# A diffusers pipeline is Any below: its components (unet, vae, tokenizer, scheduler) are
# attributes set at load time that diffusers' types do not declare. CLIP's model and processor
# are Any as transformers types model.to(device) wrongly and its Auto* loaders as Any.
_cache: dict[tuple[str, str, str], Any] = {}
_lock = threading.Lock()


def _quiet() -> None:
    """hf's offline/quiet settings, plus the same for diffusers."""
    hf.quiet()
    os.environ.setdefault("DIFFUSERS_VERBOSITY", "error")
    try:
        from diffusers.utils import logging as d_logging

        d_logging.set_verbosity_error()
        d_logging.disable_progress_bar()
    except Exception:  # noqa: BLE001 - cosmetics only
        pass


# ---------------------------------------------------------------------------------------------
# loading
# ---------------------------------------------------------------------------------------------
def check_pipeline_dir(path: str | os.PathLike[str] | None) -> Path:
    """A saved diffusers pipeline directory (``model_index.json``), or GeneratorConfigError."""
    if path is None or not str(path).strip():
        raise GeneratorConfigError("no text-to-image diffusion model configured (COUNTERPART_DIFFUSION_PATH)")
    p = Path(str(path)).expanduser()
    if not p.is_dir():
        raise GeneratorConfigError(f"diffusion model path does not exist or is not a directory: {p}")
    if not (p / "model_index.json").is_file():
        raise GeneratorConfigError(f"diffusion model path holds no saved pipeline (model_index.json missing): {p}")
    return p


def check_clip_dir(path: str | os.PathLike[str] | None) -> Path:
    if path is None or not str(path).strip():
        raise GeneratorConfigError("no CLIP model configured (COUNTERPART_CLIP_PATH)")
    return hf.check_model_dir(path, "CLIP model")


def load_pipeline(path: str | os.PathLike[str], device: str = "cpu") -> Any:
    """A text-to-image diffusers pipeline from a local directory (cached per path and device)."""
    p = check_pipeline_dir(path)
    key = ("pipeline", str(p.resolve()), device)
    with _lock:
        if key in _cache:
            return _cache[key]
        _quiet()
        try:
            from diffusers import DiffusionPipeline
        except ImportError as exc:  # pragma: no cover - diffusers is in the requirements
            raise GeneratorConfigError(f"diffusers is not installed: {exc}") from exc
        try:
            pipe = DiffusionPipeline.from_pretrained(str(p), local_files_only=True)
        except Exception as exc:  # any load failure is a configuration problem
            raise GeneratorConfigError(f"cannot load the diffusion pipeline at {p}: {exc}") from exc
        for needed in ("unet", "tokenizer", "scheduler", "vae"):
            if getattr(pipe, needed, None) is None:
                raise GeneratorConfigError(f"the pipeline at {p} has no {needed}: not a text-to-image UNet pipeline")
        try:
            pipe = pipe.to(device)
        except Exception as exc:
            raise GeneratorConfigError(f"cannot move the diffusion pipeline to {device!r}: {exc}") from exc
        if hasattr(pipe, "set_progress_bar_config"):
            pipe.set_progress_bar_config(disable=True)
        _cache[key] = pipe
        return pipe


def clear_cache() -> None:
    with _lock:
        _cache.clear()


# ---------------------------------------------------------------------------------------------
# attention injection
# ---------------------------------------------------------------------------------------------
def token_alignment(ids_0: Sequence[int], ids_1: Sequence[int]) -> list[int]:
    """For each position of the counterfactual's token ids, the position of the original's
    token whose attention map it takes, or -1 (keeps its own): equal runs and same-length
    replaced runs map position by position."""
    out = [-1] * len(ids_1)
    sm = difflib.SequenceMatcher(a=list(ids_0), b=list(ids_1), autojunk=False)
    for op, a0, a1, b0, b1 in sm.get_opcodes():
        if op == "equal" or (op == "replace" and a1 - a0 == b1 - b0):
            for d in range(b1 - b0):
                out[b0 + d] = a0 + d
    return out


class AttentionController:
    """Shared state of the injecting processors for one pipeline call: which step we are at
    (advanced by the pipeline's step-end callback), the step limits and the token map."""

    def __init__(
        self,
        *,
        steps: int,
        cross_replace: float,
        self_replace: float,
        alignment: Sequence[int],
        self_max_tokens: int = 256,
    ) -> None:
        self.steps = max(1, int(steps))
        self.cross_steps = round(max(0.0, min(1.0, cross_replace)) * self.steps)
        self.self_steps = round(max(0.0, min(1.0, self_replace)) * self.steps)
        self.alignment = list(alignment)
        self.self_max_tokens = self_max_tokens
        self.step = 0
        self.injected = {"cross": 0, "self": 0}  # layer calls that injected (for tests and logs)

    def on_step_end(
        self, pipe: object, i: int, t: object, callback_kwargs: dict[str, torch.Tensor]
    ) -> dict[str, torch.Tensor]:
        self.step = i + 1
        return callback_kwargs

    def due(self, is_cross: bool, queries: int) -> bool:
        """Whether a layer of this kind and size has its maps replaced at the current step."""
        if is_cross:
            return self.step < self.cross_steps
        return self.step < self.self_steps and queries <= self.self_max_tokens

    def edit(self, probs: torch.Tensor, heads: int, is_cross: bool) -> torch.Tensor:
        """``probs``: (batch*heads, queries, keys) attention probabilities, batch ordered as
        [uncond_0, uncond_1, cond_0, cond_1] (classifier-free guidance) or [cond_0, cond_1].
        Returns probs with each pair's second map taken from its first where due."""
        import torch

        if is_cross and self.step >= self.cross_steps:
            return probs
        if not is_cross and (self.step >= self.self_steps or probs.shape[1] > self.self_max_tokens):
            return probs
        batch = probs.shape[0] // heads
        if batch < 2 or batch % 2:
            return probs
        p = probs.reshape(batch, heads, probs.shape[1], probs.shape[2]).clone()
        for b in range(0, batch, 2):
            if not is_cross:
                p[b + 1] = p[b]
                continue
            uncond = batch == 4 and b == 0  # both unconditional prompts are empty: identity map
            keys = p.shape[-1]
            if uncond:
                p[b + 1] = p[b]
                continue
            src = [j for j, a in enumerate(self.alignment[:keys]) if a >= 0]
            if src:
                dst_idx = torch.tensor(src, device=p.device)
                src_idx = torch.tensor([self.alignment[j] for j in src], device=p.device)
                p[b + 1][..., dst_idx] = p[b][..., src_idx]
        self.injected["cross" if is_cross else "self"] += 1
        return p.reshape(probs.shape)


class InjectingAttnProcessor:
    """diffusers' classic attention computation (``AttnProcessor``) with explicit probabilities
    where maps are to be replaced; elsewhere PyTorch's fused scaled-dot-product attention."""

    def __init__(self, controller: AttentionController | None) -> None:
        self.controller = controller

    def __call__(
        self,
        attn: Attention,
        hidden_states: torch.Tensor,
        encoder_hidden_states: torch.Tensor | None = None,
        attention_mask: torch.Tensor | None = None,
        temb: torch.Tensor | None = None,
        *args: object,
        **kwargs: object,
    ) -> torch.Tensor:
        import torch

        is_cross = encoder_hidden_states is not None
        residual = hidden_states
        if attn.spatial_norm is not None:
            hidden_states = attn.spatial_norm(hidden_states, temb)
        input_ndim = hidden_states.ndim
        if input_ndim == 4:
            batch_size, channel, height, width = hidden_states.shape
            hidden_states = hidden_states.view(batch_size, channel, height * width).transpose(1, 2)
        batch_size, sequence_length, _ = (
            hidden_states.shape if encoder_hidden_states is None else encoder_hidden_states.shape
        )
        if attention_mask is not None:  # prepare_attention_mask returns None for None
            attention_mask = attn.prepare_attention_mask(attention_mask, sequence_length, batch_size)
        if attn.group_norm is not None:
            hidden_states = attn.group_norm(hidden_states.transpose(1, 2)).transpose(1, 2)
        query = attn.to_q(hidden_states)
        if encoder_hidden_states is None:
            encoder_hidden_states = hidden_states
        elif attn.norm_cross:
            encoder_hidden_states = attn.norm_encoder_hidden_states(encoder_hidden_states)
        key = attn.to_k(encoder_hidden_states)
        value = attn.to_v(encoder_hidden_states)
        query = attn.head_to_batch_dim(query)
        key = attn.head_to_batch_dim(key)
        value = attn.head_to_batch_dim(value)
        if self.controller is not None and self.controller.due(is_cross, query.shape[1]):
            probs = attn.get_attention_scores(query, key, attention_mask)
            probs = self.controller.edit(probs, attn.heads, is_cross)
            hidden_states = torch.bmm(probs, value)
        elif attention_mask is None and not attn.upcast_attention and not attn.upcast_softmax:
            # nothing to inject here: the fused kernel, same result without materialising the maps
            hidden_states = torch.nn.functional.scaled_dot_product_attention(query, key, value, scale=attn.scale)
        else:
            hidden_states = torch.bmm(attn.get_attention_scores(query, key, attention_mask), value)
        hidden_states = attn.batch_to_head_dim(hidden_states)
        hidden_states = attn.to_out[0](hidden_states)
        hidden_states = attn.to_out[1](hidden_states)
        if input_ndim == 4:
            hidden_states = hidden_states.transpose(-1, -2).reshape(batch_size, channel, height, width)
        if attn.residual_connection:
            hidden_states = hidden_states + residual
        return hidden_states / attn.rescale_output_factor


# ---------------------------------------------------------------------------------------------
# pairs
# ---------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ImagePair:
    images: tuple[Image, Image]  # for caption_0, caption_1
    seed: int
    steps: int
    cross_replace: float
    self_replace: float
    injected: dict[str, int] = field(default_factory=dict)


class PairImages(Protocol):
    """What the caption generator needs to draw an image pair (a :class:`PairImageGenerator`)."""

    def generate(self, caption_0: str, caption_1: str, *, seed: int) -> ImagePair: ...


class PairImageGenerator:
    """Draw the two images of a caption pair from one pipeline call with shared latents."""

    def __init__(
        self,
        path: str | None = None,
        *,
        pipeline: Any = None,
        device: str = "cpu",
        steps: int = 30,
        guidance_scale: float = 7.5,
        height: int | None = None,
        width: int | None = None,
        cross_replace: float = 0.8,
        self_replace: float = 0.4,
        self_max_tokens: int = 256,
    ) -> None:
        if pipeline is None and path is None:
            raise GeneratorConfigError("PairImageGenerator needs a pipeline path or a pipeline")
        self.path = path
        self._pipe = pipeline
        self.device = device
        self.steps = int(steps)
        if self.steps < 1:
            raise ValueError("steps must be at least 1")
        self.guidance_scale = float(guidance_scale)
        self.height = height
        self.width = width
        for name, v in (("cross_replace", cross_replace), ("self_replace", self_replace)):
            if not 0.0 <= float(v) <= 1.0:
                raise ValueError(f"{name} must be between 0 and 1, got {v}")
        self.cross_replace = float(cross_replace)
        self.self_replace = float(self_replace)
        self.self_max_tokens = int(self_max_tokens)

    @property
    def pipe(self) -> Any:
        if self._pipe is None:
            assert self.path is not None
            self._pipe = load_pipeline(self.path, self.device)
        return self._pipe

    def _size(self) -> tuple[int, int]:
        pipe = self.pipe
        default = int(pipe.unet.config.sample_size) * int(pipe.vae_scale_factor)
        return int(self.height or default), int(self.width or default)

    def initial_latents(self, seed: int) -> torch.Tensor:
        """(1, C, h, w) standard-normal latents from ``seed`` (before the scheduler's scaling)."""
        import torch

        pipe = self.pipe
        h, w = self._size()
        shape = (1, int(pipe.unet.config.in_channels), h // int(pipe.vae_scale_factor), w // int(pipe.vae_scale_factor))
        gen = torch.Generator(device="cpu").manual_seed(int(seed))
        return torch.randn(shape, generator=gen, dtype=torch.float32).to(pipe.device, dtype=pipe.unet.dtype)

    def _alignment(self, caption_0: str, caption_1: str) -> list[int]:
        tok = self.pipe.tokenizer
        kw = {"padding": "max_length", "max_length": tok.model_max_length, "truncation": True}
        ids_0 = tok(caption_0, **kw).input_ids
        ids_1 = tok(caption_1, **kw).input_ids
        return token_alignment(ids_0, ids_1)

    def generate(
        self,
        caption_0: str,
        caption_1: str,
        *,
        seed: int,
        cross_replace: float | None = None,
        self_replace: float | None = None,
    ) -> ImagePair:
        import torch

        pipe = self.pipe
        cross = self.cross_replace if cross_replace is None else float(cross_replace)
        selfr = self.self_replace if self_replace is None else float(self_replace)
        h, w = self._size()
        latents = self.initial_latents(seed).repeat(2, 1, 1, 1)  # the SAME noise for both captions
        controller = None
        saved = None
        kwargs: dict[str, object] = {}
        if cross > 0 or selfr > 0:
            controller = AttentionController(
                steps=self.steps,
                cross_replace=cross,
                self_replace=selfr,
                alignment=self._alignment(caption_0, caption_1),
                self_max_tokens=self.self_max_tokens,
            )
            saved = dict(pipe.unet.attn_processors)
            pipe.unet.set_attn_processor(InjectingAttnProcessor(controller))
            kwargs["callback_on_step_end"] = controller.on_step_end
        try:
            with torch.no_grad():
                out = pipe(
                    prompt=[caption_0, caption_1],
                    latents=latents,
                    num_inference_steps=self.steps,
                    guidance_scale=self.guidance_scale,
                    height=h,
                    width=w,
                    output_type="pil",
                    **kwargs,
                )
        finally:
            if saved is not None:
                pipe.unet.set_attn_processor(saved)
        images = out.images
        return ImagePair(
            images=(images[0], images[1]),
            seed=int(seed),
            steps=self.steps,
            cross_replace=cross,
            self_replace=selfr,
            injected=dict(controller.injected) if controller else {},
        )


def save_jpeg(image: Image, path: str | os.PathLike[str], quality: int = 92) -> Path:
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    image.convert("RGB").save(p, format="JPEG", quality=quality)
    return p


# ---------------------------------------------------------------------------------------------
# CLIP
# ---------------------------------------------------------------------------------------------
class ClipScorer:
    """L2-normalised CLIP embeddings of images and texts from a local CLIP model."""

    def __init__(
        self, path: str | None = None, *, model: Any = None, processor: Any = None, device: str = "cpu"
    ) -> None:
        if model is None or processor is None:
            p = check_clip_dir(path)
            _quiet()
            try:
                from transformers import AutoProcessor, CLIPModel

                model = CLIPModel.from_pretrained(str(p), local_files_only=True)
                processor = AutoProcessor.from_pretrained(str(p), local_files_only=True)
            except Exception as exc:
                raise GeneratorConfigError(f"cannot load the CLIP model at {p}: {exc}") from exc
        self.model = model.to(device).eval()
        self.processor = processor
        self.device = device

    @staticmethod
    def _tensor(out: Any) -> Any:
        """The embedding tensor of a get_*_features result: the result itself, or the pooled
        output (or first element) of a model output, depending on the transformers version."""
        return (
            out
            if hasattr(out, "norm")
            else (getattr(out, "pooler_output", None) if getattr(out, "pooler_output", None) is not None else out[0])
        )

    def embed_images(self, images: Sequence[Image]) -> NDArray[np.float32]:
        import torch

        inputs = self.processor(images=list(images), return_tensors="pt")
        with torch.no_grad():
            feats: torch.Tensor = self._tensor(
                self.model.get_image_features(pixel_values=inputs["pixel_values"].to(self.device))
            )
        feats = feats / feats.norm(dim=-1, keepdim=True)
        return feats.float().cpu().numpy()

    def embed_texts(self, texts: Sequence[str]) -> NDArray[np.float32]:
        import torch

        inputs = self.processor(text=list(texts), return_tensors="pt", padding=True, truncation=True)
        with torch.no_grad():
            feats: torch.Tensor = self._tensor(
                self.model.get_text_features(
                    input_ids=inputs["input_ids"].to(self.device),
                    attention_mask=inputs["attention_mask"].to(self.device) if "attention_mask" in inputs else None,
                )
            )
        feats = feats / feats.norm(dim=-1, keepdim=True)
        return feats.float().cpu().numpy()


@dataclass(frozen=True)
class ClipVerdict:
    keep: bool
    matrix: tuple[tuple[float, float], tuple[float, float]]  # [image k][caption j] cosine
    image_image: float
    clip_dir: float
    reasons: tuple[str, ...] = ()

    def scores(self) -> dict[str, float]:
        m = self.matrix
        return {
            "clip_own_0": m[0][0],
            "clip_other_0": m[0][1],
            "clip_own_1": m[1][1],
            "clip_other_1": m[1][0],
            "clip_image_image": self.image_image,
            "clip_dir": self.clip_dir,
        }

    def as_meta(self) -> dict[str, object]:
        return {
            "keep": self.keep,
            "matrix": [list(r) for r in self.matrix],
            "image_image": self.image_image,
            "clip_dir": self.clip_dir,
            "reasons": list(self.reasons),
        }


class ImageTextScorer(Protocol):
    """What :func:`clip_judge` needs (a :class:`ClipScorer`): L2-normalised embeddings of
    images and of texts in one space."""

    def embed_images(self, images: Sequence[Image]) -> NDArray[np.floating]: ...

    def embed_texts(self, texts: Sequence[str]) -> NDArray[np.floating]: ...


def clip_decide(
    matrix: ArrayLike,
    *,
    image_image: float = 1.0,
    clip_dir: float = 0.0,
    min_text_image: float | None = None,
    min_image_image: float | None = None,
) -> ClipVerdict:
    """Keep the pair when each image is closer (CLIP cosine) to its own caption than to the other
    one; optionally also the paper's floors. ``matrix[k][j]``: image k with caption j."""
    m = np.asarray(matrix, dtype=np.float64)
    reasons = []
    for k in (0, 1):
        if not m[k, k] > m[k, 1 - k]:
            reasons.append(f"image {k} is not closer to its own caption ({m[k, k]:.3f} <= {m[k, 1 - k]:.3f})")
    if min_text_image is not None:
        for k in (0, 1):
            if m[k, k] < min_text_image:
                reasons.append(f"image {k}: caption cosine {m[k, k]:.3f} < {min_text_image}")
    if min_image_image is not None and image_image < min_image_image:
        reasons.append(f"image-image cosine {image_image:.3f} < {min_image_image}")
    mat = ((float(m[0, 0]), float(m[0, 1])), (float(m[1, 0]), float(m[1, 1])))
    return ClipVerdict(
        keep=not reasons, matrix=mat, image_image=float(image_image), clip_dir=float(clip_dir), reasons=tuple(reasons)
    )


def clip_judge(
    scorer: ImageTextScorer,
    images: Sequence[Image],
    captions: Sequence[str],
    *,
    min_text_image: float | None = None,
    min_image_image: float | None = None,
) -> ClipVerdict:
    """Embed the two images and the two captions with ``scorer`` and decide (:func:`clip_decide`)."""
    iv = np.asarray(scorer.embed_images(list(images)), dtype=np.float64)
    tv = np.asarray(scorer.embed_texts(list(captions)), dtype=np.float64)
    matrix = iv @ tv.T
    di, dt = iv[1] - iv[0], tv[1] - tv[0]
    denom = float(np.linalg.norm(di) * np.linalg.norm(dt))
    clip_dir = float(di @ dt / denom) if denom > 0 else 0.0
    return clip_decide(
        matrix,
        image_image=float(iv[0] @ iv[1]),
        clip_dir=clip_dir,
        min_text_image=min_text_image,
        min_image_image=min_image_image,
    )


__all__ = [
    "AttentionController",
    "ClipScorer",
    "ClipVerdict",
    "ImagePair",
    "InjectingAttnProcessor",
    "PairImageGenerator",
    "check_clip_dir",
    "check_pipeline_dir",
    "clip_decide",
    "clip_judge",
    "load_pipeline",
    "save_jpeg",
    "token_alignment",
]
