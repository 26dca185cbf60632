"""The engine's own numbers (model/serving/engine_metrics.py): vLLM's /metrics read with prometheus_client's parser,
checked against what the tests themselves sent to the real engine; and its faults, on small servers of our own.

The counters are the engine's since it started, so every check is on a difference: before and after the test's own
requests. The engine is shared by the run (tests/conftest.py `engine`): a test assumes nothing else asks it meanwhile.
"""
import http.server
import os
import random
import threading
import time

import httpx
import prometheus_client.parser
import pytest

from engine_server import REQUEST_S, free_port
from model.errors import SessionError
from model.serving import engine_metrics
from model.serving.engine_metrics import (EngineMetrics, MetricsHistory, MetricsReader, intervals, metrics_url,
                                          parse_metrics)

BLOCK = 128  # the CPU build's KV block (vllm:cache_config_info block_size): a prefix hit is whole blocks


# ---- no engine needed --------------------------------------------------------------------------------
@pytest.mark.unit
def test_the_metrics_address_is_the_servers_root_of_the_operators_url():
    assert metrics_url("http://gpu-box:8000/v1") == "http://gpu-box:8000/metrics"
    assert metrics_url("http://gpu-box:8000/v1/") == "http://gpu-box:8000/metrics"
    assert metrics_url("https://school.example/engine/v1") == "https://school.example/engine/metrics"
    assert metrics_url("http://127.0.0.1:9000") == "http://127.0.0.1:9000/metrics"


@pytest.mark.unit
def test_the_parser_is_prometheus_clients():
    assert engine_metrics.text_string_to_metric_families is prometheus_client.parser.text_string_to_metric_families
    source = open(engine_metrics.__file__).read()
    assert "split(" not in source and "re.compile" not in source  # no hand-written reading of the text


# as vLLM writes it (its /metrics, abridged): a counter's TYPE line names it with "_total"
TEXT = """# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="m"} 3.0
vllm:num_requests_running{engine="1",model_name="m"} 2.0
vllm:num_requests_running{engine="0",model_name="other"} 50.0
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="m"} 1.0
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="m"} 0.25
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="m"} 400.0
vllm:prefix_cache_queries_created{engine="0",model_name="m"} 1.7e9
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="m"} 128.0
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="m"} 400.0
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="m"} 20.0
# TYPE vllm:request_success_total counter
vllm:request_success_total{engine="0",finished_reason="stop",model_name="m"} 1.0
vllm:request_success_total{engine="0",finished_reason="length",model_name="m"} 2.0
# TYPE vllm:iteration_tokens_total histogram
vllm:iteration_tokens_total_bucket{engine="0",le="1.0",model_name="m"} 17.0
vllm:iteration_tokens_total_bucket{engine="0",le="+Inf",model_name="m"} 20.0
vllm:iteration_tokens_total_count{engine="0",model_name="m"} 20.0
vllm:iteration_tokens_total_sum{engine="0",model_name="m"} 417.0
"""


@pytest.mark.unit
def test_a_reading_sums_the_models_engines_and_leaves_other_models_out():
    m = parse_metrics(TEXT, "m", at=5.0)
    assert m == EngineMetrics(5.0, running=5, waiting=1, kv_usage=0.25, prefix_queries=400, prefix_hits=128,
                              prompt_tokens=400, generation_tokens=20, requests=3, iterations=20,
                              iteration_tokens=417)
    with pytest.raises(SessionError) as err:
        parse_metrics(TEXT.replace("vllm:prefix_cache_hits", "vllm:something_else"), "m", at=5.0)
    assert err.value.key == "engine_metrics_missing" and "vllm:prefix_cache_hits" in err.value.text("en")
    assert "vllm:prefix_cache_hits" in err.value.text("zh")


@pytest.mark.unit
def test_intervals_are_the_differences_over_the_time_between_readings():
    a = EngineMetrics(10.0, 0, 0, 0.0, 100, 0, 100, 10, 2, 10, 110)
    b = EngineMetrics(12.0, 4, 1, 0.5, 500, 256, 500, 50, 3, 30, 530)
    c = EngineMetrics(13.0, 0, 0, 0.0, 500, 256, 500, 60, 4, 40, 540)
    first, second = intervals([a, b, c])
    assert (first.at, first.seconds, first.running, first.waiting, first.kv_usage) == (12.0, 2.0, 4, 1, 0.5)
    assert first.hit_rate == 256 / 400 and first.prompt_per_s == 400 / 2 and first.generation_per_s == 40 / 2
    assert (first.requests, first.iterations) == (1, 20)
    assert second.hit_rate is None  # nothing looked up: no rate, not 0
    assert (second.generation_per_s, second.requests, second.iterations) == (10.0, 1, 10)


class Tiny(http.server.BaseHTTPRequestHandler):
    """A server without vLLM's /metrics: 404 on /metrics, or (answer="other") someone else's Prometheus text."""

    answer = "404"
    delay = 0.0

    def do_GET(self):
        time.sleep(self.delay)
        try:
            self.answer_it()
        except (BrokenPipeError, ConnectionResetError):  # the slow case: the reader gave up first
            pass

    def answer_it(self):
        if self.answer == "404":
            self.send_error(404)
            return
        body = b"# TYPE process_cpu_seconds counter\nprocess_cpu_seconds_total 1.5\n"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def tiny_server(answer: str, delay: float = 0.0):
    handler = type("Handler", (Tiny,), {"answer": answer, "delay": delay})
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"


