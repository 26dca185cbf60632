"""The one door to a model: every forward pass goes through it, decode steps first, long passes in chunks.

A class shares one model. A decode step (one token for each waiting session, batched: batcher.py) is short; a
whole-text run (a prefill, the logit lens, a beam search, self-consistency, a measurement) is many passes or one
long one. Holding the model for a whole run would stall every other student's Next token for as long as it
lasts. vLLM's scheduler (vllm/v1/core/sched/scheduler.py) answers with two rules, and so does this door:

- decode steps go first: a run waits, pass by pass, while steps wait (and takes a turn after STEPS_BEFORE_TURN
  decode passes all the same, so a busy class never starves it);
- a long prefill is chunked: prefill() runs PREFILL_CHUNK tokens per pass on the growing cache, and gives the
  door back between chunks, so a waiting step goes between them.

The door is held only for a pass: softmaxes over the vocabulary, records and figures run outside it. One door per
torch module (door_of), so every caller of one model, batched or alone, meets at the same door.
"""
from __future__ import annotations

import contextlib
import os
import threading
import time
import weakref
from collections import deque
from dataclasses import dataclass

import numpy as np
import torch
from transformers import DynamicCache

PREFILL_CHUNK = 128  # tokens per pass of a long prefill: ~0.15 s here (Gemma 3 270M, 2 threads), about a batch-16 step
STEPS_BEFORE_TURN = 2  # decode passes that may go before a waiting run's turn, however many steps keep coming
POLL_S = 0.05  # a waiting run looks again at least this often (a step taken back leaves no one to wake it)


class ModelDoor:
    """Who runs the model next: the batcher's decode steps first, then whole-text runs one pass each, in turn.

    step(): the batcher's worker, for one batched decode pass; waits only for the pass under way.
    turn(): one pass of a whole-text run; waits while the door is held or decode steps wait (queued in a batcher
    of this model or at the door), unless STEPS_BEFORE_TURN decode passes already went since the last turn. Runs
    take turns first come, first served, so two users' runs interleave pass by pass.
    """

    def __init__(self):
        self._cond = threading.Condition()
        self._held = False
        self._steps_waiting = 0  # decode passes at the door
        self._turns: deque[object] = deque()  # runs' passes waiting, in order of arrival
        self._steps_since_turn = 0  # decode passes since the last turn ended
        self._batchers: weakref.WeakSet = weakref.WeakSet()  # whose queued steps count as waiting
        self.steps = 0  # decode passes through the door, ever
        self.turns = 0  # runs' passes through the door, ever

    def serve(self, batcher) -> None:
        """Count `batcher`'s queued steps (batcher.has_pending()) as steps waiting at this door."""
        self._batchers.add(batcher)

    def _steps_want(self) -> bool:
        return self._steps_waiting > 0 or any(b.has_pending() for b in list(self._batchers))

    def held(self) -> bool:
        """True while a pass holds the door (a test's look: it may change the moment it is read)."""
        return self._held

    @contextlib.contextmanager
    def step(self):
        """Hold the model for one decode pass: next after the pass under way."""
        with self._cond:
            self._steps_waiting += 1
            try:
                while self._held:
                    self._cond.wait()
            finally:
                self._steps_waiting -= 1
            self._held = True
        try:
            yield
        finally:
            self._leave(turn=False)

    @contextlib.contextmanager
    def turn(self):
        """Hold the model for one pass of a whole-text run, once waiting decode steps have gone."""
        ticket = object()
        with self._cond:
            self._turns.append(ticket)
            try:
                while not (not self._held and self._turns[0] is ticket
                           and (not self._steps_want() or self._steps_since_turn >= STEPS_BEFORE_TURN)):
                    self._cond.wait(POLL_S)
            finally:
                self._turns.remove(ticket)
            self._held = True
        try:
            yield
        finally:
            self._leave(turn=True)

    def _leave(self, turn: bool) -> None:
        """The pass ended (or failed): the door is free, and whoever may go next is woken."""
        with self._cond:
            self._held = False
            if turn:
                self.turns += 1
                self._steps_since_turn = 0
            else:
                self.steps += 1
                self._steps_since_turn += 1
            self._cond.notify_all()


