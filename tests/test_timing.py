"""Measured step time with and without the KV cache, on the real default model."""
import math
from types import SimpleNamespace

import pytest
import torch
from transformers import DynamicCache

from model.decoding.records import SamplingConfig
from model.decoding.timing import _prefix, _rewindable_cache, default_lengths, measure_cache_timing
from cores import sequence

TEXT = "The history of the printing press begins in the fifteenth century, when movable type arrived. " * 9


@pytest.fixture(scope="module")
def ids(lm):
    ids = lm.tokenizer(TEXT)["input_ids"]
    assert len(ids) >= 150
    return ids[:150]


@pytest.mark.unit
@pytest.mark.parametrize("n", [1, 2, 3, 5, 12, 100, 511, 512])
def test_default_lengths_spread_up_to_the_current_length(n):
    lengths = default_lengths(n)
    assert lengths == sorted(set(lengths)) and 1 <= len(lengths) <= 8
    assert lengths[-1] == n and all(1 <= t <= n for t in lengths)
    if n >= 100:
        assert len(lengths) == 8 and lengths[0] == 2
        assert sum(lengths) <= 2.5 * n  # what keeps a measurement at 512 tokens short


@pytest.mark.unit
def test_no_tokens_no_lengths():
    assert default_lengths(0) == []


@pytest.mark.model
def test_lengths_are_honoured_and_times_positive(lm, ids):
    lengths = [40, 2, 150, 17]  # any order, returned as given
    timing = measure_cache_timing(lm, ids, lengths, repeats=1)
    assert timing.seq_len == lengths
    assert len(timing.cached_ms) == len(timing.full_ms) == len(lengths)
    assert all(math.isfinite(ms) and ms > 0 for ms in timing.cached_ms + timing.full_ms)


@pytest.mark.model
def test_recomputing_the_longest_prefix_is_slower_than_a_cached_step(lm, ids):
    timing = measure_cache_timing(lm, ids, [150], repeats=3, budget_s=60)
    assert timing.full_ms[-1] > 1.5 * timing.cached_ms[-1]  # 150 tokens against 1: about 4x on this CPU


@pytest.fixture(scope="module")
def prefilled(lm, ids):
    """A cache holding all of ids, and the logits of that one full pass (150, V)."""
    base = DynamicCache(config=lm.model.config)
    with torch.no_grad():
        logits = lm.model(torch.tensor([ids]), past_key_values=base, use_cache=True).logits[0]
    return base, logits


@pytest.mark.model
@pytest.mark.parametrize("tokens", [0, 1, 37, 149])
def test_a_cut_copy_of_the_cache_is_the_cache_of_that_prefix(lm, ids, prefilled, tokens):
    base, full = prefilled
    for _ in range(2):  # a step on the copy leaves the original as it was, so repeats are identical
        cut = _prefix(base, tokens)
        assert cut.get_seq_length() == tokens
        with torch.no_grad():
            step = lm.model(torch.tensor([[ids[tokens]]]), past_key_values=cut, use_cache=True).logits[0, -1]
        assert base.get_seq_length() == len(ids)
        assert torch.allclose(step, full[tokens], atol=1e-3, rtol=1e-4)


@pytest.mark.unit
def test_a_cut_copy_works_past_a_sliding_window():
    """Gemma 3 style: 5 of 6 layers see only the last `window` tokens; cutting back past the window still works."""
    from transformers import Gemma3ForCausalLM, Gemma3TextConfig

    config = Gemma3TextConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=6,
                              num_attention_heads=4, num_key_value_heads=1, head_dim=8, sliding_window=4,
                              attn_implementation="eager")
    torch.manual_seed(0)
    model = Gemma3ForCausalLM(config).eval()
    ids = list(range(3, 13))  # 10 tokens: more than the window
    base = _rewindable_cache(model.config)
    with torch.no_grad():
        model(torch.tensor([ids]), past_key_values=base, use_cache=True)
        full = model(torch.tensor([ids]), use_cache=False).logits[0]  # (10, V)
        for tokens in (0, 2, 5, 9):
            step = model(torch.tensor([[ids[tokens]]]), past_key_values=_prefix(base, tokens), use_cache=True)
            assert torch.allclose(step.logits[0, -1], full[tokens], atol=1e-5)
    timing = measure_cache_timing(SimpleNamespace(model=model), ids, default_lengths(len(ids)), repeats=1)
    assert timing.seq_len == default_lengths(len(ids))


class CountingModel:
    """The real model, counting forward passes."""

    def __init__(self, model):
        self.model, self.config, self.calls = model, model.config, 0

    def __call__(self, **kwargs):
        self.calls += 1
        return self.model(**kwargs)


@pytest.mark.model
@pytest.mark.parametrize("budget_s, passes", [(0, 2 + 2 * 3), (60, 2 + 3 * 2 * 3)])  # 2 warm-ups (issue 20 item 11)
def test_repeats_stop_at_the_budget(lm, ids, budget_s, passes):
    counting = CountingModel(lm.model)
    timing = measure_cache_timing(SimpleNamespace(model=counting), ids, [3, 9, 27], repeats=3, budget_s=budget_s)
    assert counting.calls == passes  # two warm-ups, then per length and run: one cached step and one full pass
    assert timing.seq_len == [3, 9, 27]


