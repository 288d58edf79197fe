"""A character-level tokenizer built with `tokenizers`, wrapped as a
PreTrainedTokenizerFast with a chat template, so chat-format prompts render
for the embedded model exactly as they will for real models."""

from __future__ import annotations

import string

from tokenizers import Tokenizer, decoders, models
from transformers import PreTrainedTokenizerFast

SPECIAL_TOKENS = ["<|pad|>", "<|end|>", "<|system|>", "<|user|>", "<|assistant|>", "<|unk|>"]
PAD, EOS, UNK = "<|pad|>", "<|end|>", "<|unk|>"

CHAT_TEMPLATE = (
    "{% for message in messages %}"
    "{{ '<|' + message['role'] + '|>' + message['content'] + '<|end|>' + '\n' }}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|assistant|>' }}{% endif %}"
)


def build_char_tokenizer() -> PreTrainedTokenizerFast:
    """Printable ASCII, one token per character, plus chat special tokens."""
    chars = [c for c in string.printable if c not in "\x0b\x0c\r"]
    vocab = {tok: i for i, tok in enumerate(SPECIAL_TOKENS)}
    for c in chars:
        vocab.setdefault(c, len(vocab))
    # BPE without merges is exactly a character tokenizer; Fuse joins characters back.
    core = Tokenizer(models.BPE(vocab=vocab, merges=[], unk_token=UNK))
    core.add_special_tokens(SPECIAL_TOKENS)
    core.decoder = decoders.Fuse()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=core, pad_token=PAD, eos_token=EOS, unk_token=UNK,
        padding_side="left", model_max_length=4096,
    )
    tok.chat_template = CHAT_TEMPLATE
    return tok
