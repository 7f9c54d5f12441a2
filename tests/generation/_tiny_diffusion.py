"""Tiny random-weight text-to-image pipeline and CLIP model built from configs, with a CLIP
tokenizer made from a character-level vocab/merges written to a temporary folder; saved with
``save_pretrained`` so tests load them through the real local-path code."""

from __future__ import annotations

import json
from pathlib import Path

CHARS = "abcdefghijklmnopqrstuvwxyz"


def clip_tokenizer(folder: Path):
    from transformers import CLIPTokenizer

    folder.mkdir(parents=True, exist_ok=True)
    tokens = ["<|startoftext|>", "<|endoftext|>", *CHARS, *(c + "</w>" for c in CHARS), ".", ".</w>"]
    (folder / "vocab.json").write_text(json.dumps({t: i for i, t in enumerate(tokens)}))
    (folder / "merges.txt").write_text("#version: 0.2\n")
    tok = CLIPTokenizer(vocab=str(folder / "vocab.json"), merges=str(folder / "merges.txt"))
    tok.model_max_length = 32
    return tok


def text_config_kwargs(vocab_size: int) -> dict:
    return {
        "vocab_size": vocab_size,
        "hidden_size": 16,
        "intermediate_size": 32,
        "num_hidden_layers": 1,
        "num_attention_heads": 2,
        "max_position_embeddings": 32,
        "bos_token_id": 0,
        "eos_token_id": 1,
        "pad_token_id": 1,
    }


def save_tiny_pipeline(path: Path, seed: int = 0) -> Path:
    import torch
    from diffusers import (
        AutoencoderKL,
        DDIMScheduler,
        StableDiffusionPipeline,
        UNet2DConditionModel,
    )
    from transformers import CLIPTextConfig, CLIPTextModel

    torch.manual_seed(seed)
    tok = clip_tokenizer(path.parent / f"{path.name}-vocab")
    unet = UNet2DConditionModel(
        sample_size=16,
        in_channels=4,
        out_channels=4,
        layers_per_block=1,
        block_out_channels=(8, 16),
        down_block_types=("CrossAttnDownBlock2D", "DownBlock2D"),
        up_block_types=("UpBlock2D", "CrossAttnUpBlock2D"),
        cross_attention_dim=16,
        attention_head_dim=4,
        norm_num_groups=4,
    )
    vae = AutoencoderKL(
        in_channels=3,
        out_channels=3,
        block_out_channels=(8, 8),
        down_block_types=("DownEncoderBlock2D",) * 2,
        up_block_types=("UpDecoderBlock2D",) * 2,
        latent_channels=4,
        norm_num_groups=4,
        sample_size=32,
    )
    text = CLIPTextModel(CLIPTextConfig(**text_config_kwargs(len(tok.get_vocab()))))
    sched = DDIMScheduler(
        beta_start=0.00085,
        beta_end=0.012,
        beta_schedule="scaled_linear",
        clip_sample=False,
        set_alpha_to_one=False,
        steps_offset=1,
    )
    pipe = StableDiffusionPipeline(
        vae=vae,
        text_encoder=text,
        tokenizer=tok,
        unet=unet,
        scheduler=sched,
        safety_checker=None,
        feature_extractor=None,
        requires_safety_checker=False,
    )
    pipe.save_pretrained(path)
    return path


def save_tiny_clip(path: Path, seed: int = 0) -> Path:
    import torch
    from transformers import CLIPConfig, CLIPImageProcessor, CLIPModel, CLIPProcessor

    torch.manual_seed(seed)
    tok = clip_tokenizer(path.parent / f"{path.name}-vocab")
    cfg = CLIPConfig(
        text_config=text_config_kwargs(len(tok.get_vocab())),
        vision_config={
            "image_size": 32,
            "patch_size": 8,
            "hidden_size": 16,
            "intermediate_size": 32,
            "num_hidden_layers": 1,
            "num_attention_heads": 2,
        },
        projection_dim=16,
    )
    CLIPModel(cfg).save_pretrained(path)
    proc = CLIPProcessor(
        image_processor=CLIPImageProcessor(size={"shortest_edge": 32}, crop_size={"height": 32, "width": 32}),
        tokenizer=tok,
    )
    proc.save_pretrained(path)
    return path
