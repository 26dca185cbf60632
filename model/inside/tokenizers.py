"""The same text through each packaged model's tokenizer: its tokens, tokens per character, and what they cost in
KV-cache bytes and decode steps (the formula, from each model's own config). The tokenizer sets a language's price.

Only the tokenizer and the config are read (no weights): the view costs no model load.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from model.errors import SessionError
from model.parse import valid_text
from model.decoding.kv import formula_bytes, kv_cache_bytes
from model.decoding.loading import available_models, model_info, resolve
from model.decoding.records import ModelInfo, TokenInfo
from model.decoding.tokens import TokenDisplay

MAX_CHARS = 400  # a comparison's text: a sentence or two, not a document
SUBWORD_EXAMPLE = "unbelievable"  # the interview's example of subwords


@dataclass
class Tokenized:
    """One model's reading of a text: its tokens and what they cost."""

    model: str
    tokens: list[TokenInfo]
    characters: int
    kv_bytes_per_token: int  # 2 x layers x kv_heads x head_dim x bytes per value (every layer full)
    kv_bytes: int  # the formula for this many tokens (sliding-window layers hold at most window - 1)

    @property
    def tokens_per_character(self) -> float:
        return len(self.tokens) / max(self.characters, 1)


@lru_cache(maxsize=4)
def tokenizer_of(name: str) -> tuple[TokenDisplay, ModelInfo]:
    """A packaged model's tokenizer and shape, read from its converted folder (no weights loaded)."""
    from transformers import AutoConfig, AutoTokenizer

    _, folder = resolve(name)
    return TokenDisplay(AutoTokenizer.from_pretrained(folder)), model_info(name, AutoConfig.from_pretrained(folder))


def tokenize(name: str, text: str) -> Tokenized:
    """`text` as model `name` reads it (no special tokens added), with its KV cost by the formula."""
    tokens, info = tokenizer_of(name)
    ids = tokens.tokenizer(text, add_special_tokens=False)["input_ids"]
    per_token = kv_cache_bytes(info.layers, info.kv_heads, info.head_dim, 1, info.bytes_per_value)
    return Tokenized(name, [tokens.info(i) for i in ids], len(text), per_token, formula_bytes(info, len(ids)))


def compare(text: str, names: list[str] | None = None) -> list[Tokenized]:
    """`text` through every installed packaged model's tokenizer (or `names`'); refused when empty or too long."""
    if not isinstance(text, str) or not text.strip():
        raise SessionError("tokenizers_empty")
    valid_text(text, "tokenizers_invalid_text")
    if len(text) > MAX_CHARS:
        raise SessionError("tokenizers_too_long", limit=MAX_CHARS, n=len(text))
    return [tokenize(name, text) for name in (names or available_models())]
