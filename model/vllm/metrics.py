"""The engine's own numbers: vLLM's Prometheus text at /metrics, read into plain records, and a short history of them.

vLLM 0.32 (vllm/v1/metrics/loggers.py) publishes, per model (label `model_name`) and engine core (label `engine`):
gauges `vllm:num_requests_running`, `vllm:num_requests_waiting`, `vllm:kv_cache_usage_perc` (a fraction in [0, 1]
despite its name); counters (sample names end in `_total`) `vllm:prefix_cache_queries` and `vllm:prefix_cache_hits`
(in tokens), `vllm:prompt_tokens`, `vllm:generation_tokens`, `vllm:request_success` (one sample per finish reason);
and the histogram `vllm:iteration_tokens_total`, whose `_count` is the engine's scheduler steps and `_sum` the tokens
they carried. The text is parsed by prometheus_client's own parser, the library vLLM writes it with.

The address is the operator's only (the engine model's EngineClient base URL, e.g. http://gpu-box:8000/v1): /metrics
is at that server's root. Every fault (no /metrics, not vLLM's, the engine down or slow) is one keyed SessionError,
and leaves the history as it was.
"""
from __future__ import annotations

import threading
import time
from collections import deque
from dataclasses import dataclass

import httpx
from prometheus_client.parser import text_string_to_metric_families

from model.errors import SessionError

POLL_S = 2.0  # a page showing the view asks this often; pages asking together share one read of the engine
KEEP = 150  # samples kept: five minutes at POLL_S
TIMEOUT_S = 5.0  # /metrics is a few tens of kB, written at once: an engine that takes longer is in trouble

# the families read (the prefix-cache ones are in tokens), by vLLM's names; the parser drops counters' "_total"
GAUGES = {"running": "vllm:num_requests_running", "waiting": "vllm:num_requests_waiting",
          "kv_usage": "vllm:kv_cache_usage_perc"}
COUNTERS = {"prefix_queries": "vllm:prefix_cache_queries", "prefix_hits": "vllm:prefix_cache_hits",
            "prompt_tokens": "vllm:prompt_tokens", "generation_tokens": "vllm:generation_tokens",
            "requests": "vllm:request_success"}
ITERATIONS = "vllm:iteration_tokens_total"  # histogram: _count the scheduler's steps, _sum the tokens they carried


@dataclass(frozen=True)
class EngineMetrics:
    """One reading of the engine's /metrics for one model, summed over its engine cores.

    at: time.time() of the reading (s). running / waiting: requests the scheduler runs / holds now. kv_usage: the
    fraction of the KV cache's blocks in use, in [0, 1]. prefix_queries / prefix_hits: tokens looked up in the
    prefix cache since the engine started, and those found there. prompt_tokens / generation_tokens: tokens
    prefilled / generated since start. requests: requests finished (any reason). iterations / iteration_tokens: the
    scheduler's steps since start, and the tokens they carried (None when the engine does not publish them).
    """

    at: float
    running: int
    waiting: int
    kv_usage: float
    prefix_queries: int
    prefix_hits: int
    prompt_tokens: int
    generation_tokens: int
    requests: int
    iterations: int | None = None
    iteration_tokens: int | None = None


@dataclass(frozen=True)
class MetricsInterval:
    """What changed between two readings: `seconds` long, ending at `at` (time.time()).

    running / waiting / kv_usage: the gauges at its end. hit_rate: Δprefix_hits / Δprefix_queries, in [0, 1], None
    when nothing was looked up. prompt_per_s / generation_per_s: tokens per second. requests: requests finished in it.
    iterations: the scheduler's steps in it (None when not published).
    """

    at: float
    seconds: float
    running: int
    waiting: int
    kv_usage: float
    hit_rate: float | None
    prompt_per_s: float
    generation_per_s: float
    requests: int
    iterations: int | None


def metrics_url(base_url: str) -> str:
    """The /metrics address of an engine from its OpenAI base URL: "http://h:8000/v1" -> "http://h:8000/metrics"
    (vLLM serves it at the server's root; a path before /v1, a proxy's prefix, is kept)."""
    url = httpx.URL(base_url)
    path = url.path.rstrip("/")
    if path.endswith("/v1"):
        path = path[: -len("/v1")]
    return str(url.copy_with(path=path + "/metrics", query=None))


