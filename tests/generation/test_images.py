"""Image pairs for caption pairs (generation/ml/images.py) with a tiny random-weight diffusers
pipeline and a tiny CLIP model built from configs and loaded through the real local-path code."""

from __future__ import annotations

import zlib
from pathlib import Path

import numpy as np
import pytest

from tests.conftest import need_module

torch = need_module("torch")
need_module("diffusers")

from generation.ml import images as im  # noqa: E402
from generation.ml.base import GeneratorConfigError, Original, Skip  # noqa: E402
from generation.ml.captions import CocoCounterfactualGenerator  # noqa: E402
from tests.generation._tiny_diffusion import save_tiny_clip, save_tiny_pipeline  # noqa: E402

CAP_0 = "a dog on a sofa"
CAP_1 = "a cat on a sofa"


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny-diffusion")
    save_tiny_pipeline(d / "sd")
    save_tiny_clip(d / "clip")
    yield d
    im.clear_cache()


@pytest.fixture
def pairs(tiny_dir):
    return im.PairImageGenerator(
        str(tiny_dir / "sd"), steps=3, height=32, width=32, cross_replace=1.0, self_replace=0.5
    )


def _capture_unet_inputs(pipe):
    seen = []

    def hook(module, args, kwargs):
        sample = args[0] if args else kwargs["sample"]
        seen.append(sample.detach().clone())

    handle = pipe.unet.register_forward_pre_hook(hook, with_kwargs=True)
    return seen, handle


# -- loading ----------------------------------------------------------------------------------
def test_bad_paths_are_configuration_errors(tmp_path):
    with pytest.raises(GeneratorConfigError, match="no text-to-image"):
        im.check_pipeline_dir("")
    with pytest.raises(GeneratorConfigError, match="does not exist"):
        im.check_pipeline_dir(tmp_path / "nope")
    with pytest.raises(GeneratorConfigError, match=r"model_index\.json"):
        im.check_pipeline_dir(tmp_path)
    with pytest.raises(GeneratorConfigError, match=r"config\.json"):
        im.check_clip_dir(tmp_path)


# -- shared latents ---------------------------------------------------------------------------
def test_both_captions_start_from_identical_latents(pairs):
    seen, handle = _capture_unet_inputs(pairs.pipe)
    try:
        pair = pairs.generate(CAP_0, CAP_1, seed=7)
    finally:
        handle.remove()
    assert len(seen) == 3  # one UNet call per step (both captions and CFG batched)
    first = seen[0]
    assert first.shape[0] == 4  # [uncond_0, uncond_1, cond_0, cond_1]
    assert torch.equal(first[0], first[1]) and torch.equal(first[2], first[3])
    assert torch.equal(first[0], first[2])
    expected = pairs.initial_latents(7)[0] * pairs.pipe.scheduler.init_noise_sigma
    assert torch.allclose(first[0], expected)
    # the captions differ, so the two denoising paths separate after the first step
    assert not torch.equal(seen[1][2], seen[1][3])
    assert [im_.size for im_ in pair.images] == [(32, 32), (32, 32)]
    assert pair.seed == 7 and pair.injected["cross"] > 0 and pair.injected["self"] > 0


def test_other_seed_other_latents_and_same_seed_same_images(pairs):
    assert not torch.equal(pairs.initial_latents(1), pairs.initial_latents(2))
    a = pairs.generate(CAP_0, CAP_1, seed=3)
    b = pairs.generate(CAP_0, CAP_1, seed=3)
    assert np.array_equal(np.asarray(a.images[1]), np.asarray(b.images[1]))
    # the default processors are back after the call
    assert not any(isinstance(p, im.InjectingAttnProcessor) for p in pairs.pipe.unet.attn_processors.values())


def test_images_are_saved_as_jpeg(pairs, tmp_path):
    from PIL import Image

    pair = pairs.generate(CAP_0, CAP_1, seed=1)
    path = im.save_jpeg(pair.images[0], tmp_path / "x" / "a.jpg")
    with Image.open(path) as img:
        assert img.format == "JPEG" and img.size == (32, 32)


# -- attention injection -----------------------------------------------------------------------
def test_token_alignment_maps_equal_and_swapped_tokens():
    assert im.token_alignment([0, 5, 6, 7, 1], [0, 5, 9, 7, 1]) == [0, 1, 2, 3, 4]  # same-length swap
    assert im.token_alignment([0, 5, 6, 7, 1], [0, 5, 8, 9, 7, 1]) == [0, 1, -1, -1, 3, 4]


