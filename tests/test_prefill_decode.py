"""Prefill against decode (model/speed/prefill_decode.py, model/vllm/prefill.py): the timelines laid out by the
scheduler's rule, a pass's FLOPs and bytes against the formula on a tiny model's config, the engine's histograms read from
Prometheus text as vLLM writes it, and the probe against the real engine's own counters."""
import pytest

from model.vllm.prefill import Histogram, parse_prefill
from model.speed.prefill_decode import Kept, pass_cost, timelines


@pytest.mark.unit
def test_the_timelines_follow_the_schedulers_rule():
    """A class's pass of 100 ms, a 1,000 ms prefill or four chunks of 250 ms, a 5 ms transfer: unchunked the class
    waits the whole prefill; chunked, one chunk after every second decode pass; split off, never."""
    un, ch, sp = timelines(100.0, 1000.0, [250.0] * 4, 5.0, steps_before_turn=2, after=3)
    assert un.worst_gap == 1100.0 and un.first_token_ms == 1100.0
    assert [s.kind for s in ch.segments[:5]] == ["decode", "chunk", "decode", "decode", "chunk"]
    assert ch.worst_gap == 350.0 and ch.first_token_ms == 100 + 4 * 250 + 3 * 2 * 100
    assert sp.worst_gap == 100.0 and sp.first_token_ms == 1005.0
    assert {s.machine for s in sp.segments if s.kind in ("prefill", "transfer")} == {1}
    assert all(s.machine == 0 for s in (*un.segments, *ch.segments))


@pytest.mark.unit
def test_a_pass_costs_its_multiply_adds_and_at_least_its_weights():
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    c = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=48, num_hidden_layers=2, num_attention_heads=4,
                    num_key_value_heads=2, tie_word_embeddings=True)
    model = LlamaForCausalLM(c)
    head = c.hidden_size // c.num_attention_heads
    linear = c.num_hidden_layers * (c.hidden_size * c.num_attention_heads * head * 2  # q, o
                                    + 2 * c.hidden_size * c.num_key_value_heads * head  # k, v
                                    + 3 * c.hidden_size * c.intermediate_size)  # gate, up, down
    weights = sum(p.numel() for p in model.parameters()) * 4  # tied: the embedding once
    kv = 2 * c.num_hidden_layers * c.num_key_value_heads * head * 4
    flops, bytes_ = pass_cost(model, 10, 10, 1, 1, 0)  # a prefill of 10 tokens
    assert flops == 2 * linear * 10 + 4 * c.num_hidden_layers * c.num_attention_heads * head * 10 * 10 + \
        2 * c.vocab_size * c.hidden_size
    assert bytes_ == weights + kv * 10
    flops, bytes_ = pass_cost(model, 3, 8, 3, 3, 7)  # a decode step for 3 sequences of 7 cached tokens
    assert flops == 2 * linear * 3 + 4 * c.num_hidden_layers * c.num_attention_heads * head * 8 * 3 + \
        2 * c.vocab_size * c.hidden_size * 3
    assert bytes_ == weights + kv * (3 * 7 + 3)
    assert torch.is_grad_enabled()  # nothing left switched


@pytest.mark.unit
def test_a_measurement_is_kept_for_the_class_then_taken_again():
    now = [1000.0]

    class Record:
        def __init__(self):
            self.at = now[0]

    kept, made = Kept(keep_s=300, clock=lambda: now[0]), []
    measure = lambda: made.append(Record()) or made[-1]  # noqa: E731
    first, fresh = kept.get("smollm2", measure)
    assert fresh and kept.get("smollm2", measure) == (first, False) and len(made) == 1
    assert kept.get("gemma3-270m", measure)[1] and len(made) == 2  # per model
    now[0] += 301
    assert kept.get("smollm2", measure)[1] and len(made) == 3


