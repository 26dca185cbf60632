"""The model's core: its weights, every forward pass, and one scheduler that decides who runs next.

As vLLM V1 has one EngineCore behind its API server (vllm/v1/engine/core.py), this app has one ModelCore per local
model. It owns the weights, the scheduler (scheduler.py) and every session's KV cache (a Sequence, sequence.py, by
the session's key), and it runs every pass on the model: a session's steps and prefills, the pass computed ahead, and
every computation on a whole text (the lens, a search, an experiment, a measurement: compute()). The web side sends
it plain arguments and gets plain results back (numbers, numpy arrays, records, (V,) logits), so the same core runs
in the page's own process (one process, the default on 127.0.0.1) or in a process of its own (a class's server:
model/serving/core_process.py, which calls these same methods).

A step answers with everything the page needs, once: the logits, the attention row, the KV bytes, the pass's ms, and
the next position's Distribution under the page's settings (derived by the scheduler's batched sampler); and the core
starts the next pass ahead itself (`ahead`), so one click is one call.
"""
from __future__ import annotations

import importlib
import threading
import uuid
import weakref
from typing import Callable

import torch

from model.decoding.backend import AHEAD_DRAWN, SequenceLost, StepResult
from model.decoding.batch_sampling import SampleRow
from model.decoding.loading import LoadedModel
from model.decoding.records import Distribution, SamplingConfig
from model.decoding.sampling import derive
from model.decoding.scheduler import MAX_BATCH, Scheduler, scheduler_of
from model.decoding.threads import one_core
from model.decoding.sequence import Sequence
from model.errors import SessionError
from model.runtime import CPU, bench_stats


# ---- named computations -----------------------------------------------------------------------------------------
_COMPUTATIONS: dict[str, Callable] = {}


def computation(fn: Callable) -> Callable:
    """Mark fn(lm, *args) as a computation the model's core runs (ModelCore.compute), sent by name when the core runs
    in a process of its own: a module-level function of model/ whose passes go through the model's scheduler
    (model_pass, passes.prefill), with plain picklable arguments and a plain record back (never a tensor it holds
    on to, never a callback)."""
    _COMPUTATIONS[f"{fn.__module__}:{fn.__qualname__}"] = fn
    return fn


def computation_name(fn: Callable) -> str:
    """The name a computation is sent by; LookupError, saying how to fix it, for a function not marked."""
    name = f"{getattr(fn, '__module__', '?')}:{getattr(fn, '__qualname__', fn)}"
    if _COMPUTATIONS.get(name) is not fn:
        raise LookupError(f"{name} is not a computation the model's core runs: mark it @computation "
                          "(model/decoding/core.py), a module-level function with plain arguments")
    return name


def named_computation(name: str) -> Callable:
    """The computation sent as `name` (its module imported first, if it is one of model/'s)."""
    module = name.split(":", 1)[0]
    if name not in _COMPUTATIONS and module.startswith("model."):
        importlib.import_module(module)
    if name not in _COMPUTATIONS:
        raise LookupError(f"no computation {name!r}")
    return _COMPUTATIONS[name]


