"""Every user's DecodeSession, by session id: a cap on how many are live, and an idle time-out."""
from __future__ import annotations

import ctypes
import threading
import time
from collections import OrderedDict

from .loading import LoadedModel, ModelLoadError, available_models, load_model
from .batcher import StepBatcher
from .session import DecodeSession, SessionError

MAX_SESSIONS = 120
IDLE_SECONDS = 30 * 60


def return_freed_memory() -> None:
    """Hand the heap's free pages back to the system (glibc keeps them otherwise: bench.memory measured 1.69 GB
    resident after 60 sessions were freed, 1.00 GB after this). A no-op where there is no glibc."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


class SessionExpired(SessionError):
    """The user's session was freed after being idle; they must start again."""


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
                    raise SessionExpired(
                        f"Your session was idle for over {self.idle_seconds // 60:.0f} minutes and was closed; "
                        "press Start to begin again."
                    )
                raise SessionError("No text yet: type a prompt and press Start.")
            session, _ = self._live.pop(key)
            self._live[key] = (session, self.clock())
            return session

    def put(self, key: str, session: DecodeSession) -> None:
        """Store (or replace) the user's session; refused when the server holds max_sessions others."""
        with self._lock:
            self._expire_idle()
            if key not in self._live and len(self._live) >= self.max_sessions:
                raise SessionError(
                    f"The server is full ({self.max_sessions} sessions open); try again in a few minutes."
                )
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
    """Models loaded once, on first use, shared read-only by every session."""

    def __init__(self, default: str, preloaded: dict[str, LoadedModel] | None = None):
        self.default = default
        self._models: dict[str, LoadedModel] = dict(preloaded or {})
        self._batchers: dict[str, StepBatcher] = {}
        self._lock = threading.Lock()

    def names(self) -> list[str]:
        return list(dict.fromkeys([self.default, *self._models, *available_models()]))

    def get(self, name: str | None = None) -> LoadedModel:
        name = name or self.default
        if name not in self.names():
            raise SessionError(f"Unknown model {name!r}: choose one of {self.names()}.")
        with self._lock:
            if name not in self._models:
                try:
                    self._models[name] = load_model(name)
                except ModelLoadError as err:
                    raise SessionError(str(err)) from None
            return self._models[name]

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
