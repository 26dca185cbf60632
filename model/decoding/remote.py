"""A session whose model runs in a process of its own (model/serving/model_process.py): the web process's half.

RemoteBackend speaks the Backend protocol (backend.py) to a LocalBackend that lives in the model process, one per
session, over a connection of its own: the model process keeps the weights, the KV caches and the step batcher
(its passes and its batched sampler), and the web process keeps the page, the queue and the renders, so the two
use a core each (vLLM V1 splits its API server from its engine core for the same reason).

What crosses per step is small: the chosen token and the settings one way; the next logits (V,) float32, the
attention row, the KV bytes, the pass's ms and the next position's Distribution (derived by the batch's sampler)
back. The web process derives nothing for a step the batch already derived; it keeps its own copy of the weights
only for the views that run the model beyond one step (a lens, a search), which go through its own door.

A model process that dies is started again by its handle; the call that met the death says so (model_restarted),
and the next call first rebuilds the session's cache from its text (every call carries the whole text), so a
session loses nothing but that one click.
"""
from __future__ import annotations

import threading
import uuid
import weakref

import torch

from model.decoding.backend import Capabilities
from model.decoding.loading import LoadedModel, end_ids
from model.decoding.records import Distribution
from model.decoding.sampling import derive
from model.errors import SessionError

_APART: dict[str, tuple[LoadedModel, object]] = {}  # model name: (its LoadedModel here, the handle of its process)
_APART_LOCK = threading.Lock()


def serve_apart(lm: LoadedModel, process) -> None:
    """From now on every new session on `lm` runs in `process` (a model_process.ModelProcess)."""
    with _APART_LOCK:
        _APART[lm.name] = (lm, process)


def process_of(lm) -> object | None:
    """The model process serving `lm`, or None: its sessions run here."""
    entry = _APART.get(getattr(lm, "name", None))
    return entry[1] if entry is not None and entry[0] is lm else None


def apart_processes() -> dict[str, object]:
    """Every model process serving sessions now, by model name."""
    with _APART_LOCK:
        return {name: process for name, (_, process) in _APART.items()}


def stop_apart(name: str) -> None:
    """`name`'s new sessions run here again (its process is being stopped)."""
    with _APART_LOCK:
        _APART.pop(name, None)


class RemoteAhead:
    """A pass the model process computes ahead (lookahead.Ahead's face): wait() fetches its logits."""

    def __init__(self, backend: "RemoteBackend", token: int, ids: list[int]):
        self.backend, self.token, self.ids = backend, token, ids
        self.logits: torch.Tensor | None = None

    def wait(self, timeout: float) -> bool:
        if self.logits is not None:
            return True
        try:
            done = self.backend._call("ahead", timeout)
        except SessionError:
            return False
        if done is None:
            return False
        self.logits, dist = done
        self.backend._next = (self.logits, dist)
        return True


