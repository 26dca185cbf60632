"""What a decode session runs on: a backend (the model's core, or a serving engine) that says what it can do.

One DecodeSession (session.py) keeps the text and its records and writes every change once (start, step, back,
branches, adopt); its backend makes the numbers: the logits after a text, and whatever else it can give. Each backend
declares that in its Capabilities, and the session and the views read them instead of asking which kind of model
this is:

    CoreBackend (here)                  a sequence in the model's core (core.py): a KV cache, attention rows, passes
                                        computed ahead, whole-text computations; the core in this process or its own
    EngineBackend (model/vllm/session)  a serving engine (vLLM) asked for its top N log-probabilities, nothing else

Every call is given the session's whole text and leaves the backend holding exactly those ids (or, if the call fails,
what it held before). A call that changes the text answers with a StepResult: everything the page needs, once.
"""
from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import torch

from model.decoding.loading import end_ids
from model.decoding.records import Distribution, KVBytes, SamplingConfig
from model.decoding.sampling import derive
from model.errors import SessionError

AHEAD_DRAWN = "drawn"  # `ahead`: run ahead the token the next distribution draws (else a token id, or None: none)


class SequenceLost(LookupError):
    """The core holds no sequence under this key (its process was started again since): the session's text must be
    held again (resume) before anything else is asked of it."""


@dataclass(frozen=True)
class Capabilities:
    """What a backend gives beyond the next token's logits (which every backend gives)."""

    attention: bool  # attention weights with every pass: the prefill's matrix and each step's row
    cache_tensors: bool  # the KV cache's tensors are measured: its bytes, and its timing can be taken
    runs_locally: bool  # the app's own core runs this model: views that run it over a whole text can (compute)
    prefetch: bool  # the next token's pass can run ahead while the page draws


@dataclass
class StepResult:
    """What a backend answers to a change of the text (start, a step, going back): everything the page needs."""

    logits: torch.Tensor  # (V,) raw scores for the position after the text
    attention: np.ndarray | None  # start: (layers, heads, P, P); a step: its row (layers, heads, t); float16; None:
    #                               not given (an engine), or not asked (going back)
    kv: KVBytes | None  # the cache's bytes after the text (None: going back, where the session keeps its own)
    ms: float  # the pass (or the engine's request) that made the logits
    next: Distribution | None = None  # the next position's Distribution under the settings asked, if derived
    chosen_t1: tuple[float, int] | None = None  # an engine's own (log-probability, rank) of a token forced from
    #                                             outside its top N, which only it knows


class Backend(Protocol):
    """The calls a DecodeSession makes on its backend. `ids` is always the session's whole text (prompt + generated);
    `cfg` the settings the page shows next (the backend may derive that Distribution: StepResult.next); `ahead` what
    to compute ahead after answering (AHEAD_DRAWN, a token id, or None), where capabilities.prefetch."""

    lm: object  # the model it runs (LoadedModel, or an engine's model)
    capabilities: Capabilities

    def eos_ids(self) -> set[int]:
        """The token ids that end a text."""

    def start(self, ids: list[int], cfg: SamplingConfig | None = None, ahead=None) -> StepResult:
        """A new text, the prompt `ids` (StepResult.attention: the whole matrix)."""

    def derive(self, logits: torch.Tensor, ids: list[int], cfg: SamplingConfig,
               force_token: int | None = None) -> Distribution:
        """The next token's Distribution after `ids` under cfg (sampling.derive, plus what this backend knows)."""

    def advance(self, ids: list[int], token: int, cfg: SamplingConfig | None = None, ahead=None) -> StepResult:
        """`token` after `ids` (StepResult.attention: its row)."""

    def back(self, ids: list[int], keep: int, cfg: SamplingConfig | None = None, ahead=None) -> StepResult:
        """Cut back to ids[:keep] (at least the prompt): the logits after them."""

    def follow(self, ids: list[int], start: int, each) -> None:
        """ids[start:] after ids[:start], in chunks: each(logits, attention row, KV bytes, ms) per position, in order
        (capabilities.runs_locally only). All or nothing."""

    def answers(self) -> list | None:
        """What a kept branch holds of this backend for the text (an engine's answers), or None: nothing."""

    def resume(self, ids: list[int], answers: list | None = None, keep: int = 1) -> torch.Tensor:
        """Hold `ids` from scratch (answers: a branch's, from answers()): (keep, V) logits after its last `keep` ids."""

    def adopt(self, other: "Backend") -> None:
        """Take over another backend's state (of the same kind, on the same model)."""

    def prefetch(self, ids: list[int], token: int, cfg: SamplingConfig | None = None) -> bool:
        """Start `token`'s pass after `ids` ahead (capabilities.prefetch); False: nothing started."""

    def ahead(self, timeout: float):
        """The pass computed ahead, once done: (token, ids it followed, logits, next Distribution or None) or None."""

    def held(self) -> int | None:
        """The token whose pass is computed ahead, or None."""

    def sibling(self) -> "Backend":
        """A new, empty backend on the same model (a text rebuilt aside)."""

    def close(self) -> None:
        """The session is gone: free what the backend holds for it (also done when the backend is dropped)."""


