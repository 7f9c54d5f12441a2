"""Tiny random-weight Hugging Face models with in-memory word-level tokenizers, saved with
``save_pretrained`` so tests load them through the real local-path loaders.

Shared by the tests of the model-backed generators (saliency, rationale-infill, llm-prompt,
neurologic, concept-constrained)."""

from __future__ import annotations

from pathlib import Path

import pytest

SPECIALS = [
    "[PAD]",
    "[UNK]",
    "[CLS]",
    "[SEP]",
    "[MASK]",
    "</s>",
    "<extra_id_0>",
    "<extra_id_1>",
    "<extra_id_2>",
    "<extra_id_3>",
]
WORDS = (
    "the a an this movie film plot acting was is were are very really not great good bad terrible "
    "awful boring brilliant fun funny and but it i loved hated man woman dog horse field park "
    "riding sitting walking in on at of with young old brown open story actors devices clever "
    "people two some , . ! : ? review positive negative entailment neutral contradiction premise "
    "hypothesis fill blank so that label sentiment true false possible given follows"
).split()


def vocab() -> dict[str, int]:
    words = list(dict.fromkeys(SPECIALS + WORDS))
    return {w: i for i, w in enumerate(words)}


def wordlevel_tokenizer(pair_template: bool = False):
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    v = vocab()
    tk = Tokenizer(models.WordLevel(vocab=v, unk_token="[UNK]"))
    tk.normalizer = normalizers.Lowercase()
    tk.pre_tokenizer = pre_tokenizers.WhitespaceSplit() if not pair_template else pre_tokenizers.Whitespace()
    if pair_template:
        tk.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]",
            pair="[CLS] $A [SEP] $B:1 [SEP]:1",
            special_tokens=[("[CLS]", v["[CLS]"]), ("[SEP]", v["[SEP]"])],
        )
    return PreTrainedTokenizerFast(
        tokenizer_object=tk,
        unk_token="[UNK]",
        pad_token="[PAD]",
        mask_token="[MASK]",
        eos_token="</s>",
        cls_token="[CLS]",
        sep_token="[SEP]",
        additional_special_tokens=[s for s in SPECIALS if s.startswith("<extra_id")],
    )


def _bert_config(**kw):
    from transformers import BertConfig

    return BertConfig(
        vocab_size=len(vocab()),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=128,
        **kw,
    )


def save_gpt2(path: Path, seed: int = 0) -> Path:
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    v = vocab()
    cfg = GPT2Config(
        vocab_size=len(v),
        n_embd=16,
        n_layer=1,
        n_head=2,
        n_positions=256,
        bos_token_id=v["</s>"],
        eos_token_id=v["</s>"],
        pad_token_id=v["[PAD]"],
    )
    GPT2LMHeadModel(cfg).save_pretrained(path)
    wordlevel_tokenizer().save_pretrained(path)
    return path


def save_llama(path: Path, seed: int = 0) -> Path:
    """A two-layer llama (the bundled SmolLM2's architecture) with the word-level tokenizer."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(seed)
    v = vocab()
    cfg = LlamaConfig(
        vocab_size=len(v),
        hidden_size=16,
        intermediate_size=32,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=1,
        max_position_embeddings=256,
        bos_token_id=v["</s>"],
        eos_token_id=v["</s>"],
        pad_token_id=v["[PAD]"],
    )
    LlamaForCausalLM(cfg).save_pretrained(path)
    wordlevel_tokenizer().save_pretrained(path)
    return path


def save_t5(path: Path, seed: int = 0) -> Path:
    import torch
    from transformers import T5Config, T5ForConditionalGeneration

    torch.manual_seed(seed)
    v = vocab()
    cfg = T5Config(
        vocab_size=len(v),
        d_model=16,
        d_ff=32,
        d_kv=8,
        num_layers=1,
        num_decoder_layers=1,
        num_heads=2,
        pad_token_id=v["[PAD]"],
        eos_token_id=v["</s>"],
        decoder_start_token_id=v["[PAD]"],
    )
    T5ForConditionalGeneration(cfg).save_pretrained(path)
    wordlevel_tokenizer().save_pretrained(path)
    return path


def save_bert_mlm(path: Path, seed: int = 0) -> Path:
    import torch
    from transformers import BertForMaskedLM

    torch.manual_seed(seed)
    BertForMaskedLM(_bert_config()).save_pretrained(path)
    wordlevel_tokenizer(pair_template=True).save_pretrained(path)
    return path


def save_bert_classifier(path: Path, labels: tuple[str, ...] = ("negative", "positive"), seed: int = 0) -> Path:
    import torch
    from transformers import BertForSequenceClassification

    torch.manual_seed(seed)
    cfg = _bert_config(
        num_labels=len(labels), id2label=dict(enumerate(labels)), label2id={lab: i for i, lab in enumerate(labels)}
    )
    BertForSequenceClassification(cfg).save_pretrained(path)
    wordlevel_tokenizer(pair_template=True).save_pretrained(path)
    return path


@pytest.fixture(autouse=True, scope="module")
def torch_single_thread():
    """Tiny models run fastest on one thread, and the test machine's cores are shared."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
