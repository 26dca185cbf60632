"""Every user's DecodeSession, by session id: a cap on how many are live, and an idle time-out."""
from __future__ import annotations

import contextlib
import logging
import threading
import time
from collections import OrderedDict

from model.decoding.backend import CoreBackend
from model.decoding.core import ModelCore
from model.serving.admission import PER_ADDRESS, OpeningLimit
from model.errors import SessionError, SessionExpired
from model.decoding.loading import LoadedModel, ModelLoadError, available_models, load_model
from model.vllm.session import EngineModel
from model.decoding.session import DecodeSession
from model.vllm.metrics import MetricsHistory, MetricsReader
from model.vllm.speculative import is_twin
from model.runtime import return_freed_memory
from model.serving.core_process import ProcessCore

MAX_SESSIONS = 120
IDLE_SECONDS = 30 * 60
UNCONNECTED_SECONDS = 2 * 60  # a session whose page never connected (no heartbeat) is freed after this idle
log = logging.getLogger(__name__)


class SessionStore:
    """Sessions keyed by the web session id. Each user sees only their own; idle ones are freed.

    A page keeps a heartbeat connection open (connected()); a session whose page never connected, which only a
    script makes, is freed after UNCONNECTED_SECONDS idle instead of the full idle time-out. New sessions are
    admitted by `opening`, per client address (model/serving/admission.py).
    """

    def __init__(self, max_sessions: int = MAX_SESSIONS, idle_seconds: float = IDLE_SECONDS, clock=time.monotonic,
                 unconnected_seconds: float = UNCONNECTED_SECONDS, opening: OpeningLimit | None = None,
                 per_address: int = PER_ADDRESS):
        self.max_sessions = max_sessions
        self.per_address = per_address
        self.idle_seconds = idle_seconds
        self.unconnected_seconds = unconnected_seconds
        self.clock = clock
        self.opening = opening if opening is not None else OpeningLimit(clock=clock)
        self._lock = threading.Lock()
        self._live: OrderedDict[str, tuple[DecodeSession, float]] = OrderedDict()  # least recently used first
        # ids freed for idleness, to say so: each with the idle time that freed it (a script's is shorter), seconds
        self._expired: OrderedDict[str, float] = OrderedDict()
        self._connected: set[str] = set()  # ids whose page has a heartbeat connection (or had one)
        self._address: dict[str, str | None] = {}  # id: the address that opened it

    def __len__(self) -> int:
        return len(self._live)

    def connected(self, key: str) -> None:
        """The page of session id `key` opened its heartbeat connection: it is a real page."""
        with self._lock:
            if len(self._connected) > 10 * self.max_sessions:  # ids of pages long gone
                self._connected &= set(self._live)
            self._connected.add(key)

    def is_page(self, key: str) -> bool:
        """Whether session id `key` has (or had) a page: its heartbeat connection opened."""
        return key in self._connected

    @contextlib.contextmanager
    def _held(self):
        """The store's lock for the block, idle sessions expired first; they are closed once it is let go (their
        sequences in the model's core freed), and the memory given back."""
        gone = []
        try:
            with self._lock:
                gone = self._expire_idle()
                yield
        finally:
            for session in gone:
                session.close()
            if gone:
                return_freed_memory()

    def _expire_idle(self) -> list:
        """(The lock held.) The idle sessions, taken out of the store: their pages' ids kept to say they expired."""
        now, gone = self.clock(), []
        shortest = min(self.idle_seconds, self.unconnected_seconds)
        for key, (_, used) in list(self._live.items()):  # least recently used first
            if now - used < shortest:
                break
            page = key in self._connected
            if page and now - used < self.idle_seconds:
                continue
            gone.append(self._live.pop(key)[0])
            self._connected.discard(key)
            self._address.pop(key, None)
            self._expired[key] = self.idle_seconds if page else shortest
            if len(self._expired) > 10_000:
                self._expired.popitem(last=False)
        return gone

    def get(self, key: str) -> DecodeSession:
        """The user's session, or SessionError saying to start (or that theirs expired)."""
        with self._held():
            if key not in self._live:
                if key in self._expired:
                    raise SessionExpired("session_expired", minutes=self._expired[key] // 60)
                raise SessionError("no_session")
            session, _ = self._live.pop(key)
            self._live[key] = (session, self.clock())
            return session

    def may_open(self, key: str, client: str | None = None) -> None:
        """SessionError if put(key, ..., client) would be refused now (nothing is taken): asked before the work of
        making a session (its prompt's pass), so a script refused does not cost the class a pass each time."""
        with self._held():
            new = key not in self._live
            if new:
                self._refuse_new(client)
        if new:
            self.opening.check(client)

    def _refuse_new(self, client: str | None) -> None:
        if len(self._live) >= self.max_sessions:
            raise SessionError("server_full", limit=self.max_sessions)
        if sum(1 for a in self._address.values() if a == client) >= self.per_address:
            raise SessionError("network_full", limit=self.per_address)

    def open(self, key: str, client: str | None, make) -> DecodeSession:
        """The one way a user's session is opened: refused (SessionError) before make() runs if the server or the
        address may not open another, then make()'s session (a prompt started, a trace read, records taken: its
        passes) stored as the user's in place of their old one."""
        self.may_open(key, client)
        session = make()
        self.put(key, session, client=client)
        return session

    def put(self, key: str, session: DecodeSession, client: str | None = None) -> None:
        """Store (or replace) the user's session; a new one is refused when the server holds max_sessions others,
        when `client` (its address) holds per_address already, or opens them faster than `opening` admits."""
        with self._held():
            if key not in self._live:
                self._refuse_new(client)
                self.opening.admit(client)
                self._address[key] = client
            replaced = self._live.pop(key, None)
            self._expired.pop(key, None)
            self._live[key] = (session, self.clock())
        if replaced is not None and replaced[0] is not session:
            replaced[0].close()

    def live(self) -> list[tuple[str, DecodeSession]]:
        """Every live session with its id, least recently used first (a copy: for counting, never for showing
        one user's text to another)."""
        with self._held():
            return [(key, session) for key, (session, _) in self._live.items()]

    def drop(self, key: str) -> None:
        """Free the user's session (their tab closed), and give the memory back to the system."""
        with self._lock:
            dropped = self._live.pop(key, None)
            self._connected.discard(key)
            self._address.pop(key, None)
        if dropped is not None:
            dropped[0].close()
            del dropped
            return_freed_memory()


class ModelRegistry:
    """Models loaded once, on first use, each with its core (model/decoding/core.py), shared by every session.

    A local model's core runs in this process, or with `processes` in a process of its own (core_process.py: its
    weights there, this process holding the tokenizer and shape only); an engine's model is asked over HTTP. The
    registry hands each session its backend on its model's core (new_session). A model loads under its own lock: a
    user asking for a model not loaded yet waits for it (tens of seconds the first time), while everyone on a loaded
    model is served at once; two users asking for the same one load it once.
    """

    def __init__(self, default: str, preloaded: dict[str, LoadedModel] | None = None,
                 by_language: dict[str, str] | None = None, processes: bool = False):
        self.default = default
        self.processes_of_their_own = processes  # each local model's core in a process of its own, started as it loads
        # the model a page in a language starts on ({"zh": "gemma3-270m"}); empty: every page on the default
        self.by_language = dict(by_language or {})
        self._models: dict[str, LoadedModel] = dict(preloaded or {})
        self._cores: dict[str, ModelCore | ProcessCore] = {}
        self._metrics: dict[str, MetricsHistory] = {}  # an engine model's /metrics readings, shared by its pages
        self._lock = threading.Lock()  # guards the dicts only, held for no load
        self._loading: dict[str, threading.Lock] = {}  # one per model name: held while that model loads
        self._engines: dict[str, EngineModel] = {}  # models an engine serves (model/vllm/session.py), by name

    def add_engine(self, lm: EngineModel) -> None:
        """A model served by an engine ("vllm:<name>"), offered in the picker beside the local ones."""
        with self._lock:
            self._engines[lm.name] = lm

    def for_language(self, lang: str) -> str:
        """The model a page in `lang` starts on (and a lesson in that language runs on): the operator's one model
        when they fixed one (--model), else the one that writes that language (Chinese: Gemma 3 270M)."""
        return self.by_language.get(lang, self.default)

    def preload(self) -> None:
        """Load the default and every language's model now, so no student waits behind a load in class."""
        for name in dict.fromkeys([self.default, *self.by_language.values()]):
            self.get(name)

    def names(self) -> list[str]:
        return list(dict.fromkeys([self.default, *self._models, *available_models(), *self._engines]))

    def get(self, name: str | None = None) -> LoadedModel | EngineModel:
        """A model (the default if no name), loaded with its core on first use; SessionError if it cannot be. A local
        model's weights are in its core: in this process, or only in the core's own."""
        name = name or self.default
        if name not in self.names():
            raise SessionError("unknown_model", name=name, choices=self.names())
        if name in self._engines:
            return self._engines[name]
        with self._lock:
            if name in self._cores:
                return self._models[name]
            loading = self._loading.setdefault(name, threading.Lock())
        with loading:
            with self._lock:
                if name in self._cores:  # loaded by whoever held `loading` before us
                    return self._models[name]
            lm = self._models.get(name)
            try:
                if lm is None:
                    lm = load_model(name, weights=not self.processes_of_their_own)
            except ModelLoadError as err:
                log.error("Could not load model %r: %s", name, err)  # the log may name server paths, the page not
                raise SessionError(err.key, **err.params) from None
            # before any session can be made on it
            core = ProcessCore(lm).launch() if self.processes_of_their_own else ModelCore(lm)
            with self._lock:
                self._models[name], self._cores[name] = lm, core
            return lm

    def core(self, name: str | None = None) -> ModelCore | ProcessCore | None:
        """A local model's core (loading it on first use), None for an engine's model."""
        lm = self.get(name)
        return None if isinstance(lm, EngineModel) else self._cores[lm.name]

    def processes(self) -> dict[str, ProcessCore]:
        """The cores running in processes of their own, by model name (empty unless `processes`)."""
        with self._lock:
            return {name: core for name, core in self._cores.items() if isinstance(core, ProcessCore)}

    def stop(self) -> None:
        """Stop every core process (they would also end with this process)."""
        for core in self.processes().values():
            core.stop()

    def loaded_twin(self, lm: EngineModel) -> ModelCore | ProcessCore | None:
        """The core of a local model already loaded that is the engine's model here (model.vllm.speculative.is_twin:
        same shape, same vocabulary), else None; never loads one."""
        with self._lock:
            loaded = dict(self._models)  # loaded or handed in preloaded (its core made on first use, cheaply)
        return next((self.core(name) for name, m in loaded.items() if is_twin(lm, m)), None)

    def new_session(self, name: str | None = None) -> DecodeSession:
        """A session on a model: on its core, computing ahead (a server's), or on the engine's backend (the engine
        batches its own users)."""
        lm = self.get(name)
        if isinstance(lm, EngineModel):
            return DecodeSession(lm)
        return DecodeSession(lm, backend=CoreBackend(self._cores[lm.name]), ahead=True)

    def engine_metrics(self, name: str) -> MetricsHistory | None:
        """The history of the engine's own numbers (its /metrics) for an engine's model, made on first use at the
        address the operator gave its client; None for a local model."""
        lm = self.get(name)
        if not isinstance(lm, EngineModel):
            return None
        with self._lock:
            if lm.name not in self._metrics:
                self._metrics[lm.name] = MetricsHistory(MetricsReader(lm.client.url, lm.client.model))
            return self._metrics[lm.name]
