"""A tiny random BERT with an in-memory word-level tokenizer, saved with save_pretrained."""

from __future__ import annotations

WORDS = (
    "[PAD] [UNK] [CLS] [SEP] [MASK] a man dog runs sleeps park the is not maybe : | entailment neutral "
    "contradiction woman horse field boy girl ball"
).split()


def save_tiny_bert(path, id2label):
    import torch
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import (
        BertConfig,
        BertForSequenceClassification,
        PreTrainedTokenizerFast,
    )

    vocab = {w: i for i, w in enumerate(WORDS)}
    tk = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tk.normalizer = normalizers.Lowercase()
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    tk.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[("[CLS]", vocab["[CLS]"]), ("[SEP]", vocab["[SEP]"])],
    )
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tk,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )
    torch.manual_seed(0)
    cfg = BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        num_labels=len(id2label),
        id2label=dict(enumerate(id2label)),
        label2id={v: k for k, v in enumerate(id2label)},
    )
    BertForSequenceClassification(cfg).save_pretrained(path)
    tok.save_pretrained(path)
    return path
