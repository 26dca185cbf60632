"""The model's core in a process of its own: its weights, every session's KV cache, its scheduler and every pass.

`python app.py --model-process` runs each local model's core (model/decoding/core.py: ModelCore) in a process of its
own, so that the page's Python and the model's passes use a core each (vLLM V1 splits its API server from its engine
core for the same reason: vllm/v1/engine/core_client.py, core.py). The web process holds the model's tokenizer and
shape only, not its weights, and talks to the core through ProcessCore: the same calls as a ModelCore's, each sent
over a pooled connection (a Unix socket in a private 0700 folder, a key only this app knows: nothing a page sends
chooses a path) and answered by a thread of the core process that calls the ModelCore there. Every computation on a
whole text goes there too, by name (core.computation), with plain arguments and a plain record back.

A core process that dies is started again by the first call that meets the death (ProcessCore.ensure). A call that
was running there when it died is refused, once, with model_restarted; every other call holds its session's text
again first (every call carries it) and goes on, its user seeing only the wait. Restarts go one at a time, the one a
waiting session needs first. The core process ends with the web process
(a daemon child, and a watch on its parent in case that is killed).
"""
from __future__ import annotations

import atexit
import logging
import os
import pickle
import queue
import secrets
import select
import subprocess
import sys
import tempfile
import threading
import time
from multiprocessing.connection import Client, Connection, Listener
from pathlib import Path

import torch

from model.decoding.backend import SequenceLost
from model.decoding.core import ModelCore, computation_name, named_computation
from model.decoding.loading import LoadedModel, load_model
from model.errors import SessionError
from model.runtime import return_freed_memory

log = logging.getLogger(__name__)
# A process that runs only the model fills bigger batches than one that also serves the page: 48 students
# saturating it, 70.0 steps/s at 32 against 63.1 at 16 (bench.classroom --model-process on, one sitting)
MAX_BATCH = 32
# A pass computed ahead (a student's next step, while they read) waits this long for others to share it, unless
# somebody waits for it: the class's passes fill up instead of running one or two prefetches each (scheduler.py)
GATHER_S = 0.2
START_TIMEOUT_S = 600.0  # the first start converts the GGUF weights (minutes on a slow day)
# A process killed closes its sockets before it can be reaped: a call that met the death waits this long for the
# process to be gone before it starts the next (else it would find it "alive", start nothing, and meet the death
# again on its next call).
DYING_S = 5.0
MAX_LINKS = 64  # connections to one core process at most (each a thread there): the page's lanes' places and more
CLOSE_EVERY_S = 0.5  # sequences of dropped sessions are closed in the core at most this long after
# The calls a ProcessCore forwards; anything else is refused by the core process.
CALLS = frozenset({"start", "advance", "back", "follow", "resume", "adopt", "prefetch", "ahead", "held", "close_many",
                   "compute", "recent_passes", "stats", "sequences"})
_RESTARTS = threading.Lock()  # one core process starts at a time: two models loading at once share two cores


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


ROOT = Path(__file__).resolve().parents[2]  # the project: `python -m model.serving.core_process` runs from here


class CoreChild:
    """The core process as its handle sees it (multiprocessing.Process's face: pid, is_alive, join, kill)."""

    def __init__(self, popen: subprocess.Popen):
        self.popen = popen
        self.pid = popen.pid
        atexit.register(self.kill)  # the web process ends: so does its core (a killed one: the child's own watch)

    def handshake(self, authkey: bytes, timeout: float) -> str:
        """Send the key; the child's first line: "ok" once it listens, else why it could not start."""
        try:
            self.popen.stdin.write(authkey.hex().encode() + b"\n")
            self.popen.stdin.close()
        except OSError:
            pass  # it died already: its stdout says why, or ends
        ready, _, _ = select.select([self.popen.stdout], [], [], timeout)
        if not ready:
            return f"no answer in {timeout:.0f} s"
        line = self.popen.stdout.readline().decode(errors="replace").strip()
        self.popen.stdout.close()
        return line or f"exit code {self.popen.poll()}"

    @property
    def exitcode(self) -> int | None:
        return self.popen.poll()

    def is_alive(self) -> bool:
        return self.popen.poll() is None

    def join(self, timeout: float | None = None) -> None:
        try:
            self.popen.wait(timeout)
        except subprocess.TimeoutExpired:
            pass

    def terminate(self) -> None:
        if self.is_alive():
            self.popen.terminate()

    def kill(self) -> None:
        if self.is_alive():
            self.popen.kill()
            self.join(10)