def test_processor_without_injection_equals_diffusers_default():
    from diffusers.models.attention_processor import Attention, AttnProcessor

    torch.manual_seed(0)
    x, ctx = torch.randn(4, 10, 8), torch.randn(4, 5, 6)
    for attn, enc in (
        (Attention(query_dim=8, heads=2, dim_head=4), None),
        (Attention(query_dim=8, cross_attention_dim=6, heads=2, dim_head=4), ctx),
    ):
        ref = AttnProcessor()(attn, x, encoder_hidden_states=enc)
        ours = im.InjectingAttnProcessor(None)(attn, x, encoder_hidden_states=enc)  # fused path
        assert torch.allclose(ref, ours, atol=1e-5)
        # explicit path while injecting: with each pair's two inputs equal, injection changes nothing
        xp = x.clone()
        xp[1], xp[3] = xp[0], xp[2]
        encp = None
        if enc is not None:
            encp = enc.clone()
            encp[1], encp[3] = encp[0], encp[2]
        ctl = im.AttentionController(steps=2, cross_replace=1.0, self_replace=1.0, alignment=list(range(5)))
        assert ctl.due(enc is not None, 10)
        ref = AttnProcessor()(attn, xp, encoder_hidden_states=encp)
        ours = im.InjectingAttnProcessor(ctl)(attn, xp, encoder_hidden_states=encp)
        assert torch.allclose(ref, ours, atol=1e-5)
        assert sum(ctl.injected.values()) == 1


def test_controller_copies_the_original_maps_only_while_due():
    heads, q, k = 2, 6, 5
    c = im.AttentionController(steps=4, cross_replace=0.5, self_replace=0.25, alignment=[0, 1, -1, 3, 4])
    probs = torch.rand(4 * heads, q, k)
    out = c.edit(probs, heads, is_cross=True).reshape(4, heads, q, k)
    p = probs.reshape(4, heads, q, k)
    assert torch.equal(out[3][..., [0, 1, 3, 4]], p[2][..., [0, 1, 3, 4]])  # cond cf <- cond original
    assert torch.equal(out[3][..., 2], p[3][..., 2])  # the unaligned token keeps its own map
    assert torch.equal(out[2], p[2]) and torch.equal(out[0], p[0])
    c.step = 2  # past cross_replace * steps
    assert torch.equal(c.edit(probs, heads, is_cross=True), probs)
    c.step = 0
    self_out = c.edit(torch.rand(2 * heads, q, q), heads, is_cross=False).reshape(2, heads, q, q)
    assert torch.equal(self_out[0], self_out[1])
    c.step = 1
    fresh = torch.rand(2 * heads, q, q)
    assert torch.equal(c.edit(fresh, heads, is_cross=False), fresh)


def test_injection_pulls_the_counterfactual_image_towards_the_original(tiny_dir):
    free = im.PairImageGenerator(
        str(tiny_dir / "sd"), steps=3, height=32, width=32, cross_replace=0.0, self_replace=0.0
    )
    tied = im.PairImageGenerator(
        str(tiny_dir / "sd"), steps=3, height=32, width=32, cross_replace=1.0, self_replace=1.0
    )
    a, b = free.generate(CAP_0, CAP_1, seed=5), tied.generate(CAP_0, CAP_1, seed=5)
    assert np.array_equal(np.asarray(a.images[0]), np.asarray(b.images[0]))  # the original is untouched
    assert not np.array_equal(np.asarray(a.images[1]), np.asarray(b.images[1]))


# -- CLIP filter ---------------------------------------------------------------------------------
@pytest.mark.parametrize(
    "matrix, keep",
    [
        ([[0.30, 0.20], [0.21, 0.31]], True),
        ([[0.30, 0.20], [0.35, 0.31]], False),  # image 1 closer to the original caption
        ([[0.20, 0.20], [0.21, 0.31]], False),  # a tie is not "higher"
    ],
)
def test_clip_decide_requires_each_image_to_prefer_its_caption(matrix, keep):
    v = im.clip_decide(matrix)
    assert v.keep is keep
    assert v.scores()["clip_own_1"] == matrix[1][1] and v.scores()["clip_other_1"] == matrix[1][0]


