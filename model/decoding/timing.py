"""Measured time of a decode step with the KV cache against recomputing the whole prefix
(docs/what-it-teaches.md: What it saves).

The app runs this on demand ("Measure now"), so it is bounded: every length is measured once, and further
runs (up to `repeats`) are taken only while the whole measurement stays within `budget_s`.
"""
from __future__ import annotations

import statistics
import time

from copy import deepcopy
from dataclasses import dataclass

import torch
from transformers import DynamicCache

from model.decoding.scheduler import model_pass
from model.decoding.loading import LoadedModel
from model.decoding.records import CacheTiming
from model.decoding.core import computation

BUDGET_S = 4.0  # runs after the first stop here; at 512 tokens the first run of every length takes about this


# ---- one rule for every measurement on the page: the median, its spread, and when the machine was too noisy --------
@dataclass(frozen=True)
class Spread:
    """Repeated wall times of one thing, in ms: the median shown, and the min-max range of the runs around it."""

    median: float
    low: float  # the fastest run
    high: float  # the slowest run
    runs: int  # how many were taken (after an untimed warm-up)


def spread(runs_ms: list[float]) -> Spread:
    """The Spread of some repeated timings (at least one)."""
    if not runs_ms:
        raise ValueError("spread needs at least one timing")
    return Spread(statistics.median(runs_ms), min(runs_ms), max(runs_ms), len(runs_ms))


MIN_RUNS = 3  # fewer timed runs than this on either side: too few to tell noise from a difference


def separated(faster: Spread, slower: Spread) -> bool:
    """True when `faster` was faster in every run: at least MIN_RUNS runs of each, and its slowest run beats the
    other's fastest (the min-max ranges do not overlap). The page concludes only then; otherwise it says the machine
    was too noisy to conclude, because a busy neighbour could have put either side's runs anywhere in the overlap."""
    return min(faster.runs, slower.runs) >= MIN_RUNS and faster.high < slower.low


def default_lengths(n_tokens: int, count: int = 8) -> list[int]:
    """About `count` lengths from 2 to n_tokens, geometrically spaced: 512 -> 2, 4, 10, 22, 48, 105, 232, 512.

    Geometric, not even, spacing keeps the measurement short: a pass without the cache costs about its length,
    and these sum to about 2 x n_tokens (1.8 x at 512; evenly spaced ones would sum to 4.5 x).
    """
    if n_tokens < 1:
        return []
    low = min(2, n_tokens)
    if count < 2 or n_tokens == low:
        return [n_tokens]
    ratio = n_tokens / low
    return sorted({round(low * ratio ** (i / (count - 1))) for i in range(count)})


def _rewindable_cache(config) -> DynamicCache:
    """An empty cache whose sliding-window layers keep every token (not only their window), so that a copy
    can be cut back to any prefix: a window layer that has dropped tokens refuses to crop."""
    cache = DynamicCache(config=config)
    for layer in cache.layers:
        if layer.is_sliding:
            layer.activate_past_recording()
    return cache


def _prefix(cache: DynamicCache, tokens: int) -> DynamicCache:
    """A copy of `cache` holding only its first `tokens` tokens; `cache` itself is left as it was."""
    out = deepcopy(cache)
    for layer in out.layers:
        extra = layer.get_seq_length() - tokens
        if layer.is_initialized and extra > 0:
            layer.crop(-extra)
    return out


@computation
@torch.no_grad()
def measure_cache_timing(
    lm: LoadedModel, ids: list[int], lengths: list[int], repeats: int = 3, budget_s: float = BUDGET_S,
) -> CacheTiming:
    """For each length t, the median ms of (a) one decode step, token t through the model with a cache holding
    the t - 1 tokens before it, and (b) the whole prefix ids[:t] through the model without a cache, as a decoder
    without one must at every step. `lengths` come back as given, in the given order.

    The cache is made here, never taken from a session: the first pass at the longest length writes one (the
    only pass that does; that costs one copy of K and V, +0.0% at 512 tokens in bench.cache_timing, and saves
    a separate prefill as long as the pass). Every timed step runs on a fresh copy of it cut to t - 1 tokens, so repeats
    are identical. Both passes compute the last position's logits only (as generate() does) and no attention
    weights. Each length is run once; runs 2..repeats follow, shortest lengths first, only when the first run
    of that length fits in what is left of `budget_s`: the total stays near max(budget_s, one run of each).

    Each pass is a turn at the model's scheduler (on every core), not the whole measurement (~4 s at 512 tokens), so
    other users' steps run between the passes. A pass's time starts once it has its turn: waiting is not counted.
    A pass without the cache stays whole (up to a session's 512 tokens): its time is what is measured.
    """
    ids = list(ids)  # the caller's list may grow while this runs
    if repeats < 1:
        raise ValueError(f"repeats must be >= 1, got {repeats}")
    bad = [t for t in lengths if isinstance(t, bool) or not isinstance(t, int) or not 1 <= t <= len(ids)]
    if bad:
        raise ValueError(f"lengths must be whole numbers in [1, {len(ids)}] (the tokens so far), got {bad}")
    deadline = time.perf_counter() + budget_s
    model = lm.model

    def full_ms(t: int, cache: DynamicCache | None = None) -> float:
        inputs = torch.tensor([ids[:t]])  # (1, t)
        with model_pass(model):
            t0 = time.perf_counter()
            model(input_ids=inputs, past_key_values=cache, use_cache=cache is not None, logits_to_keep=1)
            return (time.perf_counter() - t0) * 1000

    def cached_ms(t: int) -> float:
        cache = _prefix(base, t - 1)  # every layer: K, V (1, kv_heads, t - 1, head_dim); copied between its turns
        inputs = torch.tensor([[ids[t - 1]]])  # (1, 1)
        with model_pass(model):
            t0 = time.perf_counter()
            model(input_ids=inputs, past_key_values=cache, use_cache=True)
            return (time.perf_counter() - t0) * 1000

    cached: list[list[float]] = [[] for _ in lengths]
    full: list[list[float]] = [[] for _ in lengths]
    if not lengths:
        return CacheTiming([], [], [])
    longest = max(range(len(lengths)), key=lengths.__getitem__)
    base = _rewindable_cache(model.config)
    cached_ms(1)  # untimed warm-up: a process's first one-token pass runs slow (base is empty: a fresh cache)
    full_ms(min(lengths))  # and of a pass without the cache, whose first one ran 2.3 s at 2 tokens on a busy machine
    full[longest].append(full_ms(lengths[longest], base))  # base now holds ids[:longest]
    shortest_first = sorted(range(len(lengths)), key=lengths.__getitem__)
    for run in range(repeats):
        for i in shortest_first:
            if run and time.perf_counter() + (cached[i][0] + full[i][0]) / 1000 > deadline:
                continue
            cached[i].append(cached_ms(lengths[i]))
            if len(full[i]) <= run:  # the longest length's first one was taken above
                full[i].append(full_ms(lengths[i]))
    c, f = [spread(r) for r in cached], [spread(r) for r in full]
    return CacheTiming(list(lengths), [x.median for x in c], [x.median for x in f], [(x.low, x.high) for x in c],
                       [(x.low, x.high) for x in f], [min(x.runs, y.runs) for x, y in zip(c, f)])
