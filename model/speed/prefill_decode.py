"""Prefill against decode, measured on the loaded model and this machine in one sitting.

Two kinds of work (docs/what-it-teaches.md: Prefill against decode):
- a prefill runs the whole prompt through the model in one pass: many tokens per weight read, so its arithmetic
  intensity (FLOPs per byte read from memory) grows with the prompt, and a long one is bound by the FLOP rate;
- a decode step makes one token per sequence: every weight is read for one token of each sequence in the batch, so
  at a small batch it is bound by memory bandwidth, and a batch raises its tokens per second almost for free.

Measured here, every pass a turn at the model's scheduler (the class's steps go between them): this machine's FLOP rate
(a large float32 matmul) and memory bandwidth (a large copy); a prefill pass at PREFILL_LENGTHS tokens; the app's own
batched decode pass (model/decoding/batching.py forward_batch) at DECODE_BATCHES sequences of CONTEXT_TOKENS tokens;
and a long prefill in the scheduler's chunks (PREFILL_CHUNK tokens each). FLOPs and bytes of each pass are counted from
the model's shapes (not read from hardware counters): the multiply-adds of its linear layers and attention as eager
attention computes them, and the bytes that must come from memory at least (every weight once, the KV cache read and
written). What a long prefill does to a class's decode steps is then laid out from the measured passes by the scheduler's
rule (unchunked: one pass; chunked: a chunk after every STEPS_BEFORE_TURN decode passes) and, labelled a model, split
off to a second machine like this one with an assumed link for its KV cache (PD disaggregation).
"""
from __future__ import annotations

import copy
import os
import statistics
import threading
import time
from dataclasses import dataclass, field

import torch
from transformers import DynamicCache

from model.decoding.batching import forward_batch, forward_one
from model.decoding.core import computation
from model.decoding.passes import PREFILL_CHUNK, chunk_passes
from model.decoding.scheduler import STEPS_BEFORE_TURN, model_pass, scheduler_of
from model.decoding.threads import all_cores
from model.decoding.loading import LoadedModel
from model.speed.throughput import measurement_ids, weight_bytes

PREFILL_LENGTHS = (16, 32, 64, 128, 256, 512)
DECODE_BATCHES = (1, 2, 4, 8, 16, 32)
CONTEXT_TOKENS = 64  # tokens each decoding sequence holds before its step
REPEATS = 3  # timed passes of each kind after an untimed warm-up; the median is kept
CLASS_BATCH = 8  # the class in the timelines: this many sessions decoding together
LONG_PREFILL = 512  # the long prompt that arrives while the class decodes
MATMUL_N = 1024  # the FLOP rate's matmul: (N x N) @ (N x N) float32, 2 N^3 FLOPs
COPY_BYTES = 128 << 20  # the bandwidth's copy: this many bytes read and as many written, far past any cache
LINK_BYTES_PER_S = 12.5e9  # PD model only, an assumption: a 100 Gb/s network between the two machines
FLOAT = 4  # bytes per value: the app's models are float32


@dataclass(frozen=True)
class Peak:
    """This machine's measured ceilings, on `threads` threads (the best of the repeats: a ceiling, not a median)."""

    flops_per_s: float  # float32 FLOPs per second of a MATMUL_N matmul
    bytes_per_s: float  # bytes per second moved by a COPY_BYTES copy (read + written)
    threads: int

    @property
    def balance(self) -> float:
        """FLOPs per byte at which a pass stops being bound by memory and starts being bound by the FLOP rate."""
        return self.flops_per_s / self.bytes_per_s


@dataclass(frozen=True)
class PassTime:
    """One kind of pass, timed: a prefill of `size` tokens, or a decode step for a batch of `size` sequences."""

    kind: str  # "prefill" or "decode"
    size: int  # prompt tokens (prefill) or sequences (decode)
    tokens: int  # tokens it processes: the prompt (prefill), one per sequence (decode)
    ms: float  # median wall time of one pass
    runs: tuple[float, ...]  # every timed run's ms
    flops: float  # counted from the model's shapes
    bytes: float  # at least this many bytes from memory: every weight once, the KV cache read and written

    @property
    def tokens_per_s(self) -> float:
        return 1000.0 * self.tokens / self.ms

    @property
    def ms_per_token(self) -> float:
        return self.ms / self.tokens

    @property
    def intensity(self) -> float:
        """FLOPs per byte."""
        return self.flops / self.bytes

    @property
    def flops_per_s(self) -> float:
        return self.flops / (self.ms / 1000.0)

    @property
    def bytes_per_s(self) -> float:
        return self.bytes / (self.ms / 1000.0)

    def bound(self, peak: Peak) -> str:
        """"memory" when its intensity is below the machine's balance (its time is set by the bytes it reads),
        else "compute"."""
        return "memory" if self.intensity < peak.balance else "compute"


