"""The engine's own numbers (model/vllm/metrics.py): vLLM's /metrics read with prometheus_client's parser,
checked against what the tests themselves sent to the real engine; and its faults, on small servers of our own.

The counters are the engine's since it started, so every check is on a difference: before and after the test's own
requests. The engine is shared by the run (tests/conftest.py `engine`): a test assumes nothing else asks it meanwhile.
"""
import http.server
import json
import os
import random
import threading
import time

import httpx
import prometheus_client.parser
import pytest

from engine_server import REQUEST_S, free_port
from model.errors import SessionError
from ui.strings import t
from model.vllm import metrics as engine_metrics
from model.vllm.metrics import (EngineMetrics, MetricsHistory, MetricsReader, intervals, metrics_url,
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
        self.server.asked += 1
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
    server.asked = 0  # requests it was sent
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
        if server:  # for a poll the fault is repeated without asking the server again; after it, asked again
            asked = server.asked
            with pytest.raises(SessionError):
                history.sample()
            assert server.asked == asked
            clock[0] += history.poll_s
            with pytest.raises(SessionError):
                history.sample()
            assert server.asked == asked + 1
    finally:
        if server:
            server.shutdown()


@pytest.mark.unit
@pytest.mark.parametrize("lang", ["en", "zh"])
def test_the_chart_draws_the_readings_and_leaves_a_gap_where_nothing_was_looked_up(lang):
    from viz.batching_engine import engine_metrics_chart

    samples = [EngineMetrics(10.0, 0, 0, 0.0, 100, 0, 100, 10, 2, 10, 110),
               EngineMetrics(12.0, 4, 1, 0.5, 500, 256, 500, 50, 3, 30, 530),
               EngineMetrics(14.0, 0, 0, 0.0, 500, 256, 500, 60, 4, 40, 540)]
    spec = engine_metrics_chart(samples, intervals(samples), now=15.0, poll_s=2.0, lang=lang)
    by_role = {trace["meta"]["role"]: trace for trace in spec["data"]}
    assert by_role["running"]["x"] == [-5.0, -3.0, -1.0] and by_role["running"]["y"] == [0, 4, 0]
    assert by_role["waiting"]["y"] == [0, 1, 0] and by_role["kv_usage"]["y"] == [0.0, 50.0, 0.0]
    assert by_role["hit_rate"]["x"] == [-3.0, -1.0] and by_role["hit_rate"]["y"] == [64.0, None]
    title = spec["layout"]["title"]
    assert "/metrics" in title["subtitle"]["text"] and "0" in title["text"]
    assert ("running" in title["text"]) == (lang == "en") and ("运行" in title["text"]) == (lang == "zh")
    lonely = engine_metrics_chart(samples[:1], [], now=15.0, poll_s=2.0, lang=lang)
    assert any("2" in note["text"] for note in lonely["layout"]["annotations"][2:])


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
    # long enough that the gauges are read while the requests run (with 40 tokens, a CI run on a loaded machine
    # read /metrics only before and after them)
    n, tokens = 6, 120
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


# ---- the page: The class, batched on an engine's model -----------------------------------------------------------
@pytest.mark.engine
def test_the_batching_view_on_an_engine_model_shows_the_engines_own_numbers(engine, lm):
    from gradio_client import Client

    from model.vllm.client import EngineClient
    from model.vllm.session import load_engine_model
    from model.serving.sessions import ModelRegistry, SessionStore
    from served import DEFAULTS, served
    from ui.views import CandidatesView
    from ui.views.batching import BatchingView

    engine_lm = load_engine_model(EngineClient(engine.url, engine.model, timeout=REQUEST_S), engine.folder)
    models = ModelRegistry("smollm2", {"smollm2": lm})
    models.add_engine(engine_lm)
    with served(models, SessionStore(max_sessions=4), views=[CandidatesView, BatchingView]) as (app, url, demo):
        client = Client(demo.local_url, verbose=False)
        local = Client(demo.local_url, verbose=False)
        local.predict("The capital of France is", "raw", "smollm2", **DEFAULTS, api_name="/start")
        assert "engine" not in local.predict("en", api_name="/batching")[1]  # a local model: the server's passes
        client.predict("The capital of France is", "raw", engine_lm.name, **DEFAULTS, api_name="/start")
        session = app.store.get(client.session_hash)
        _, first, note, *_ = client.predict("en", api_name="/batching")
        assert "the engine's own numbers" in note and len(first["engine"]) >= 1
        time.sleep(1.5)
        for _ in range(2):  # two requests of the test's own, then the engine's numbers again
            complete(engine, fresh_ids(9), 3)
        later = settled(reader := MetricsReader(engine.url, engine.model, timeout=REQUEST_S))
        plot, numbers, note, *_ = client.predict("zh", api_name="/batching_engine_tick")
        newest = numbers["engine"][-1]
        print(f"\nthe view's readings: {len(numbers['engine'])}; the newest: {newest}")
        assert newest["requests"] - first["engine"][-1]["requests"] >= 2  # (and any the session computed ahead)
        assert newest["requests"] == later.requests and newest["generation_tokens"] == later.generation_tokens
        assert "引擎自己的运行数据" in note
        assert len(numbers["intervals"]) == len(numbers["engine"]) - 1
        figure = json.loads(plot["plot"])
        assert {trace["meta"]["role"] for trace in figure["data"]} == {"running", "waiting", "kv_usage", "hit_rate"}
        assert "/metrics" in figure["layout"]["title"]["subtitle"]["text"]

        # Measure on the engine's page times the app's own local model (the engine's passes are not ours): it says so
        sentence, _, measured = client.predict("en", api_name="/batching_measure")
        assert sentence.startswith(t("batch_measure_local", "en", model=lm.info.name))
        assert measured["parameters"] == sum(p.numel() for p in lm.model.parameters())

        # the engine's /metrics gone (a server without it in its place): the keyed sentence, nothing else changes
        server, tiny = tiny_server("404")
        history = models.engine_metrics(engine_lm.name)
        history.reader, kept, steps = MetricsReader(tiny, engine.model, timeout=2), history.samples(), len(session.steps)
        time.sleep(1.5)
        try:
            _, numbers, note, *_ = client.predict("en", api_name="/batching")
        finally:
            server.shutdown()
            history.reader = reader
        assert note == SessionError("engine_metrics_missing", names="/metrics (HTTP 404)").text("en")
        assert [EngineMetrics(**s) for s in numbers["engine"]] == kept and len(session.steps) == steps