@pytest.mark.unit
@pytest.mark.parametrize("answer, delay, key", [("404", 0.0, "engine_metrics_missing"),
                                                 ("other", 0.0, "engine_metrics_missing"),
                                                 ("404", 2.0, "engine_slow"), (None, 0.0, "engine_down")])
def test_a_server_without_the_engines_metrics_is_one_keyed_sentence_and_changes_nothing(answer, delay, key):
    server = None
    if answer is None:
        url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    else:
        server, url = tiny_server(answer, delay)
    try:
        clock = [100.0]
        history = MetricsHistory(MetricsReader(url, "m", timeout=0.5), clock=lambda: clock[0])
        kept = EngineMetrics(90.0, 1, 0, 0.1, 10, 0, 10, 1, 1, 1, 11)
        history._samples.append(kept)
        with pytest.raises(SessionError) as err:
            history.sample()
        assert err.value.key == key
        assert err.value.text("en") and err.value.text("zh") and err.value.text("en") != err.value.text("zh")
        assert history.samples() == [kept] and history.intervals() == []
    finally:
        if server:
            server.shutdown()


# ---- the real engine ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def reader(engine):
    return MetricsReader(engine.url, engine.model, timeout=REQUEST_S)


def fresh_ids(n: int, rng=random.Random(os.getpid() ^ time.time_ns())) -> list[int]:
    """n token ids no earlier run sent (none cached: a prefix hit is only the test's own)."""
    return [rng.randrange(1000, 40000) for _ in range(n)]


def complete(engine, ids: list[int], tokens: int) -> dict:
    """One completion of exactly `tokens` tokens (ignore_eos: no early end) over the token ids `ids`."""
    response = httpx.post(engine.url + "/completions", timeout=REQUEST_S, trust_env=False,
                          json={"model": engine.model, "prompt": ids, "max_tokens": tokens, "temperature": 0.0,
                                "ignore_eos": True})
    response.raise_for_status()
    return response.json()


def settled(reader) -> EngineMetrics:
    """A reading once the engine has published its last request's numbers (it logs them after answering)."""
    last = reader.read()
    for _ in range(50):
        time.sleep(0.2)
        now = reader.read()
        if (now.requests, now.generation_tokens, now.running, now.waiting) == (last.requests, last.generation_tokens, 0, 0):
            return now
        last = now
    return last


@pytest.mark.engine
def test_the_engines_counters_rose_by_what_the_test_sent(engine, reader):
    before = settled(reader)
    prompts, tokens = [fresh_ids(n) for n in (7, 19, 40)], 5
    usage = [complete(engine, ids, tokens)["usage"] for ids in prompts]
    after = settled(reader)
    sent = sum(len(ids) for ids in prompts)
    print(f"\nbefore {before}\nafter  {after}")
    assert [u["prompt_tokens"] for u in usage] == [len(ids) for ids in prompts]
    assert after.requests - before.requests == len(prompts)
    assert after.prompt_tokens - before.prompt_tokens == sent
    assert after.generation_tokens - before.generation_tokens == len(prompts) * tokens
    assert after.prefix_queries - before.prefix_queries == sent  # every prompt token looked up once
    assert after.prefix_hits == before.prefix_hits  # fresh prompts, each under one block: nothing to find
    # one request at a time: a prefill step that gives the first token, then one step per further token; a step's
    # tokens are the prompt tokens it computed and the tokens it generated (loggers.py: computed + generation)
    assert after.iterations - before.iterations == len(prompts) * tokens
    assert after.iteration_tokens - before.iteration_tokens == sent + len(prompts) * tokens
    assert after.running + after.waiting == 0 and 0.0 <= after.kv_usage <= 1.0


@pytest.mark.engine
def test_a_prompt_sent_twice_hits_the_prefix_cache_by_whole_blocks(engine, reader):
    ids = fresh_ids(BLOCK + 72)  # one full block and a part
    history = MetricsHistory(reader, poll_s=0.0)
    history.sample()
    complete(engine, ids, 1)
    settled(reader)
    history.sample()
    complete(engine, ids, 1)
    settled(reader)
    history.sample()
    first, second = history.intervals()
    print(f"\nhit rates: first {first.hit_rate}, second {second.hit_rate}")
    assert first.hit_rate == 0.0
    # the engine keeps the last token to compute (max_cache_hit_length = n - 1): one block of the 200 is found
    assert second.hit_rate == BLOCK / len(ids)


@pytest.mark.engine
def test_a_class_of_requests_at_once_runs_together(engine, reader):
    before = settled(reader)
    n, tokens = 6, 40
    history = MetricsHistory(reader, poll_s=0.0)
    threads = [threading.Thread(target=complete, args=(engine, fresh_ids(12), tokens)) for _ in range(n)]
    for thread in threads:
        thread.start()
    while any(thread.is_alive() for thread in threads):
        history.sample()
        time.sleep(0.1)
    for thread in threads:
        thread.join()
    after = settled(reader)
    busiest = max(s.running + s.waiting for s in history.samples())
    steps = after.iterations - before.iterations
    print(f"\n{len(history.samples())} samples, at most {busiest} requests running or waiting; "
          f"{n * tokens} tokens in {steps} steps")
    assert after.requests - before.requests == n
    assert after.generation_tokens - before.generation_tokens == n * tokens
    assert busiest > 0
    # one at a time would take n * tokens steps: fewer means steps that carried several requests
    assert steps < n * tokens
