"""What model/decoding/cache_surgery.py relies on in transformers' DynamicCache layers (5.23), pinned on a tiny cache.

A layer here is fed K and V directly (no model): one full-attention layer and one sliding-window layer of
window 4, each (batch 1, 1 KV head, t tokens, head size 2). If an upgrade changes any of this, these fail
before a session silently corrupts its cache.
"""
import pytest
import torch
from transformers import DynamicCache, Gemma3TextConfig
from transformers.cache_utils import DynamicLayer, DynamicSlidingWindowLayer

from model.decoding.cache_surgery import can_crop, crop_to, restore, snapshot

pytestmark = pytest.mark.unit

WINDOW = 4


def new_cache() -> DynamicCache:
    """A cache for a 2-layer Gemma 3: layer 0 slides over WINDOW tokens, layer 1 is full causal."""
    config = Gemma3TextConfig(num_hidden_layers=2, layer_types=["sliding_attention", "full_attention"],
                              sliding_window=WINDOW, num_attention_heads=1, num_key_value_heads=1, head_dim=2)
    return DynamicCache(config=config)


def append(cache: DynamicCache, n: int, start: int = 0) -> None:
    """n tokens into every layer; token i's K is all i, its V all -i (so a tensor says which tokens it holds)."""
    values = torch.arange(start, start + n, dtype=torch.float32).reshape(1, 1, n, 1).expand(1, 1, n, 2)
    for i in range(len(cache.layers)):
        cache.update(values.clone(), -values.clone(), i)


def held(layer) -> list[int]:
    """The token numbers a layer's K tensor holds."""
    return [int(k) for k in layer.keys[0, 0, :, 0]]


def test_the_cache_has_one_sliding_and_one_full_layer():
    cache = new_cache()
    assert type(cache.layers[0]) is DynamicSlidingWindowLayer and cache.layers[0].sliding_window == WINDOW
    assert type(cache.layers[1]) is DynamicLayer


@pytest.mark.parametrize("layer", [0, 1], ids=["sliding", "full"])
def test_update_replaces_the_tensors_and_never_writes_into_them(layer):
    cache = new_cache()
    append(cache, 2)
    keys, values = cache.layers[layer].keys, cache.layers[layer].values
    before = keys.clone(), values.clone()
    append(cache, 1 if layer == 0 else 5, start=2)  # the sliding layer: also past its window
    assert cache.layers[layer].keys is not keys and cache.layers[layer].values is not values
    assert torch.equal(keys, before[0]) and torch.equal(values, before[1])  # the old tensors are untouched


@pytest.mark.parametrize("layer", [0, 1], ids=["sliding", "full"])
def test_crop_with_a_negative_count_removes_that_many_from_the_end_into_new_tensors(layer):
    cache = new_cache()
    append(cache, 3)  # below the sliding window: both layers can be cut
    keys = cache.layers[layer].keys
    before = keys.clone()
    cache.layers[layer].crop(-2)
    assert held(cache.layers[layer]) == [0] and cache.layers[layer].get_seq_length() == 1
    assert cache.layers[layer].keys is not keys and torch.equal(keys, before)


def test_crop_with_a_positive_count_is_refused():
    cache = new_cache()
    append(cache, 3)
    with pytest.raises(ValueError, match="negative"):  # why crop_to always passes a negative count
        cache.layers[1].crop(1)


def test_a_sliding_layer_past_its_window_counts_every_token_but_holds_window_minus_one():
    cache = new_cache()
    append(cache, WINDOW + 2)
    sliding, full = cache.layers
    assert sliding.get_seq_length() == WINDOW + 2 and sliding.keys.shape[-2] == WINDOW - 1
    assert held(sliding) == [3, 4, 5]  # the oldest tokens are gone
    assert full.get_seq_length() == full.keys.shape[-2] == WINDOW + 2
    assert cache.get_seq_length() == WINDOW + 2  # layer 0's count, the tokens seen


def test_crop_to_cuts_every_layer_below_the_window():
    cache = new_cache()
    append(cache, WINDOW - 1)
    assert can_crop(cache, 1) and crop_to(cache, 1)
    assert [held(layer) for layer in cache.layers] == [[0], [0]]
    assert [layer.get_seq_length() for layer in cache.layers] == [1, 1]


def test_crop_to_changes_nothing_once_a_sliding_layer_dropped_a_token_it_needs():
    cache = new_cache()
    append(cache, WINDOW)  # the sliding layer has seen its window: token 0 is gone
    states = [dict(vars(layer)) for layer in cache.layers]
    assert not can_crop(cache, WINDOW - 1) and not crop_to(cache, WINDOW - 1)
    assert all(vars(layer) == state for layer, state in zip(cache.layers, states))  # not a tensor replaced
    assert can_crop(cache, WINDOW)  # nothing to cut: fine


def test_crop_to_cuts_only_the_layers_a_failed_pass_reached():
    cache = new_cache()
    append(cache, 2)
    cache.update(torch.full((1, 1, 1, 2), 9.0), torch.full((1, 1, 1, 2), -9.0), 0)  # a pass that died after layer 0
    assert crop_to(cache, 2)
    assert [held(layer) for layer in cache.layers] == [[0, 1], [0, 1]]


def test_restoring_a_snapshot_gives_back_the_exact_tensors_also_past_the_window():
    cache = new_cache()
    append(cache, WINDOW - 1)
    saved = snapshot(cache)
    tensors = [(layer.keys, layer.values) for layer in cache.layers]
    append(cache, 3, start=WINDOW - 1)  # past the window: cropping could not undo this
    assert not can_crop(cache, WINDOW - 1)
    restore(cache, saved)
    assert all(layer.keys is k and layer.values is v for layer, (k, v) in zip(cache.layers, tensors))
    assert [held(layer) for layer in cache.layers] == [[0, 1, 2], [0, 1, 2]]
    assert [layer.get_seq_length() for layer in cache.layers] == [WINDOW - 1, WINDOW - 1]
    append(cache, 1, start=WINDOW - 1)  # and the restored cache goes on as if nothing happened
    assert held(cache.layers[1]) == [0, 1, 2, 3] and cache.layers[0].get_seq_length() == WINDOW