@dataclass(frozen=True)
class Segment:
    """One pass on a timeline: from `start` to `end` ms, on `machine` (0: the class's; 1: the PD model's other)."""

    kind: str  # "decode", "prefill", "chunk" or "transfer"
    start: float
    end: float
    machine: int = 0


@dataclass(frozen=True)
class Timeline:
    """What a long prefill arriving at 0 ms does to a class of CLASS_BATCH decoding sessions, by one way to run it."""

    name: str  # "unchunked", "chunked" or "split" (the PD model)
    segments: tuple[Segment, ...]
    gaps: tuple[float, ...]  # ms between the class's successive tokens (the ends of its decode passes), from 0
    first_token_ms: float  # when the long prompt's first token is out: its prefill done (and, split, its cache sent)

    @property
    def worst_gap(self) -> float:
        return max(self.gaps)


@dataclass
class PrefillDecode:
    """The whole measurement of one model on this machine, in one sitting."""

    model: str
    peak: Peak
    prefill: list[PassTime]  # by length, ascending
    decode: list[PassTime]  # by batch, ascending
    chunk_ms: list[float]  # each chunk's pass of a LONG_PREFILL-token prefill in the scheduler's chunks (median per chunk)
    timelines: list[Timeline]  # unchunked, chunked, split
    parameters: int
    weight_bytes: int
    kv_bytes_per_token: int  # the KV cache of one token, every layer, float32
    context_tokens: int
    class_batch: int
    long_prefill: int
    chunk: int
    link_bytes_per_s: float  # the PD model's assumed link
    threads: int
    at: float  # time.time() when it was measured
    ms: float  # wall time of the whole measurement, waits at the scheduler included
    passes: int = 0  # turns at the model's scheduler
    notes: dict = field(default_factory=dict)

    def pass_of(self, kind: str, size: int) -> PassTime:
        return next(p for p in (self.prefill if kind == "prefill" else self.decode) if p.size == size)


# ---- counting ------------------------------------------------------------------------------------------------
def linear_parameters(model) -> int:
    """Parameters of the decoder layers' linear maps: each is one multiply-add per token that passes through it."""
    return sum(m.weight.numel() for m in model.model.layers.modules() if isinstance(m, torch.nn.Linear))


def kv_bytes_per_token(config) -> int:
    """2 (keys and values) x layers x KV heads x head size x FLOAT."""
    config = getattr(config, "text_config", config)
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads
    return 2 * config.num_hidden_layers * config.num_key_value_heads * head_dim * FLOAT


def pass_cost(model, tokens: int, keys: int, sequences: int, logits: int, cached: int) -> tuple[float, float]:
    """(FLOPs, bytes) of one pass: `tokens` new tokens in all, each attending to `keys` keys, in `sequences`
    sequences whose caches held `cached` tokens each before it, with the LM head on `logits` positions.

    FLOPs: 2 per multiply-add of the linear layers, the attention's scores and weighted sum (4 x heads x head size
    per key, every layer: eager attention computes the masked half of a prefill too) and the LM head. Bytes: every
    weight once (the tied embedding as the LM head's matrix), the caches read and the new keys and values written.
    """
    config = getattr(model.config, "text_config", model.config)
    heads, layers = config.num_attention_heads, config.num_hidden_layers
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    vocab, hidden = config.vocab_size, config.hidden_size
    flops = 2.0 * linear_parameters(model) * tokens + 4.0 * layers * heads * head_dim * keys * tokens \
        + 2.0 * vocab * hidden * logits
    _, weights = weight_bytes(model)
    kv = kv_bytes_per_token(model.config)
    return flops, float(weights + kv * (sequences * cached + tokens))


