"""The engine's own chunked-prefill numbers: what vLLM's /metrics says about its prefills and decode steps, read
before and after a probe this app sends it (one streamed decode, and a long prompt arriving in the middle of it).

vLLM 0.32 (vllm/v1/metrics/loggers.py) publishes no "chunk" counter as such; chunked prefill shows in its histograms:
- `vllm:iteration_tokens_total`: the tokens each engine step carried (its scheduler's steps). With chunked prefill
  (vLLM V1's default) no step carries more than the scheduler's budget (--max-num-batched-tokens), so a prompt
  longer than that is spread over several steps, each shared with the running requests' decode tokens;
- `vllm:request_prefill_time_seconds`: a request's time in its prefill phase, all its chunks (scheduled to first
  token); `vllm:time_to_first_token_seconds`: arrival to first token;
- `vllm:inter_token_latency_seconds`: the gaps between a request's tokens, what a long prefill lengthens.
The budget itself is not published (only the cache's config is, vllm:cache_config_info): the largest step the
histogram saw is its trace. The probe also times the streamed decode's tokens as they arrive here (the client's own
gaps), so the engine's numbers stand beside a measurement of ours.

The address is the operator's (the engine model's client URL); the texts sent are the app's own, never a user's.
"""
from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass

import httpx
from prometheus_client.parser import text_string_to_metric_families

from model.errors import SessionError
from model.vllm.metrics import TIMEOUT_S, metrics_url
from model.speed.throughput import measurement_ids

HISTOGRAMS = {"step_tokens": "vllm:iteration_tokens_total", "prefill_s": "vllm:request_prefill_time_seconds",
              "ttft_s": "vllm:time_to_first_token_seconds", "itl_s": "vllm:inter_token_latency_seconds"}
COUNTERS = {"prompt_tokens": "vllm:prompt_tokens", "generation_tokens": "vllm:generation_tokens"}
LONG_TOKENS = 512  # the long prompt, at most (and at most the engine's context less a few tokens)
DECODE_TOKENS = 48  # the streamed decode's tokens: it runs before, during and after the long prompt's prefill
SEND_AFTER = 8  # the long prompt is sent once the decode has streamed this many tokens
PROBE_S = 120.0  # the whole probe's time limit


@dataclass(frozen=True)
class Histogram:
    """One Prometheus histogram summed over engine cores: observations, their sum, and the cumulative count at each
    bucket's upper bound `le` (the last is +inf)."""

    count: float
    total: float
    buckets: tuple[tuple[float, float], ...]

    def minus(self, before: "Histogram") -> "Histogram":
        """What was observed since `before` (a reading of the same histogram)."""
        earlier = dict(before.buckets)
        return Histogram(self.count - before.count, self.total - before.total,
                         tuple((le, n - earlier.get(le, 0.0)) for le, n in self.buckets))

    @property
    def mean(self) -> float | None:
        return self.total / self.count if self.count > 0 else None

    def per_bucket(self) -> list[tuple[float, float]]:
        """(upper bound, observations in that bucket alone), for the buckets that saw any."""
        out, below = [], 0.0
        for le, n in self.buckets:
            if n - below > 0:
                out.append((le, n - below))
            below = n
        return out

    @property
    def largest(self) -> float | None:
        """The upper bound of the highest bucket with an observation (None: none)."""
        seen = self.per_bucket()
        return seen[-1][0] if seen else None


@dataclass(frozen=True)
class EngineReading:
    """The prefill-related families of one /metrics text, for one model."""

    histograms: dict[str, Histogram]  # by HISTOGRAMS' keys
    counters: dict[str, float]  # by COUNTERS' keys

    def minus(self, before: "EngineReading") -> "EngineReading":
        return EngineReading({k: h.minus(before.histograms[k]) for k, h in self.histograms.items()},
                             {k: v - before.counters[k] for k, v in self.counters.items()})


def parse_prefill(text: str, model: str) -> EngineReading:
    """The histograms and counters of HISTOGRAMS and COUNTERS for the samples labelled `model` (every sample when
    a family has no model_name), summed over engine cores; engine_metrics_missing naming any absent."""
    found: dict[str, dict] = {}
    counters: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.labels.get("model_name", model) != model:
                continue
            if family.name in HISTOGRAMS.values():
                h = found.setdefault(family.name, {"count": 0.0, "sum": 0.0, "buckets": {}})
                if sample.name == family.name + "_count":
                    h["count"] += sample.value
                elif sample.name == family.name + "_sum":
                    h["sum"] += sample.value
                elif sample.name == family.name + "_bucket":
                    le = float(sample.labels["le"])
                    h["buckets"][le] = h["buckets"].get(le, 0.0) + sample.value
            elif family.name in COUNTERS.values() and sample.name == family.name + "_total":
                counters[family.name] = counters.get(family.name, 0.0) + sample.value
    missing = [n for n in HISTOGRAMS.values() if n not in found] + [n for n in COUNTERS.values() if n not in counters]
    if missing:
        raise SessionError("engine_metrics_missing", names=", ".join(missing))
    histograms = {key: Histogram(found[name]["count"], found[name]["sum"], tuple(sorted(found[name]["buckets"].items())))
                  for key, name in HISTOGRAMS.items()}
    return EngineReading(histograms, {key: counters[name] for key, name in COUNTERS.items()})


