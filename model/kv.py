"""KV-cache accounting: bytes measured on the cache tensors, and the formula that must agree with them."""
from __future__ import annotations

from .records import KVBytes, ModelInfo


def kv_cache_bytes(layers: int, kv_heads: int, head_dim: int, tokens: int, bytes_per_value: int, batch: int = 1) -> int:
    """2 (K and V) x layers x kv_heads x head_dim x tokens x bytes_per_value x batch."""
    return 2 * layers * kv_heads * head_dim * tokens * bytes_per_value * batch


def formula_bytes(info: ModelInfo, tokens: int, batch: int = 1) -> int:
    """The formula for a model, layer by layer: a sliding-window layer holds at most window - 1 tokens.

    Not the whole window: the token being run brings its own K and V to its pass, which sees the window's
    last window - 1 cached tokens and itself (transformers' DynamicSlidingWindowLayer; Gemma 3: 511 of 512).
    """
    windows = info.sliding_window or [None] * info.layers
    held = [min(tokens, w - 1) if w else tokens for w in windows]  # tokens each layer keeps
    return sum(kv_cache_bytes(1, info.kv_heads, info.head_dim, t, info.bytes_per_value, batch) for t in held)


def kv_bytes(cache, info: ModelInfo) -> KVBytes:
    """Measure a DynamicCache: numel x element_size summed over every layer's K and V tensors."""
    keys = sum(layer.keys.numel() * layer.keys.element_size() for layer in cache.layers if layer.keys is not None)
    values = sum(layer.values.numel() * layer.values.element_size() for layer in cache.layers if layer.values is not None)
    tokens = cache.get_seq_length()
    return KVBytes(measured=keys + values, formula=formula_bytes(info, tokens), keys=keys, values=values, tokens=tokens)