class RemoteBackend:
    """The Backend protocol over a connection to the model process (see the module's docstring)."""

    def __init__(self, lm: LoadedModel, process):
        self.lm = lm
        self.process = process
        self.batcher = None  # the batcher is the model process's
        # The weights are here too (for views that run the model on a whole text); the cache's tensors and the
        # attention rows are measured there and sent back; the next pass runs ahead there (prefetch).
        self.capabilities = Capabilities(attention=True, cache_tensors=True, runs_locally=True, prefetch=True)
        self.key = uuid.uuid4().hex  # this backend's name in the model process (adopt() names another by it)
        self._conn = None
        self._seen = None  # the generation of the model process our connection goes to (ModelProcess.generation)
        self._talk = threading.Lock()  # one call at a time on the link (a preview waits on the pass ahead unlocked)
        self._ahead: RemoteAhead | None = None  # the pass the model process runs ahead for us, as it said
        self._lost = False  # the process restarted since our state was made: rebuild it from the next call's ids
        self._next: tuple[torch.Tensor, Distribution] | None = None  # the last pass's logits and the batch's dist

    def eos_ids(self) -> set[int]:
        return end_ids(self.lm)

    # ---- the link ------------------------------------------------------------------------------------
    def _link(self):
        if self._conn is None:
            seen = self.process.generation
            conn = self.process.connect()
            try:
                conn.send(("hello", (self.key,)))
                conn.recv()
            except BaseException:
                conn.close()
                raise
            self._conn, self._seen = conn, seen
            weakref.finalize(self, conn.close)  # the model process then frees this session's cache
        return self._conn

    def _call(self, op: str, *args):
        with self._talk:
            if op not in ("prefetch", "ahead"):
                self._ahead = None  # every other call settles the pass ahead there: taken, or thrown away
            seen = self.process.generation
            try:
                conn = self._link()
            except (OSError, EOFError):  # no process to connect to: start it again, then connect
                self.process.ensure(seen)
                try:
                    conn = self._link()
                except (OSError, EOFError):
                    return self._died(seen)
            try:
                conn.send((op, args))
            except (OSError, EOFError):
                return self._died()
            return self._answer(conn)

    def _answer(self, conn):
        try:
            status, value = conn.recv()
        except (OSError, EOFError):
            return self._died()
        if status == "ok":
            return value
        kind, key, params, text = value
        if kind == "session":
            raise SessionError(key, **params)
        raise RuntimeError(f"model process: {text}")

    def _died(self, seen: int | None = None):
        """The model process went away under this call: it is started again (unless another call did already:
        `seen`, the generation it went to, our connection's if None), and our state must be rebuilt."""
        if self._conn is not None:
            self._conn.close()
        self._conn = None
        self._lost = True
        self._next = None
        self._ahead = None
        self.process.ensure(self._seen if seen is None else seen)
        raise SessionError("model_restarted")

    def _hold(self, ids: list[int]) -> None:
        """After a restart, the cache of `ids` prefilled again before the call that needs it."""
        if self._lost:
            self._call("resume", list(ids), 1)
            self._lost = False

    # ---- the protocol --------------------------------------------------------------------------------
    def start(self, ids):
        logits, attention, kv, ms = self._call("start", list(ids))
        self._lost = False
        return logits, attention, kv, ms

    def derive(self, logits, ids, cfg, force_token=None):
        """The batch's own Distribution when the pass that made these logits derived it under cfg, else derive()."""
        if self._next is not None and self._next[0] is logits and force_token is None:
            dist = self._next[1]
            if dist is not None and dist.position == len(ids) and dist.config == cfg:
                return dist
        return derive(logits, torch.tensor([ids]), cfg, len(ids), self.lm.tokens, force_token)

    def advance(self, ids, dist):
        self._hold(ids)
        logits, row, kv, ms, next_dist = self._call("advance", list(ids), dist.chosen.id, dist.config)
        self._next = (logits, next_dist)
        return dist, logits, row, kv, ms

    def back(self, ids, keep, prompt_len, prompt_logits):
        if self._lost:
            self._lost = False
            return self._call("resume", list(ids[:keep]), 1)[-1]
        return self._call("back", list(ids), keep, prompt_len, prompt_logits)

    def follow(self, ids, start, each):
        self._hold(ids[:start])
        try:
            for logits, row, kv, ms in self._call("follow", list(ids), start):
                each(logits, row, kv, ms)
        except BaseException:
            self._lost = True  # the model process holds ids now, the session what it held before: rebuild it
            raise

    def answers(self):
        return None

    # ---- the pass ahead (LookAhead's protocol) ---------------------------------------------------------
    def prefetch(self, ids: list[int], token: int, cfg=None) -> bool:
        """The pass of `token` after `ids` started ahead in the model process (LookAhead.prefetch there)."""
        if self._lost or self._conn is None:
            return False  # nothing there to run ahead on (a restart, or no text yet)
        try:
            started = self._call("prefetch", list(ids), token, cfg)
        except SessionError:  # the process died under it: started again; the next step rebuilds the cache
            return False
        if started:
            self._ahead = RemoteAhead(self, token, list(ids))
        return started

    def held(self) -> "RemoteAhead | None":
        return self._ahead

    def resume(self, ids, answers=None, keep=1):
        logits = self._call("resume", list(ids), keep)
        self._lost = False
        return logits

    def adopt(self, other: "RemoteBackend") -> None:
        self._call("adopt", other.key)
        self._lost = other._lost
