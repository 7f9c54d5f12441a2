"""COUNTERPART_PERPLEXITY_DTYPE (issue 27): the perplexity filter's LM in bfloat16 is an opt-in
that scores close to float32 (it is not the default: ~1 % of keep decisions change on CAD-NLI
dev); a bad value fails clearly."""

from __future__ import annotations

import pytest

from generation.ml import filters
from generation.ml.base import GeneratorConfigError
from tests.generation._tiny_hf import save_gpt2

pytestmark = pytest.mark.postgres_too  # reaches database-specific code (docs/testing.md)


def test_bfloat16_scores_close_to_float32_and_a_bad_value_fails(settings, tmp_path) -> None:
    import torch

    from generation.services import runs

    path = save_gpt2(tmp_path / "gpt2")
    texts = ["the cat sat on the mat", "a dog ran in the park", "the mat sat on a cat"]
    settings.COUNTERPART = {**settings.COUNTERPART, "PERPLEXITY_LM_PATH": str(path), "PERPLEXITY_DTYPE": "float32"}
    runs._scorers.clear()
    try:
        fp32 = runs.perplexity_scorer()
        assert next(fp32.model.parameters()).dtype == torch.float32
        ref = fp32.score(texts)
        settings.COUNTERPART = {**settings.COUNTERPART, "PERPLEXITY_DTYPE": "bfloat16"}
        bf16 = runs.perplexity_scorer()
        assert bf16 is not fp32 and next(bf16.model.parameters()).dtype == torch.bfloat16
        assert next(fp32.model.parameters()).dtype == torch.float32  # the float32 model is not converted
        got = bf16.score(texts)
        assert got == pytest.approx(ref, rel=0.05)
        assert isinstance(bf16, filters.PerplexityScorer)
        settings.COUNTERPART = {**settings.COUNTERPART, "PERPLEXITY_DTYPE": "int4"}
        with pytest.raises(GeneratorConfigError, match="float32 or bfloat16"):
            runs.perplexity_scorer()
    finally:
        runs._scorers.clear()
