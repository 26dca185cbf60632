"""The model in a process of its own: its weights, its sessions' KV caches, its step batcher and batched sampler.

`python app.py --model-process` starts one per local model the app loads (ModelRegistry.get); the web process
talks to it through model/decoding/remote.py's RemoteBackend, a connection per session over a Unix socket in a
private directory (the page never chooses a path), with a key only this app knows. In the model process each
connection is one session's LocalBackend, run by a thread of its own that waits on the shared batcher: the
threads' steps that arrive together are one batched pass, as in the web process before.

The web process keeps serving if the model process dies: the next session call that meets the death starts it
again (ModelProcess.ensure) and says so to its user; every later call rebuilds its cache from its text. The
model process ends with the web process (a daemon child, and a watch on its parent in case that is killed).
"""
from __future__ import annotations

import logging
import multiprocessing
import os
import pickle
import secrets
import tempfile
import threading
import time
from multiprocessing.connection import Client, Connection, Listener
from types import SimpleNamespace

import torch

from model.decoding.backend import LocalBackend
from model.decoding.batcher import StepBatcher, bench_stats
from model.decoding.loading import load_model
from model.decoding.remote import serve_apart, stop_apart
from model.errors import SessionError

log = logging.getLogger(__name__)
# A process that runs only the model fills bigger batches than one that also serves the page: 48 students
# saturating it, 70.0 steps/s at 32 against 63.1 at 16 (bench.classroom --model-process on, one sitting)
MAX_BATCH = 32
# A pass computed ahead (a student's next step, while they read) waits this long for others to share it, unless
# somebody waits for it: the class's passes fill up instead of running one or two prefetches each (StepBatcher)
GATHER_S = 0.2
START_TIMEOUT_S = 600.0  # the first start converts the GGUF weights (minutes on a slow day)
# A process killed closes its sockets before it can be reaped: a session that met the death waits this long for
# the process to be gone before it starts the next (else it would find it "alive", start nothing, and meet the
# death again on its next click).
DYING_S = 5.0


class Link:
    """One connection, its messages pickled by the standard pickle (torch's own reducer for multiprocessing would
    move every tensor through shared memory and a file descriptor: slower for a (V,) row, and leak-prone)."""

    def __init__(self, conn: Connection):
        self.conn = conn

    def send(self, message) -> None:
        self.conn.send_bytes(pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL))

    def recv(self):
        return pickle.loads(self.conn.recv_bytes())

    def close(self) -> None:
        self.conn.close()


class ModelProcess:
    """The web process's handle on one model's process: start it, connect to it, start it again if it died."""

    def __init__(self, name: str):
        self.name = name
        self._dir = tempfile.mkdtemp(prefix="tbt-model-")  # 0700: only this user reaches the socket
        self._authkey = secrets.token_bytes(32)
        self._lock = threading.Lock()
        self.process: multiprocessing.Process | None = None
        self.restarts = 0  # starts after the first
        self._current = (0, "")  # (generation, address) of the process that listens: set once it does

    def start(self) -> "ModelProcess":
        """Start the process and wait until its model is loaded and it listens; RuntimeError if it cannot."""
        with self._lock:
            self._start()
        return self

    def _start(self) -> None:
        ctx = multiprocessing.get_context("spawn")  # a fresh interpreter: no torch threads or locks forked
        address = os.path.join(self._dir, f"model-{self.restarts}.sock")
        ready_here, ready_there = ctx.Pipe(duplex=False)
        self.process = ctx.Process(target=serve, name=f"tbt-model-{self.name}", daemon=True,
                                   args=(self.name, address, self._authkey, ready_there, os.getpid()))
        self.process.start()
        ready_there.close()
        if not ready_here.poll(START_TIMEOUT_S):
            self.process.kill()
            raise RuntimeError(f"the model process of {self.name} did not start in {START_TIMEOUT_S:.0f} s")
        try:
            status, detail = ready_here.recv()
        except EOFError:
            status, detail = "err", f"exit code {self.process.exitcode}"
        if status != "ok":
            raise RuntimeError(f"the model process of {self.name} could not start: {detail}")
        self._current = (self.restarts, address)  # connections go to it from now on
        log.info("model process of %s: pid %d", self.name, self.process.pid)

    @property
    def generation(self) -> int:
        """Which start of the process connections go to now (0 the first, then one more each restart)."""
        return self._current[0]

    def connect(self) -> Link:
        """A new connection (a session's); OSError if the process is not there."""
        return Link(Client(self._current[1], family="AF_UNIX", authkey=self._authkey))

    def ensure(self, seen: int | None = None) -> None:
        """Start the process again if it is gone: called by a session that met the death of the process of
        generation `seen` (None: of the current one). If a later one is up, there is nothing to do; the one it saw
        die is waited for while it is still dying (up to DYING_S)."""
        with self._lock:
            if seen is not None and seen != self.generation:
                return  # another session's call started it again already
            deadline = time.monotonic() + DYING_S
            while self.process is not None and self.process.is_alive() and time.monotonic() < deadline:
                self.process.join(0.05)
            if self.process is not None and not self.process.is_alive():
                log.error("model process of %s ended (exit code %s): starting it again",
                          self.name, self.process.exitcode)
                self.restarts += 1
                self._start()

    def stats(self) -> dict:
        """The model process's bench_stats() (its CPU, its parts, its batch sizes), for the classroom benchmark."""
        return self._ask("stats")

    def recent_passes(self, seconds: float | None = None) -> list:
        """Its batcher's passes (StepBatcher.recent_passes), for the batching view; none while it is restarting."""
        try:
            return self._ask("passes", seconds)
        except (OSError, EOFError):
            return []

    def _ask(self, op: str, *args):
        link = self.connect()
        try:
            link.send((op, args))
            return link.recv()[1]
        finally:
            link.close()

    def stop(self) -> None:
        stop_apart(self.name)
        if self.process is not None and self.process.is_alive():
            self.process.terminate()
            self.process.join(10)