def parse_metrics(text: str, model: str, at: float) -> EngineMetrics:
    """An EngineMetrics from Prometheus text, for the samples labelled with `model` (every sample when a family
    carries no model_name); engine_metrics_missing when a family it needs is absent."""
    totals: dict[str, float] = {}
    seen: set[str] = set()
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.labels.get("model_name", model) != model:
                continue
            if family.name in GAUGES.values() and sample.name == family.name:
                pass
            elif family.name in COUNTERS.values() and sample.name == family.name + "_total":
                pass
            elif family.name == ITERATIONS and sample.name in (ITERATIONS + "_count", ITERATIONS + "_sum"):
                pass
            else:
                continue
            seen.add(sample.name if family.name == ITERATIONS else family.name)
            totals[sample.name] = totals.get(sample.name, 0.0) + sample.value
    missing = [name for name in (*GAUGES.values(), *COUNTERS.values()) if name not in seen]
    if missing:
        raise SessionError("engine_metrics_missing", names=", ".join(missing))
    gauge = {key: totals[name] for key, name in GAUGES.items()}
    count = {key: int(round(totals[name + "_total"])) for key, name in COUNTERS.items()}
    iterations = totals.get(ITERATIONS + "_count")
    tokens = totals.get(ITERATIONS + "_sum")
    return EngineMetrics(at, int(gauge["running"]), int(gauge["waiting"]), min(1.0, max(0.0, gauge["kv_usage"])),
                         **count, iterations=None if iterations is None else int(iterations),
                         iteration_tokens=None if tokens is None else int(tokens))


class MetricsReader:
    """Reads one engine's /metrics for one of its models. Thread-safe (httpx's client is)."""

    def __init__(self, base_url: str, model: str, timeout: float = TIMEOUT_S,
                 transport: httpx.BaseTransport | None = None, clock=time.time):
        self.url = metrics_url(base_url)
        self.model = model
        self.timeout = timeout
        self.clock = clock
        self._http = httpx.Client(timeout=timeout, transport=transport, trust_env=False)

    def read(self) -> EngineMetrics:
        """One reading; engine_down, engine_slow or engine_metrics_missing (one sentence each) when it fails."""
        try:
            response = self._http.get(self.url)
        except httpx.TimeoutException:
            raise SessionError("engine_slow", seconds=round(self.timeout)) from None
        except httpx.HTTPError:
            raise SessionError("engine_down") from None
        if response.status_code != 200:
            raise SessionError("engine_metrics_missing", names=f"/metrics (HTTP {response.status_code})")
        try:
            return parse_metrics(response.text, self.model, self.clock())
        except SessionError:
            raise
        except ValueError:  # the parser's word for text that is not Prometheus's
            raise SessionError("engine_metrics_missing", names="/metrics") from None

    def close(self) -> None:
        self._http.close()


class MetricsHistory:
    """The last KEEP readings of one engine, newest last, taken when a page asks (sample()) at most every POLL_S
    less a margin: every page showing the view shares them, so a class costs the engine one read per poll."""

    def __init__(self, reader: MetricsReader, poll_s: float = POLL_S, keep: int = KEEP, clock=time.time):
        self.reader = reader
        self.poll_s = poll_s
        self.clock = clock
        self._samples: deque[EngineMetrics] = deque(maxlen=keep)
        self._lock = threading.Lock()  # one read at a time: pages arriving together wait for it and share it
        self._failed: SessionError | None = None  # the last read's fault, repeated without asking for one poll
        self._retry_at = 0.0

    def sample(self) -> EngineMetrics:
        """The newest reading, read now unless one is younger than half a poll. A fault raises its SessionError and
        changes nothing; for a poll after it the same fault is raised without asking the engine again."""
        with self._lock:
            if self._samples and self.clock() - self._samples[-1].at < self.poll_s / 2:
                return self._samples[-1]
            if self._failed is not None and self.clock() < self._retry_at:
                raise self._failed  # a slow engine is asked once a poll, not once per page waiting here
            try:
                reading = self.reader.read()
            except SessionError as err:
                self._failed, self._retry_at = err, self.clock() + self.poll_s
                raise
            self._failed = None
            if self._samples and (reading.requests < self._samples[-1].requests
                                  or reading.prompt_tokens < self._samples[-1].prompt_tokens):
                self._samples.clear()  # the engine restarted: its counters began again, the old ones compare to nothing
            self._samples.append(reading)
            return reading

    def samples(self) -> list[EngineMetrics]:
        with self._lock:
            return list(self._samples)

    def intervals(self) -> list[MetricsInterval]:
        """Each pair of consecutive readings as what changed between them, oldest first."""
        return intervals(self.samples())


def intervals(samples: list[EngineMetrics]) -> list[MetricsInterval]:
    """What changed between consecutive readings (see MetricsInterval); hit rate = Δhits / Δqueries."""
    out = []
    for before, after in zip(samples, samples[1:]):
        seconds = max(after.at - before.at, 1e-9)
        queries = after.prefix_queries - before.prefix_queries
        steps = None if after.iterations is None or before.iterations is None else after.iterations - before.iterations
        out.append(MetricsInterval(
            after.at, seconds, after.running, after.waiting, after.kv_usage,
            (after.prefix_hits - before.prefix_hits) / queries if queries > 0 else None,
            (after.prompt_tokens - before.prompt_tokens) / seconds,
            (after.generation_tokens - before.generation_tokens) / seconds,
            after.requests - before.requests, steps))
    return out
