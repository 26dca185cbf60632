"""Every user's DecodeSession, by session id: a cap on how many are live, and an idle time-out."""
from __future__ import annotations

import ctypes
import logging
import threading
import time
from collections import OrderedDict

from .batcher import StepBatcher
from .errors import SessionError, SessionExpired
from .loading import LoadedModel, ModelLoadError, available_models, load_model
from .session import DecodeSession

MAX_SESSIONS = 120
IDLE_SECONDS = 30 * 60
log = logging.getLogger(__name__)


def return_freed_memory() -> None:
    """Hand the heap's free pages back to the system (glibc keeps them otherwise: bench.memory measured 1.69 GB
    resident after 60 sessions were freed, 1.00 GB after this). A no-op where there is no glibc."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


class SessionStore:
    """Sessions keyed by the web session id. Each user sees only their own; idle ones are freed."""

    def __init__(self, max_sessions: int = MAX_SESSIONS, idle_seconds: float = IDLE_SECONDS, clock=time.monotonic):
        self.max_sessions = max_sessions
        self.idle_seconds = idle_seconds
        self.clock = clock
        self._lock = threading.Lock()
        self._live: OrderedDict[str, tuple[DecodeSession, float]] = OrderedDict()  # least recently used first
        self._expired: OrderedDict[str, None] = OrderedDict()  # ids freed for idleness, to say so

    def __len__(self) -> int:
        return len(self._live)

    def _expire_idle(self) -> None:
        now, freed = self.clock(), False
        while self._live:
            key, (_, used) = next(iter(self._live.items()))
            if now - used < self.idle_seconds:
                break
            del self._live[key]
            self._expired[key] = None
            if len(self._expired) > 10_000:
                self._expired.popitem(last=False)
            freed = True
        if freed:
            return_freed_memory()

    def get(self, key: str) -> DecodeSession:
        """The user's session, or SessionError saying to start (or that theirs expired)."""
        with self._lock:
            self._expire_idle()
            if key not in self._live:
                if key in self._expired:
                    raise SessionExpired("session_expired", minutes=self.idle_seconds // 60)
                raise SessionError("no_session")
            session, _ = self._live.pop(key)
            self._live[key] = (session, self.clock())
            return session

    def put(self, key: str, session: DecodeSession) -> None:
        """Store (or replace) the user's session; refused when the server holds max_sessions others."""
        with self._lock:
            self._expire_idle()
            if key not in self._live and len(self._live) >= self.max_sessions:
                raise SessionError("server_full", limit=self.max_sessions)
            self._live.pop(key, None)
            self._expired.pop(key, None)
            self._live[key] = (session, self.clock())

    def drop(self, key: str) -> None:
        """Free the user's session (their tab closed), and give the memory back to the system."""
        with self._lock:
            dropped = self._live.pop(key, None)
        if dropped is not None:
            del dropped
            return_freed_memory()


class ModelRegistry:
    """Models loaded once, on first use, shared read-only by every session.

    A model loads under its own lock: a user asking for a model not loaded yet waits for it (tens of seconds the
    first time), while everyone on a loaded model is served at once; two users asking for the same one load it once.
    """

    def __init__(self, default: str, preloaded: dict[str, LoadedModel] | None = None):
        self.default = default
        self._models: dict[str, LoadedModel] = dict(preloaded or {})
        self._batchers: dict[str, StepBatcher] = {}
        self._lock = threading.Lock()  # guards the dicts only, held for no load
        self._loading: dict[str, threading.Lock] = {}  # one per model name: held while that model loads

    def names(self) -> list[str]:
        return list(dict.fromkeys([self.default, *self._models, *available_models()]))

    def get(self, name: str | None = None) -> LoadedModel:
        """A loaded model (the default if no name), loading it on first use; SessionError if it cannot be."""
        name = name or self.default
        if name not in self.names():
            raise SessionError("unknown_model", name=name, choices=self.names())
        with self._lock:
            if name in self._models:
                return self._models[name]
            loading = self._loading.setdefault(name, threading.Lock())
        with loading:
            with self._lock:
                if name in self._models:  # loaded by whoever held `loading` before us
                    return self._models[name]
            try:
                lm = load_model(name)
            except ModelLoadError as err:
                log.error("Could not load model %r: %s", name, err)  # the log may name server paths, the page not
                raise SessionError(err.key, **err.params) from None
            with self._lock:
                self._models[name] = lm
            return lm

    def new_session(self, name: str | None = None) -> DecodeSession:
        """A session on a model, sharing that model's batcher with every other session on it."""
        lm = self.get(name)
        with self._lock:
            if lm.name not in self._batchers:
                self._batchers[lm.name] = StepBatcher(lm.model)
            return DecodeSession(lm, batcher=self._batchers[lm.name])

    def batcher(self, name: str | None = None) -> StepBatcher:
        """The batcher of a model (made with its first session)."""
        return self._batchers[self.get(name).name]
