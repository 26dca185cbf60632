"""Surgery on a transformers DynamicCache: cut it back, snapshot it, put a snapshot back (transformers 5.x layers).

These reach into the cache's layers (DynamicLayer, DynamicSlidingWindowLayer) and rely on how transformers 5.23
treats them; tests/test_cache_surgery.py pins that behaviour, so an upgrade that changes it fails there first:
- a layer's update() and crop() replace its `keys` / `values` tensors and never write into them;
- crop(n) with n < 0 removes -n tokens from the end;
- a sliding-window layer past its window holds window - 1 tokens (keys.shape[-2]) while get_seq_length()
  counts every token it has seen.
"""
from __future__ import annotations

from transformers import DynamicCache


def can_crop(cache: DynamicCache, length: int) -> bool:
    """True if every layer still holds all of its first `length` tokens (false past a sliding window)."""
    return not any(layer.get_seq_length() > layer.keys.shape[-2]  # tokens seen > tokens held: some were dropped
                   for layer in _longer(cache, length))


def crop_to(cache: DynamicCache, length: int) -> bool:
    """Cut every layer of the cache back to `length` tokens (layers may differ after a failed forward).

    False, changing nothing, if a layer to cut has dropped tokens: a sliding-window layer that has seen its
    window keeps only its last window - 1 tokens, and a shorter text needs some before those (the caller then
    runs the model again over the text).
    """
    if not can_crop(cache, length):
        return False
    for layer in _longer(cache, length):
        layer.crop(length - layer.get_seq_length())  # a negative count: tokens to remove
    return True


def snapshot(cache: DynamicCache) -> list[dict]:
    """Every layer's attributes (K, V, tokens seen). update() and crop() replace a layer's tensors and never
    write into them, so this is an exact snapshot that copies no tensor."""
    return [dict(vars(layer)) for layer in cache.layers]


def restore(cache: DynamicCache, states: list[dict]) -> None:
    """Put back a snapshot from snapshot() (exact also past a sliding window, unlike cropping)."""
    for layer, state in zip(cache.layers, states):
        vars(layer).clear()
        vars(layer).update(state)


def _longer(cache: DynamicCache, length: int) -> list:
    """The layers that have seen more than `length` tokens."""
    return [layer for layer in cache.layers if layer.is_initialized and layer.get_seq_length() > length]