class CoreBackend:
    """A session's backend on a model's core (core.ModelCore here, or core_process.ProcessCore: the same calls to a
    core in a process of its own). It holds the key of the session's sequence there and nothing that refers back to
    it, so a session dropped frees its sequence at once (weakref.finalize); close() does it explicitly.

    A core in a process of its own may be started again (its `generation` moves on): the sequence is then gone,
    and the next call first holds the session's text again (every call carries it). The call that met the death
    itself is refused with model_restarted by the core's handle, once.
    """

    def __init__(self, core):
        self.core = core
        self.lm = core.lm
        self.capabilities = Capabilities(attention=True, cache_tensors=True, runs_locally=True, prefetch=True)
        self.key = core.open()
        self._generation = core.generation  # the core's start that holds our sequence
        self._stale = False  # our sequence does not hold the session's text (a failed follow, a restart)
        weakref.finalize(self, core.close, self.key)

    def eos_ids(self) -> set[int]:
        return end_ids(self.lm)

    def _held(self, ids: list[int]) -> None:
        """Before a call that needs the sequence to hold `ids`: hold them again if it may not (a restart since)."""
        if self._stale or self.core.generation != self._generation:
            self._generation = self.core.generation
            self.core.resume(self.key, list(ids), 1)
            self._stale = False

    def _call(self, holds: list[int] | None, op: str, *args):
        """core.<op>(key, *args), the sequence first made to hold `holds` if it may have been lost; if the core finds
        it lost (its process started again meanwhile), once more after holding them again. holds None: the call holds
        a text anew itself (start, resume) and is simply made again; adopt has nothing to hold again."""
        for attempt in (0, 1):
            try:
                if holds is not None:
                    self._held(holds)
                return getattr(self.core, op)(self.key, *args)
            except SequenceLost:
                if attempt or op == "adopt":
                    raise SessionError("model_restarted") from None
                self._stale = True
            except SessionError as err:
                if err.key == "model_restarted":
                    self._stale = True
                raise

    def start(self, ids, cfg=None, ahead=None):
        result = self._call(None, "start", list(ids), cfg, ahead)
        self._stale, self._generation = False, self.core.generation
        return result

    def derive(self, logits, ids, cfg, force_token=None):
        return derive(logits, torch.tensor([ids]), cfg, len(ids), self.lm.tokens, force_token)

    def advance(self, ids, token, cfg=None, ahead=None):
        return self._call(ids, "advance", list(ids), token, cfg, ahead)

    def back(self, ids, keep, cfg=None, ahead=None):
        return self._call(ids, "back", list(ids), keep, cfg, ahead)

    def follow(self, ids, start, each):
        positions = self._call(ids[:start], "follow", list(ids), start)
        try:
            for position in positions:
                each(*position)
        except BaseException:
            self._stale = True  # the sequence holds ids now, the session what it held before: hold it again
            raise

    def answers(self):
        return None  # a branch keeps no cache: choosing it again prefills its ids once

    def resume(self, ids, answers=None, keep=1):
        logits = self._call(None, "resume", list(ids), keep)
        self._stale, self._generation = False, self.core.generation
        return logits

    def adopt(self, other: "CoreBackend") -> None:
        self._call(None, "adopt", other.key)
        self._stale, self._generation = other._stale, other._generation

    def prefetch(self, ids, token, cfg=None):
        if self._stale or self.core.generation != self._generation:
            return False  # nothing there to run ahead on: the next step holds the text again first
        try:
            return self.core.prefetch(self.key, list(ids), token, cfg)
        except (SessionError, SequenceLost):  # the core's process died: started again; the next step holds the text
            self._stale = True
            return False

    def ahead(self, timeout):
        if self._stale or self.core.generation != self._generation:
            return None
        try:
            return self.core.ahead(self.key, timeout)
        except (SessionError, SequenceLost):
            self._stale = True
            return None

    def held(self):
        if self._stale or self.core.generation != self._generation:
            return None
        try:
            return self.core.held(self.key)
        except (SessionError, SequenceLost):
            return None

    def sibling(self) -> "CoreBackend":
        return CoreBackend(self.core)

    def close(self) -> None:
        self.core.close(self.key)
