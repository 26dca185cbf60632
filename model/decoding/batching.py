"""A batched decode pass: one token for each of several texts in one forward pass, each on its own KV cache.

A decode step reads every weight once and is bound by memory bandwidth, so a batch of texts costs little more than one
(docs/what-it-teaches.md: Batching). Each text keeps its own DynamicCache; for a batched pass their caches are
left-padded to one length, the padding masked out, each text's new token placed at its own position, and afterwards
each cache gets its own new keys and values back. A batch of one runs exactly the unbatched computation. The
scheduler (scheduler.py) decides which steps share a pass; this module only computes it.
"""
from __future__ import annotations

import time

import torch
from transformers import DynamicCache
from transformers.cache_utils import DynamicLayer


def forward_one(model, cache: DynamicCache, token_id: int):
    """One token through the model on one cache: (next logits (V,), attention row (layers, heads, t) fp16, ms)."""
    t0 = time.perf_counter()
    out = model(input_ids=torch.tensor([[token_id]]), past_key_values=cache, use_cache=True, output_attentions=True)
    ms = (time.perf_counter() - t0) * 1000
    t = cache.get_seq_length()
    # A sliding-window layer past its window attends to its last `window` keys only: the positions before
    # them are masked, weight 0, so the row is padded with zeros on the left to all t positions.
    rows = [a[0, :, -1, :] if a.shape[-1] == t else torch.nn.functional.pad(a[0, :, -1, :], (t - a.shape[-1], 0))
            for a in out.attentions]
    row = torch.stack(rows).to(torch.float16).numpy()  # (layers, heads, t)
    return out.logits[0, -1].clone(), row, ms


class _SlotLayer(DynamicLayer):
    """One layer of a batch's cache: the sessions' keys and values left-padded into one buffer that has one free
    position at the end, which the pass's new token fills in place. (A DynamicLayer's update concatenates: the
    whole batch's cache would be copied once more in every layer of every pass, 4-9 % of a batch-16 pass.)"""

    def __init__(self, keys: torch.Tensor, values: torch.Tensor):
        super().__init__()
        self.dtype, self.device, self.is_initialized = keys.dtype, keys.device, True
        self._full = (keys, values)
        self.keys, self.values = keys[..., :-1, :], values[..., :-1, :]  # what the pass sees as the past

    def update(self, key_states, value_states, *args, **kwargs):
        keys, values = self._full
        keys[..., -1:, :] = key_states
        values[..., -1:, :] = value_states
        self.keys, self.values = keys, values
        return keys, values


def batch_cache(caches: list[DynamicCache]) -> tuple[DynamicCache, list[int], int]:
    """The sessions' caches left-padded into one batch cache with a free position for the new token: (the batch
    cache, each session's length, the longest). The sessions' caches are only read."""
    lengths = [c.get_seq_length() for c in caches]
    longest = max(lengths)
    batch = DynamicCache()
    layers = []
    for layer_idx in range(len(caches[0].layers)):
        first = caches[0].layers[layer_idx].keys  # (1, kv_heads, t, head_dim)
        shape = (len(caches), first.shape[1], longest + 1, first.shape[3])
        keys, values = first.new_zeros(shape), first.new_zeros(shape)
        for i, c in enumerate(caches):  # left padding: every new token sits at the end
            # n tokens, or a sliding-window layer's last window - 1; the zeros before those are outside its window
            held = c.layers[layer_idx].keys.shape[-2]
            keys[i, :, longest - held : longest] = c.layers[layer_idx].keys[0]
            values[i, :, longest - held : longest] = c.layers[layer_idx].values[0]
        layers.append(_SlotLayer(keys, values))
    batch.layers = layers
    return batch, lengths, longest


@torch.no_grad()
def forward_batch(model, caches: list[DynamicCache], token_ids: list[int]):
    """One token for each of several sessions in one forward pass; each cache gets its own new K and V.

    The caches are only appended to after the pass succeeded, so a failure leaves every session as it was.
    """
    batch, lengths, longest = batch_cache(caches)
    mask = torch.zeros(len(caches), longest + 1, dtype=torch.long)  # the padding mask (1 = a real token)
    for i, n in enumerate(lengths):
        mask[i, longest - n :] = 1
    t0 = time.perf_counter()
    out = model(input_ids=torch.tensor(token_ids).reshape(-1, 1), attention_mask=mask,
                position_ids=torch.tensor(lengths).reshape(-1, 1), past_key_values=batch, use_cache=True,
                output_attentions=True)
    ms = (time.perf_counter() - t0) * 1000
    results = []
    for i, (c, n) in enumerate(zip(caches, lengths)):
        row = torch.stack([a[i, :, -1, longest - n :] for a in out.attentions]).to(torch.float16).numpy()
        results.append((out.logits[i, -1].clone(), row, ms))
    for layer_idx, layer in enumerate(batch.layers):  # the new token's K and V, back into each session's cache
        for i, c in enumerate(caches):
            c.layers[layer_idx].update(layer.keys[i : i + 1, :, -1:].clone(), layer.values[i : i + 1, :, -1:].clone())
    return results