class ModelCore:
    """The model's core (see the module)."""

    generation = 0  # a core in this process never restarts (core_process.ProcessCore counts its starts)

    def __init__(self, lm: LoadedModel, max_batch: int = MAX_BATCH, gather_s: float = 0.0):
        self.lm = lm
        self.scheduler: Scheduler = scheduler_of(lm.model)
        self.scheduler.name = lm.name
        self.scheduler.max_batch, self.scheduler.gather_s = max_batch, gather_s
        self._sequences: dict[str, Sequence] = {}
        self._lock = threading.Lock()  # guards the dict only

    # ---- sequences -----------------------------------------------------------------------------------------------
    def open(self) -> str:
        """A new sequence (a session's text, empty until started): its key."""
        key = uuid.uuid4().hex
        with self._lock:
            self._sequences[key] = Sequence(self.lm, self.scheduler)
        return key

    def close(self, key: str) -> None:
        """The session is gone: its sequence's pass ahead settled and its cache freed."""
        with self._lock:
            sequence = self._sequences.pop(key, None)
        if sequence is not None:
            sequence.close()

    def close_many(self, keys: list[str]) -> None:
        for key in keys:
            self.close(key)

    def sequences(self) -> int:
        """How many sequences the core holds."""
        with self._lock:
            return len(self._sequences)

    def _sequence(self, key: str, create: bool = False) -> Sequence:
        with self._lock:
            sequence = self._sequences.get(key)
            if sequence is None:
                if not create:
                    raise SequenceLost(key)
                sequence = self._sequences[key] = Sequence(self.lm, self.scheduler)
            return sequence

    def start(self, key: str, ids: list[int], cfg: SamplingConfig | None = None, ahead=None) -> StepResult:
        """A new text, the prompt `ids` (see StepResult: its attention is the whole matrix)."""
        sequence = self._sequence(key, create=True)
        logits, attention, kv, ms = sequence.start(ids)
        return self._answer(sequence, ids, StepResult(logits, attention, kv, ms), cfg, ahead)

    def advance(self, key: str, ids: list[int], token: int, cfg: SamplingConfig | None = None,
                ahead=None) -> StepResult:
        """`token` after `ids`: its pass (or the one computed ahead for it), and the next position's Distribution
        under cfg, derived by the pass's batched sampler. ahead: AHEAD_DRAWN (the token that distribution draws),
        a token id (a replay's next recorded one) or None: the pass started ahead once this one is answered."""
        sequence = self._sequence(key)
        new = [*ids, token]
        passed = sequence.advance(ids, token, self._row(new, cfg))
        result = StepResult(passed.logits, passed.row, passed.kv, passed.ms, _matching(passed.dist, new, cfg))
        return self._answer(sequence, new, result, cfg, ahead)

    def back(self, key: str, ids: list[int], keep: int, cfg: SamplingConfig | None = None,
             ahead=None) -> StepResult:
        """Cut back to ids[:keep] (Sequence.back): the logits after them, and what advance() answers besides."""
        sequence = self._sequence(key)
        logits = sequence.back(ids, keep)
        return self._answer(sequence, ids[:keep], StepResult(logits, None, None, 0.0), cfg, ahead)

    def follow(self, key: str, ids: list[int], start: int) -> list[tuple]:
        """ids[start:] after the text the sequence holds, in chunks (Sequence.follow): one tuple per position."""
        return self._sequence(key).follow(ids, start)

    def resume(self, key: str, ids: list[int], keep: int = 1) -> torch.Tensor:
        """Hold `ids` from scratch (a branch chosen, a teacher's text taken, a restart): (keep, V) logits."""
        return self._sequence(key, create=True).resume(ids, keep)

    def adopt(self, key: str, other: str) -> None:
        """Sequence `key` takes over sequence `other`'s cache."""
        self._sequence(key, create=True).adopt(self._sequence(other))

    def prefetch(self, key: str, ids: list[int], token: int, cfg: SamplingConfig | None = None) -> bool:
        """Start the pass of `token` after `ids` ahead (Sequence.prefetch); with cfg, its next distribution too."""
        try:
            sequence = self._sequence(key)
        except SequenceLost:
            return False
        with CPU.part("prefetch"):
            return sequence.prefetch(ids, token, self._row([*ids, token], cfg))

    def ahead(self, key: str, timeout: float = 10.0):
        """The pass computed ahead, once done: (token, the ids it followed, logits (V,), the next Distribution or
        None), or None (none held, it failed, or still queued at the timeout)."""
        try:
            return self._sequence(key).ahead(timeout)
        except SequenceLost:
            return None

    def held(self, key: str) -> int | None:
        """The token whose pass is computed ahead for `key`, or None."""
        try:
            ahead = self._sequence(key).held()
        except SequenceLost:
            return None
        return ahead.token if ahead is not None else None

    def _row(self, ids: list[int], cfg: SamplingConfig | None) -> SampleRow | None:
        """What the batch's sampler needs to derive the position after `ids` (None: nothing to derive)."""
        return None if cfg is None else SampleRow(list(ids), cfg, len(ids), self.lm.tokens)

    def _answer(self, sequence: Sequence, ids: list[int], result: StepResult, cfg, ahead) -> StepResult:
        """The result with the next position's Distribution under cfg (derived here if the pass did not), and the
        pass ahead started."""
        if cfg is not None and result.next is None:
            try:
                with CPU.part("derive"):
                    result.next = derive(result.logits, torch.tensor([ids]), cfg, len(ids), self.lm.tokens)
            except SessionError:
                pass  # settings the session refuses, in its words, when it derives them itself
        token = result.next.chosen.id if ahead == AHEAD_DRAWN and result.next is not None else ahead
        if isinstance(token, int) and not isinstance(token, bool):
            sequence.prefetch(ids, token, self._row([*ids, token], cfg) if ahead == AHEAD_DRAWN else None)
        return result

    # ---- whole-text computations -----------------------------------------------------------------------------------
    def compute(self, fn, *args, **kwargs):
        """fn(lm, *args, **kwargs) on this core's model (fn marked @computation): its passes, each a turn at the
        scheduler, and one core for its work between them (the other stays with the class's decode steps)."""
        computation_name(fn)  # refused here as it would be in a process of its own
        with one_core():
            return fn(self.lm, *args, **kwargs)

    # ---- what it did -------------------------------------------------------------------------------------------------
    def recent_passes(self, seconds: float | None = None) -> list:
        """The scheduler's last decode passes (Scheduler.recent_passes), for the batching view."""
        return self.scheduler.recent_passes(seconds)

    def stats(self) -> dict:
        """This process's bench_stats() (its CPU, its parts, its batch sizes), for the classroom benchmark."""
        return bench_stats()


def _matching(dist: Distribution | None, ids: list[int], cfg: SamplingConfig | None) -> Distribution | None:
    """`dist` if it is the position after `ids` under cfg (a pass run ahead may have been asked other settings)."""
    return dist if dist is not None and cfg is not None and dist.position == len(ids) and dist.config == cfg else None


_CORES: "weakref.WeakKeyDictionary[LoadedModel, ModelCore]" = weakref.WeakKeyDictionary()
_CORES_LOCK = threading.Lock()


def core_of(lm: LoadedModel) -> ModelCore:
    """A model's core in this process, made on first use: what a session made without a server runs on (the command
    line, a test); a server's registry makes its own (model/serving/sessions.py)."""
    with _CORES_LOCK:
        core = _CORES.get(lm)
        if core is None:
            core = _CORES[lm] = ModelCore(lm)
        return core