def run_apart(lm) -> ModelProcess:
    """Start `lm`'s model process and send every new session on it there."""
    process = ModelProcess(lm.name).start()
    serve_apart(lm, process)
    return process


# ---- the model process ---------------------------------------------------------------------------------
def serve(name: str, address: str, authkey: bytes, ready, parent: int) -> None:
    """The model process's main: load `name`, listen at `address`, one thread per connection."""
    torch.set_num_threads(1)
    logging.basicConfig(level=logging.WARNING)
    try:
        lm = load_model(name)
        batcher = StepBatcher(lm.model, name=lm.name, max_batch=MAX_BATCH, gather_s=GATHER_S)
        listener = Listener(address, family="AF_UNIX", authkey=authkey)
    except Exception as err:  # noqa: BLE001 (said to the web process, which refuses to start with it)
        ready.send(("err", repr(err)))
        return
    ready.send(("ok", os.getpid()))
    ready.close()
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    backends = _Backends()
    while True:
        try:
            conn = listener.accept()
        except Exception:  # noqa: BLE001 (a client that failed the handshake: refuse it, keep listening)
            continue
        threading.Thread(target=_session, args=(Link(conn), lm, batcher, backends), daemon=True).start()


def _watch_parent(parent: int) -> None:
    """End with the web process, even one killed without a chance to stop us."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)


class _Backends:
    """The model process's sessions: each connection's LocalBackend, by the key its RemoteBackend gave."""

    def __init__(self):
        self._by_key: dict[str, LocalBackend] = {}
        self._guard = threading.Lock()

    def add(self, key: str, backend: LocalBackend) -> None:
        with self._guard:
            self._by_key[key] = backend

    def get(self, key: str) -> LocalBackend | None:
        with self._guard:
            return self._by_key.get(key)

    def drop(self, key: str | None) -> None:
        with self._guard:
            self._by_key.pop(key, None)


def _session(link: Link, lm, batcher: StepBatcher, backends: _Backends) -> None:
    """One connection's calls, in order, until it closes; then its session's cache is freed."""
    torch.set_num_threads(1)
    key, backend = None, None
    try:
        while True:
            op, args = link.recv()
            try:
                if op == "hello":
                    key, backend = args[0], LocalBackend(lm, batcher)
                    backends.add(key, backend)
                    value = None
                elif op == "stats":
                    value = {**bench_stats(), "pid": os.getpid()}
                elif op == "passes":
                    value = batcher.recent_passes(*args)
                else:
                    value = _OPS[op](backend, backends, *args)
                link.send(("ok", value))
            except SessionError as err:
                link.send(("err", ("session", err.key, err.params, str(err))))
            except Exception as err:  # noqa: BLE001 (the session's call fails; the connection and the process stay)
                log.exception("model process: %s failed", op)
                link.send(("err", ("other", "", {}, repr(err))))
    except (EOFError, OSError):
        pass
    finally:
        backends.drop(key)
        link.close()


def _advance(backend: LocalBackend, backends, ids, token, cfg):
    """The chosen token's pass, and the next position's Distribution under the same settings (the batch's
    sampler's, or derived here): the web process then derives nothing for the next step."""
    chosen = SimpleNamespace(chosen=SimpleNamespace(id=token), config=cfg)  # what LocalBackend.advance reads
    _, logits, row, kv, ms = backend.advance(ids, chosen)
    try:
        dist = backend.derive(logits, [*ids, token], cfg)
    except SessionError:
        dist = None
    return logits, row, kv, ms, dist


def _ahead(backend: LocalBackend, backends, timeout):
    """The pass held ahead, once done: (its logits, the next position's Distribution if its prefetch asked), or
    None (none held, it failed, or still queued at the timeout)."""
    ahead = backend.held()
    if ahead is None or not ahead.wait(timeout):
        return None
    return ahead.logits, ahead.job.dist


def _follow(backend: LocalBackend, backends, ids, start):
    out = []
    backend.follow(ids, start, lambda *position: out.append(position))
    return out


def _adopt(backend: LocalBackend, backends, other_key):
    other = backends.get(other_key)
    if other is None:
        raise SessionError("model_restarted")
    backend.adopt(other)


_OPS = {
    "start": lambda b, _, ids: b.start(ids),
    "advance": _advance,
    "back": lambda b, _, ids, keep, prompt_len, prompt_logits: b.back(ids, keep, prompt_len, prompt_logits),
    "follow": _follow,
    "prefetch": lambda b, _, ids, token, cfg: b.prefetch(ids, token, cfg),
    "ahead": _ahead,
    "resume": lambda b, _, ids, keep: b.resume(ids, None, keep),
    "adopt": _adopt,
}