@dataclass
class EngineProbe:
    """One probe: a streamed greedy decode of DECODE_TOKENS tokens, and a prompt of `long_tokens` tokens (one token
    asked) sent once the decode had streamed SEND_AFTER tokens; the engine's numbers over the probe beside ours.

    gaps_ms: the decode's gaps between tokens as they arrived here (the first: from its request to its first token);
    sent_at: index in gaps_ms of the first gap that began after the long prompt was sent; long_ms: the long request's
    wall time here (to its one token). delta: the engine's histograms and counters over the probe (any other user's
    requests meanwhile are in them too: `others` says whether the prompt tokens counted exceed the probe's own).
    """

    model: str
    long_tokens: int
    decode_tokens: int
    gaps_ms: list[float]
    sent_at: int
    long_ms: float
    delta: EngineReading
    others: bool
    at: float  # time.time() when it ended

    @property
    def steps(self) -> int:
        return int(round(self.delta.histograms["step_tokens"].count))

    @property
    def largest_step(self) -> float | None:
        """The most tokens one engine step carried during the probe (a bucket's upper bound)."""
        return self.delta.histograms["step_tokens"].largest

    @property
    def chunked(self) -> bool | None:
        """True when no step could have carried the whole long prompt (the largest step's bound is below it), so
        it was prefilled in chunks; None when the engine took no step."""
        largest = self.largest_step
        return None if largest is None else largest < self.long_tokens


def read_text(client: httpx.Client, base_url: str) -> str:
    """The engine's /metrics text, or its keyed fault."""
    try:
        response = client.get(metrics_url(base_url))
    except httpx.TimeoutException:
        raise SessionError("engine_slow", seconds=round(TIMEOUT_S)) from None
    except httpx.HTTPError:
        raise SessionError("engine_down") from None
    if response.status_code != 200:
        raise SessionError("engine_metrics_missing", names=f"/metrics (HTTP {response.status_code})")
    return response.text


def probe(lm, context: int | None = None, long_tokens: int = LONG_TOKENS, decode_tokens: int = DECODE_TOKENS,
          transport: httpx.BaseTransport | None = None) -> EngineProbe:
    """Probe the engine of `lm` (an EngineModel: its client's URL and served model, its tokenizer for the app's own
    text): /metrics read, the decode streamed, the long prompt sent in its middle, /metrics read again."""
    base, served = lm.client.url, lm.client.model
    if context:
        long_tokens = max(16, min(long_tokens, context - 2))
    text = measurement_ids(lm, long_tokens + 16)
    long_ids, decode_ids = text[:long_tokens], text[long_tokens : long_tokens + 16]
    with httpx.Client(base_url=base, timeout=PROBE_S, transport=transport, trust_env=False) as http:
        before = parse_prefill(read_text(http, base), served)
        arrivals, failed, streamed = [], [], threading.Event()
        start = time.perf_counter()

        def decode():
            payload = {"model": served, "prompt": decode_ids, "max_tokens": decode_tokens, "temperature": 0.0,
                       "ignore_eos": True, "stream": True}
            try:
                with http.stream("POST", "/completions", json=payload) as response:
                    if response.status_code >= 400:
                        failed.append(SessionError("engine_refused", status=response.status_code,
                                                   detail=response.read().decode(errors="replace")[:200]))
                        return
                    for line in response.iter_lines():
                        if line.startswith("data:") and line[5:].strip() != "[DONE]":
                            if json.loads(line[5:]).get("choices"):
                                arrivals.append(time.perf_counter())
                                if len(arrivals) >= SEND_AFTER:
                                    streamed.set()
            except httpx.HTTPError:
                failed.append(SessionError("engine_down"))
            finally:
                streamed.set()

        worker = threading.Thread(target=decode, name="engine-probe", daemon=True)
        worker.start()
        streamed.wait(PROBE_S)
        sent = time.perf_counter()
        try:
            answer = http.post("/completions", json={"model": served, "prompt": long_ids, "max_tokens": 1,
                                                     "temperature": 0.0})
        except httpx.HTTPError:
            raise SessionError("engine_down") from None
        long_ms = (time.perf_counter() - sent) * 1000
        worker.join(PROBE_S)
        if failed:
            raise failed[0]
        if answer.status_code >= 400:
            raise SessionError("engine_refused", status=answer.status_code, detail=answer.text[:200])
        time.sleep(0.5)  # the engine's stats reach its /metrics with its next logging tick
        delta = parse_prefill(read_text(http, base), served).minus(before)
    ends = [start, *arrivals]
    gaps = [(b - a) * 1000 for a, b in zip(ends, ends[1:])]
    sent_at = next((i for i, a in enumerate(ends[:-1]) if a >= sent), len(gaps))
    return EngineProbe(lm.name, long_tokens, decode_tokens, gaps, sent_at, long_ms, delta,
                       delta.counters["prompt_tokens"] > long_tokens + len(decode_ids), time.time())