class ProcessCore:
    """The web process's handle on a model's core in a process of its own: the same calls as a ModelCore's.

    `lm` is the model's tokenizer and shape (load_model(weights=False)); the weights are in the core process only.
    """

    def __init__(self, lm: LoadedModel):
        self.lm = lm
        self.name = lm.name
        self._dir = tempfile.mkdtemp(prefix="tbt-core-")  # 0700: only this user reaches the socket
        self._authkey = secrets.token_bytes(32)
        self._lock = threading.Lock()  # starting and restarting
        self.process: CoreChild | None = None
        self.restarts = 0  # starts after the first
        self.stopped = False  # stop() was called: nothing starts it again
        self._current = (0, "")  # (generation, address) of the process that listens: set once it does
        self._links = threading.Condition()
        self._idle: list[tuple[int, Link]] = []  # (generation, link) ready for a call
        self._open = 0  # links made and not closed
        self._closing: queue.SimpleQueue[str] = queue.SimpleQueue()  # keys of dropped sessions' sequences
        self._closer = threading.Thread(target=self._close_dropped, name=f"core-closer-{lm.name}", daemon=True)
        self._closer.start()

    # ---- the process -------------------------------------------------------------------------------------------
    def launch(self) -> "ProcessCore":
        """Start the process and wait until its model is loaded and it listens; RuntimeError if it cannot."""
        with self._lock, _RESTARTS:
            self._start()
        return self

    def _start(self) -> None:
        """A fresh interpreter (no torch threads or locks forked) that imports this module only: not the web
        process's main module, as multiprocessing's spawn would (app.py, Gradio: seconds of every restart and a
        few hundred MB of the core process's memory). Its key goes over its stdin; it says "ok" on its stdout once
        its model is loaded and it listens."""
        address = os.path.join(self._dir, f"core-{self.restarts}.sock")
        self.process = CoreChild(subprocess.Popen(
            [sys.executable, "-m", "model.serving.core_process", self.name, address, str(os.getpid())],
            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE))
        answer = self.process.handshake(self._authkey, START_TIMEOUT_S)
        if answer != "ok":
            self.process.kill()
            raise RuntimeError(f"the core process of {self.name} could not start: {answer}")
        self._current = (self.restarts, address)  # calls go to it from now on
        log.info("core process of %s: pid %d", self.name, self.process.pid)

    @property
    def generation(self) -> int:
        """Which start of the process calls go to now (0 the first, then one more each restart): a session's
        sequence lives in one generation only."""
        return self._current[0]

    def ensure(self, seen: int | None = None) -> None:
        """Start the process again if it is gone: called by a call that met the death of the process of generation
        `seen` (None: of the current one). If a later one is up, there is nothing to do; the one it saw die is waited
        for while it is still dying (up to DYING_S)."""
        with self._lock:
            if self.stopped or (seen is not None and seen != self.generation):
                return  # stopped for good, or another call started it again already
            deadline = time.monotonic() + DYING_S
            while self.process is not None and self.process.is_alive() and time.monotonic() < deadline:
                self.process.join(0.05)
            if self.process is not None and not self.process.is_alive():
                log.error("core process of %s ended (exit code %s): starting it again",
                          self.name, self.process.exitcode)
                self.restarts += 1
                with _RESTARTS:
                    self._start()

    def stop(self) -> None:
        """Stop the process for good (the app ends): calls after this are refused, nothing is started again."""
        with self._lock:
            self.stopped = True
        if self.process is not None and self.process.is_alive():
            self.process.terminate()
            self.process.join(10)

    # ---- calls -------------------------------------------------------------------------------------------------------
    def _borrow(self) -> tuple[int, Link]:
        """A link to the current process: an idle one, a new one, or (at MAX_LINKS) the next one given back."""
        with self._links:
            while True:
                generation = self.generation
                while self._idle:
                    seen, link = self._idle.pop()
                    if seen == generation:
                        return seen, link
                    self._open -= 1  # a link to a process gone
                    link.close()
                if self._open < MAX_LINKS:
                    self._open += 1
                    break
                self._links.wait()
        try:
            address = self._current[1]
            return generation, Link(Client(address, family="AF_UNIX", authkey=self._authkey))
        except BaseException:
            self._dropped()
            raise

    def _give_back(self, generation: int, link: Link) -> None:
        with self._links:
            self._idle.append((generation, link))
            self._links.notify()

    def _dropped(self) -> None:
        with self._links:
            self._open -= 1
            self._links.notify()

    def call(self, op: str, *args):
        """core.<op>(*args) in the core process; a SessionError or SequenceLost there is raised here, anything else
        as a RuntimeError.

        A process found dead before the call was sent (no connection, or the link broken already) is started
        again, and the call is refused with SequenceLost: it never ran, so the session holds its text again and asks
        once more (backend.CoreBackend), and its user sees nothing but the wait. A death while the call ran is said
        to its user, once: model_restarted (what it did there is gone with the process)."""
        seen = self.generation
        try:
            generation, link = self._borrow()
        except (OSError, EOFError):  # no process to connect to: start it again
            self.ensure(seen)
            raise SequenceLost("the core process was started again") from None
        try:
            link.send((op, args))
        except (OSError, EOFError):  # the link was broken before the call went: it never ran
            self._broken(link, generation)
            raise SequenceLost("the core process was started again") from None
        except BaseException:  # interrupted mid-call: the link's stream is not to be trusted
            self._broken(link)
            raise
        try:
            status, value = link.recv()
        except (OSError, EOFError):  # the process died while the call ran
            self._broken(link, generation)
            raise SessionError("model_restarted") from None
        except BaseException:
            self._broken(link)
            raise
        self._give_back(generation, link)
        if status == "ok":
            return value
        kind, key, params, text = value
        if kind == "session":
            raise SessionError(key, **params)
        if kind == "lost":
            raise SequenceLost(key)
        raise RuntimeError(f"core process: {text}")

    def _broken(self, link: Link, generation: int | None = None) -> None:
        """A link that failed: closed and counted out; with its generation, the process it went to started again
        unless that was done already."""
        link.close()
        self._dropped()
        if generation is not None:
            self.ensure(generation)

    # the ModelCore's calls (model/decoding/core.py says what each does)
    def open(self) -> str:
        return secrets.token_hex(16)  # the core makes the sequence with its first start or resume

    def close(self, key: str) -> None:
        """Close the sequence in the core soon (a session dropped): never blocks, so a finalizer may call it."""
        self._closing.put(key)

    def start(self, key, ids, cfg=None, ahead=None):
        return self.call("start", key, ids, cfg, ahead)

    def advance(self, key, ids, token, cfg=None, ahead=None):
        return self.call("advance", key, ids, token, cfg, ahead)

    def back(self, key, ids, keep, cfg=None, ahead=None):
        return self.call("back", key, ids, keep, cfg, ahead)

    def follow(self, key, ids, start):
        return self.call("follow", key, ids, start)

    def resume(self, key, ids, keep=1):
        return self.call("resume", key, ids, keep)

    def adopt(self, key, other):
        return self.call("adopt", key, other)

    def prefetch(self, key, ids, token, cfg=None):
        return self.call("prefetch", key, ids, token, cfg)

    def ahead(self, key, timeout=10.0):
        return self.call("ahead", key, timeout)

    def held(self, key):
        return self.call("held", key)

    def compute(self, fn, *args, **kwargs):
        """fn(lm, *args, **kwargs) in the core process (fn marked @computation: sent by its name)."""
        return self._again("compute", computation_name(fn), args, kwargs)

    def recent_passes(self, seconds: float | None = None) -> list:
        """The scheduler's last decode passes, for the batching view; none while the process is restarting."""
        try:
            return self._again("recent_passes", seconds)
        except SessionError:
            return []

    def stats(self) -> dict:
        """The core process's bench_stats() (its CPU, its parts, its batch sizes), for the classroom benchmark."""
        return self._again("stats")

    def sequences(self) -> int:
        """How many sequences the core holds (ModelCore.sequences)."""
        return self._again("sequences")

    def _again(self, op: str, *args):
        """A call that holds no sequence: made once more if the process was found dead before it went."""
        try:
            return self.call(op, *args)
        except SequenceLost:
            return self.call(op, *args)

    def _close_dropped(self) -> None:
        """Close the sequences of dropped sessions in the core, a batch at a time (never in the dropping thread)."""
        while not self.stopped:
            keys = [self._closing.get()]
            time.sleep(CLOSE_EVERY_S)  # let the others of a closing class join this batch
            while not self._closing.empty():
                keys.append(self._closing.get())
            if self.stopped:
                return
            try:
                self.call("close_many", keys)
            except (SessionError, SequenceLost, RuntimeError):
                pass  # the process died: its sequences went with it