def test_clip_decide_optional_floors():
    good = [[0.30, 0.20], [0.21, 0.31]]
    assert not im.clip_decide(good, min_text_image=0.305).keep
    assert not im.clip_decide(good, image_image=0.6, min_image_image=0.7).keep
    assert im.clip_decide(good, image_image=0.8, min_text_image=0.2, min_image_image=0.7).keep


def test_clip_judge_with_a_tiny_clip_model(tiny_dir, pairs):
    scorer = im.ClipScorer(str(tiny_dir / "clip"))
    pair = pairs.generate(CAP_0, CAP_1, seed=2)
    v = im.clip_judge(scorer, pair.images, [CAP_0, CAP_1])
    iv, tv = scorer.embed_images(pair.images), scorer.embed_texts([CAP_0, CAP_1])
    assert iv.shape == (2, 16) and np.allclose(np.linalg.norm(iv, axis=1), 1, atol=1e-5)
    assert np.allclose(np.asarray(v.matrix), iv @ tv.T, atol=1e-5)
    assert v.keep == bool(v.matrix[0][0] > v.matrix[0][1] and v.matrix[1][1] > v.matrix[1][0])


# -- the generator with images -----------------------------------------------------------------
class BandEncoder:
    """Cosine 0.85 (inside (0.8, 0.91]) for every pair."""

    def cosine(self, a, b):
        return [0.85 for _ in a]


class ControlledClip:
    """Embeddings chosen by the test: images prefer their own caption unless ``swap``."""

    def __init__(self, swap: bool = False) -> None:
        self.swap = swap

    def embed_images(self, images):
        v = np.array([[1.0, 0.0], [0.0, 1.0]])
        return v[::-1] if self.swap else v

    def embed_texts(self, texts):
        return np.array([[0.9, 0.1], [0.1, 0.9]]) / np.linalg.norm([0.9, 0.1])


def _original():
    return Original(
        id="179765_0",
        fields={"caption": "A woman is cutting into a cake with a large knife."},
        label=None,
        labels=(),
        task="image-caption",
    )


def test_generator_writes_an_image_pair_per_kept_caption_pair(tiny_dir, tmp_path):
    gen = CocoCounterfactualGenerator(
        diffusion_path=str(tiny_dir / "sd"),
        image_dir=str(tmp_path / "imgs"),
        encoder=BandEncoder(),
        clip_scorer=ControlledClip(),
        steps=2,
        height=32,
        width=32,
        seed=4,
    )
    out = list(gen.generate([_original()]))
    assert len(out) == 1 and not isinstance(out[0], Skip)
    c = out[0]
    assert c.perturbation == "lexical" and c.meta["replaced"] != c.meta["by"]
    for key in ("image", "original_image"):
        assert Path(str(c.meta[key])).is_file() and str(c.meta[key]).endswith(".jpg")
    assert Path(str(c.meta["image"])).parent == tmp_path / "imgs"
    assert c.meta["seed"] == gen.pair_seed("179765_0", 0) == zlib.crc32(b"4:179765_0:0:0") & 0x7FFFFFFF
    assert c.scores["clip_own_0"] > c.scores["clip_other_0"] and c.meta["clip"]["keep"] is True
    assert gen.images and not any("text-only" in n for n in gen.notes)


def test_generator_drops_pairs_the_clip_filter_rejects(tiny_dir, tmp_path):
    gen = CocoCounterfactualGenerator(
        diffusion_path=str(tiny_dir / "sd"),
        image_dir=str(tmp_path / "imgs"),
        encoder=BandEncoder(),
        clip_scorer=ControlledClip(swap=True),
        steps=2,
        height=32,
        width=32,
        attempts=2,
    )
    out = list(gen.generate([_original()]))
    assert len(out) == 1 and isinstance(out[0], Skip) and "CLIP filter rejected" in out[0].reason
    assert not (tmp_path / "imgs").exists() or not any((tmp_path / "imgs").iterdir())


def test_generator_with_a_bad_diffusion_path_fails_at_start(tmp_path):
    with pytest.raises(GeneratorConfigError, match=r"model_index\.json"):
        CocoCounterfactualGenerator(diffusion_path=str(tmp_path), image_dir=str(tmp_path / "i"), encoder=BandEncoder())
