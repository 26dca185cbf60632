"""Measured on the loaded model: one decode pass at batch 1, 2, 4, ... (the server's own batched pass), the bytes
of weights a pass reads against its time (effective memory bandwidth), and prefill against decode tokens/s.

A decode step reads every weight once for the whole batch, so its time hardly grows with the batch while the
tokens it makes do (docs/what-it-teaches.md: What it saves, Batching). Each pass is a turn at the model's scheduler, never
the whole measurement: the class's steps run between the passes.
"""
from __future__ import annotations

import contextlib
import copy
import statistics
import time
from dataclasses import dataclass

import torch
from transformers import DynamicCache

from model.decoding.batching import forward_batch, forward_one

from model.decoding.scheduler import DECODE_THREADS
from model.decoding.passes import prefill
from model.decoding.scheduler import model_pass
from model.decoding.loading import LoadedModel
from model.speed.speculative import SPEED_TEXTS
from model.decoding.timing import separated, spread
from model.decoding.core import computation

BATCH_SIZES = (1, 2, 4, 8, 16)
REPEATS = 3  # passes per batch size; the median is kept (the machine is shared)
CONTEXT_TOKENS = 64  # every sequence of a measured batch holds this many tokens already
PREFILL_TOKENS = 256  # the long prompt of the prefill measurement


@dataclass
class BatchPass:
    """One batch size: the median wall time of a decode pass that makes one token for each of `batch` sequences."""

    batch: int
    ms: float  # one pass, median of the repeats
    runs: list[float]  # every repeat's ms

    @property
    def ms_per_token(self) -> float:
        return self.ms / self.batch

    @property
    def tokens_per_s(self) -> float:
        return 1000.0 * self.batch / self.ms


@dataclass
class Throughput:
    """The whole measurement. Bytes of weights: every parameter once (tied embeddings once), x bytes per value."""

    passes: list[BatchPass]  # by batch size, ascending
    context_tokens: int  # tokens each measured sequence held before its pass
    parameters: int  # parameters of the model
    weight_bytes: int  # what one decode pass reads from memory at least: parameters x bytes per value
    prefill_tokens: int  # tokens of the long prompt
    prefill_ms: float  # one pass over them (median of the repeats)
    threads: int  # torch threads of every pass here (the decode worker's count)

    @property
    def decode_ms(self) -> float:
        """One decode pass at batch 1."""
        return self.passes[0].ms

    @property
    def bandwidth_bytes_per_s(self) -> float:
        """Weights read per second by a batch-1 decode pass: a lower bound on the memory bandwidth it used."""
        return self.weight_bytes / (self.decode_ms / 1000.0)

    @property
    def decode_tokens_per_s(self) -> float:
        return 1000.0 / self.decode_ms

    @property
    def prefill_tokens_per_s(self) -> float:
        return 1000.0 * self.prefill_tokens / self.prefill_ms

    @property
    def conclusive(self) -> bool:
        """The lesson holds in every run (model.decoding.timing's rule): the largest batch's time per token, in each of its
        runs, below batch 1's in each of its runs, and no larger batch's pass faster than batch 1's (a pass that
        does more work cannot take less time: seen only when the machine was busy). False: too noisy to conclude."""
        one, big = self.passes[0], self.passes[-1]
        per_token = spread([r / big.batch for r in big.runs])
        return separated(per_token, spread(one.runs)) and all(p.ms >= one.ms for p in self.passes[1:])


def weight_bytes(model) -> tuple[int, int]:
    """(parameters, bytes) of a model, each distinct tensor once (a tied embedding is one matrix)."""
    seen, params, size = set(), 0, 0
    for p in model.parameters():
        if p.data_ptr() in seen:
            continue
        seen.add(p.data_ptr())
        params += p.numel()
        size += p.numel() * p.element_size()
    return params, size


def measurement_ids(lm: LoadedModel, n: int) -> list[int]:
    """n token ids of this app's own texts (never a user's), repeated as needed."""
    ids: list[int] = []
    text = SPEED_TEXTS["prose"] + " " + SPEED_TEXTS["repeating"]
    piece = lm.tokenizer(text, add_special_tokens=False)["input_ids"]
    while len(ids) < n:
        ids += piece
    return ids[:n]


@contextlib.contextmanager
def _threads(n: int):
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@computation
@torch.no_grad()
def measure_throughput(lm: LoadedModel, sizes=BATCH_SIZES, repeats: int = REPEATS,
                       context_tokens: int = CONTEXT_TOKENS, prefill_tokens: int = PREFILL_TOKENS,
                       threads: int = DECODE_THREADS, on_pass=None) -> Throughput:
    """Time the server's decode pass at each batch size, and one prefill pass, on this machine now.

    Each pass runs as the batcher runs one (forward_one at batch 1, forward_batch above), on copies of one
    cache of `context_tokens` tokens, each pass a turn at the model's scheduler. on_pass(), if given, is called
    after every pass (a test uses it to see that others' steps run in between).
    """
    model = lm.model
    ids = measurement_ids(lm, max(context_tokens + 1, prefill_tokens))
    passes = []
    with _threads(threads):
        base = prefill(model, ids[:context_tokens]).cache
        for batch in sizes:
            runs = []
            for _ in range(repeats + 1):  # the first is an untimed warm-up of this batch's shapes
                caches = [copy.deepcopy(base) for _ in range(batch)]  # between its turns: not the model's time
                tokens = [ids[context_tokens]] * batch
                with model_pass(model, cores=False):
                    t0 = time.perf_counter()
                    if batch == 1:
                        forward_one(model, caches[0], tokens[0])
                    else:
                        forward_batch(model, caches, tokens)
                    runs.append((time.perf_counter() - t0) * 1000)
                del caches
                if on_pass:
                    on_pass()
            runs = runs[1:]
            passes.append(BatchPass(batch, statistics.median(runs), runs))
        prefill_runs = []
        for _ in range(repeats):
            cache = DynamicCache(config=model.config)
            with model_pass(model, cores=False):  # the measured prefill: one pass, on the threads asked for
                t0 = time.perf_counter()
                model(input_ids=torch.tensor([ids[:prefill_tokens]]), past_key_values=cache, use_cache=True)
                prefill_runs.append((time.perf_counter() - t0) * 1000)
            if on_pass:
                on_pass()
    params, size = weight_bytes(model)
    return Throughput(passes, context_tokens, params, size, prefill_tokens, statistics.median(prefill_runs), threads)