# ---- the core process ---------------------------------------------------------------------------------------------
def serve(name: str, address: str, authkey: bytes, parent: int) -> None:
    """The core process's main: load `name`, listen at `address`, a thread per connection; "ok" on stdout once it
    listens (else why not)."""
    torch.set_num_threads(1)
    logging.basicConfig(level=logging.WARNING)
    threading.Thread(target=_watch_parent, args=(parent,), daemon=True).start()
    try:
        core = ModelCore(load_model(name), max_batch=MAX_BATCH, gather_s=GATHER_S)
        listener = Listener(address, family="AF_UNIX", authkey=authkey)
    except Exception as err:  # noqa: BLE001 (said to the web process, which refuses to start with it)
        print(repr(err).replace("\n", " "), flush=True)
        return
    print("ok", flush=True)
    os.dup2(2, 1)  # the web process read its one line: anything printed after goes where the logs go
    sys.stdout = sys.stderr
    while True:
        try:
            conn = listener.accept()
        except Exception:  # noqa: BLE001 (a client that failed the handshake: refuse it, keep listening)
            continue
        threading.Thread(target=_answer, args=(Link(conn), core), daemon=True).start()


def _watch_parent(parent: int) -> None:
    """End with the web process, even one killed without a chance to stop us."""
    while os.getppid() == parent:
        time.sleep(1.0)
    os._exit(0)


def _answer(link: Link, core: ModelCore) -> None:
    """One connection's calls, in order, until it closes."""
    torch.set_num_threads(1)
    try:
        while True:
            op, args = link.recv()
            try:
                if op not in CALLS:
                    raise RuntimeError(f"no such call: {op!r}")
                if op == "compute":
                    fn_name, fn_args, fn_kwargs = args
                    value = core.compute(named_computation(fn_name), *fn_args, **fn_kwargs)
                else:
                    value = getattr(core, op)(*args)
                if op == "close_many":
                    return_freed_memory()
                link.send(("ok", value))
            except SessionError as err:
                link.send(("err", ("session", err.key, err.params, str(err))))
            except SequenceLost as err:
                link.send(("err", ("lost", str(err), {}, "")))
            except Exception as err:  # noqa: BLE001 (the call fails; the connection and the process stay)
                log.exception("core process: %s failed", op)
                link.send(("err", ("other", "", {}, repr(err))))
    except (EOFError, OSError):
        pass
    finally:
        link.close()


if __name__ == "__main__":  # python -m model.serving.core_process <model> <address> <parent pid>; the key on stdin
    serve(sys.argv[1], sys.argv[2], bytes.fromhex(sys.stdin.readline().strip()), int(sys.argv[3]))