TEXT = """# TYPE vllm:iteration_tokens_total histogram
vllm:iteration_tokens_total_bucket{engine="0",le="1.0",model_name="m"} 3.0
vllm:iteration_tokens_total_bucket{engine="0",le="64.0",model_name="m"} 10.0
vllm:iteration_tokens_total_bucket{engine="0",le="256.0",model_name="m"} 14.0
vllm:iteration_tokens_total_bucket{engine="0",le="+Inf",model_name="m"} 14.0
vllm:iteration_tokens_total_count{engine="0",model_name="m"} 14.0
vllm:iteration_tokens_total_sum{engine="0",model_name="m"} 700.0
vllm:iteration_tokens_total_bucket{engine="0",le="1.0",model_name="other"} 99.0
vllm:iteration_tokens_total_count{engine="0",model_name="other"} 99.0
vllm:iteration_tokens_total_sum{engine="0",model_name="other"} 99.0
"""
for name in ("request_prefill_time_seconds", "time_to_first_token_seconds", "inter_token_latency_seconds"):
    TEXT += (f"# TYPE vllm:{name} histogram\nvllm:{name}_bucket{{engine=\"0\",le=\"0.5\",model_name=\"m\"}} 2.0\n"
             f"vllm:{name}_bucket{{engine=\"0\",le=\"+Inf\",model_name=\"m\"}} 2.0\n"
             f"vllm:{name}_count{{engine=\"0\",model_name=\"m\"}} 2.0\nvllm:{name}_sum{{engine=\"0\",model_name=\"m\"}} 0.4\n")
TEXT += ("# TYPE vllm:prompt_tokens_total counter\nvllm:prompt_tokens_total{engine=\"0\",model_name=\"m\"} 600.0\n"
         "# TYPE vllm:generation_tokens_total counter\nvllm:generation_tokens_total{engine=\"0\",model_name=\"m\"} 100.0\n")


@pytest.mark.unit
def test_the_engines_histograms_are_read_for_its_model_and_taken_apart():
    reading = parse_prefill(TEXT, "m")
    steps = reading.histograms["step_tokens"]
    assert (steps.count, steps.total) == (14.0, 700.0) and steps.mean == 50.0
    assert steps.per_bucket() == [(1.0, 3.0), (64.0, 7.0), (256.0, 4.0)] and steps.largest == 256.0
    assert reading.counters == {"prompt_tokens": 600.0, "generation_tokens": 100.0}
    before = Histogram(4.0, 100.0, ((1.0, 3.0), (64.0, 4.0), (256.0, 4.0), (float("inf"), 4.0)))
    assert steps.minus(before).per_bucket() == [(64.0, 6.0), (256.0, 4.0)]  # what came since: no 1-token step
    from model.errors import SessionError

    with pytest.raises(SessionError, match="vllm:prompt_tokens"):
        parse_prefill(TEXT.split("# TYPE vllm:prompt_tokens_total")[0], "m")


@pytest.mark.engine
def test_the_probe_reads_the_engines_own_counters_over_its_own_requests(engine_lm):
    """One streamed decode and a long prompt sent in its middle: the engine counted exactly the probe's prompt and
    generated tokens (nothing else asks the run's engine meanwhile), at least one prefill for each request, and its
    largest step says whether the long prompt was chunked."""
    from model.vllm.prefill import DECODE_TOKENS, probe

    p = probe(engine_lm, engine_lm.info.context)
    counters = p.delta.counters
    assert counters["prompt_tokens"] == p.long_tokens + 16 and not p.others
    assert counters["generation_tokens"] == DECODE_TOKENS + 1
    assert len(p.gaps_ms) == DECODE_TOKENS and 0 < p.sent_at <= DECODE_TOKENS
    assert p.delta.histograms["prefill_s"].count == 2 and p.delta.histograms["ttft_s"].count == 2
    assert p.steps >= DECODE_TOKENS and p.largest_step is not None
    assert p.chunked == (p.largest_step < p.long_tokens)