@pytest.mark.model
def test_measuring_leaves_the_session_alone(lm, session):
    session.start(TEXT[:200])
    session.step(SamplingConfig(temperature=0))
    ids, kv = list(session.ids), session.steps[-1].kv
    measure_cache_timing(lm, session.ids, default_lengths(len(session.ids)), repeats=1)
    assert session.ids == ids and sequence(session).cache.get_seq_length() == len(ids) and session.steps[-1].kv == kv
    twin = type(session)(lm)
    twin.start(TEXT[:200])
    twin.step(SamplingConfig(temperature=0))
    assert session.step(SamplingConfig(temperature=0)).token == twin.step(SamplingConfig(temperature=0)).token


@pytest.mark.model
@pytest.mark.parametrize("lengths, repeats", [([0], 1), ([151], 1), ([2.5], 1), ([True], 1), ([2], 0)])
def test_bad_arguments_are_refused(lm, ids, lengths, repeats):
    with pytest.raises(ValueError):
        measure_cache_timing(lm, ids, lengths, repeats=repeats)


# ---- the rule every measurement follows: median, spread, too noisy to conclude (issue 20 item 11) --------------------
@pytest.mark.unit
def test_spread_is_the_median_with_the_fastest_and_slowest_run():
    from model.decoding.timing import spread

    s = spread([30.0, 10.0, 20.0, 90.0])
    assert (s.median, s.low, s.high, s.runs) == (25.0, 10.0, 90.0, 4)
    with pytest.raises(ValueError):
        spread([])


@pytest.mark.unit
@pytest.mark.parametrize("faster, slower, concluded", [
    ([1, 2, 3], [4, 5, 6], True),  # every run faster: ranges apart
    ([1, 2, 5], [4, 5, 6], False),  # the ranges overlap: a busy moment could explain it
    ([1, 2, 4], [4, 5, 6], False),  # touching is overlapping
    ([1, 2], [4, 5], False),  # too few runs to tell noise from a difference
    ([4, 5, 6], [1, 2, 3], False),  # the other way round
])
def test_a_difference_is_concluded_only_when_every_run_agrees(faster, slower, concluded):
    from model.decoding.timing import separated, spread

    assert separated(spread(faster), spread(slower)) is concluded


@pytest.mark.unit
def test_each_views_verdict_follows_the_rule():
    from model.inside.chain import StepwiseComparison
    from model.decoding.records import CacheTiming
    from model.speed.throughput import BatchPass, Throughput

    cmp = StepwiseComparison([], 0.0, 0.0, parallel_ms=20, prefill_ms=500, steps_ms=[10, 10, 10], tokens=9, threads=2,
                             parallel_range=(18, 25), parallel_runs=3)
    assert cmp.serial_ms == 30 and cmp.conclusive  # the prefill is not on the serial side
    assert not StepwiseComparison([], 0, 0, 20, 500, [10, 10], 9, 2, (18, 21), 3).conclusive  # 21 >= 20
    kv = CacheTiming([2, 512], [5, 6], [6, 200], [(4, 6), (5, 7)], [(5.5, 7), (190, 210)], [3, 3])
    assert kv.conclusive == [False, True]
    passes = [BatchPass(1, 20, [19, 20, 21]), BatchPass(2, 22, [21, 22, 23]), BatchPass(4, 30, [29, 30, 31])]
    assert Throughput(passes, 64, 1, 4, 256, 100, 1).conclusive
    passes[1] = BatchPass(2, 18, [17, 18, 19])  # batch 2 faster than batch 1: only a busy machine does that
    assert not Throughput(passes, 64, 1, 4, 256, 100, 1).conclusive


@pytest.mark.model
def test_measurements_warm_up_and_compare_like_with_like(lm, ids, monkeypatch):
    """KV timing: an untimed pass without the cache before any timed one. Training vs generation: a warm-up and
    3 timed runs of the one pass, against the generated tokens' steps only (the prefill is itself one pass)."""
    from model.decoding.session import DecodeSession
    from model.inside.teacher_forcing import compare_stepwise

    lengths = []
    forward = lm.model.forward

    def counted(*a, **k):
        x = k.get("input_ids", a[0] if a else None)
        lengths.append((x.shape[1], k.get("past_key_values") is not None and k.get("use_cache", False)))
        return forward(*a, **k)

    monkeypatch.setattr(lm.model, "forward", counted)
    timing = measure_cache_timing(lm, ids, [2, 20], repeats=3, budget_s=30)
    assert lengths[:2] == [(1, True), (2, False)]  # warm-ups: a cached step, a pass without the cache
    assert timing.runs == [3, 3] and all(lo <= m <= hi for m, (lo, hi) in zip(timing.full_ms, timing.full_range))
    session = DecodeSession(lm)
    session.start("The history of the printing press")
    for _ in range(4):
        session.step(SamplingConfig(temperature=0.0))
    lengths.clear()
    _, cmp = compare_stepwise(session)
    assert lengths == [(len(session.ids), False)] * 4  # one warm-up and three timed runs of the whole text
    assert cmp.parallel_runs == 3 and cmp.serial_ms == pytest.approx(sum(s.timings.forward_ms for s in session.steps))