_DOORS: "weakref.WeakKeyDictionary[torch.nn.Module, ModelDoor]" = weakref.WeakKeyDictionary()
_DOORS_LOCK = threading.Lock()


def door_of(model: torch.nn.Module) -> ModelDoor:
    """The door of a model: one per torch module, made on first use."""
    with _DOORS_LOCK:
        door = _DOORS.get(model)
        if door is None:
            door = _DOORS[model] = ModelDoor()
        return door


@contextlib.contextmanager
def all_cores():
    """Every core for a pass over many tokens, a prefill (338 tokens: 0.9 s on 2 threads, 1.6 s on 1).

    torch's thread count is set per thread (OpenMP): this thread's own count comes back after the pass.
    """
    before = torch.get_num_threads()
    torch.set_num_threads(os.cpu_count() or 1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@contextlib.contextmanager
def one_core():
    """One thread for a run's work between its passes (softmaxes, records): the other core stays with the class's
    decode passes and the web server. Its turns still take every core (pass())."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@contextlib.contextmanager
def model_pass(model: torch.nn.Module, cores: bool = True):
    """One pass of a whole-text run on `model`: its door's turn (decode steps first), every core unless `cores` is
    False (a one-token pass, which a second thread only slows)."""
    with door_of(model).turn(), (all_cores() if cores else contextlib.nullcontext()), torch.no_grad():
        yield


@dataclass
class Prefilled:
    """A text run through the model into a cache, in chunks."""

    cache: DynamicCache | None  # the text's keys and values (None: asked for none, and the text was one pass)
    logits: torch.Tensor  # (keep, V): the scores after each of the last `keep` positions
    attentions: list[torch.Tensor] | None  # per layer (1, heads, n, n): every position's row, the future zero
    hidden: list[torch.Tensor] | None  # per hidden state (embeddings, each layer) (n - hidden_from, d)
    ms: float  # the passes' wall time, waiting at the door not counted
    passes: int  # chunks run


def _full_rows(a: torch.Tensor, end: int, n: int) -> torch.Tensor:
    """A chunk's attention (1, heads, c, k) as rows over all n key positions: a sliding-window layer's k keys are
    the last k before `end` (zeros before them, outside its window), and the keys after `end` are the future."""
    k = a.shape[-1]
    return torch.nn.functional.pad(a, (end - k, n - end))


def chunk_passes(model: torch.nn.Module, ids: list[int], cache: DynamicCache, start: int = 0,
                 chunk: int = PREFILL_CHUNK, options=lambda begin, end: {}, inside=contextlib.nullcontext):
    """ids[start:] through `model` on `cache` (which holds ids[:start]), `chunk` tokens per pass, each pass a turn at
    the model's door: yields (begin, end, out, ms) after each pass, outside the door (what the caller makes of `out`
    runs between turns). options(begin, end): the pass's other arguments (logits_to_keep, output_attentions, ...).
    inside(): a context entered for each pass while the door is held (an experiment's hooks on the model: only
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
    """`ids` through `model` into a new cache, `chunk` tokens per pass, each pass a turn at the model's door.

    keep: the last positions whose logits are returned (the LM head over every position of a long text is slow,
    and 530 MB at 512 tokens for Gemma's 262k vocabulary). attentions: every layer's causal attention, as one
    pass gives it. hidden_from: every hidden state (output_hidden_states) of the positions from there on.
    A text of at most `chunk` tokens is one pass, exactly as before; a longer one gives the same numbers to
    float rounding (the same keys and values, attended in pieces), as an engine's chunked prefill does.
    cache=False: no cache is kept where none is needed (a text of one pass, as training runs it).
    inside(): entered for each pass while the door is held (chunk_passes).
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
