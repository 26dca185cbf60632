"""A whole text's passes through the model's scheduler: a prefill in chunks, and the attention it gives back.

A long prefill goes PREFILL_CHUNK tokens per pass on the growing cache, each pass a turn at the scheduler
(scheduler.py), so a class's decode steps go between the chunks; a text of at most one chunk is one pass, exactly as
before. The scheduler is held only for a pass: what a caller makes of a pass's output runs between turns.
"""
from __future__ import annotations

import contextlib
import time
from dataclasses import dataclass

import numpy as np
import torch
from transformers import DynamicCache

from model.decoding.scheduler import model_pass

PREFILL_CHUNK = 128  # tokens per pass of a long prefill: ~0.15 s here (Gemma 3 270M, 2 threads), about a batch-16 step


@dataclass
class Prefilled:
    """A text run through the model into a cache, in chunks."""

    cache: DynamicCache | None  # the text's keys and values (None: asked for none, and the text was one pass)
    logits: torch.Tensor  # (keep, V): the scores after each of the last `keep` positions
    attentions: list[torch.Tensor] | None  # per layer (1, heads, n, n): every position's row, the future zero
    hidden: list[torch.Tensor] | None  # per hidden state (embeddings, each layer) (n - hidden_from, d)
    ms: float  # the passes' wall time, waiting for a turn not counted
    passes: int  # chunks run


def _full_rows(a: torch.Tensor, end: int, n: int) -> torch.Tensor:
    """A chunk's attention (1, heads, c, k) as rows over all n key positions: a sliding-window layer's k keys are
    the last k before `end` (zeros before them, outside its window), and the keys after `end` are the future."""
    k = a.shape[-1]
    return torch.nn.functional.pad(a, (end - k, n - end))


def chunk_passes(model: torch.nn.Module, ids: list[int], cache: DynamicCache, start: int = 0,
                 chunk: int = PREFILL_CHUNK, options=lambda begin, end: {}, inside=contextlib.nullcontext):
    """ids[start:] through `model` on `cache` (which holds ids[:start]), `chunk` tokens per pass, each pass a turn at
    the model's scheduler: yields (begin, end, out, ms) after each pass, between turns (what the caller makes of `out`
    runs between turns). options(begin, end): the pass's other arguments (logits_to_keep, output_attentions, ...).
    inside(): a context entered for each pass while the turn is held (an experiment's hooks on the model: only
    this run's passes see them, model/experiments/ablation.py)."""
    for begin in range(start, len(ids), chunk):
        end = min(begin + chunk, len(ids))
        with model_pass(model), inside():
            t0 = time.perf_counter()
            out = model(input_ids=torch.tensor([ids[begin:end]]), past_key_values=cache, use_cache=cache is not None,
                        **options(begin, end))
            ms = (time.perf_counter() - t0) * 1000
        yield begin, end, out, ms


@torch.no_grad()
def prefill(model: torch.nn.Module, ids: list[int], keep: int = 1, attentions: bool = False,
            hidden_from: int | None = None, chunk: int = PREFILL_CHUNK, cache: bool = True,
            inside=contextlib.nullcontext) -> Prefilled:
    """`ids` through `model` into a new cache, `chunk` tokens per pass, each pass a turn at the model's scheduler.

    keep: the last positions whose logits are returned (the LM head over every position of a long text is slow,
    and 530 MB at 512 tokens for Gemma's 262k vocabulary). attentions: every layer's causal attention, as one
    pass gives it. hidden_from: every hidden state (output_hidden_states) of the positions from there on.
    A text of at most `chunk` tokens is one pass, exactly as before; a longer one gives the same numbers to
    float rounding (the same keys and values, attended in pieces), as an engine's chunked prefill does.
    cache=False: no cache is kept where none is needed (a text of one pass, as training runs it).
    inside(): entered for each pass while its turn is held (chunk_passes).
    """
    n = len(ids)
    kv = DynamicCache(config=model.config) if cache or n > chunk else None
    logits, rows, hidden = [], None, None
    ms, passes = 0.0, 0

    def options(begin, end):
        return dict(logits_to_keep=max(_wanted(begin, end, n, keep), 1), output_attentions=attentions,
                    output_hidden_states=hidden_from is not None and end > hidden_from)

    for begin, end, out, pass_ms in chunk_passes(model, ids, kv, 0, chunk, options, inside):
        ms += pass_ms
        passes += 1
        want_logits = _wanted(begin, end, n, keep)
        if want_logits > 0:
            logits.append(out.logits[0, -want_logits:])
        if attentions:
            chunk_rows = [_full_rows(a, end, n) for a in out.attentions]  # per layer (1, heads, c, n)
            rows = chunk_rows if rows is None else [torch.cat([r, c], 2) for r, c in zip(rows, chunk_rows)]
        if hidden_from is not None and end > hidden_from:
            first = max(hidden_from - begin, 0)
            states = [h[0, first:] for h in out.hidden_states]
            hidden = states if hidden is None else [torch.cat([h, s], 0) for h, s in zip(hidden, states)]
    return Prefilled(kv, torch.cat(logits, 0), rows, hidden, ms, passes)


def _wanted(begin: int, end: int, n: int, keep: int) -> int:
    """Positions of the chunk [begin, end) among the last `keep` of n (0 or fewer: none)."""
    return end - max(begin, n - keep)


def attention_rows(attentions, begin: int, end: int):
    """The attention rows of the positions of a pass over the chunk [begin, end) (out.attentions: per layer
    (1, heads, c, k)), each as a one-token pass gives it: yields (layers, heads, p + 1) float16 for p from begin
    to end - 1 (see _full_rows: a sliding window's keys placed, the future cut)."""
    full = torch.stack([_full_rows(a, end, end)[0] for a in attentions]).to(torch.float16)  # (layers, heads, c, end)
    for j in range(end - begin):
        yield full[:, :, j, : begin + j + 1].numpy().copy()  # its own array: a record must not hold the chunk's


def attention_matrix(rows: list[torch.Tensor]) -> np.ndarray:
    """Prefilled.attentions as one array (layers, heads, n, n) float16, as the records keep it."""
    return torch.cat(rows, 0).to(torch.float16).numpy()