# ---- measuring -----------------------------------------------------------------------------------------------
def measure_peak(model, repeats: int = REPEATS) -> Peak:
    """The FLOP rate of a float32 matmul and the bandwidth of a large copy, each run a turn at the model's scheduler on
    every core (nothing of the class's runs meanwhile; they are the machine's, not the model's, ceilings)."""
    scheduler = scheduler_of(model)
    a, b = torch.randn(MATMUL_N, MATMUL_N), torch.randn(MATMUL_N, MATMUL_N)
    src = torch.ones(COPY_BYTES // FLOAT)
    dst = torch.empty_like(src)
    matmul, copies = [], []
    for i in range(repeats + 1):
        with scheduler.turn(), all_cores():
            t0 = time.perf_counter()
            torch.mm(a, b)
            t1 = time.perf_counter()
            dst.copy_(src)
            t2 = time.perf_counter()
        if i:  # the first: a warm-up (pages touched, the BLAS's threads up)
            matmul.append(t1 - t0)
            copies.append(t2 - t1)
    return Peak(2.0 * MATMUL_N ** 3 / min(matmul), 2.0 * COPY_BYTES / min(copies), os.cpu_count() or 1)


def _timed(model, run, repeats: int) -> list[float]:
    """run() as one pass, a turn at the scheduler on every core, repeats + 1 times; the ms of all but the first."""
    runs = []
    for i in range(repeats + 1):
        with model_pass(model):
            t0 = time.perf_counter()
            run()
            ms = (time.perf_counter() - t0) * 1000
        if i:
            runs.append(ms)
    return runs


def measure_prefill(model, ids: list[int], length: int, repeats: int = REPEATS) -> PassTime:
    """A prefill of ids[:length] in one pass into a new cache, as the scheduler's prefill runs one (the last position's
    logits only)."""
    def run():
        model(input_ids=torch.tensor([ids[:length]]), past_key_values=DynamicCache(config=model.config),
              use_cache=True, logits_to_keep=1)
    runs = _timed(model, run, repeats)
    flops, bytes_ = pass_cost(model, length, length, 1, 1, 0)
    return PassTime("prefill", length, length, statistics.median(runs), tuple(runs), flops, bytes_)


def measure_decode(model, base: DynamicCache, token: int, batch: int, repeats: int = REPEATS) -> PassTime:
    """The app's own decode pass (forward_one at batch 1, forward_batch above) for `batch` copies of `base`."""
    context = base.get_seq_length()
    runs = []
    for i in range(repeats + 1):
        caches = [copy.deepcopy(base) for _ in range(batch)]  # outside the scheduler: not the model's time
        with model_pass(model):
            t0 = time.perf_counter()
            if batch == 1:
                forward_one(model, caches[0], token)
            else:
                forward_batch(model, caches, [token] * batch)
            ms = (time.perf_counter() - t0) * 1000
        del caches
        if i:
            runs.append(ms)
    flops, bytes_ = pass_cost(model, batch, context + 1, batch, batch, context)
    return PassTime("decode", batch, batch, statistics.median(runs), tuple(runs), flops, bytes_)


def measure_chunks(model, ids: list[int], repeats: int = REPEATS) -> list[float]:
    """Each chunk's pass of a prefill of `ids` in the scheduler's chunks (PREFILL_CHUNK tokens on the growing cache), the
    median over the repeats per chunk (after an untimed warm-up)."""
    runs = []
    for _ in range(repeats + 1):
        cache = DynamicCache(config=model.config)
        runs.append([ms for _, _, _, ms in chunk_passes(model, ids, cache, options=lambda b, e: {"logits_to_keep": 1})])
    return [statistics.median(run[c] for run in runs[1:]) for c in range(len(runs[0]))]


# ---- the timelines -----------------------------------------------------------------------------------------------
def long_text(ids: list[int], n: int) -> list[int]:
    """`ids` repeated until it is n tokens long."""
    return (list(ids) * (n // len(ids) + 1))[:n]


def timelines(decode_ms: float, prefill_ms: float, chunk_ms: list[float], transfer_ms: float,
              steps_before_turn: int = STEPS_BEFORE_TURN, after: int = 3) -> list[Timeline]:
    """A long prefill arriving at 0 ms, as a decode pass of the class (decode_ms) starts, laid out three ways from
    measured passes: unchunked (one pass of prefill_ms after the decode pass under way), chunked (the scheduler's rule:
    a chunk once `steps_before_turn` decode passes went since the last, the first right after the pass under way),
    and split off (the PD model: the class's machine only decodes; the prefill runs on a second machine like this one
    and its KV cache crosses the link in transfer_ms). `after` decode passes follow the prefill in each."""
    def layout(name, order, first_token):
        segments, t, ends = [], 0.0, []
        for kind, ms in order:
            segments.append(Segment(kind, t, t + ms))
            t += ms
            if kind == "decode":
                ends.append(t)
        gaps = tuple(b - a for a, b in zip([0.0, *ends], ends))
        done = first_token(segments)
        return Timeline(name, tuple(segments), gaps, done)

    unchunked = [("decode", decode_ms), ("prefill", prefill_ms)] + [("decode", decode_ms)] * after
    chunked = [("decode", decode_ms)]
    for i, ms in enumerate(chunk_ms):
        chunked.append(("chunk", ms))
        chunked += [("decode", decode_ms)] * (steps_before_turn if i < len(chunk_ms) - 1 else after)
    last_prefill = lambda segments: max(s.end for s in segments if s.kind in ("prefill", "chunk"))  # noqa: E731
    out = [layout("unchunked", unchunked, last_prefill), layout("chunked", chunked, last_prefill)]
    # split: the class's machine decodes on; the other machine prefills, then sends the cache
    n = int((prefill_ms + transfer_ms) // decode_ms) + 1 + after
    split = layout("split", [("decode", decode_ms)] * n, lambda segments: prefill_ms + transfer_ms)
    other = (Segment("prefill", 0.0, prefill_ms, 1), Segment("transfer", prefill_ms, prefill_ms + transfer_ms, 1))
    out.append(Timeline("split", split.segments + other, split.gaps, prefill_ms + transfer_ms))
    return out


@computation
@torch.no_grad()
def compute(lm: LoadedModel, ids: list[int] | None = None, lengths=PREFILL_LENGTHS, batches=DECODE_BATCHES,
            repeats: int = REPEATS, context_tokens: int = CONTEXT_TOKENS, class_batch: int = CLASS_BATCH,
            long_prefill: int = LONG_PREFILL) -> PrefillDecode:
    """Everything, on this machine now: the ceilings, a prefill at each length, a decode pass at each batch, the long
    prefill in chunks, and the three timelines. The passes run on `ids` (the user's text) repeated to the longest
    length: a pass's time depends on how many tokens it carries, not on which (None or empty: the app's own text).
    The record keeps no token of it."""
    t0 = time.perf_counter()
    model = lm.model
    text = long_text(ids, max(max(lengths), long_prefill, context_tokens + 1)) if ids else \
        measurement_ids(lm, max(max(lengths), long_prefill, context_tokens + 1))
    peak = measure_peak(model, repeats)
    prefill = [measure_prefill(model, text, n, repeats) for n in lengths]
    base = DynamicCache(config=model.config)
    with model_pass(model):
        model(input_ids=torch.tensor([text[:context_tokens]]), past_key_values=base, use_cache=True, logits_to_keep=1)
    decode = [measure_decode(model, base, text[context_tokens], b, repeats) for b in batches]
    chunks = measure_chunks(model, text[:long_prefill], repeats)
    long_pass = next((p for p in prefill if p.size == long_prefill), None) or measure_prefill(model, text, long_prefill,
                                                                                              repeats)
    class_pass = next((p for p in decode if p.size == class_batch), None) or measure_decode(
        model, base, text[context_tokens], class_batch, repeats)
    kv = kv_bytes_per_token(model.config)
    transfer_ms = 1000.0 * kv * long_prefill / LINK_BYTES_PER_S
    params, size = weight_bytes(model)
    return PrefillDecode(
        lm.name, peak, prefill, decode, chunks, timelines(class_pass.ms, long_pass.ms, chunks, transfer_ms),
        params, size, kv, context_tokens, class_batch, long_prefill, PREFILL_CHUNK, LINK_BYTES_PER_S,
        os.cpu_count() or 1, time.time(), (time.perf_counter() - t0) * 1000,
        (repeats + 1) * (1 + len(prefill) + len(decode) + len(chunks)) + 1)


KEEP_S = 300.0  # a model's measurement is shown again for this long: a class pressing Measure gets one sitting's


class Kept:
    """The last measurement of each model (any record with `at`, its time.time()), kept for KEEP_S: everyone asking
    meanwhile gets the same figures (one sitting, not one per student), and those asking while it runs wait for it
    instead of measuring again."""

    def __init__(self, keep_s: float = KEEP_S, clock=time.time):
        self.keep_s = keep_s
        self.clock = clock
        self._lock = threading.Lock()  # held while measuring: a second asker waits for the first one's figures
        self._kept: dict[str, object] = {}

    def get(self, name: str, measure) -> tuple[object, bool]:
        """(the measurement of model `name`, True if measured now by calling measure())."""
        with self._lock:
            kept = self._kept.get(name)
            if kept is not None and self.clock() - kept.at < self.keep_s:
                return kept, False
            record = measure()
            self._kept[name] = record
            return record, True
