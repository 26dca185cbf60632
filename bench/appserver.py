"""The app as a separate server process for a benchmark (a free 78xx port, wait until it answers, kill it after),
and a watch on the CPU that processes *not* started by the benchmark take meanwhile.

A benchmark that drives the app in-process would share its CPU and its GIL with the app; a separate process
is what a real classroom talks to, and its resident memory can be read on its own pid.
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PORTS = range(7850, 7900)  # the 78xx range; several engineers run servers on this machine at once


def free_port(ports=PORTS) -> int:
    """The first port in `ports` that nothing on 127.0.0.1 listens on."""
    for port in ports:
        with socket.socket() as s:
            s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            try:
                s.bind(("127.0.0.1", port))
            except OSError:
                continue
            return port
    raise RuntimeError(f"No free port in {ports.start}-{ports.stop - 1}; stop a server there and try again.")


class AppServer:
    """`python app.py --port P` in its own process; `with AppServer() as srv:` gives srv.url and srv.pid.

    The log goes to a file (a pipe that nobody reads would fill and block the server).
    """

    def __init__(self, port: int | None = None, startup_timeout_s: float = 180.0, log_path: str | None = None,
                 env: dict[str, str] | None = None, root: str | Path | None = None, command: list[str] | None = None):
        self.root = Path(root or ROOT)  # another checkout's app.py: an A/B against the same benchmark
        # what runs (python's arguments, before --port): the app, or a stand-in server of a benchmark's own
        self.command = list(command or ["app.py"])
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.startup_timeout_s = startup_timeout_s
        self.log_path = Path(log_path or f"/tmp/tbt-bench-server-{self.port}.log")
        # e.g. env={"GRADIO_PROFILING": "1"} for Gradio's per-phase timings; never any telemetry (localhost only)
        self.env = {**os.environ, "GRADIO_ANALYTICS_ENABLED": "False", **(env or {})}
        self.proc: subprocess.Popen | None = None

    @property
    def pid(self) -> int:
        return self.proc.pid

    def __enter__(self) -> "AppServer":
        log = self.log_path.open("w")
        self.proc = subprocess.Popen([sys.executable, *self.command, "--port", str(self.port)], cwd=self.root,
                                     stdout=log, stderr=subprocess.STDOUT, env=self.env)
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"The app exited with code {self.proc.returncode} while starting; see {self.log_path}")
            if f"127.0.0.1:{self.port}" in self.log_path.read_text(errors="replace"):  # our process bound the port
                try:
                    with urllib.request.urlopen(self.url + "/", timeout=5) as r:
                        if r.status == 200:
                            return self
                except OSError:
                    pass
            time.sleep(0.5)
        self.stop()
        raise RuntimeError(f"The app did not answer on {self.url} within {self.startup_timeout_s:.0f} s; see {self.log_path}")

    def stop(self) -> None:
        """Terminate the server (kill it if it does not stop within 10 s)."""
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)

    def __exit__(self, *exc):
        self.stop()
        return False

    def rss_bytes(self) -> int:
        """The server's resident memory now."""
        import psutil

        return psutil.Process(self.pid).memory_info().rss

    # ---- Gradio's own per-request phases (only when started with env={"GRADIO_PROFILING": "1"}) ----------
    def profiling_traces(self, fn_name: str | None = None) -> list[dict]:
        """Each request since the last clear: queue_wait_ms, preprocess_ms, fn_call_ms, postprocess_ms, total_ms."""
        import json

        with urllib.request.urlopen(self.url + "/gradio_api/profiling/traces", timeout=30) as r:
            traces = json.loads(r.read())
        return [t for t in traces if fn_name is None or t["fn_name"] == fn_name]

    def profiling_clear(self) -> None:
        req = urllib.request.Request(self.url + "/gradio_api/profiling/clear", method="POST")
        with urllib.request.urlopen(req, timeout=30):
            pass


def _tree_cpu_s() -> float:
    """CPU seconds used so far by this process and every process it started (server, browser, their children)."""
    import psutil

    total = 0.0
    me = psutil.Process()
    for proc in [me, *me.children(recursive=True)]:
        try:
            t = proc.cpu_times()
            total += t.user + t.system
        except psutil.Error:  # exited meanwhile
            pass
    return total


class OthersWatch:
    """`with OthersWatch() as w:` ... then w.share: the CPU other people's processes took meanwhile, as a share
    of the machine (wall x cores); the benchmark's own server and browser are not counted. Near 0 = a quiet
    machine; figures measured at 0.5 or more are slowed by someone else's work.
    """

    def __enter__(self):
        import psutil

        self._wall, self._ours, self._busy = time.perf_counter(), _tree_cpu_s(), psutil.cpu_times()
        return self

    def __exit__(self, *exc):
        import psutil

        self.wall_s = time.perf_counter() - self._wall
        now = psutil.cpu_times()
        busy = sum(getattr(now, f) - getattr(self._busy, f) for f in ("user", "nice", "system", "irq", "softirq", "steal"))
        ours = _tree_cpu_s() - self._ours  # an approximation: a child that exited meanwhile is lost
        self.other_s = max(0.0, busy - ours)
        self.share = self.other_s / (self.wall_s * (psutil.cpu_count() or 1))
        return False
